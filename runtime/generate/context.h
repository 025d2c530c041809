// Per-thread inference state over an immutable model: the KV arena, the forward-pass scratch,
// the thread pool, and the tokens the arena currently holds. Everything is allocated in create().
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "runtime/graph/llama_graph.h"
#include "runtime/kv/kv_arena.h"
#include "runtime/model/llama_model.h"
#include "runtime/util/status.h"
#include "runtime/util/thread_pool.h"

namespace lmrt {

struct ContextParams {
  uint32_t n_ctx = 0;      // 0: the model's training context
  uint32_t n_batch = 0;    // 0: min(512, n_ctx)
  uint32_t n_threads = 0;  // 0: online CPUs
  KvType kv_type = KvType::f16;
  bool logits_all = false;
  std::optional<simd::Isa> isa;            // unset: the best this CPU runs (or $LMRT_ISA)
  std::optional<size_t> steal_from_bytes;  // unset: GraphParams' default (tests take 0)
};

class Context {
 public:
  // Errors: invalid_argument (sizes beyond limits), out_of_memory.
  static Status create(const LlamaModel& model, const ContextParams& params, std::unique_ptr<Context>* out);

  const LlamaModel& model() const { return model_; }
  const ContextParams& params() const { return params_; }  // with defaults applied
  uint32_t n_ctx() const { return params_.n_ctx; }
  uint32_t n_past() const { return static_cast<uint32_t>(tokens_.size()); }
  const std::vector<int32_t>& tokens() const { return tokens_; }
  size_t kv_bytes() const { return kv_->bytes(); }
  const KvArena& kv() const { return *kv_; }
  size_t scratch_bytes() const { return graph_->scratch_bytes(); }

  // Evaluates tokens after those already held, in batches of n_batch. Errors: invalid_argument
  // (empty, token out of range), context_full (nothing is evaluated; the context is unchanged).
  Status eval(const int32_t* tokens, size_t n);
  // Logits of token i of the last eval (the last token's is i = n - 1); nullptr when i is not kept.
  const float* logits(size_t i) const;
  size_t last_eval_count() const { return last_eval_count_; }
  // Runs a batch with its own positions, slots and views (beam search) and keeps every token's
  // logits (batch.n <= LlamaGraph::kMaxLogitRows); the held tokens are not changed, so the caller
  // truncates afterwards. Errors: invalid_argument for slots or views outside the arena.
  Status eval_batch(const GraphBatch& batch);
  // Logits of token i of the last eval_batch.
  const float* batch_logits(uint32_t i) const { return graph_->logits(i); }
  // Runs a batch of many sequences' tokens (the batch engine: per-token positions, slots and views
  // that it built from its KvSequences, which keep them inside the arena) with logits for the tokens
  // batch.logit_rows names, read back through batch_logits(i). The held tokens are not changed.
  // Errors: invalid_argument (empty, larger than n_batch, more than kMaxLogitRows logit rows, a token
  // outside the vocabulary).
  Status eval_sequences(const GraphBatch& batch);
  // Lets views that are not one run (sequences sharing prefix cells) give the bits of a run
  // (LlamaGraph::reserve_gather). Error: out_of_memory.
  Status reserve_scattered_views() { return graph_->reserve_gather(); }

  // Forgets tokens from position n_keep on (their KV entries are simply overwritten later).
  void truncate(uint32_t n_keep);
  // Drops n_discard tokens after the first n_keep and moves the rest down (see
  // LlamaGraph::shift_kv). Errors: invalid_argument when the range is not inside the held tokens.
  Status shift(uint32_t n_keep, uint32_t n_discard);

  // Hooks for restoring a saved state (context_state.cpp): the caller writes the KV rows of
  // positions [0, n) into restore_kv(), then declares the n tokens they belong to (n <= n_ctx).
  KvArena& restore_kv() { return *kv_; }
  void set_restored_tokens(const int32_t* tokens, size_t n);

 private:
  Context(const LlamaModel& model) : model_(model) {}

  const LlamaModel& model_;
  ContextParams params_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<KvArena> kv_;
  std::unique_ptr<LlamaGraph> graph_;
  std::vector<int32_t> tokens_;  // reserved to n_ctx: appending never allocates
  size_t last_eval_count_ = 0;
  size_t last_batch_start_ = 0;  // index within the last eval of the last batch's first token
};

}  // namespace lmrt
