// lmrt cache stats|clear|vacuum FILE: look after a response cache file.
#include <cstdio>
#include <string>

#include "cli_common.h"

int cmd_cache(int argc, char** argv) {
  cli::Args args;
  std::string error;
  if (!cli::parse_args(argc, argv, 2, {{"json", "", false}}, &args, &error)) {
    cli::print_error("cache", error);
    return 2;
  }
  if (args.positional.size() != 2 ||
      (args.positional[0] != "stats" && args.positional[0] != "clear" && args.positional[0] != "vacuum")) {
    cli::print_error("cache", "usage: lmrt cache stats|clear|vacuum FILE [--json]");
    return 2;
  }
  const std::string& action = args.positional[0];
  lmrt_cache_params p;
  lmrt_cache_params_init(&p);
  p.read_only = action == "stats" ? 1 : 0;
  p.on_warning = [](void*, const char* m) { std::fprintf(stderr, "lmrt: cache: %s\n", m); };
  lmrt_cache* cache = nullptr;
  char err[1024] = {0};
  if (lmrt_cache_open(args.positional[1].c_str(), &p, &cache, err, sizeof err) != LMRT_OK) {
    cli::print_error("cache", err);
    return 1;
  }
  lmrt_status s = LMRT_OK;
  if (action == "clear") s = lmrt_cache_clear(cache);
  if (action == "vacuum") s = lmrt_cache_vacuum(cache);
  lmrt_cache_stats st;
  st.struct_size = sizeof st;
  if (s == LMRT_OK) s = lmrt_cache_get_stats(cache, &st);
  if (s != LMRT_OK) {
    cli::print_error("cache " + action, std::string(lmrt_status_str(s)) + ": " + lmrt_cache_last_error(cache));
    lmrt_cache_close(cache);
    return 1;
  }
  if (args.has("json"))
    std::printf("{\"entries\":%llu,\"bytes\":%llu,\"read_only\":%s}\n", static_cast<unsigned long long>(st.entries),
                static_cast<unsigned long long>(st.bytes), st.read_only ? "true" : "false");
  else
    std::printf("entries  %llu\nbytes    %llu\n", static_cast<unsigned long long>(st.entries),
                static_cast<unsigned long long>(st.bytes));
  lmrt_cache_close(cache);
  return 0;
}
