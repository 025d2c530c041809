// N contexts on one shared model, each driven by its own worker thread, with a bounded queue of
// waiting jobs. The thread count is N whatever the queue length: a waiting request costs a queue
// entry, not a thread.
#pragma once

#include <lmrt/lmrt.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace server {

class ContextPool {
 public:
  // Runs on a worker with exclusive use of a context. `abandon` is true when the pool is stopping
  // before the job started: the job must answer its client without generating.
  using Job = std::function<void(lmrt_context* ctx, bool abandon)>;

  struct Stats {
    size_t idle, busy, queued, max_queue;
  };

  // Creates `n` contexts with `params` (attaching `cache` when not NULL) and their workers. Empty
  // on failure, with the library's message in *error.
  static std::unique_ptr<ContextPool> create(lmrt_model* model, const lmrt_context_params& params, size_t n,
                                             size_t max_queue, lmrt_cache* cache, std::string* error);
  ~ContextPool();  // runs stop(0)
  ContextPool(const ContextPool&) = delete;
  ContextPool& operator=(const ContextPool&) = delete;

  // Queues a job; false at once when `max_queue` jobs already wait or the pool is stopping.
  bool submit(Job job);

  // Refuses new jobs, lets queued and running ones finish for up to `grace_ms`, then abandons the
  // queued ones and raises stopping() so running ones cancel; returns when every worker is done.
  void stop(int64_t grace_ms);
  // True once stop() began: no new job is taken.
  bool stopping() const {
    std::lock_guard<std::mutex> lock(mu_);
    return !accepting_;
  }
  // True once a stop's grace period is over: running jobs must cancel.
  bool cancelling() const { return cancel_all_.load(); }

  Stats stats() const;
  uint32_t n_ctx() const { return n_ctx_; }

 private:
  explicit ContextPool(size_t max_queue) : max_queue_(max_queue) {}
  void work(lmrt_context* ctx);

  const size_t max_queue_;
  uint32_t n_ctx_ = 0;
  std::vector<lmrt_context*> all_;
  std::vector<std::thread> workers_;
  mutable std::mutex mu_;
  std::condition_variable wake_;  // a job arrived or the pool is stopping
  std::condition_variable idle_;  // a job finished
  std::deque<Job> queue_;
  size_t busy_ = 0;
  bool accepting_ = true;
  bool quit_ = false;
  std::atomic<bool> cancel_all_{false};
};

}  // namespace server
