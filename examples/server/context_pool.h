// N contexts on one shared model, handed out one request at a time, with a bounded wait queue.
#pragma once

#include <lmrt/lmrt.h>

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace server {

class ContextPool {
 public:
  // Exclusive use of one context until destroyed. The pool must outlive every lease.
  class Lease {
   public:
    Lease(ContextPool* pool, lmrt_context* ctx) : pool_(pool), ctx_(ctx) {}
    ~Lease() { pool_->release(ctx_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    lmrt_context* context() const { return ctx_; }

   private:
    ContextPool* pool_;
    lmrt_context* ctx_;
  };

  struct Stats {
    size_t idle, busy, queued, max_queue;
  };

  // Creates `n` contexts with `params` (attaching `cache` when not NULL). Empty on failure, with
  // the library's message in *error.
  static std::unique_ptr<ContextPool> create(lmrt_model* model, const lmrt_context_params& params, size_t n,
                                             size_t max_queue, lmrt_cache* cache, std::string* error);
  ~ContextPool();
  ContextPool(const ContextPool&) = delete;
  ContextPool& operator=(const ContextPool&) = delete;

  // A free context, waiting in line when all are busy; nullptr at once when `max_queue` requests
  // already wait.
  std::unique_ptr<Lease> acquire();

  Stats stats() const;
  uint32_t n_ctx() const { return n_ctx_; }

 private:
  ContextPool(size_t max_queue) : max_queue_(max_queue) {}
  void release(lmrt_context* ctx);

  const size_t max_queue_;
  uint32_t n_ctx_ = 0;
  std::vector<lmrt_context*> all_;
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::vector<lmrt_context*> idle_;
  size_t waiting_ = 0;
};

}  // namespace server
