// BpeMergeTable: the merges of a BPE vocabulary as (left symbol, right symbol) -> (rank, merged
// symbol), in one open-addressing table of 16-byte slots (a node-based map costs ~40 bytes and a
// heap block per merge, and Llama 3 has 280k merges).
#pragma once

#include <cstdint>
#include <vector>

namespace lmrt {

class BpeMergeTable {
 public:
  struct Merge {
    int32_t rank;    // lower merges first
    int32_t result;  // symbol id of the merged text
  };

  // Sizes the table for `n` merges (call once, before add).
  void reserve(uint64_t n);
  // Adds a merge; a pair already present keeps its first (lowest) rank.
  void add(int32_t left, int32_t right, Merge merge);
  // The merge of the pair, or nullptr.
  const Merge* find(int32_t left, int32_t right) const;

 private:
  struct Slot {
    uint64_t key;
    Merge merge;  // rank -1: empty
  };
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  static uint64_t hash(uint64_t k) {  // a 64-bit mix (splitmix64's finalizer): ids are dense small integers
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    return k ^ (k >> 31);
  }
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
};

}  // namespace lmrt
