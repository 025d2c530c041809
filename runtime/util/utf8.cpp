#include "runtime/util/utf8.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace lmrt {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
}

int utf8_sequence_length(std::string_view s) {
  if (s.empty()) return -1;
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) return 1;
  int len;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // <= U+10FFFF
  } else {
    return 0;
  }
  for (int i = 1; i < len; ++i) {
    if (static_cast<size_t>(i) >= s.size()) return -1;
    const auto b = static_cast<uint8_t>(s[i]);
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
  }
  return len;
}

size_t utf8_find_invalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const int n = utf8_sequence_length(s.substr(i));
    if (n <= 0) return i;
    i += static_cast<size_t>(n);
  }
  return std::string_view::npos;
}

std::string printable_utf8(std::string_view s, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 8);
  for (size_t i = 0; i < s.size();) {
    const int n = utf8_sequence_length(s.substr(i));
    const size_t len = n > 0 ? static_cast<size_t>(n) : 1;
    if (out.size() + len > max_bytes) {
      out += "...";
      break;
    }
    if (n <= 0)
      out += kReplacement;
    else if (s[i] == '\0')
      out += "\\0";
    else
      out.append(s.data() + i, len);
    i += len;
  }
  return out;
}

Status validate_utf8(std::string_view text) {
  const size_t bad = utf8_find_invalid(text);
  if (bad == std::string_view::npos) return Status::Ok();
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(static_cast<uint8_t>(text[bad])));
  return Error(Code::bad_utf8, "invalid UTF-8 at byte offset " + std::to_string(bad) + " (byte " + hex + ")");
}

void Utf8Assembler::push(std::string_view bytes, std::string* out) {
  pending_.append(bytes);
  size_t i = 0;
  while (i < pending_.size()) {
    const int n = utf8_sequence_length(std::string_view(pending_).substr(i));
    if (n < 0) break;  // an unfinished character: wait for more bytes
    if (n == 0) {
      out->append(kReplacement);
      ++i;
    } else {
      out->append(pending_, i, static_cast<size_t>(n));
      i += static_cast<size_t>(n);
    }
  }
  pending_.erase(0, i);
}

void Utf8Assembler::flush(std::string* out) {
  if (!pending_.empty()) out->append(kReplacement);
  pending_.clear();
}

}  // namespace lmrt
