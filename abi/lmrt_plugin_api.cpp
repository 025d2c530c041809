// The extern "C" functions of the plugin block of lmrt.h: a plugin host handle over
// lmrt::PluginHost. Like the other abi/*_api.cpp files (through api_support.h's guarded), nothing thrown here or below
// crosses into the caller.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "abi/api_support.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"
#include "lmrt/lmrt_plugin.h"
#include "runtime/plugins/plugin_host.h"
#include "runtime/sampling/builtin_samplers.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

static_assert(sizeof(lmrt_plugin_host_params) == 40 && offsetof(lmrt_plugin_host_params, search_path) == 16 &&
              offsetof(lmrt_plugin_host_params, log_user_data) == 32);
static_assert(sizeof(lmrt_plugin_entry) == 56 && offsetof(lmrt_plugin_entry, name) == 8 &&
              offsetof(lmrt_plugin_entry, flags) == 48);
static_assert(LMRT_PLUGIN_ENTRY_DETERMINISTIC == LMRT_PLUGIN_SAMPLER_DETERMINISTIC &&
              LMRT_PLUGIN_ENTRY_SELECTS == LMRT_PLUGIN_SAMPLER_SELECTS &&
              LMRT_PLUGIN_ENTRY_USES_RNG == LMRT_PLUGIN_SAMPLER_USES_RNG);

Status lmrt_plugin_host::rebuild_entries() {
  std::vector<Entry> out;
  lmrt::SamplerRegistry builtins;
  LMRT_RETURN_IF_ERROR(lmrt::register_builtin_samplers(builtins));
  for (const std::string& n : builtins.names())
    out.push_back(
        {LMRT_PLUGIN_ENTRY_SAMPLER, n, "", LMRT_VERSION_STRING, "", "built-in", LMRT_PLUGIN_ENTRY_DETERMINISTIC});
  for (const auto& lib : host->plugins()) {
    for (const auto& d : lib->samplers())
      out.push_back(
          {LMRT_PLUGIN_ENTRY_SAMPLER, d.name, lib->name(), lib->version(), lib->path(),
           d.description != nullptr ? d.description : "",
           d.flags & (LMRT_PLUGIN_ENTRY_DETERMINISTIC | LMRT_PLUGIN_ENTRY_SELECTS | LMRT_PLUGIN_ENTRY_USES_RNG)});
    for (const auto& d : lib->stop_criteria())
      out.push_back({LMRT_PLUGIN_ENTRY_STOP_CRITERION, d.name, lib->name(), lib->version(), lib->path(),
                     d.description != nullptr ? d.description : "", 0});
  }
  std::lock_guard<std::mutex> lock(mu);
  entries = std::move(out);
  return Status::Ok();
}

extern "C" {

lmrt_status lmrt_plugin_host_params_init_sized(lmrt_plugin_host_params* params, size_t struct_size) {
  lmrt_plugin_host_params d = lmrt_plugin_host_params{};
  d.struct_size = sizeof(lmrt_plugin_host_params);
  return init_sized(params, struct_size, d);
}

lmrt_status lmrt_plugin_host_create(const lmrt_plugin_host_params* params, lmrt_plugin_host** out_host, char* err,
                                    size_t err_size) {
  if (out_host != nullptr) *out_host = nullptr;
  return guarded(
      [&]() -> Status {
        if (out_host == nullptr) return lmrt::Error(Code::invalid_argument, "out_host must not be NULL");
        lmrt_plugin_host_params p;
        lmrt_plugin_host_params_init(&p);
        if (params != nullptr) {
          if (params->struct_size < sizeof(uint32_t) * 2 || params->struct_size > (1u << 16))
            return lmrt::Error(Code::invalid_argument, "struct_size " + std::to_string(params->struct_size) +
                                                           " is not a valid size (call lmrt_plugin_host_params_init)");
          std::memcpy(&p, params, std::min<size_t>(params->struct_size, sizeof p));
        }
        // Refused, so that a later version can give it a meaning without old libraries ignoring it.
        if (p.reserved0 != 0) return lmrt::Error(Code::invalid_argument, "reserved0 must be 0");
        lmrt::PluginHostOptions o;
        o.allow_loading = p.allow_loading != 0;
        o.use_env_path = p.use_env_path != 0;
        if (p.search_path != nullptr) o.search_path = p.search_path;
        if (p.log != nullptr) {
          o.log = [fn = p.log, user = p.log_user_data](int32_t level, std::string_view plugin,
                                                       std::string_view message) {
            const std::string pl(plugin), msg(message);
            fn(user, level, pl.c_str(), msg.c_str());
          };
        }
        auto h = std::make_unique<lmrt_plugin_host>();
        h->host = std::make_unique<lmrt::PluginHost>(std::move(o));
        LMRT_RETURN_IF_ERROR(h->rebuild_entries());
        *out_host = h.release();
        return Status::Ok();
      },
      [&](const std::string& m) { copy_message(m, err, err_size); });
}

lmrt_status lmrt_plugin_host_free(lmrt_plugin_host* host) {
  delete host;
  return LMRT_OK;
}

const char* lmrt_plugin_host_last_error(const lmrt_plugin_host* host) {
  if (host == nullptr) return "";
  try {
    return host->last_error();
  } catch (...) {
    return "";
  }
}

lmrt_status lmrt_plugin_load(lmrt_plugin_host* host, const char* path_or_name) {
  if (host == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  return guarded(
      [&]() -> Status {
        host->clear_error();
        if (path_or_name == nullptr || path_or_name[0] == '\0')
          return lmrt::Error(Code::invalid_argument, "path_or_name must be a non-empty string");
        LMRT_RETURN_IF_ERROR(host->host->load(path_or_name));
        return host->rebuild_entries();
      },
      [&](const std::string& m) { host->set_error(m); });
}

lmrt_status lmrt_plugin_load_search_path(lmrt_plugin_host* host, uint32_t* n_loaded) {
  if (host == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  if (n_loaded != nullptr) *n_loaded = 0;
  return guarded(
      [&]() -> Status {
        host->clear_error();
        size_t n = 0;
        const Status s = host->host->load_search_path(&n);
        if (n_loaded != nullptr) *n_loaded = static_cast<uint32_t>(n);
        LMRT_RETURN_IF_ERROR(host->rebuild_entries());
        return s;
      },
      [&](const std::string& m) { host->set_error(m); });
}

lmrt_status lmrt_plugin_host_entry_count(lmrt_plugin_host* host, size_t* count) {
  if (host == nullptr || count == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(host->mu);
  *count = host->entries.size();
  return LMRT_OK;
}

lmrt_status lmrt_plugin_host_get_entry(lmrt_plugin_host* host, size_t i, lmrt_plugin_entry* entry) {
  if (host == nullptr || entry == nullptr || entry->struct_size < sizeof(uint32_t)) return LMRT_ERR_INVALID_ARGUMENT;
  return guarded(
      [&]() -> Status {
        std::lock_guard<std::mutex> lock(host->mu);
        if (i >= host->entries.size())
          return lmrt::Error(Code::invalid_argument,
                             "entry " + std::to_string(i) + " of " + std::to_string(host->entries.size()));
        const auto& e = host->entries[i];
        lmrt_plugin_entry full{sizeof(lmrt_plugin_entry), e.kind,         e.name.c_str(),        e.plugin.c_str(),
                               e.version.c_str(),         e.path.c_str(), e.description.c_str(), e.flags};
        const uint32_t caller = entry->struct_size;
        std::memcpy(entry, &full, std::min<size_t>(caller, sizeof full));
        entry->struct_size = caller;
        return Status::Ok();
      },
      [&](const std::string& m) { host->set_error(m); });
}

}  // extern "C"
