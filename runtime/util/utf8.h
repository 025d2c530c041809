// UTF-8 validation and the stream assembler that never hands out a partial or invalid character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/util/status.h"

namespace lmrt {

// Length of the UTF-8 sequence starting at s[0] if it is a complete, valid (shortest-form, no
// surrogates, <= U+10FFFF) character; 0 if invalid; -1 if valid so far but cut off by the end.
int utf8_sequence_length(std::string_view s);

// Offset of the first invalid byte, or npos when `s` is valid UTF-8.
size_t utf8_find_invalid(std::string_view s);

// Ok when `text` is valid UTF-8; otherwise bad_utf8 naming the offset and value of the first bad byte.
Status validate_utf8(std::string_view text);

// `s` made fit for an error message (a C string the ABI promises is UTF-8): valid characters as they are,
// each invalid byte as U+FFFD, a NUL byte as "\0", and past max_bytes the rest cut at a character with "...".
// Messages quote file contents (a vocabulary's token text) that may hold anything.
std::string printable_utf8(std::string_view s, size_t max_bytes = 4096);

// Collects bytes from token pieces and releases only complete characters. An invalid byte
// sequence is released as U+FFFD, so the output is always valid UTF-8.
class Utf8Assembler {
 public:
  void reserve(size_t n) { pending_.reserve(n); }
  // Appends bytes; appends to *out every complete character now available.
  void push(std::string_view bytes, std::string* out);
  // Releases what is left (an unfinished character becomes U+FFFD).
  void flush(std::string* out);
  void clear() { pending_.clear(); }
  size_t pending() const { return pending_.size(); }

 private:
  std::string pending_;
};

}  // namespace lmrt
