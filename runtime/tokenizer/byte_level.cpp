#include "runtime/tokenizer/byte_level.h"

#include <array>

#include "runtime/util/utf8.h"

namespace lmrt {
namespace {

bool is_self_mapped(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Alphabet {
  std::array<uint32_t, 256> code_point{};  // the character of each byte
  std::array<char, 256 * 2> utf8{};        // its UTF-8 (1 or 2 bytes: every code point is < U+0800)
  std::array<uint8_t, 256> utf8_len{};
  std::array<int16_t, 0x200> byte_of{};  // inverse, for code points below U+0200; -1 elsewhere

  Alphabet() {
    byte_of.fill(-1);
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = is_self_mapped(b) ? static_cast<uint32_t>(b) : next++;
      code_point[b] = cp;
      byte_of[cp] = static_cast<int16_t>(b);
      if (cp < 0x80) {
        utf8[2 * b] = static_cast<char>(cp);
        utf8_len[b] = 1;
      } else {
        utf8[2 * b] = static_cast<char>(0xC0 | (cp >> 6));
        utf8[2 * b + 1] = static_cast<char>(0x80 | (cp & 0x3F));
        utf8_len[b] = 2;
      }
    }
  }
};

const Alphabet& alphabet() {
  static const Alphabet a;
  return a;
}

}  // namespace

std::string_view byte_level_char(uint8_t b) {
  const Alphabet& a = alphabet();
  return std::string_view(&a.utf8[2 * b], a.utf8_len[b]);
}

void encode_byte_level(std::string_view bytes, std::string* out) {
  out->reserve(out->size() + bytes.size() * 2);
  for (char c : bytes) out->append(byte_level_char(static_cast<uint8_t>(c)));
}

void decode_byte_level(std::string_view text, std::string* out) {
  const Alphabet& a = alphabet();
  size_t pos = 0;
  while (pos < text.size()) {
    const uint8_t c = static_cast<uint8_t>(text[pos]);
    const int len = utf8_sequence_length(text.substr(pos));
    if (len == 1) {
      if (a.byte_of[c] >= 0) {
        out->push_back(static_cast<char>(a.byte_of[c]));
      } else {
        out->push_back(static_cast<char>(c));
      }
      ++pos;
    } else if (len == 2) {
      const uint32_t cp = ((c & 0x1Fu) << 6) | (static_cast<uint8_t>(text[pos + 1]) & 0x3Fu);
      if (cp < a.byte_of.size() && a.byte_of[cp] >= 0) {
        out->push_back(static_cast<char>(a.byte_of[cp]));
      } else {
        out->append(text.substr(pos, 2));
      }
      pos += 2;
    } else {
      const size_t n = len > 0 ? static_cast<size_t>(len) : 1;  // malformed text is copied byte by byte
      out->append(text.substr(pos, n));
      pos += n;
    }
  }
}

}  // namespace lmrt
