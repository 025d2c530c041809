#include "runtime/sampling/sampler_registry.h"

#include <utility>

namespace lmrt {

Status SamplerRegistry::add(std::string name, SamplerFactory factory) {
  // The name must read back as one sampler name of the spec grammar.
  std::vector<SamplerSpec> items;
  if (!parse_chain_spec(name, &items).ok() || items.size() != 1 || items[0].name != name) {
    return Error(Code::invalid_argument, "invalid sampler name '" + name + "'");
  }
  if (!factory) return Error(Code::invalid_argument, "sampler '" + name + "' has no factory");
  if (find(name) != nullptr) return Error(Code::invalid_argument, "sampler '" + name + "' is already registered");
  entries_.push_back({std::move(name), std::move(factory)});
  return Status::Ok();
}

bool SamplerRegistry::remove(std::string_view name) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->name == name) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

const SamplerFactory* SamplerRegistry::find(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e.factory;
  }
  return nullptr;
}

std::vector<std::string> SamplerRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) out.push_back(e.name);
  return out;
}

Status SamplerRegistry::create(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) const {
  const SamplerFactory* factory = find(spec.name);
  if (factory == nullptr) {
    std::string known;
    for (const Entry& e : entries_) known += (known.empty() ? "" : ", ") + e.name;
    return Error(Code::invalid_argument, "unknown sampler '" + spec.name + "' at offset " +
                                             std::to_string(spec.offset) + " (known: " + known + ")");
  }
  out->reset();
  LMRT_RETURN_IF_ERROR((*factory)(spec, out));
  if (*out == nullptr) return Error(Code::internal, "sampler '" + spec.name + "': factory returned nothing");
  return Status::Ok();
}

}  // namespace lmrt
