// libFuzzer target: the sampler chain spec parser on arbitrary text. What parses must write back as
// plugin configuration text (plugin_config_text) that lmrt_plugin_config_next reads back to the same
// arguments.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lmrt/lmrt_plugin.h"
#include "runtime/plugins/plugin_config.h"
#include "runtime/sampling/sampler_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<lmrt::SamplerSpec> items;
  if (!lmrt::parse_chain_spec(text, &items).ok()) return 0;
  for (const lmrt::SamplerSpec& item : items) {
    lmrt::SamplerParams params;
    (void)lmrt::SamplerParams::bind(item, {"a", "b", "c"}, &params);
    float f;
    int64_t i;
    for (const lmrt::SamplerArg& a : item.args) {
      (void)lmrt::parse_float_text(a.value, &f);
      (void)lmrt::parse_int_text(a.value, &i);
    }
    const std::string config = lmrt::plugin_config_text(item.args);
    if (config.find('\0') != std::string::npos) continue;  // a C string cannot carry it
    const char* cursor = config.c_str();
    std::string key(config.size() + 1, '\0'), value(config.size() + 1, '\0');
    for (const lmrt::SamplerArg& a : item.args) {
      if (lmrt_plugin_config_next(&cursor, key.data(), key.size(), value.data(), value.size()) != 1) __builtin_trap();
      if (a.key != key.c_str() || a.value != value.c_str()) __builtin_trap();
    }
    if (lmrt_plugin_config_next(&cursor, key.data(), key.size(), value.data(), value.size()) != 0) __builtin_trap();
  }
  return 0;
}
