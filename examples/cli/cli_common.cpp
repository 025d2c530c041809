#include "cli_common.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace cli {

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

bool parse_args(int argc, char** argv, int first, const std::vector<OptionSpec>& spec, Args* out, std::string* error) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-') {
      out->positional.push_back(a);
      continue;
    }
    const OptionSpec* found = nullptr;
    for (const OptionSpec& s : spec)
      if (a == std::string("--") + s.long_name || (s.short_name[0] != '\0' && a == std::string("-") + s.short_name))
        found = &s;
    if (found == nullptr) {
      *error = "unknown option '" + a + "'";
      return false;
    }
    std::string value;
    if (found->takes_value) {
      if (i + 1 >= argc) {
        *error = "option '" + a + "' needs a value";
        return false;
      }
      value = argv[++i];
    }
    out->values.emplace(found->long_name, value);
  }
  return true;
}

bool parse_int(const std::string& text, long long lo, long long hi, long long* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

std::string model_path(const Args& args) {
  if (args.has("model")) return args.get("model");
  if (const char* env = std::getenv("LMRT_MODEL")) return env;
  return "";
}

lmrt_model* open_model(const std::string& path) {
  if (path.empty()) {
    print_error("no model", "give one with -m FILE or the LMRT_MODEL environment variable");
    return nullptr;
  }
  lmrt_model* model = nullptr;
  char err[1024] = {0};
  const lmrt_status s = lmrt_model_open(path.c_str(), nullptr, &model, err, sizeof err);
  if (s != LMRT_OK) {
    print_error("cannot open model '" + path + "'", std::string(lmrt_status_str(s)) + ": " + err);
    return nullptr;
  }
  return model;
}

void print_error(const std::string& what, const std::string& message) {
  std::fprintf(stderr, "lmrt: %s: %s\n", what.c_str(), message.c_str());
}

std::string json_string(const std::string& s) {
  // Token pieces and model metadata need not be valid UTF-8 (a byte-fallback token is one byte of a
  // character): invalid sequences become U+FFFD so the output is always valid JSON.
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cli
