#include "runtime/generate/context.h"

#include <algorithm>
#include <thread>

namespace lmrt {

namespace {
constexpr uint32_t kMaxCtx = 1u << 20;
constexpr uint32_t kMaxThreads = 512;
}  // namespace

Status Context::create(const LlamaModel& model, const ContextParams& in, std::unique_ptr<Context>* out) {
  ContextParams p = in;
  if (p.n_ctx == 0) p.n_ctx = model.hparams().n_ctx_train;
  if (p.n_ctx > kMaxCtx)
    return Error(Code::invalid_argument,
                 "n_ctx " + std::to_string(p.n_ctx) +
                     (in.n_ctx == 0 ? " (the model's training context: pass a smaller n_ctx)" : "") +
                     " is above the limit " + std::to_string(kMaxCtx));
  if (p.n_batch == 0) p.n_batch = std::min<uint32_t>(512, p.n_ctx);
  p.n_batch = std::min(p.n_batch, p.n_ctx);
  if (p.n_threads == 0) p.n_threads = std::max(1u, std::thread::hardware_concurrency());
  if (p.n_threads > kMaxThreads)
    return Error(Code::invalid_argument,
                 "n_threads " + std::to_string(p.n_threads) + " is above the limit " + std::to_string(kMaxThreads));

  std::unique_ptr<Context> c(new Context(model));
  c->params_ = p;
  const ModelConfig& hp = model.hparams();
  LMRT_RETURN_IF_ERROR(KvArena::create(hp.n_layer, hp.n_head_kv, hp.head_dim, p.n_ctx, p.kv_type, &c->kv_));
  GraphParams gp;
  gp.n_ctx = p.n_ctx;
  gp.n_batch = p.n_batch;
  gp.logits_all = p.logits_all;
  gp.n_threads = p.n_threads;
  gp.isa = p.isa.value_or(simd::best_isa());
  if (p.steal_from_bytes) gp.steal_from_bytes = *p.steal_from_bytes;
  if (!simd::isa_available(gp.isa))
    return Error(Code::unsupported, std::string("this CPU or build cannot run ") + simd::isa_name(gp.isa) + " kernels");
  LMRT_RETURN_IF_ERROR(LlamaGraph::create(model, gp, &c->graph_));
  try {
    c->tokens_.reserve(p.n_ctx);
    c->pool_ = std::make_unique<ThreadPool>(p.n_threads);
  } catch (const std::bad_alloc&) {
    return Error(Code::out_of_memory, "cannot allocate the context");
  } catch (const std::system_error& e) {
    return Error(Code::internal, std::string("cannot start worker threads: ") + e.what());
  }
  *out = std::move(c);
  return Status::Ok();
}

Status Context::eval(const int32_t* tokens, size_t n) {
  if (n == 0) return Error(Code::invalid_argument, "no tokens to evaluate");
  if (tokens == nullptr) return Error(Code::invalid_argument, "tokens is NULL");
  // The room first: a count past it is refused without reading that many tokens.
  if (n > params_.n_ctx - tokens_.size())
    return Error(Code::context_full, std::to_string(n) + " tokens do not fit: the context holds " +
                                         std::to_string(tokens_.size()) + " of " + std::to_string(params_.n_ctx));
  const uint32_t n_vocab = model_.hparams().n_vocab;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= n_vocab)
      return Error(Code::invalid_argument, "token " + std::to_string(tokens[i]) + " at index " + std::to_string(i) +
                                               " is outside the vocabulary (0.." + std::to_string(n_vocab - 1) + ")");
  size_t done = 0;
  while (done < n) {
    const uint32_t batch = static_cast<uint32_t>(std::min<size_t>(params_.n_batch, n - done));
    graph_->forward(tokens + done, batch, n_past(), *kv_, *pool_);
    tokens_.insert(tokens_.end(), tokens + done, tokens + done + batch);
    last_batch_start_ = done;
    done += batch;
  }
  last_eval_count_ = n;
  return Status::Ok();
}

Status Context::eval_batch(const GraphBatch& b) {
  if (b.n == 0 || b.n > LlamaGraph::kMaxLogitRows || b.n > params_.n_batch)
    return Error(Code::invalid_argument,
                 "a view batch holds 1 to " + std::to_string(LlamaGraph::kMaxLogitRows) + " tokens");
  const uint32_t n_vocab = model_.hparams().n_vocab;
  for (uint32_t t = 0; t < b.n; ++t) {
    if (b.tokens[t] < 0 || static_cast<uint32_t>(b.tokens[t]) >= n_vocab)
      return Error(Code::invalid_argument, "token " + std::to_string(b.tokens[t]) + " is outside the vocabulary");
    if (b.slot_of(t) >= params_.n_ctx || b.pos_of(t) >= params_.n_ctx || b.n_visible(t) > params_.n_ctx)
      return Error(Code::invalid_argument, "a batch slot, position or view lies outside the context");
    for (uint32_t i = 0; i < b.n_visible(t); ++i)
      if (b.visible_slot(t, i) >= params_.n_ctx)
        return Error(Code::invalid_argument, "a view slot lies outside the context");
  }
  GraphBatch all = b;
  all.all_logits = true;
  graph_->forward(all, *kv_, *pool_);
  last_eval_count_ = 0;
  return Status::Ok();
}

Status Context::eval_sequences(const GraphBatch& b) {
  if (b.n == 0 || b.n > params_.n_batch)
    return Error(Code::invalid_argument, "a batch holds 1 to " + std::to_string(params_.n_batch) + " tokens");
  if (b.n_logit_rows > LlamaGraph::kMaxLogitRows || (b.n_logit_rows > 0 && b.logit_rows == nullptr))
    return Error(Code::invalid_argument,
                 "a batch keeps the logits of at most " + std::to_string(LlamaGraph::kMaxLogitRows) + " tokens");
  const uint32_t n_vocab = model_.hparams().n_vocab;
  for (uint32_t t = 0; t < b.n; ++t)
    if (b.tokens[t] < 0 || static_cast<uint32_t>(b.tokens[t]) >= n_vocab)
      return Error(Code::invalid_argument, "token " + std::to_string(b.tokens[t]) + " is outside the vocabulary");
  graph_->forward(b, *kv_, *pool_);
  last_eval_count_ = 0;
  return Status::Ok();
}

const float* Context::logits(size_t i) const {
  if (last_eval_count_ == 0 || i >= last_eval_count_) return nullptr;
  if (!params_.logits_all) return i == last_eval_count_ - 1 ? graph_->logits(0) : nullptr;
  if (i < last_batch_start_) return nullptr;  // overwritten by a later batch of the same eval
  return graph_->logits(static_cast<uint32_t>(i - last_batch_start_));
}

Status Context::shift(uint32_t n_keep, uint32_t n_discard) {
  if (n_discard == 0 || static_cast<uint64_t>(n_keep) + n_discard > tokens_.size())
    return Error(Code::invalid_argument, "cannot drop " + std::to_string(n_discard) + " tokens after the first " +
                                             std::to_string(n_keep) + " of " + std::to_string(tokens_.size()));
  graph_->shift_kv(*kv_, n_keep, n_discard, n_past());
  tokens_.erase(tokens_.begin() + n_keep, tokens_.begin() + n_keep + n_discard);
  last_eval_count_ = 0;
  return Status::Ok();
}

void Context::set_restored_tokens(const int32_t* tokens, size_t n) {
  tokens_.assign(tokens, tokens + std::min<size_t>(n, params_.n_ctx));  // within the reserved n_ctx
  last_eval_count_ = 0;
}

void Context::truncate(uint32_t n_keep) {
  if (n_keep < tokens_.size()) tokens_.resize(n_keep);
  last_eval_count_ = 0;
}

}  // namespace lmrt
