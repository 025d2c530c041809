// The memory a thread reads in its next pool job, and the walk that pulls it toward the thread's L2
// cache while the thread waits at the barrier before that job (ThreadPool::run with a plan). A decode
// step is ~60 short dispatches; without this a thread that finishes first only spins, and every job
// starts its reads cold.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace lmrt {

// A few byte ranges, in the order the job reads them.
struct NextReads {
  static constexpr size_t kMaxSpans = 16;
  struct Span {
    const uint8_t* p;
    size_t bytes;
  };
  Span spans[kMaxSpans];
  size_t count = 0;

  // Empty spans and spans past kMaxSpans are dropped: reading memory early is only a hint.
  void add(const void* p, size_t bytes) {
    if (count < kMaxSpans && bytes > 0) spans[count++] = {static_cast<const uint8_t*>(p), bytes};
  }
};

// Walks a NextReads a few cache lines per step(). Each span is taken as kParts interleaved parts, since
// the decode kernels read a range as several streams far apart: the starts of all of them come first.
class ReadWarmer {
 public:
  static constexpr size_t kParts = 8, kStepBytes = 512, kLine = 64;
  // At most this much per walk: half of a 1 MiB L2, so what was pulled is still there when it is read.
  static constexpr size_t kBudgetBytes = size_t{512} << 10;

  ReadWarmer() = default;  // nothing to walk
  explicit ReadWarmer(const NextReads* r, size_t budget = kBudgetBytes) : r_(r), budget_(budget) {}

  // Calls touch(line) for the cache lines of the next kStepBytes of the walk; false, touching nothing,
  // once every span (or the budget) is done.
  template <typename Touch>
  bool step(Touch&& touch) {
    if (r_ == nullptr) return false;
    for (;;) {
      if (span_ == r_->count || done_ >= budget_) {
        r_ = nullptr;
        return false;
      }
      const NextReads::Span& s = r_->spans[span_];
      const size_t part_bytes = ((s.bytes + kParts - 1) / kParts + kLine - 1) / kLine * kLine;  // whole lines
      if (offset_ >= part_bytes) {  // every part of this span is done
        ++span_;
        part_ = offset_ = 0;
        continue;
      }
      const size_t begin = part_ * part_bytes + offset_;
      const size_t end = std::min({begin + kStepBytes, (part_ + 1) * part_bytes, s.bytes});
      if (++part_ == kParts) {
        part_ = 0;
        offset_ += kStepBytes;
      }
      if (begin >= end) continue;  // the last parts of a short span are empty
      // Whole lines of [begin, end), also where the span does not start on a line.
      const uintptr_t first = reinterpret_cast<uintptr_t>(s.p + begin) / kLine * kLine;
      const uintptr_t last = reinterpret_cast<uintptr_t>(s.p + end - 1);
      for (uintptr_t a = first; a <= last; a += kLine) touch(reinterpret_cast<const uint8_t*>(a));
      done_ += end - begin;
      return true;
    }
  }
  // One step, pulling the lines toward L2.
  bool step() {
    return step([](const uint8_t* line) { __builtin_prefetch(line, 0, 2); });
  }

 private:
  const NextReads* r_ = nullptr;
  size_t budget_ = 0;
  size_t span_ = 0, part_ = 0, offset_ = 0, done_ = 0;
};

}  // namespace lmrt
