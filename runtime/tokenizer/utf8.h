// Strict UTF-8 checks for tokenizer input (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF).
#pragma once

#include <cstddef>
#include <string_view>

#include "runtime/util/status.h"

namespace lmrt {

// Length of the well-formed UTF-8 character starting at text[pos], or 0 when the bytes there are
// not one (bad lead byte, bad continuation, overlong, surrogate, out of range, truncated).
size_t utf8_char_length(std::string_view text, size_t pos);

// Ok when `text` is entirely well-formed UTF-8; otherwise bad_utf8 naming the byte offset of the
// first character that is not.
Status validate_utf8(std::string_view text);

}  // namespace lmrt
