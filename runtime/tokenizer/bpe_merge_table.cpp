#include "runtime/tokenizer/bpe_merge_table.h"

#include <algorithm>
#include <bit>

namespace lmrt {

void BpeMergeTable::reserve(uint64_t n) {
  // At most 3/4 full: most look-ups while merging are misses, which end at the first empty slot.
  const uint64_t capacity = std::bit_ceil(std::max<uint64_t>(16, n + n / 3 + 1));
  slots_.assign(capacity, Slot{0, Merge{-1, -1}});
  mask_ = capacity - 1;
}

void BpeMergeTable::add(int32_t left, int32_t right, Merge merge) {
  const uint64_t k = key(left, right);
  for (uint64_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.merge.rank < 0) {
      s = Slot{k, merge};
      return;
    }
    if (s.key == k) return;
  }
}

const BpeMergeTable::Merge* BpeMergeTable::find(int32_t left, int32_t right) const {
  if (slots_.empty()) return nullptr;
  const uint64_t k = key(left, right);
  for (uint64_t i = hash(k) & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.merge.rank < 0) return nullptr;
    if (s.key == k) return &s.merge;
  }
}

}  // namespace lmrt
