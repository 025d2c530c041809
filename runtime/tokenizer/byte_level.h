// GPT-2's byte-level alphabet: every byte is written as one printable Unicode character (printable
// ASCII and Latin-1 bytes as themselves, the rest as U+0100 onwards), so that byte-level BPE
// vocabularies and merges hold only printable text (a space is 'Ġ', U+0120).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lmrt {

// UTF-8 of the character that stands for byte `b`.
std::string_view byte_level_char(uint8_t b);

// Appends the alphabet's text for `bytes`.
void encode_byte_level(std::string_view bytes, std::string* out);

// Appends the bytes `text` stands for; a character outside the alphabet is kept as its own UTF-8.
void decode_byte_level(std::string_view text, std::string* out);

}  // namespace lmrt
