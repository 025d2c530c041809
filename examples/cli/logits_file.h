// Logits files as `lmrt logits` and llama.cpp's `oracle logits` write them: raw little-endian float32,
// n_vocab values per row, no header.
#pragma once

#include <string>
#include <vector>

namespace cli {

// Writes the file as lmrt writes its files (runtime/util/file_replacer.h: only ever replacing a regular
// file, and whole). Returns false with a message in *error when it cannot.
bool write_logits_file(const std::string& path, const std::vector<float>& values, std::string* error);
// Returns false with a message when the file cannot be read or its size is not a whole number of floats.
bool read_logits_file(const std::string& path, std::vector<float>* values, std::string* error);

}  // namespace cli
