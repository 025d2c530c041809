#include "logits_file.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "runtime/util/file_replacer.h"

namespace cli {

bool write_logits_file(const std::string& path, const std::vector<float>& values, std::string* error) {
  std::string bytes(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    for (int b = 0; b < 4; ++b) bytes[4 * i + b] = static_cast<char>((bits >> (8 * b)) & 0xFF);
  }
  // Never through a link, over a folder, FIFO or device, or leaving a partial file (file_replacer.h).
  const lmrt::Status s = lmrt::replace_file(path, bytes.data(), bytes.size());
  if (!s.ok()) *error = s.message();
  return s.ok();
}

bool read_logits_file(const std::string& path, std::vector<float>* values, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot open '" + path + "'";
    return false;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) {
    *error = "cannot read '" + path + "'";
    return false;
  }
  if (bytes.size() % 4 != 0) {
    *error = "'" + path + "' has " + std::to_string(bytes.size()) + " bytes, not a whole number of float32 values";
    return false;
  }
  values->resize(bytes.size() / 4);
  for (size_t i = 0; i < values->size(); ++i) {
    uint32_t bits = 0;
    for (int b = 0; b < 4; ++b) bits |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[4 * i + b])) << (8 * b);
    std::memcpy(&(*values)[i], &bits, 4);
  }
  return true;
}

}  // namespace cli
