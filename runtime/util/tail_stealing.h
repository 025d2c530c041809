// Units of work split between a pool's threads as fixed shares, with the tail stolen: each thread takes its own
// contiguous share from the front, in order, and a thread whose share is done takes units from the back of the
// share with the most left. A thread so reads what a fixed split gives it (what it was warmed with, see
// read_warmer.h) until the end, where a thread slowed by the host or by serial work before the dispatch no longer
// leaves the others waiting at the barrier.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace lmrt {

class TailStealing {
 public:
  TailStealing() = default;  // for no threads until allocate()
  // Room for max_threads shares; false when it cannot be allocated.
  bool allocate(size_t max_threads) {
    ranges_.reset(new (std::nothrow) Range[max_threads]);
    max_threads_ = ranges_ != nullptr ? max_threads : 0;
    return ranges_ != nullptr;
  }

  size_t max_threads() const { return max_threads_; }

  // Thread t < n_threads <= max_threads() owns units_of(t) units (fewer than 2^32 in all). Called before the
  // dispatch that takes them, which publishes the stores.
  template <typename UnitsOf>
  void reset(size_t n_threads, UnitsOf&& units_of) {
    n_threads_ = n_threads;
    size_t first = 0;
    for (size_t t = 0; t < n_threads; ++t) {
      const size_t n = units_of(t);
      ranges_[t].first = first;
      ranges_[t].v.store(pack(first, first + n), std::memory_order_relaxed);
      first += n;
    }
  }

  // The next unit for `thread`: its own front, else the back of the share with the most left; as the thread
  // whose share it is (*owner) and its index in that share (*unit). False once every share is empty. Each unit is
  // handed out exactly once.
  bool next(size_t thread, size_t* owner, size_t* unit) {
    size_t u;
    if (take(ranges_[thread].v, /*from_back=*/false, &u)) {
      *owner = thread, *unit = u - ranges_[thread].first;
      return true;
    }
    for (;;) {
      size_t victim = n_threads_, most = 0;
      for (size_t t = 0; t < n_threads_; ++t) {
        const uint64_t v = ranges_[t].v.load(std::memory_order_relaxed);
        const size_t left = back(v) > front(v) ? back(v) - front(v) : 0;
        if (left > most) victim = t, most = left;
      }
      if (victim == n_threads_) return false;
      if (take(ranges_[victim].v, /*from_back=*/true, &u)) {
        *owner = victim, *unit = u - ranges_[victim].first;
        return true;
      }
    }
  }

 private:
  struct alignas(64) Range {
    std::atomic<uint64_t> v{0};  // front in the low 32 bits, back (one past the last unit) in the high
    size_t first = 0;            // the share's first unit, as reset() set it
  };
  static uint64_t pack(size_t front, size_t back) { return static_cast<uint64_t>(back) << 32 | front; }
  static size_t front(uint64_t v) { return static_cast<size_t>(v & 0xffffffffu); }
  static size_t back(uint64_t v) { return static_cast<size_t>(v >> 32); }

  static bool take(std::atomic<uint64_t>& r, bool from_back, size_t* unit) {
    uint64_t v = r.load(std::memory_order_relaxed);
    for (;;) {
      const size_t f = front(v), b = back(v);
      if (f >= b) return false;
      const uint64_t taken = from_back ? pack(f, b - 1) : pack(f + 1, b);
      if (r.compare_exchange_weak(v, taken, std::memory_order_relaxed)) {
        *unit = from_back ? b - 1 : f;
        return true;
      }
    }
  }

  std::unique_ptr<Range[]> ranges_;
  size_t max_threads_ = 0, n_threads_ = 0;
};

}  // namespace lmrt
