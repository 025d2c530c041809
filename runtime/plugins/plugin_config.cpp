#include "runtime/plugins/plugin_config.h"

namespace lmrt {
namespace {

bool needs_quotes(const std::string& v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == ',' || c == '(' || c == ')' ||
        c == '=' || c == '"' || c == '\\')
      return true;
  }
  return false;
}

}  // namespace

std::string plugin_config_text(const std::vector<SamplerArg>& args) {
  std::string out;
  for (const SamplerArg& a : args) {
    if (!out.empty()) out += ',';
    if (!a.key.empty()) out += a.key + "=";
    if (!needs_quotes(a.value)) {
      out += a.value;
      continue;
    }
    out += '"';
    for (char c : a.value) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out;
}

}  // namespace lmrt
