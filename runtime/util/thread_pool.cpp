#include "runtime/util/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace lmrt {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}
// A few hundred microseconds of spinning: long enough to bridge the gaps between the matrix
// multiplications of a decode step and between tokens, short enough not to burn a core for long when
// the context goes idle.
constexpr int kWorkerSpins = 1 << 14;
// The caller waits for workers that are running the same amount of work; past this it sleeps.
constexpr int kCallerSpins = 1 << 12;
}  // namespace

ThreadPool::ThreadPool(size_t n_threads) {
  if (n_threads < 1) n_threads = 1;
  // With more threads than cores a spinning worker takes the core from the one doing the work.
  spin_ = n_threads <= std::max(1u, std::thread::hardware_concurrency());
  next_reads_.resize(2 * n_threads);
  workers_.reserve(n_threads - 1);
  try {
    for (size_t i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  } catch (...) {
    // A thread that could not start (std::system_error): the ones already running must be joined
    // before the exception leaves, or their std::thread destructors terminate the process.
    stop_workers();
    throw;
  }
}

ThreadPool::~ThreadPool() { stop_workers(); }

void ThreadPool::stop_workers() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_erased(JobRef job) {
  const size_t n = size();
  if (n == 1) {
    job.call(job.obj, 0, 1);
    return;
  }
  job_ = job;
  pending_.store(workers_.size(), std::memory_order_relaxed);
  // seq_cst pairs with the worker's sleepers_ increment: either it sees the new generation before
  // sleeping or we see it asleep and wake it.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) != 0) generation_.notify_all();
  job.call(job.obj, 0, n);
  ReadWarmer warm(spin_ ? &next_reads_for(generation_.load(std::memory_order_relaxed))[0] : nullptr);
  // Spin briefly (pulling the next reads meanwhile), then sleep until the last worker wakes us: on a
  // busy machine a spinning caller would take the core from the very worker it waits for.
  for (int i = 0;;) {
    size_t left = pending_.load(std::memory_order_acquire);
    if (left == 0) break;
    if (warm.step()) continue;
    if (i++ < kCallerSpins) {
      cpu_relax();
      continue;
    }
    caller_waiting_.store(true, std::memory_order_seq_cst);
    left = pending_.load(std::memory_order_seq_cst);
    if (left != 0) pending_.wait(left, std::memory_order_seq_cst);
    caller_waiting_.store(false, std::memory_order_relaxed);
  }
}

void ThreadPool::worker_loop(size_t index) {
  uint64_t seen = 0;  // the generation at construction: a worker starting late must not skip a job
  ReadWarmer warm;    // the next reads of the job just run
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int i = 0; spin_ && g == seen && i < kWorkerSpins;) {
      if (!warm.step()) {
        cpu_relax();
        ++i;
      }
      g = generation_.load(std::memory_order_acquire);
    }
    while (g == seen) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      generation_.wait(seen, std::memory_order_seq_cst);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_relaxed)) return;
    job_.call(job_.obj, index, size());
    // Safe to read until generation seen + 2 is published, which waits for this thread's next job.
    warm = ReadWarmer(spin_ ? &next_reads_for(seen)[index] : nullptr);
    // seq_cst pairs with the caller's caller_waiting_ store: it either sees zero or gets woken.
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_waiting_.load(std::memory_order_seq_cst))
      pending_.notify_one();
  }
}

}  // namespace lmrt
