// PluginHost: the plugins an application has loaded. There is no global plugin table: the
// application creates a host, enables loading, loads plugin files into it, and builds registries
// from it. Each registry entry holds the plugin library (shared_ptr), so a sampler made from it
// keeps the code loaded even if the host is destroyed first.
//
// Thread-safety: load*() and the listing/registry functions may be called from any thread (a mutex
// guards the list). Registries built from a host are ordinary objects owned by their caller.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/plugins/plugin_library.h"
#include "runtime/plugins/plugin_vocab.h"
#include "runtime/sampling/sampler_registry.h"
#include "runtime/sampling/stop_criterion.h"
#include "runtime/util/status.h"

namespace lmrt {

struct PluginHostOptions {
  // Off by default: a program must opt in to running code from plugin files.
  bool allow_loading = false;
  // Directories (':'-separated) searched for a plugin given by bare name.
  std::string search_path;
  // Also search the directories of $LMRT_PLUGIN_PATH (read when the host is created), after search_path.
  bool use_env_path = false;
  PluginLogSink log;  // may be empty: plugin log lines are dropped
};

class PluginHost {
 public:
  explicit PluginHost(PluginHostOptions options);

  // Loads one plugin. `path_or_name` containing '/' is a file path; a bare name is looked up in the
  // search directories as NAME, NAME.so and lmrt-NAME.so (then as a file in the current directory).
  // Refused (nothing changes) with a specific message when loading is disabled, the file is missing or
  // is not a shared object, it has no entry point, another plugin-ABI major, its init refuses, its
  // descriptor is malformed, its name is already loaded, or one of its sampler / stop-criterion
  // names is already taken (by a built-in or another plugin).
  Status load(std::string_view path_or_name, std::shared_ptr<const PluginLibrary>* loaded = nullptr);
  // Loads every *.so in the search directories; stops at the first failure. *n_loaded counts successes.
  Status load_search_path(size_t* n_loaded);

  bool loading_allowed() const { return options_.allow_loading; }
  const std::vector<std::string>& search_dirs() const { return dirs_; }
  // The loaded plugins, in load order (a snapshot).
  std::vector<std::shared_ptr<const PluginLibrary>> plugins() const;

  // Adds every loaded plugin sampler to `registry` under its name. Instances made through these
  // entries see `vocab` (may be null; must outlive them).
  Status add_samplers_to(SamplerRegistry& registry, const TokenTextSource* vocab = nullptr) const;
  Status add_stop_criteria_to(StopCriterionRegistry& registry, const TokenTextSource* vocab = nullptr) const;
  // A registry with the built-in samplers and every loaded plugin sampler.
  Status make_sampler_registry(const TokenTextSource* vocab, SamplerRegistry* out) const;

 private:
  Status resolve(std::string_view path_or_name, std::string* path) const;

  PluginHostOptions options_;
  std::vector<std::string> dirs_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const PluginLibrary>> plugins_;
};

}  // namespace lmrt
