// A persistent pool of worker threads owned by one context. run() hands the same job to every
// thread (the caller is thread 0) and returns when all are done; no thread is created per call.
//
// Dispatch is lock-free: the caller publishes the job by bumping an atomic generation and waits on an
// atomic count of unfinished workers. Workers spin on the generation for a while before sleeping on it
// (std::atomic::wait, a futex), so the ~150 back-to-back calls of one decode step cost no system call;
// the caller only issues a wake-up when some worker actually sleeps.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

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

  std::vector<std::thread> workers_;
  JobRef job_{nullptr, nullptr};  // written before generation_ is bumped, read after
  bool spin_ = true;
  alignas(64) std::atomic<uint64_t> generation_{0};  // bumped once per run(); a stop is a bump too
  std::atomic<uint32_t> sleepers_{0};                // workers blocked in generation_.wait()
  std::atomic<bool> stop_{false};
  alignas(64) std::atomic<size_t> pending_{0};  // workers still running the current job
  std::atomic<bool> caller_waiting_{false};     // the caller sleeps in pending_.wait()
};

}  // namespace lmrt
