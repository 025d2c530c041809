// Sorted, disjoint byte ranges of a text: which parts of a rendered chat came from the caller's data
// (runtime/chat) and so may not become special tokens (runtime/tokenizer).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace lmrt {

struct ByteRange {
  size_t begin;
  size_t end;  // exclusive
};

using ByteRanges = std::vector<ByteRange>;

// Appends [begin, end) to sorted ranges that all end at or before `begin`, merging touching ranges.
inline void add_range(ByteRanges& ranges, size_t begin, size_t end) {
  if (begin >= end) return;
  if (!ranges.empty() && ranges.back().end == begin) {
    ranges.back().end = end;
    return;
  }
  ranges.push_back({begin, end});
}

// Whether [begin, end) overlaps any of the sorted ranges.
inline bool overlaps(const ByteRanges& ranges, size_t begin, size_t end) {
  auto it =
      std::lower_bound(ranges.begin(), ranges.end(), begin, [](const ByteRange& r, size_t b) { return r.end <= b; });
  return it != ranges.end() && it->begin < end;
}

}  // namespace lmrt
