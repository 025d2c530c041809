// StringTable: a list of strings stored back to back in one buffer and found by their end offsets.
// A vocabulary's 150k token texts then take two allocations instead of one std::string (32 bytes,
// plus a heap block for the longer ones) each.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace lmrt {

class StringTable {
 public:
  StringTable() = default;
  StringTable(std::initializer_list<std::string_view> texts) {
    for (std::string_view t : texts) push_back(t);
  }

  void reserve(size_t n_strings, size_t n_bytes) {
    ends_.reserve(n_strings);
    pool_.reserve(n_bytes);
  }
  // Appends `text`; false (and nothing appended) when the pool would pass 4 GiB.
  bool push_back(std::string_view text) {
    if (text.size() > std::numeric_limits<uint32_t>::max() - pool_.size()) return false;
    pool_.append(text);
    ends_.push_back(static_cast<uint32_t>(pool_.size()));
    return true;
  }
  // Frees the memory too.
  void clear() {
    ends_ = {};
    pool_ = {};
  }

  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  std::string_view operator[](size_t i) const {
    const uint32_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(pool_.data() + begin, ends_[i] - begin);
  }

 private:
  std::string pool_;
  std::vector<uint32_t> ends_;
};

}  // namespace lmrt
