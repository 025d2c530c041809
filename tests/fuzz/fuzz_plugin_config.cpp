// libFuzzer target: lmrt_plugin_config_next (lmrt_plugin.h, compiled into every plugin) on arbitrary
// text and buffer sizes: it must stop (the cursor only moves forward), stay inside its buffers (ASan)
// and NUL-terminate what it writes.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lmrt/lmrt_plugin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t key_cap = 1 + data[0] % 16, value_cap = 1 + data[1] % 32;
  const std::string text(reinterpret_cast<const char*>(data) + 2, size - 2);
  const char* cursor = text.c_str();
  std::vector<char> key(key_cap), value(value_cap);  // exact sizes, so ASan sees any overrun
  for (size_t n = 0; n <= text.size() + 1; ++n) {
    const char* before = cursor;
    const int r = lmrt_plugin_config_next(&cursor, key.data(), key.size(), value.data(), value.size());
    if (r != 1) return 0;
    if (cursor <= before || cursor > text.c_str() + text.size()) __builtin_trap();
    if (std::memchr(key.data(), '\0', key.size()) == nullptr ||
        std::memchr(value.data(), '\0', value.size()) == nullptr)
      __builtin_trap();
  }
  __builtin_trap();  // more arguments than the text has characters: it did not advance
}
