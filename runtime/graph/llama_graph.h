// The decoder forward pass, driven by the model's ModelConfig (norm placement, biases, QK-norms, RoPE
// style, activation, soft-capping, sliding windows). A LlamaGraph is the per-context state (scratch
// buffers for n_batch tokens, RoPE tables, logits) over an immutable LlamaModel; forward() runs a batch
// of tokens through every layer, writing their keys and values into the KV arena.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/kv/kv_arena.h"
#include "runtime/model/llama_model.h"
#include "runtime/util/aligned_buffer.h"
#include "runtime/util/status.h"
#include "runtime/util/tail_stealing.h"
#include "runtime/util/thread_pool.h"
#include "simd/kernels.h"

namespace lmrt {

struct GraphParams {
  uint32_t n_ctx = 0;
  uint32_t n_batch = 0;
  bool logits_all = false;
  size_t n_threads = 1;  // threads of the pool forward() will be given
  simd::Isa isa = simd::Isa::scalar;
  // A small batch's matmul lets threads steal the tail of shares of at least this many bytes of weights
  // (LlamaGraph::matmul says why 1 MiB; tests take 0, so that the small models' shares have tails too).
  size_t steal_from_bytes = size_t{1} << 20;
};

// The arena slots one token attends to, its own included, in position order.
struct AttentionView {
  const uint32_t* slots = nullptr;
  uint32_t n = 0;
  // The slots are slots[0], slots[0] + 1, ...: attention then reads them in place as one run, with
  // the same kernels (and bits) as a batch without views.
  bool contiguous = false;
};

// A batch of tokens for forward(). By default token t sits at position pos0 + t, is stored in arena
// slot pos0 + t and attends causally to slots [0, pos0 + t]. Beam search gives each token its own
// position, slot and view, so beams share the prompt's slots without copying them.
struct GraphBatch {
  const int32_t* tokens = nullptr;
  uint32_t n = 0;
  uint32_t pos0 = 0;
  const uint32_t* pos = nullptr;         // per-token positions (RoPE), or nullptr
  const uint32_t* slot = nullptr;        // per-token arena slots, or nullptr (= position)
  const AttentionView* views = nullptr;  // per-token views, or nullptr (causal over [0, position])
  bool all_logits = false;               // logits for every token (at most kMaxLogitRows), not just the last
  // Or logits for these tokens only (n_logit_rows <= kMaxLogitRows, ascending): logits(i) is token
  // logit_rows[i]'s. Many sequences in one batch each want the row of their last token.
  const uint32_t* logit_rows = nullptr;
  uint32_t n_logit_rows = 0;

  uint32_t pos_of(uint32_t t) const { return pos != nullptr ? pos[t] : pos0 + t; }
  uint32_t slot_of(uint32_t t) const { return slot != nullptr ? slot[t] : pos_of(t); }
  uint32_t n_visible(uint32_t t) const { return views != nullptr ? views[t].n : pos_of(t) + 1; }
  uint32_t visible_slot(uint32_t t, uint32_t i) const { return views != nullptr ? views[t].slots[i] : i; }
  // Whether every token's visible slots are one run (no views, or contiguous ones), and where token
  // t's run starts.
  bool runs_only() const {
    if (views == nullptr) return true;
    for (uint32_t t = 0; t < n; ++t)
      if (!views[t].contiguous) return false;
    return true;
  }
  uint32_t run_start(uint32_t t) const { return views != nullptr && views[t].n > 0 ? views[t].slots[0] : 0; }
  // The tokens from t on whose visible slots are all first entries of one list (without views, all of
  // the batch; with views, consecutive tokens whose views share their slots: one sequence's prompt
  // chunk), so that their attention can read that list's keys and values once for all of them.
  uint32_t query_run(uint32_t t) const {
    if (views == nullptr) return n - t;
    uint32_t e = t + 1;
    while (e < n && views[e].slots == views[t].slots) ++e;
    return e - t;
  }
};

class LlamaGraph {
 public:
  // Logit rows kept besides logits_all: enough for one row per beam of a beam search.
  static constexpr uint32_t kMaxLogitRows = 16;
  // A batch passes through the feed-forward block this many tokens at a time: its hidden rows are the
  // widest activations, and bounding them keeps resident memory within file + KV + 64 MiB at any
  // n_batch (the GEMM needs far fewer tokens than this to reuse each repacked weight slab).
  static constexpr uint32_t kFfnTokens = 128;
  // Batches of at most this many tokens split a matmul's rows as decode does (fixed shares, the next
  // dispatch's weights prefetched by whoever waits): their steps are bound by reading the weights too.
  static constexpr uint32_t kSmallBatch = 16;
  // The rows of a unit of a share's tail in such a batch's matmul (a multiple of every repacked unit's rows; 64
  // cost Q4_0x16's two-stream kernels 1.5 % on the 110m shape).
  static constexpr size_t kStealRows = 128;

  // A query run (GraphBatch::query_run) of at least this many tokens attends in tiles of
  // simd::kAttendQueries queries, each key and value row read once per tile (a prompt, or a prompt
  // chunk after cells its sequence already holds); shorter ones, decode steps among them, token by
  // token. A query's tiled result depends only on its own row and visible keys, so a prompt evaluated
  // in chunks of at least this many tokens gets the bits of the prompt evaluated at once.
  static constexpr uint32_t kMinTiledRun = 4;

  // Allocates every buffer a forward pass needs. Errors: invalid_argument, out_of_memory.
  static Status create(const LlamaModel& model, const GraphParams& params, std::unique_ptr<LlamaGraph>* out);

  // Runs tokens[0, n) at positions [pos0, pos0 + n) through the model (n <= n_batch,
  // pos0 + n <= n_ctx, every token < n_vocab: the caller checks). Keys and values go to `kv`.
  // Afterwards logits(i) holds the logits of token i (only the last unless logits_all).
  void forward(const int32_t* tokens, uint32_t n, uint32_t pos0, KvArena& kv, ThreadPool& pool) {
    GraphBatch b;
    b.tokens = tokens;
    b.n = n;
    b.pos0 = pos0;
    forward(b, kv, pool);
  }
  // The general form: every slot and view must lie inside the arena, every view hold at most n_ctx
  // slots (the caller checks).
  void forward(const GraphBatch& batch, KvArena& kv, ThreadPool& pool);

  // Context shift: drops positions [n_keep, n_keep + n_discard) of the arena, moves positions
  // [n_keep + n_discard, n_past) down by n_discard and turns their keys back by n_discard
  // positions (RoPE rotations compose, so the keys then read as if computed at their new places).
  void shift_kv(KvArena& kv, uint32_t n_keep, uint32_t n_discard, uint32_t n_past);

  // Logits of token i of the last forward() (row 0 holds the last token's unless every token's
  // logits were computed).
  const float* logits(uint32_t i) const { return logits_.data() + static_cast<size_t>(i) * n_vocab_; }
  uint32_t n_batch() const { return n_batch_; }
  bool logits_all() const { return logits_all_; }
  const simd::Kernels& kernels() const { return *k_; }
  size_t scratch_bytes() const;

  // Makes attention over a view that is not one run of slots give the bits of the same keys read as
  // a run: each thread copies the visible F16 rows of one KV head into a buffer of its own (2 x n_ctx
  // x head_dim entries per thread, allocated here once) and runs the run's kernels on it. Without it
  // such views are read slot by slot with other kernels (close, not equal). For sequences that share
  // prefix cells (the batch engine). Error: out_of_memory.
  Status reserve_gather();

 private:
  LlamaGraph(const LlamaModel& model) : model_(model) {}

  // One product of a matmul() call: y[t * ldy + r] = W row r . x row t, for all rows of W.
  struct MatmulTarget {
    const WeightView* w;
    float* y;
    size_t ldy;
  };
  // The next pool dispatch of a decode step, as far as what it reads: a matmul's matrices, or a layer's
  // attention over its first n_visible positions. Each dispatch is told the next, so a thread that
  // finishes its part early pulls its part of the next one toward its cache while it waits
  // (ThreadPool::run with a plan). Empty outside decode.
  struct NextDispatch {
    const WeightView* w[3] = {};
    const KvArena* kv = nullptr;
    uint32_t layer = 0, n_visible = 0, run_start = 0;
  };
  // What every row of a matmul reads: the n_tok input rows x (n floats each, ldx apart) and, for kernels
  // that take 8-bit activations (simd::Matmul::input), their quantization: 32-element blocks in xq_,
  // Q8_K blocks in xqk_.
  struct MatmulInput {
    const float* x;
    size_t ldx;
    const simd::BlockQ8Act* xq;
    size_t n;
    uint32_t n_tok;
    const BlockQ8_K* xqk = nullptr;
  };
  MatmulInput matmul_input(const MatmulTarget* targets, size_t count, uint32_t n_tok, const float* x, size_t ldx,
                           ThreadPool& pool);
  // Rows [r0, r1) of one product, on the calling thread.
  void matmul_rows(const MatmulTarget& t, const MatmulInput& in, size_t r0, size_t r1) const;
  // Runs `count` (1 to 3) products over the same n_tok input rows x (row t at x + t * ldx; every W has
  // the same n_cols) in one pool dispatch, quantizing x once. `next` is read only for one token.
  void matmul(const MatmulTarget* targets, size_t count, uint32_t n_tok, const float* x, size_t ldx, ThreadPool& pool,
              const NextDispatch& next);
  // Turns heads [head0, head1) of the row at vec (head_dim floats each) to position pos, with `layer`'s
  // RoPE table and the model's RoPE style.
  void rope(uint32_t layer, float* vec, uint32_t head0, uint32_t head1, uint32_t pos) const;
  // What follows the Q, K and V products of one token, for KV heads [kvh0, kvh1) and their query heads:
  // biases, per-head RMSNorms of Q and K, RoPE of Q and K at `pos`. q, k and v are the token's rows.
  void finish_qkv(uint32_t layer, float* q, float* k, float* v, uint32_t kvh0, uint32_t kvh1, uint32_t pos) const;
  // The first of a token's n_visible positions that `layer` attends to: all of them, or the last
  // sliding_window on a windowed layer.
  uint32_t window_start(uint32_t layer, uint32_t n_visible) const {
    const uint32_t w = model_.config().window_of(layer);
    return w != 0 && n_visible > w ? n_visible - w : 0;
  }
  // RoPE table of `layer`: [n_ctx][rope_dim / 2] angles, as (cos, sin) pairs for adjacent-pair RoPE or
  // rope_dim / 2 cosines then as many sines for NeoX halves.
  const float* rope_table(uint32_t layer, uint32_t pos) const;
  // Whether attention_block_by_heads() runs this batch: one token (or a decode step of up to kSmallBatch
  // sequences, one token each) whose visible slots are one run, F16 keys and values with heads in whole
  // 16-row groups, no attention soft-capping, and n_threads dividing the KV heads (so every thread gets the
  // same work).
  bool heads_per_thread(const GraphBatch& batch, const KvArena& kv, size_t n_threads) const;
  // Decode's Q, K, V, RoPE, KV store and attention of one layer in one dispatch (for every token of the
  // batch): each thread takes whole
  // KV heads with their query heads, computes their rows of Q, K and V, stores its heads' keys and
  // values and attends with them, so nothing crosses threads before the output projection (one pool
  // barrier and one serial RoPE/store step fewer per layer). Reads xn_; writes att_out_.
  void attention_block_by_heads(uint32_t layer, const GraphBatch& batch, KvArena& kv, ThreadPool& pool,
                                const NextDispatch& next);
  void attention(uint32_t layer, const GraphBatch& batch, const KvArena& kv, ThreadPool& pool,
                 const NextDispatch& next);
  // Attention of token t's query heads that read KV head kvh, over its positions [start, n_visible) (in
  // slots run_start + [start, n_visible)), into att_out_ (attend_heads_f16; `scratch` is the calling
  // thread's slice of scores_).
  // `view`: token t's view when it is not one run (its rows are gathered into `gather`, the calling
  // thread's slice of gather_), else nullptr.
  void attend_kv_head(uint32_t layer, const KvArena& kv, uint32_t t, uint32_t kvh, uint32_t start, uint32_t n_visible,
                      float* scratch, uint32_t run_start = 0, const AttentionView* view = nullptr,
                      uint16_t* gather = nullptr);
  // Copies KV head kvh's F16 keys and values at view slots [start, n_visible) into gather (the keys,
  // then the values at gather + n_ctx * head_dim), run by run.
  void gather_rows(uint32_t layer, const KvArena& kv, uint32_t kvh, const AttentionView& view, uint32_t start,
                   uint32_t n_visible, uint16_t* gather) const;
  // The calling thread's slice of gather_, or nullptr when not reserved.
  uint16_t* gather_slice(size_t thread) {
    return gather_.size() == 0 ? nullptr
                               : gather_.data() + thread * 2 * static_cast<size_t>(n_ctx_) * model_.hparams().head_dim;
  }
  // A tile of batched attention (attend_f16): n_q <= kAttendQueries consecutive tokens from t0 of one
  // query run.
  struct QueryTile {
    uint32_t t0 = 0, n_q = 0;
  };
  // Cuts the query runs of at least kMinTiledRun tokens into tiles (tiles_) and marks their tokens
  // (tiled_), when `layer` can attend in tiles: F16 keys and values, an attend_f16 kernel, no
  // soft-capping, no sliding window, and a run whose cells are scattered only with the gather buffers
  // reserved. Returns the tile count.
  uint32_t plan_query_tiles(uint32_t layer, const GraphBatch& batch, const KvArena& kv);
  // Attention of the n_tiles tiles of tiles_: one task per tile and KV head, whose keys and values
  // (in place, or gathered once) serve every query head of the group.
  void attend_tiles(uint32_t layer, const GraphBatch& batch, const KvArena& kv, uint32_t n_tiles, ThreadPool& pool);
  // Whether attention() runs a batch without views as one task per token and KV head (attend_heads_f16,
  // with or without grouped queries) rather than per token and query head.
  bool grouped_attention(const KvArena& kv) const;
  // What `thread` of n_threads reads in the decode dispatch `next`.
  void plan_reads(const NextDispatch& next, size_t thread, size_t n_threads, NextReads& out) const;
  // plan_reads for `next` as the plan ThreadPool::run takes.
  auto reads_of(const NextDispatch& next) const {
    return [this, &next](size_t thread, size_t n_threads, NextReads& out) { plan_reads(next, thread, n_threads, out); };
  }

  const LlamaModel& model_;
  const simd::Kernels* k_ = nullptr;
  uint32_t n_ctx_ = 0;
  uint32_t n_batch_ = 0;
  uint32_t n_vocab_ = 0;
  bool logits_all_ = false;
  size_t n_threads_ = 1;
  TailStealing stealing_;        // the shares of a small batch's matmul dispatch, n_threads_ of them
  size_t steal_from_bytes_ = 0;  // GraphParams::steal_from_bytes
  uint32_t q_dim_ = 0;           // n_head * head_dim: the row of q_ and att_out_

  AlignedBuffer<float> x_;        // residual stream [n_batch][n_embd]
  AlignedBuffer<float> xn_;       // normalised input [n_batch][n_embd]
  AlignedBuffer<float> q_;        // [n_batch][q_dim]
  AlignedBuffer<float> k_cur_;    // [n_batch][kv_dim]
  AlignedBuffer<float> v_cur_;    // [n_batch][kv_dim]
  AlignedBuffer<float> att_out_;  // [n_batch][q_dim]
  AlignedBuffer<float> gate_;     // [min(n_batch, kFfnTokens)][n_ff]
  AlignedBuffer<float> up_;       // [min(n_batch, kFfnTokens)][n_ff]
  AlignedBuffer<float> scores_;   // per thread: attention scratch (attention_scratch_floats)
  AlignedBuffer<simd::BlockQ8Act>
      xq_;  // quantized matmul input: the larger of [n_batch][n_embd / 32], [min(n_batch, kFfnTokens)][n_ff / 32]
  AlignedBuffer<BlockQ8_K> xqk_;        // the same as Q8_K blocks of 256, when the model has a kernel that takes them
  AlignedBuffer<float> rope_cs_;        // [n_ctx][rope_dim]: see rope_table()
  AlignedBuffer<float> rope_cs_local_;  // the same for windowed layers with their own base (gemma3), else empty
  AlignedBuffer<float> logits_;         // [n_batch or 1][n_vocab]
  AlignedBuffer<uint16_t> gather_;      // per thread: [2][n_ctx][head_dim] F16 rows (reserve_gather), or empty
  std::vector<QueryTile> tiles_;        // the layer's tiles (plan_query_tiles), n_batch reserved
  std::vector<uint8_t> tiled_;          // [n_batch]: 1 where the token attends in a tile
};

}  // namespace lmrt
