// SamplerRegistry: the names a chain spec may use, each mapped to a factory that builds a sampler
// from the item's arguments. It is an ordinary object (no global table): a context owns one, the
// built-ins are added by register_builtin_samplers(), and the plugin host adds each plugin's
// samplers, so a plugin sampler is used by name exactly like a built-in one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/sampling/sampler.h"
#include "runtime/sampling/sampler_spec.h"
#include "runtime/util/status.h"

namespace lmrt {

// Builds a sampler from a parsed item; returns invalid_argument with a precise message when the
// arguments are wrong.
using SamplerFactory = std::function<Status(const SamplerSpec& spec, std::unique_ptr<Sampler>* out)>;

class SamplerRegistry {
 public:
  // Adds `name`; invalid_argument when it is taken or is not a valid sampler name.
  Status add(std::string name, SamplerFactory factory);
  // Removes `name` (e.g. when a plugin is unloaded); false when absent.
  bool remove(std::string_view name);
  const SamplerFactory* find(std::string_view name) const;
  // Registered names, in the order they were added.
  std::vector<std::string> names() const;

  // Builds the sampler an item names; invalid_argument for an unknown name.
  Status create(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) const;

 private:
  struct Entry {
    std::string name;
    SamplerFactory factory;
  };
  std::vector<Entry> entries_;
};

}  // namespace lmrt
