// The workers that run the server's requests, with a bounded queue of waiting jobs. Either N
// contexts on one shared model, each driven by its own worker thread (create), or one context
// whose batch engine runs the requests of N workers as sequences of one KV arena, stepped on the
// engine's own thread (create_batched). The thread count is N whatever the queue length: a waiting
// request costs a queue entry, not a thread.
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

// What a job generates with: a context of its own, or the shared batch engine and, for what the
// engine cannot run (context_shift), a context that such jobs take turns on under shift_mu.
struct Lane {
  lmrt_context* ctx = nullptr;
  lmrt_engine* engine = nullptr;
  lmrt_context* shift_ctx = nullptr;
  std::mutex* shift_mu = nullptr;
};

class ContextPool {
 public:
  // Runs on a worker with exclusive use of its lane's context (or a share of the engine). `abandon`
  // is true when the pool is stopping before the job started: the job must answer its client
  // without generating.
  using Job = std::function<void(const Lane& lane, bool abandon)>;

  struct Stats {
    size_t idle, busy, queued, max_queue;
    // With the batch engine: its requests waiting for a sequence, its busy sequences, its sequences
    // and the arena's cells used and in all (else 0).
    size_t engine_queued = 0, sequences_busy = 0, sequences = 0;
    uint64_t kv_cells_used = 0, kv_cells = 0;
  };

  // Creates `n` contexts with `params` (attaching `cache` when not NULL) and their workers. Empty
  // on failure, with the library's message in *error.
  static std::unique_ptr<ContextPool> create(lmrt_model* model, const lmrt_context_params& params, size_t n,
                                             size_t max_queue, lmrt_cache* cache, std::string* error);
  // One context whose engine decodes up to S = min(n_sequences, 16) requests at once, with S x
  // params.n_ctx cells (each request may hold params.n_ctx of them, as on a context of its own),
  // and n_sequences workers (beyond 16, requests wait in the engine), and a context of params for
  // the jobs that shift their context. params.n_ctx must not be 0. `cache` (may be NULL) answers
  // deterministic requests on both.
  static std::unique_ptr<ContextPool> create_batched(lmrt_model* model, const lmrt_context_params& params,
                                                     size_t n_sequences, size_t max_queue, lmrt_cache* cache,
                                                     std::string* error);
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
  // The cells one request may hold.
  uint32_t n_ctx() const { return n_ctx_; }
  bool batched() const { return engine_ != nullptr; }

 private:
  explicit ContextPool(size_t max_queue) : max_queue_(max_queue) {}
  void work(Lane lane);

  const size_t max_queue_;
  uint32_t n_ctx_ = 0;
  std::vector<lmrt_context*> all_;
  lmrt_engine* engine_ = nullptr;  // on all_[0], when batched
  std::mutex shift_mu_;            // all_[1], when batched: one job at a time
  size_t n_workers_ = 0;
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
