// The llama forward pass. A LlamaGraph is the per-context state (scratch buffers for n_batch
// tokens, RoPE table, logits) over an immutable LlamaModel; forward() runs a batch of tokens
// through every layer, writing their keys and values into the KV arena.
#pragma once

#include <cstdint>
#include <memory>

#include "runtime/kv/kv_arena.h"
#include "runtime/model/llama_model.h"
#include "runtime/util/aligned_buffer.h"
#include "runtime/util/status.h"
#include "runtime/util/thread_pool.h"
#include "simd/kernels.h"

namespace lmrt {

struct GraphParams {
  uint32_t n_ctx = 0;
  uint32_t n_batch = 0;
  bool logits_all = false;
  size_t n_threads = 1;  // threads of the pool forward() will be given
  simd::Isa isa = simd::Isa::scalar;
};

class LlamaGraph {
 public:
  // Allocates every buffer a forward pass needs. Errors: invalid_argument, out_of_memory.
  static Status create(const LlamaModel& model, const GraphParams& params, std::unique_ptr<LlamaGraph>* out);

  // Runs tokens[0, n) at positions [pos0, pos0 + n) through the model (n <= n_batch,
  // pos0 + n <= n_ctx, every token < n_vocab: the caller checks). Keys and values go to `kv`.
  // Afterwards logits(i) holds the logits of token i (only the last unless logits_all).
  void forward(const int32_t* tokens, uint32_t n, uint32_t pos0, KvArena& kv, ThreadPool& pool);

  // Context shift: drops positions [n_keep, n_keep + n_discard) of the arena, moves positions
  // [n_keep + n_discard, n_past) down by n_discard and turns their keys back by n_discard
  // positions (RoPE rotations compose, so the keys then read as if computed at their new places).
  void shift_kv(KvArena& kv, uint32_t n_keep, uint32_t n_discard, uint32_t n_past);

  const float* logits(uint32_t i) const { return logits_.data() + static_cast<size_t>(logits_all_ ? i : 0) * n_vocab_; }
  uint32_t n_batch() const { return n_batch_; }
  bool logits_all() const { return logits_all_; }
  const simd::Kernels& kernels() const { return *k_; }
  size_t scratch_bytes() const;

 private:
  LlamaGraph(const LlamaModel& model) : model_(model) {}

  // y[t * ldy + r] = W row r . x row t, for all rows of W, split across the pool.
  void matmul(const WeightView& w, uint32_t n_tok, const float* x, size_t ldx, float* y, size_t ldy, ThreadPool& pool);
  void rope(float* vec, uint32_t n_heads, uint32_t pos) const;
  void attention(uint32_t layer, uint32_t n, uint32_t pos0, const KvArena& kv, ThreadPool& pool);

  const LlamaModel& model_;
  const simd::Kernels* k_ = nullptr;
  uint32_t n_ctx_ = 0;
  uint32_t n_batch_ = 0;
  uint32_t n_vocab_ = 0;
  bool logits_all_ = false;
  size_t n_threads_ = 1;

  AlignedBuffer<float> x_;        // residual stream [n_batch][n_embd]
  AlignedBuffer<float> xn_;       // normalised input [n_batch][max(n_embd, n_ff)]
  AlignedBuffer<float> q_;        // [n_batch][n_embd]
  AlignedBuffer<float> k_cur_;    // [n_batch][kv_dim]
  AlignedBuffer<float> v_cur_;    // [n_batch][kv_dim]
  AlignedBuffer<float> att_out_;  // [n_batch][n_embd]
  AlignedBuffer<float> gate_;     // [n_batch][n_ff]
  AlignedBuffer<float> up_;       // [n_batch][n_ff]
  AlignedBuffer<float> scores_;   // per thread: [n_ctx] attention scores + [head_dim] key/value row
  AlignedBuffer<BlockQ8_0> xq_;   // quantized activations [n_batch][max(n_embd, n_ff) / 32]
  AlignedBuffer<float> rope_cs_;  // [n_ctx][rope_dim / 2][cos, sin]
  AlignedBuffer<float> logits_;   // [n_batch or 1][n_vocab]
};

}  // namespace lmrt
