#include "runtime/tokenizer/utf8.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace lmrt {

size_t utf8_char_length(std::string_view text, size_t pos) {
  if (pos >= text.size()) return 0;
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t len = 0;
  // The allowed range of the second byte depends on the lead byte; it rules out overlong forms,
  // surrogates (U+D800..U+DFFF) and code points above U+10FFFF.
  uint8_t lo = 0x80, hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    len = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (text.size() - pos < len) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t i = 2; i < len; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  return len;
}

Status validate_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t len = utf8_char_length(text, pos);
    if (len == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<uint8_t>(text[pos])));
      return Error(Code::bad_utf8, "invalid UTF-8 at byte offset " + std::to_string(pos) + " (byte " + hex + ")");
    }
    pos += len;
  }
  return Status::Ok();
}

}  // namespace lmrt
