#include "context_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "batched_choices.h"

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
  pool->n_workers_ = n;
  for (lmrt_context* ctx : pool->all_)
    pool->workers_.emplace_back([p = pool.get(), ctx] { p->work(Lane{ctx, nullptr, nullptr, nullptr}); });
  return pool;
}

std::unique_ptr<ContextPool> ContextPool::create_batched(lmrt_model* model, const lmrt_context_params& params,
                                                         size_t n_sequences, size_t max_queue, lmrt_cache* cache,
                                                         std::string* error) {
  std::unique_ptr<ContextPool> pool(new ContextPool(max_queue));
  const uint32_t n_lanes = static_cast<uint32_t>(std::min<size_t>(n_sequences, 16));  // the engine's most
  lmrt_context_params arena = params;
  arena.n_ctx = params.n_ctx * n_lanes;
  char err[512] = "";
  lmrt_context* ctx = nullptr;
  lmrt_status st = lmrt_context_create(model, &arena, &ctx, err, sizeof err);
  if (st != LMRT_OK) {
    *error = std::string(lmrt_status_str(st)) + ": " + err;
    return nullptr;
  }
  pool->all_.push_back(ctx);
  lmrt_engine_params ep;
  lmrt_engine_params_init(&ep);
  ep.max_sequences = n_lanes;
  ep.on_finish = notice_finish;  // finishes wake the request's thread (batched_choices.h)
  ep.cache = cache;
  st = lmrt_engine_create(ctx, &ep, &pool->engine_, err, sizeof err);
  if (st == LMRT_OK && (st = lmrt_engine_start(pool->engine_)) != LMRT_OK)
    std::snprintf(err, sizeof err, "%s", lmrt_engine_last_error(pool->engine_));
  if (st != LMRT_OK) {
    *error = std::string(lmrt_status_str(st)) + ": " + err;
    return nullptr;
  }
  lmrt_context* shift = nullptr;
  st = lmrt_context_create(model, &params, &shift, err, sizeof err);
  if (st != LMRT_OK) {
    *error = std::string(lmrt_status_str(st)) + ": " + err;
    return nullptr;
  }
  if (cache != nullptr) lmrt_context_set_cache(shift, cache);
  pool->all_.push_back(shift);
  pool->n_ctx_ = params.n_ctx;
  pool->n_workers_ = n_sequences;
  for (size_t i = 0; i < n_sequences; ++i)
    pool->workers_.emplace_back([p = pool.get(), shift] { p->work(Lane{nullptr, p->engine_, shift, &p->shift_mu_}); });
  return pool;
}

ContextPool::~ContextPool() {
  stop(0);
  if (engine_ != nullptr) {
    (void)lmrt_engine_stop(engine_);
    lmrt_engine_free(engine_);
  }
  for (lmrt_context* ctx : all_) lmrt_context_free(ctx);
}

bool ContextPool::submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_ || queue_.size() >= max_queue_ + (n_workers_ - busy_)) return false;
    queue_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void ContextPool::work(Lane lane) {
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
      job(lane, abandon);
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
  Stats s{};
  {
    std::lock_guard<std::mutex> lock(mu_);
    s = Stats{n_workers_ - busy_, busy_, queue_.size(), max_queue_};
  }
  if (engine_ != nullptr) {
    lmrt_engine_stats es{};
    es.struct_size = sizeof es;
    if (lmrt_engine_get_stats(engine_, &es) == LMRT_OK) {
      s.engine_queued = es.n_queued;
      s.sequences_busy = es.n_running;
      s.sequences = es.max_sequences;
      s.kv_cells_used = es.n_cells_used;
      s.kv_cells = es.n_cells;
    }
  }
  return s;
}

}  // namespace server
