// lmrt plugins [--plugin FILE]... [--json]: lists the samplers and stop criteria available, built-in
// and from plugins (the given files, then every plugin in $LMRT_PLUGIN_PATH), with their versions.
#include <cstdio>
#include <string>

#include "cli_common.h"

int cmd_plugins(int argc, char** argv);

namespace {

void log_to_stderr(void*, int32_t level, const char* plugin, const char* message) {
  if (level >= 2) std::fprintf(stderr, "lmrt: plugin %s: %s\n", plugin, message);
}

}  // namespace

int cmd_plugins(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(argc, argv, 2, {{"plugin", "", true}, {"json", "", false}}, &args, &error)) {
    cli::print_error("plugins", error);
    return 2;
  }
  lmrt_plugin_host_params params;
  lmrt_plugin_host_params_init(&params);
  params.allow_loading = 1;
  params.use_env_path = 1;
  params.log = log_to_stderr;
  lmrt_plugin_host* host = nullptr;
  char err[512];
  if (lmrt_plugin_host_create(&params, &host, err, sizeof err) != LMRT_OK) {
    cli::print_error("plugins", err);
    return 1;
  }
  int rc = 0;
  auto range = args.values.equal_range("plugin");
  for (auto it = range.first; it != range.second && rc == 0; ++it) {
    if (lmrt_plugin_load(host, it->second.c_str()) != LMRT_OK) {
      cli::print_error("plugins", lmrt_plugin_host_last_error(host));
      rc = 1;
    }
  }
  uint32_t n_found = 0;
  if (rc == 0 && lmrt_plugin_load_search_path(host, &n_found) != LMRT_OK) {
    cli::print_error("plugins", std::string("LMRT_PLUGIN_PATH: ") + lmrt_plugin_host_last_error(host));
    rc = 1;
  }
  if (rc != 0) {
    lmrt_plugin_host_free(host);
    return rc;
  }
  size_t n = 0;
  lmrt_plugin_host_entry_count(host, &n);
  const bool json = args.has("json");
  if (json) std::printf("[");
  for (size_t i = 0; i < n; ++i) {
    lmrt_plugin_entry e;
    e.struct_size = sizeof e;
    if (lmrt_plugin_host_get_entry(host, i, &e) != LMRT_OK) continue;
    const char* kind = e.kind == LMRT_PLUGIN_ENTRY_SAMPLER ? "sampler" : "stop";
    const bool builtin = e.plugin[0] == '\0';
    if (json) {
      std::printf("%s{\"kind\":%s,\"name\":%s,\"plugin\":%s,\"version\":%s,\"path\":%s,\"description\":%s}",
                  i == 0 ? "" : ",", cli::json_string(kind).c_str(), cli::json_string(e.name).c_str(),
                  cli::json_string(e.plugin).c_str(), cli::json_string(e.version).c_str(),
                  cli::json_string(e.path).c_str(), cli::json_string(e.description).c_str());
    } else {
      std::printf("%-8s %-14s %-12s %-8s %s\n", kind, e.name, builtin ? "(built-in)" : e.plugin, e.version,
                  builtin ? "" : e.path);
    }
  }
  if (json) std::printf("]\n");
  lmrt_plugin_host_free(host);
  return 0;
}
