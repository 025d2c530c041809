// TokenIndex: finds a token's id from its text. An open-addressing table of ids (with a tag of each
// text's hash) over the vocabulary's own strings: 8 bytes a slot, where a node-based map of
// string_view keys costs ~56 bytes a token and one heap block each.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/util/string_table.h"

namespace lmrt {

class TokenIndex {
 public:
  // Indexes every non-empty text of `texts` (kept by the caller, unchanged, for as long as find is
  // used); a text that appears twice maps to its last id, as in llama.cpp.
  void build(const StringTable& texts);
  // The id of `text`, or -1.
  int32_t find(std::string_view text, const StringTable& texts) const;

 private:
  struct Slot {
    uint32_t tag;  // high bits of the text's hash
    int32_t id;    // -1: empty
  };
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
};

}  // namespace lmrt
