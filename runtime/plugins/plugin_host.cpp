#include "runtime/plugins/plugin_host.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <utility>

#include "runtime/plugins/plugin_sampler.h"
#include "runtime/plugins/plugin_stop.h"
#include "runtime/sampling/builtin_samplers.h"

namespace lmrt {
namespace {

void split_dirs(std::string_view list, std::vector<std::string>* out) {
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string_view::npos) end = list.size();
    if (end > start) out->emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

PluginHost::PluginHost(PluginHostOptions options) : options_(std::move(options)) {
  split_dirs(options_.search_path, &dirs_);
  if (options_.use_env_path) {
    if (const char* env = std::getenv("LMRT_PLUGIN_PATH")) split_dirs(env, &dirs_);
  }
}

Status PluginHost::resolve(std::string_view path_or_name, std::string* path) const {
  const std::string name(path_or_name);
  if (name.find('/') != std::string::npos) {
    *path = name;
    return Status::Ok();
  }
  for (const std::string& dir : dirs_) {
    for (const std::string& candidate : {name, name + ".so", "lmrt-" + name + ".so"}) {
      const std::string p = dir + "/" + candidate;
      if (is_file(p)) {
        *path = p;
        return Status::Ok();
      }
    }
  }
  // dlopen would search the system library path for a bare name; a plugin is never looked up there.
  if (is_file(name)) {
    *path = "./" + name;
    return Status::Ok();
  }
  std::string where;
  for (const std::string& d : dirs_) where += (where.empty() ? "" : ", ") + d;
  return Error(Code::io, "plugin '" + name + "' was not found in the plugin search path (" +
                             (where.empty() ? "empty; set search_path or LMRT_PLUGIN_PATH" : where) +
                             ") nor in the current directory");
}

Status PluginHost::load(std::string_view path_or_name, std::shared_ptr<const PluginLibrary>* loaded) {
  if (!options_.allow_loading) {
    return Error(Code::plugin,
                 "plugin loading is disabled: the application must enable it (allow_loading = 1) "
                 "before loading '" +
                     std::string(path_or_name) + "'");
  }
  std::string path;
  LMRT_RETURN_IF_ERROR(resolve(path_or_name, &path));
  std::shared_ptr<PluginLibrary> lib;
  LMRT_RETURN_IF_ERROR(PluginLibrary::open(path, options_.log, &lib));

  std::lock_guard<std::mutex> lock(mu_);
  SamplerRegistry builtins;
  LMRT_RETURN_IF_ERROR(register_builtin_samplers(builtins));
  std::set<std::string> taken_samplers;
  std::set<std::string> taken_stops;
  for (const std::string& n : builtins.names()) taken_samplers.insert(n);
  for (const auto& p : plugins_) {
    if (p->name() == lib->name())
      return Error(Code::plugin, "a plugin named '" + lib->name() + "' is already loaded (from '" + p->path() +
                                     "'); refusing '" + path + "'");
    for (const auto& d : p->samplers()) taken_samplers.insert(d.name);
    for (const auto& d : p->stop_criteria()) taken_stops.insert(d.name);
  }
  for (const auto& d : lib->samplers()) {
    if (taken_samplers.count(d.name) != 0)
      return Error(Code::plugin, "plugin '" + lib->name() + "' (" + path + ") defines sampler '" + d.name +
                                     "', a name already taken by a built-in or loaded sampler");
  }
  for (const auto& d : lib->stop_criteria()) {
    if (taken_stops.count(d.name) != 0)
      return Error(Code::plugin, "plugin '" + lib->name() + "' (" + path + ") defines stop criterion '" + d.name +
                                     "', a name already taken by a loaded plugin");
  }
  plugins_.push_back(lib);
  if (loaded != nullptr) *loaded = std::move(lib);
  return Status::Ok();
}

Status PluginHost::load_search_path(size_t* n_loaded) {
  if (n_loaded != nullptr) *n_loaded = 0;
  if (!options_.allow_loading) return load("(search path)");  // the same refusal message
  for (const std::string& dir : dirs_) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) continue;  // a missing directory in a path list is not an error
    std::vector<std::string> files;
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 3 && n.compare(n.size() - 3, 3, ".so") == 0) files.push_back(dir + "/" + n);
    }
    ::closedir(d);
    std::sort(files.begin(), files.end());  // a stable load order, so name clashes resolve the same way
    for (const std::string& f : files) {
      LMRT_RETURN_IF_ERROR(load(f));
      if (n_loaded != nullptr) ++*n_loaded;
    }
  }
  return Status::Ok();
}

std::vector<std::shared_ptr<const PluginLibrary>> PluginHost::plugins() const {
  std::lock_guard<std::mutex> lock(mu_);
  return plugins_;
}

Status PluginHost::add_samplers_to(SamplerRegistry& registry, const TokenTextSource* vocab) const {
  for (const auto& lib : plugins()) {
    for (const lmrt_plugin_sampler_def& d : lib->samplers())
      LMRT_RETURN_IF_ERROR(registry.add(d.name, plugin_sampler_factory(lib, &d, vocab)));
  }
  return Status::Ok();
}

Status PluginHost::add_stop_criteria_to(StopCriterionRegistry& registry, const TokenTextSource* vocab) const {
  for (const auto& lib : plugins()) {
    for (const lmrt_plugin_stop_def& d : lib->stop_criteria())
      LMRT_RETURN_IF_ERROR(registry.add(d.name, plugin_stop_factory(lib, &d, vocab)));
  }
  return Status::Ok();
}

Status PluginHost::make_sampler_registry(const TokenTextSource* vocab, SamplerRegistry* out) const {
  SamplerRegistry r;
  LMRT_RETURN_IF_ERROR(register_builtin_samplers(r));
  LMRT_RETURN_IF_ERROR(add_samplers_to(r, vocab));
  *out = std::move(r);
  return Status::Ok();
}

}  // namespace lmrt
