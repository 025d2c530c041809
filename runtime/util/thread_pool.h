// A persistent pool of worker threads owned by one context. run() hands the same job to every
// thread (the caller is thread 0) and returns when all are done; no thread is created per call.
//
// Dispatch is lock-free: the caller publishes the job by bumping an atomic generation and waits on an
// atomic count of unfinished workers. Workers spin on the generation for a while before sleeping on it
// (std::atomic::wait, a futex), so the ~50 back-to-back calls of one decode step cost no system call;
// the caller only issues a wake-up when some worker actually sleeps. While a thread waits it can pull the
// memory of its part of the next call toward its cache (run with a plan, read_warmer.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/util/read_warmer.h"

namespace lmrt {

class ThreadPool {
 public:
  // n_threads >= 1 counts the calling thread, so n_threads - 1 workers are started.
  explicit ThreadPool(size_t n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size() + 1; }

  // Calls job(thread_index, n_threads) on every thread, the caller included, and waits.
  // `job` must not throw. Allocates nothing. Not reentrant: one run() at a time.
  template <typename Job>
  void run(Job&& job) {
    run(std::forward<Job>(job), [](size_t, size_t, NextReads&) {});
  }

  // run(job) that also says what each thread reads in the run() after this one: before the job starts,
  // plan(thread_index, n_threads, NextReads&) is called on the caller for every thread (with empty
  // NextReads). A thread done with its part pulls its next reads toward its L2 cache (ReadWarmer)
  // while it waits, for the other threads or for the next run(), so a barrier wait moves bytes the
  // next job needs instead of only spinning. Spans are only prefetched (which never faults), so they may
  // be freed at any time.
  template <typename Job, typename Plan>
  void run(Job&& job, Plan&& plan) {
    if (size() > 1) {
      NextReads* slot = next_reads_for(generation_.load(std::memory_order_relaxed) + 1);
      for (size_t i = 0; i < size(); ++i) {
        slot[i].count = 0;
        plan(i, size(), slot[i]);
      }
    }
    auto* p = &job;
    run_erased(JobRef{p, [](void* j, size_t i, size_t n) { (*static_cast<decltype(p)>(j))(i, n); }});
  }

  // Splits [0, n) into contiguous chunks of `grain` (the last shorter) handed out dynamically;
  // calls fn(begin, end) for each.
  template <typename Fn>
  void parallel_for(size_t n, size_t grain, Fn&& fn) {
    if (n == 0) return;
    if (grain == 0) grain = 1;
    const size_t n_chunks = (n + grain - 1) / grain;
    if (size() == 1 || n_chunks == 1) {
      fn(size_t{0}, n);
      return;
    }
    std::atomic<size_t> next{0};
    run([&](size_t, size_t) {
      for (;;) {
        const size_t c = next.fetch_add(1, std::memory_order_relaxed);
        if (c >= n_chunks) break;
        const size_t b = c * grain;
        fn(b, b + grain < n ? b + grain : n);
      }
    });
  }

 private:
  // A non-owning reference to a job, so dispatch never allocates.
  struct JobRef {
    void* obj;
    void (*call)(void*, size_t, size_t);
  };
  void run_erased(JobRef job);
  void worker_loop(size_t index);
  void stop_workers();  // wakes every worker with stop_ set and joins it
  // The run() of generation g writes one slot of next reads per thread and its threads read them
  // after their part; two sets by parity, so the caller fills g + 1's while g's may still be read.
  NextReads* next_reads_for(uint64_t g) { return next_reads_.data() + (g & 1) * size(); }

  std::vector<std::thread> workers_;
  std::vector<NextReads> next_reads_;  // [2][size()], empty spans unless run() was given a plan
  JobRef job_{nullptr, nullptr};       // written before generation_ is bumped, read after
  bool spin_ = true;
  alignas(64) std::atomic<uint64_t> generation_{0};  // bumped once per run(); a stop is a bump too
  std::atomic<uint32_t> sleepers_{0};                // workers blocked in generation_.wait()
  std::atomic<bool> stop_{false};
  alignas(64) std::atomic<size_t> pending_{0};  // workers still running the current job
  std::atomic<bool> caller_waiting_{false};     // the caller sleeps in pending_.wait()
};

}  // namespace lmrt
