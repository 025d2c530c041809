#include "context_pool.h"

#include <chrono>

namespace server {

std::unique_ptr<ContextPool> ContextPool::create(lmrt_model* model, const lmrt_context_params& params, size_t n,
                                                 size_t max_queue, lmrt_cache* cache, std::string* error) {
  std::unique_ptr<ContextPool> pool(new ContextPool(max_queue));
  for (size_t i = 0; i < n; ++i) {
    char err[512] = "";
    lmrt_context* ctx = nullptr;
    const lmrt_status st = lmrt_context_create(model, &params, &ctx, err, sizeof err);
    if (st != LMRT_OK) {
      *error = std::string(lmrt_status_str(st)) + ": " + err;
      return nullptr;
    }
    pool->all_.push_back(ctx);
    if (cache != nullptr) lmrt_context_set_cache(ctx, cache);
  }
  lmrt_context_params got;
  lmrt_context_params_init(&got);
  if (!pool->all_.empty()) lmrt_context_get_params(pool->all_.front(), &got);
  pool->n_ctx_ = got.n_ctx;
  for (lmrt_context* ctx : pool->all_) pool->workers_.emplace_back([p = pool.get(), ctx] { p->work(ctx); });
  return pool;
}

ContextPool::~ContextPool() {
  stop(0);
  for (lmrt_context* ctx : all_) lmrt_context_free(ctx);
}

bool ContextPool::submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_ || queue_.size() >= max_queue_ + (all_.size() - busy_)) return false;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void ContextPool::work(lmrt_context* ctx) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return quit_ || !queue_.empty(); });
    if (queue_.empty()) return;  // quitting with nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    ++busy_;
    const bool abandon = cancel_all_.load();
    lock.unlock();
    try {
      job(ctx, abandon);
    } catch (...) {
      // A job answers its own client; an exception must not end the worker.
    }
    job = nullptr;
    lock.lock();
    --busy_;
    idle_.notify_all();
  }
}

void ContextPool::stop(int64_t grace_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  accepting_ = false;
  idle_.wait_for(lock, std::chrono::milliseconds(grace_ms), [&] { return queue_.empty() && busy_ == 0; });
  // Past the grace period: queued jobs run abandoned (they answer at once), running ones cancel.
  cancel_all_ = true;
  quit_ = true;
  lock.unlock();
  wake_.notify_all();
  for (std::thread& t : workers_)
    if (t.joinable()) t.join();
}

ContextPool::Stats ContextPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{all_.size() - busy_, busy_, queue_.size(), max_queue_};
}

}  // namespace server
