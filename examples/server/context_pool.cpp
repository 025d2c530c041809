#include "context_pool.h"

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
  pool->idle_ = pool->all_;
  return pool;
}

ContextPool::~ContextPool() {
  for (lmrt_context* ctx : all_) lmrt_context_free(ctx);
}

std::unique_ptr<ContextPool::Lease> ContextPool::acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  if (idle_.empty()) {
    if (waiting_ >= max_queue_) return nullptr;
    ++waiting_;
    freed_.wait(lock, [&] { return !idle_.empty(); });
    --waiting_;
  }
  lmrt_context* ctx = idle_.back();
  idle_.pop_back();
  return std::make_unique<Lease>(this, ctx);
}

void ContextPool::release(lmrt_context* ctx) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(ctx);
  }
  freed_.notify_one();
}

ContextPool::Stats ContextPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Stats{idle_.size(), all_.size() - idle_.size(), waiting_, max_queue_};
}

}  // namespace server
