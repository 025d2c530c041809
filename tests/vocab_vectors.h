// llama.cpp's tokenizer test vectors (../shared/vocab/ggml-vocab-NAME.gguf.inp / .out) as strings and ids.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace lmrt::test {

// The .inp format: strings separated by lines reading "__ggml_vocab_test__"; the newline that ends
// a string's last line belongs to the separator, and the last string ends at the final separator.
inline std::vector<std::string> parse_vocab_inp(const std::string& data) {
  static const std::string kSep = "__ggml_vocab_test__";
  std::vector<std::string> strings;
  std::string current;
  bool have_line = false;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    const std::string line = data.substr(pos, end - pos);
    pos = end + 1;
    if (line == kSep) {
      strings.push_back(current);
      current.clear();
      have_line = false;
    } else {
      if (have_line) current += '\n';
      current += line;
      have_line = true;
    }
  }
  return strings;
}

// The .out format: one line of space-separated ids per string.
inline std::vector<std::vector<int32_t>> parse_vocab_out(const std::string& data) {
  std::vector<std::vector<int32_t>> lines;
  std::istringstream in(data);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<int32_t> ids;
    std::istringstream words(line);
    long long id = 0;
    while (words >> id) ids.push_back(static_cast<int32_t>(id));
    lines.push_back(ids);
  }
  return lines;
}

}  // namespace lmrt::test
