#include "runtime/plugins/plugin_library.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstring>
#include <set>

#include "runtime/plugins/plugin_vocab.h"
#include "runtime/sampling/rng.h"

namespace lmrt {
namespace {

// The smallest definitions this lmrt accepts: everything up to the last required member.
constexpr size_t kMinSamplerDef = offsetof(lmrt_plugin_sampler_def, destroy) + sizeof(void*);
constexpr size_t kMinStopDef = offsetof(lmrt_plugin_stop_def, destroy) + sizeof(void*);
constexpr size_t kMinDescriptor = offsetof(lmrt_plugin_descriptor, stop_criteria) + sizeof(void*);

// Host functions handed to plugins. They see only opaque pointers the host made.
uint64_t host_rng_next_u64(lmrt_plugin_rng* rng) { return reinterpret_cast<Rng*>(rng)->next_u64(); }
double host_rng_uniform(lmrt_plugin_rng* rng) { return reinterpret_cast<Rng*>(rng)->uniform_double(); }

int32_t host_token_text(const lmrt_plugin_vocab* vocab, int32_t token, char* buf, size_t capacity, size_t* len) {
  if (vocab == nullptr || len == nullptr) return -1;
  try {
    std::string text;
    if (!reinterpret_cast<const TokenTextSource*>(vocab)->token_text(token, &text)) return -1;
    *len = text.size();
    if (text.size() > capacity || (buf == nullptr && !text.empty())) return 1;
    if (!text.empty()) std::memcpy(buf, text.data(), text.size());
    return 0;
  } catch (...) {
    return -1;
  }
}

std::string describe_version(uint32_t v) {
  return std::to_string(LMRT_PLUGIN_ABI_MAJOR_OF(v)) + "." + std::to_string(LMRT_PLUGIN_ABI_MINOR_OF(v));
}

std::string safe_text(const char* s) { return s == nullptr ? std::string() : std::string(s); }

}  // namespace

bool is_valid_plugin_name(std::string_view name) {
  if (name.empty()) return false;
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (!alpha(name[0])) return false;
  for (char c : name) {
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '.' && c != ':' && c != '-') return false;
  }
  return true;
}

Status PluginLibrary::open(const std::string& path, PluginLogSink log, std::shared_ptr<PluginLibrary>* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error(Code::io, "plugin '" + path + "': no such file");
  if (!S_ISREG(st.st_mode)) return Error(Code::io, "plugin '" + path + "' is not a regular file");
  std::shared_ptr<PluginLibrary> lib(new PluginLibrary());
  lib->path_ = path;
  // RTLD_NOW: an unresolved symbol fails here, as a message, rather than later as a crash.
  // RTLD_LOCAL: one plugin's symbols never satisfy another's.
  lib->handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const char* why = ::dlerror();
    return Error(Code::plugin, "cannot load plugin '" + path +
                                   "' as a shared object: " + (why != nullptr ? why : "unknown dlopen error"));
  }
  LMRT_RETURN_IF_ERROR(lib->init(std::move(log)));
  *out = std::move(lib);
  return Status::Ok();
}

PluginLibrary::~PluginLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

Status PluginLibrary::init(PluginLogSink log) {
  log_ = std::move(log);
  ::dlerror();
  void* sym = ::dlsym(handle_, LMRT_PLUGIN_INIT_SYMBOL);
  if (sym == nullptr) {
    return Error(Code::plugin, "'" + path_ + "' is not an lmrt plugin: it does not export " LMRT_PLUGIN_INIT_SYMBOL);
  }
  lmrt_plugin_init_fn init_fn;
  static_assert(sizeof(init_fn) == sizeof(sym));
  std::memcpy(&init_fn, &sym, sizeof sym);

  table_.owner = this;
  table_.api.struct_size = sizeof(lmrt_host_api);
  table_.api.abi_version = LMRT_PLUGIN_ABI_VERSION;
  table_.api.log = [](const lmrt_host_api* host, int32_t level, const char* message) {
    try {
      const PluginLibrary* self = reinterpret_cast<const HostTable*>(host)->owner;
      if (self->log_) self->log_(level, self->name_, message != nullptr ? message : "");
    } catch (...) {
    }
  };
  table_.api.rng_next_u64 = host_rng_next_u64;
  table_.api.rng_uniform = host_rng_uniform;
  table_.api.token_text = host_token_text;

  lmrt_plugin_descriptor d{};
  d.struct_size = sizeof d;
  const int32_t rc = init_fn(LMRT_PLUGIN_ABI_VERSION, &table_.api, &d);
  // The ABI check comes first: a plugin of another major may well refuse us, but the mismatch is
  // the useful message.
  if (d.abi_version != 0 && LMRT_PLUGIN_ABI_MAJOR_OF(d.abi_version) != LMRT_PLUGIN_ABI_MAJOR) {
    return Error(Code::plugin, "plugin '" + path_ + "' was built for plugin ABI " + describe_version(d.abi_version) +
                                   " but this lmrt speaks plugin ABI " + describe_version(LMRT_PLUGIN_ABI_VERSION) +
                                   " (the major versions must match; rebuild the plugin against this lmrt)");
  }
  if (rc != 0) {
    return Error(Code::plugin, "plugin '" + path_ + "' refused to load (lmrt_plugin_init returned " +
                                   std::to_string(rc) + ")" +
                                   (d.message != nullptr ? ": " + safe_text(d.message) : ""));
  }
  if (d.abi_version == 0) {
    return Error(Code::plugin,
                 "plugin '" + path_ + "' did not state its plugin ABI version (descriptor abi_version is 0)");
  }
  if (d.struct_size < kMinDescriptor || d.struct_size > sizeof d) {
    return Error(Code::plugin,
                 "plugin '" + path_ + "' changed the descriptor's struct_size to " + std::to_string(d.struct_size));
  }
  abi_version_ = d.abi_version;
  name_ = safe_text(d.name);
  version_ = safe_text(d.version);
  description_ = safe_text(d.description);
  const std::string who = "plugin '" + path_ + "'";
  if (!is_valid_plugin_name(name_)) return Error(Code::plugin, who + " has an invalid name '" + name_ + "'");
  if (version_.empty()) return Error(Code::plugin, who + " states no version");
  if ((d.n_samplers > 0 && d.samplers == nullptr) || (d.n_stop_criteria > 0 && d.stop_criteria == nullptr))
    return Error(Code::plugin, who + " lists definitions through a NULL array");
  if (d.n_samplers + static_cast<uint64_t>(d.n_stop_criteria) > 4096)
    return Error(Code::plugin, who + " lists an implausible number of definitions");

  std::set<std::string> seen;
  auto check_name = [&](const char* raw, const char* kind, size_t i) -> Status {
    const std::string n = safe_text(raw);
    if (!is_valid_plugin_name(n))
      return Error(Code::plugin, who + ": " + kind + " " + std::to_string(i) + " has an invalid name '" + n + "'");
    if (!seen.insert(n).second) return Error(Code::plugin, who + " defines '" + n + "' twice");
    return Status::Ok();
  };
  for (uint32_t i = 0; i < d.n_samplers; ++i) {
    const lmrt_plugin_sampler_def* src = d.samplers[i];
    if (src == nullptr) return Error(Code::plugin, who + ": sampler " + std::to_string(i) + " is NULL");
    if (src->struct_size < kMinSamplerDef)
      return Error(Code::plugin, who + ": sampler " + std::to_string(i) + " has struct_size " +
                                     std::to_string(src->struct_size) + ", smaller than any plugin ABI 1 definition");
    lmrt_plugin_sampler_def def{};
    std::memcpy(&def, src, std::min<size_t>(src->struct_size, sizeof def));
    def.struct_size = sizeof def;
    LMRT_RETURN_IF_ERROR(check_name(def.name, "sampler", i));
    if (def.create == nullptr || def.apply == nullptr || def.clone == nullptr || def.destroy == nullptr)
      return Error(Code::plugin,
                   who + ": sampler '" + safe_text(def.name) + "' lacks one of create, apply, clone, destroy");
    samplers_.push_back(def);
  }
  for (uint32_t i = 0; i < d.n_stop_criteria; ++i) {
    const lmrt_plugin_stop_def* src = d.stop_criteria[i];
    if (src == nullptr) return Error(Code::plugin, who + ": stop criterion " + std::to_string(i) + " is NULL");
    if (src->struct_size < kMinStopDef)
      return Error(Code::plugin, who + ": stop criterion " + std::to_string(i) + " has struct_size " +
                                     std::to_string(src->struct_size) + ", smaller than any plugin ABI 1 definition");
    lmrt_plugin_stop_def def{};
    std::memcpy(&def, src, std::min<size_t>(src->struct_size, sizeof def));
    def.struct_size = sizeof def;
    LMRT_RETURN_IF_ERROR(check_name(def.name, "stop criterion", i));
    if (def.create == nullptr || def.check == nullptr || def.destroy == nullptr)
      return Error(Code::plugin,
                   who + ": stop criterion '" + safe_text(def.name) + "' lacks one of create, check, destroy");
    stop_criteria_.push_back(def);
  }
  return Status::Ok();
}

}  // namespace lmrt
