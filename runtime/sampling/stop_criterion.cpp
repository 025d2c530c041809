#include "runtime/sampling/stop_criterion.h"

#include <utility>

#include "runtime/plugins/plugin_config.h"
#include "runtime/sampling/sampler_spec.h"

namespace lmrt {

Status StopCriterionRegistry::add(std::string name, StopCriterionFactory factory) {
  std::vector<SamplerSpec> items;
  if (!parse_chain_spec(name, &items).ok() || items.size() != 1 || items[0].name != name || !items[0].args.empty()) {
    return Error(Code::invalid_argument, "invalid stop criterion name '" + name + "'");
  }
  if (!factory) return Error(Code::invalid_argument, "stop criterion '" + name + "' has no factory");
  if (find(name) != nullptr)
    return Error(Code::invalid_argument, "stop criterion '" + name + "' is already registered");
  entries_.push_back({std::move(name), std::move(factory)});
  return Status::Ok();
}

bool StopCriterionRegistry::remove(std::string_view name) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->name == name) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

const StopCriterionFactory* StopCriterionRegistry::find(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e.factory;
  }
  return nullptr;
}

std::vector<std::string> StopCriterionRegistry::names() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(e.name);
  return out;
}

Status StopCriterionRegistry::create(std::string_view name, std::string_view config,
                                     std::unique_ptr<StopCriterion>* out) const {
  const StopCriterionFactory* factory = find(name);
  if (factory == nullptr) {
    std::string known;
    for (const Entry& e : entries_) known += (known.empty() ? "" : ", ") + e.name;
    return Error(Code::invalid_argument, "unknown stop criterion '" + std::string(name) + "' (known: " +
                                             (known.empty() ? "none; load a plugin that provides one" : known) + ")");
  }
  out->reset();
  LMRT_RETURN_IF_ERROR((*factory)(config, out));
  if (*out == nullptr)
    return Error(Code::internal, "stop criterion '" + std::string(name) + "': factory returned nothing");
  return Status::Ok();
}

Status StopCriterionRegistry::create_from_spec(std::string_view item, std::unique_ptr<StopCriterion>* out) const {
  std::vector<SamplerSpec> items;
  LMRT_RETURN_IF_ERROR(parse_chain_spec(item, &items));
  if (items.size() != 1) {
    return Error(Code::invalid_argument, "a stop criterion spec is one item like regex(pattern=\"x\"), got " +
                                             std::to_string(items.size()) + " items in '" + std::string(item) + "'");
  }
  return create(items[0].name, plugin_config_text(items[0].args), out);
}

}  // namespace lmrt
