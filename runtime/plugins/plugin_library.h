// PluginLibrary: one plugin shared object, opened with dlopen, initialised through lmrt_plugin_init
// and checked. Instances made from its definitions hold a shared_ptr to it, so the library stays
// loaded (dlclose happens in the destructor) while any of them lives, even after the host forgets it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lmrt/lmrt_plugin.h"
#include "runtime/util/status.h"

namespace lmrt {

// Receives plugin log lines: level (LMRT_PLUGIN_LOG_*), plugin name, message. Called from whatever
// thread the plugin runs on.
using PluginLogSink = std::function<void(int32_t level, std::string_view plugin, std::string_view message)>;

class PluginLibrary {
 public:
  // Opens `path` (a file that exists) and runs its entry point. Errors (all Code::plugin, except
  // io for a missing file): not a loadable shared object, no lmrt_plugin_init, another plugin-ABI
  // major, init refused, a malformed descriptor (bad or duplicate names, missing functions).
  static Status open(const std::string& path, PluginLogSink log, std::shared_ptr<PluginLibrary>* out);

  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const std::string& description() const { return description_; }
  uint32_t abi_version() const { return abi_version_; }
  // Definitions, each copied to the full size this lmrt knows (members a plugin's older struct
  // lacks are zero).
  const std::vector<lmrt_plugin_sampler_def>& samplers() const { return samplers_; }
  const std::vector<lmrt_plugin_stop_def>& stop_criteria() const { return stop_criteria_; }
  // The host function table given to the plugin; stable while the library lives.
  const lmrt_host_api* host_api() const { return &table_.api; }

 private:
  PluginLibrary() = default;
  Status init(PluginLogSink log);

  // The table a plugin receives, with a way back to its library for log(). `api` comes first so
  // the pointer the plugin holds converts back to the record.
  struct HostTable {
    lmrt_host_api api;
    const PluginLibrary* owner;
  };

  void* handle_ = nullptr;
  std::string path_;
  std::string name_;
  std::string version_;
  std::string description_;
  uint32_t abi_version_ = 0;
  std::vector<lmrt_plugin_sampler_def> samplers_;
  std::vector<lmrt_plugin_stop_def> stop_criteria_;
  HostTable table_{};
  PluginLogSink log_;
};

// A string of the spec grammar's name form: [A-Za-z_][A-Za-z0-9_.:-]*.
bool is_valid_plugin_name(std::string_view name);

}  // namespace lmrt
