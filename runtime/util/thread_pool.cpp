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
// About 50-100 us of spinning: long enough to bridge the gap between the matrix multiplications of
// one decode step, short enough not to burn a core between tokens.
constexpr int kSpinIterations = 2000;
}  // namespace

ThreadPool::ThreadPool(size_t n_threads) {
  if (n_threads < 1) n_threads = 1;
  // With more threads than cores a spinning worker takes the core from the one doing the work.
  spin_ = n_threads <= std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(n_threads - 1);
  for (size_t i = 1; i < n_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    published_generation_.fetch_add(1, std::memory_order_release);
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_erased(JobRef job) {
  const size_t n = size();
  if (n == 1) {
    job.call(job.obj, 0, 1);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = job;
    pending_ = workers_.size();
    ++generation_;
    published_generation_.store(generation_, std::memory_order_release);
  }
  start_cv_.notify_all();
  job.call(job.obj, 0, n);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_ == 0; });
  job_ = JobRef{nullptr, nullptr};
}

void ThreadPool::worker_loop(size_t index) {
  uint64_t seen = 0;
  for (;;) {
    for (int i = 0; spin_ && i < kSpinIterations && published_generation_.load(std::memory_order_acquire) == seen; ++i)
      cpu_relax();
    JobRef job{nullptr, nullptr};
    {
      std::unique_lock<std::mutex> lock(mu_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    job.call(job.obj, index, size());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }
}

}  // namespace lmrt
