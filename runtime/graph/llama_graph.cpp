#include "runtime/graph/llama_graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "runtime/util/fp16.h"

namespace lmrt {

namespace {

// Floats of attention scratch per thread: the token-by-token path's scores and row, the grouped-query
// kernel's scores for the `group` heads of one KV head, or the batched kernel's buffers, rounded to whole cache lines
// so every thread's slice stays 64-byte aligned.
size_t attention_scratch_floats(uint32_t n_ctx, uint32_t head_dim, uint32_t group) {
  const size_t n = std::max({static_cast<size_t>(n_ctx) + head_dim, simd::attend_scratch_floats(n_ctx, head_dim),
                             static_cast<size_t>(group) * n_ctx});
  return (n + 15) / 16 * 16;
}

// Matmul inputs of at most this many floats are quantized on the calling thread (about 20 us).
constexpr size_t kSerialQuantizeFloats = 32768;

// `thread`'s rows of an n_rows matrix in a decode step: a contiguous share of whole 16-row groups. One
// fixed share per thread (not chunks handed out dynamically) is what lets each thread pull its share of
// the next matrix while it waits at the barrier before it.
std::pair<size_t, size_t> decode_rows(size_t n_rows, size_t thread, size_t n_threads) {
  const size_t groups = (n_rows + 15) / 16;
  const size_t g0 = groups * thread / n_threads, g1 = groups * (thread + 1) / n_threads;
  return {std::min(g0 * 16, n_rows), std::min(g1 * 16, n_rows)};
}

// Fills a RoPE table for n_ctx positions: pair i of position pos turns by
// pos * freq_scale * base^(-2i / rope_dim) / factors[i], its cosine and sine multiplied by attn_factor;
// stored as (cos, sin) pairs or, for NeoX halves, as rope_dim / 2 cosines then as many sines.
void fill_rope_table(float* out, uint32_t n_ctx, uint32_t rope_dim, RopeStyle style, double base, double freq_scale,
                     const float* factors, double attn_factor) {
  const uint32_t half = rope_dim / 2;
  for (uint32_t i = 0; i < half; ++i) {
    double freq = std::pow(base, -2.0 * i / rope_dim) * freq_scale;
    if (factors != nullptr) freq /= factors[i];
    for (uint32_t pos = 0; pos < n_ctx; ++pos) {
      const double theta = pos * freq;
      const float c = static_cast<float>(std::cos(theta) * attn_factor);
      const float sn = static_cast<float>(std::sin(theta) * attn_factor);
      float* row = out + static_cast<size_t>(pos) * rope_dim;
      if (style == RopeStyle::neox_halves) {
        row[i] = c;
        row[half + i] = sn;
      } else {
        row[2 * i] = c;
        row[2 * i + 1] = sn;
      }
    }
  }
}

}  // namespace

Status LlamaGraph::create(const LlamaModel& model, const GraphParams& params, std::unique_ptr<LlamaGraph>* out) {
  const ModelConfig& hp = model.hparams();
  if (params.n_ctx == 0 || params.n_batch == 0)
    return Error(Code::invalid_argument, "n_ctx and n_batch must be positive");
  std::unique_ptr<LlamaGraph> g(new LlamaGraph(model));
  g->k_ = &simd::kernels_for(params.isa);
  g->n_ctx_ = params.n_ctx;
  g->n_batch_ = params.n_batch;
  g->n_vocab_ = hp.n_vocab;
  g->logits_all_ = params.logits_all;
  g->n_threads_ = std::max<size_t>(1, params.n_threads);
  g->steal_from_bytes_ = params.steal_from_bytes;
  g->q_dim_ = hp.q_dim();

  const size_t nb = params.n_batch;
  const size_t nb_ffn = std::min<size_t>(nb, kFfnTokens);
  const size_t xq_blocks = std::max(nb * ((std::max(hp.n_embd, hp.q_dim()) + 31) / 32), nb_ffn * ((hp.n_ff + 31) / 32));
  bool ok = g->x_.allocate(nb * hp.n_embd) && g->xn_.allocate(nb * hp.n_embd) && g->q_.allocate(nb * hp.q_dim()) &&
            g->k_cur_.allocate(nb * hp.kv_dim()) && g->v_cur_.allocate(nb * hp.kv_dim()) &&
            g->att_out_.allocate(nb * hp.q_dim()) && g->gate_.allocate(nb_ffn * hp.n_ff) &&
            g->up_.allocate(nb_ffn * hp.n_ff) && g->xq_.allocate(xq_blocks) &&
            g->scores_.allocate(g->n_threads_ *
                                attention_scratch_floats(params.n_ctx, hp.head_dim, hp.n_head / hp.n_head_kv)) &&
            g->rope_cs_.allocate(static_cast<size_t>(params.n_ctx) * hp.rope_dim) &&
            (hp.rope_freq_base_local == 0.0f ||
             g->rope_cs_local_.allocate(static_cast<size_t>(params.n_ctx) * hp.rope_dim)) &&
            g->logits_.allocate(std::max<size_t>(params.logits_all ? nb : 1, kMaxLogitRows) * hp.n_vocab) &&
            g->stealing_.allocate(g->n_threads_);
  // Q8_K input only when some weight's kernel takes it (row lengths are then multiples of 256).
  bool any_q8_k = false;
  auto takes_q8_k = [&](const WeightView& w) {
    any_q8_k |= simd::matmul_for(*g->k_, w.type).input == ActivationFormat::q8_k;
  };
  takes_q8_k(model.output());
  for (const LayerWeights& L : model.layers())
    for (const WeightView* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) takes_q8_k(*w);
  if (any_q8_k) ok = ok && g->xqk_.allocate(std::max(nb * (hp.n_embd / kQK), nb_ffn * (hp.n_ff / kQK)));
  if (!ok) return Error(Code::out_of_memory, "cannot allocate the forward-pass scratch buffers");
  g->tiles_.reserve(nb);  // at most one tile per token; plan_query_tiles then never allocates
  g->tiled_.assign(nb, 0);

  const float* factors = model.rope_factors(params.n_ctx);
  fill_rope_table(g->rope_cs_.data(), params.n_ctx, hp.rope_dim, hp.rope_style, hp.rope_freq_base, hp.rope_freq_scale,
                  factors, hp.rope_attn_factor);
  if (hp.rope_freq_base_local != 0.0f)  // gemma3's windowed layers: their own base, no scaling
    fill_rope_table(g->rope_cs_local_.data(), params.n_ctx, hp.rope_dim, hp.rope_style, hp.rope_freq_base_local, 1.0,
                    factors, hp.rope_attn_factor);
  *out = std::move(g);
  return Status::Ok();
}

size_t LlamaGraph::scratch_bytes() const {
  return x_.bytes() + xn_.bytes() + q_.bytes() + k_cur_.bytes() + v_cur_.bytes() + att_out_.bytes() + gate_.bytes() +
         up_.bytes() + scores_.bytes() + xq_.bytes() + xqk_.bytes() + rope_cs_.bytes() + rope_cs_local_.bytes() +
         logits_.bytes() + gather_.bytes();
}

Status LlamaGraph::reserve_gather() {
  if (gather_.size() != 0) return Status::Ok();
  if (!gather_.allocate(n_threads_ * 2 * static_cast<size_t>(n_ctx_) * model_.hparams().head_dim))
    return Error(Code::out_of_memory, "cannot allocate the attention gather buffers");
  return Status::Ok();
}

void LlamaGraph::gather_rows(uint32_t layer, const KvArena& kv, uint32_t kvh, const AttentionView& view, uint32_t start,
                             uint32_t n_visible, uint16_t* gather) const {
  const size_t hd = kv.head_dim();
  uint16_t* keys = gather;
  uint16_t* values = gather + static_cast<size_t>(n_ctx_) * hd;
  for (uint32_t p = start; p < n_visible;) {
    uint32_t e = p + 1;  // [p, e): slots that follow one another in the arena, copied at once
    while (e < n_visible && view.slots[e] == view.slots[e - 1] + 1) ++e;
    const size_t bytes = (e - p) * hd * sizeof(uint16_t), at = (p - start) * hd;
    std::memcpy(keys + at, kv.key(layer, kvh, view.slots[p]), bytes);
    std::memcpy(values + at, kv.value(layer, kvh, view.slots[p]), bytes);
    p = e;
  }
}

LlamaGraph::MatmulInput LlamaGraph::matmul_input(const MatmulTarget* targets, size_t count, uint32_t n_tok,
                                                 const float* x, size_t ldx, ThreadPool& pool) {
  MatmulInput in{x, ldx, nullptr, targets[0].w->n_cols, n_tok};  // every target reads the same input rows
  bool any_q8 = false, any_q8_k = false;
  for (size_t i = 0; i < count; ++i) {
    const ActivationFormat f = simd::matmul_for(*k_, targets[i].w->type).input;
    any_q8 |= f == ActivationFormat::q8_32;
    any_q8_k |= f == ActivationFormat::q8_k;
  }
  // Quantize the input rows once per format; every row of every W then reads the same int8 activations.
  // A batch's rows are split across the pool; a few rows (one token, a decode step of a few sequences) are
  // not worth a dispatch and its barrier.
  const size_t n = in.n;
  auto quantize = [&](auto* q, size_t blocks_per_row, auto quantize_row) {
    if (n_tok * n <= kSerialQuantizeFloats) {
      for (size_t t = 0; t < n_tok; ++t) quantize_row(x + t * ldx, q + t * blocks_per_row, n);
      return;
    }
    pool.parallel_for(n_tok, std::max<size_t>(1, n_tok / (pool.size() * 4)), [&](size_t t0, size_t t1) {
      for (size_t t = t0; t < t1; ++t) quantize_row(x + t * ldx, q + t * blocks_per_row, n);
    });
  };
  if (any_q8) {
    quantize(xq_.data(), n / 32, k_->quantize_q8_act);
    in.xq = xq_.data();
  }
  if (any_q8_k) {
    quantize(xqk_.data(), n / kQK, k_->quantize_q8_k);
    in.xqk = xqk_.data();
  }
  return in;
}

void LlamaGraph::matmul_rows(const MatmulTarget& t, const MatmulInput& in, size_t r0, size_t r1) const {
  const simd::Matmul& mm = simd::matmul_for(*k_, t.w->type);
  const void* xin = in.x;
  size_t x_row_bytes = in.ldx * sizeof(float);
  if (mm.input == ActivationFormat::q8_32) {
    xin = in.xq;
    x_row_bytes = in.n / 32 * sizeof(simd::BlockQ8Act);
  } else if (mm.input == ActivationFormat::q8_k) {
    xin = in.xqk;
    x_row_bytes = in.n / kQK * sizeof(BlockQ8_K);
  }
  mm.fn(t.w->data, t.w->row_bytes, xin, x_row_bytes, in.n, in.n_tok, r0, r1, t.y, t.ldy);
}

void LlamaGraph::matmul(const MatmulTarget* targets, size_t count, uint32_t n_tok, const float* x, size_t ldx,
                        ThreadPool& pool, const NextDispatch& next) {
  const MatmulInput in = matmul_input(targets, count, n_tok, x, ldx, pool);
  if (n_tok == 1 || (n_tok <= kSmallBatch && (pool.size() == 1 || pool.size() > stealing_.max_threads()))) {
    // Decode: each thread reads its fixed share of every target (decode_rows), then pulls its share of the
    // next dispatch while it waits. 110m shape, 2 threads: +9 % decode over chunks handed out dynamically (2 per
    // thread); the 1.1B shape -1 to +2 %. Stealing the tail (below) costs the 110m shape 5 % here.
    pool.run(
        [&](size_t thread, size_t n_threads) {
          for (size_t i = 0; i < count; ++i) {
            const auto [r0, r1] = decode_rows(targets[i].w->n_rows, thread, n_threads);
            if (r0 < r1) matmul_rows(targets[i], in, r0, r1);
          }
        },
        reads_of(next));
    return;
  }
  if (n_tok <= kSmallBatch) {
    // A step of a few sequences (bound by the arithmetic, as prefill): the same fixed shares, each target's
    // first three quarters in one unit (the kernels read several streams of their rows at once), its last
    // quarter, where the share has steal_from_bytes_ of weights, in units of kStealRows that a thread done with
    // its own share may take (tail_stealing.h). From 1 MiB: the 1.1B shape's matrices gain 4-11 % at 4-16
    // sequences on 2 threads; the 110m shape's (0.2-0.5 MiB a share) lose up to 4 %.
    const size_t n_threads = pool.size();
    struct Share {
      size_t r0, head, r1, units;  // rows [r0, head) in one unit, [head, r1) in units of kStealRows
      bool has_head() const { return head > r0; }
    };
    auto share = [&](size_t thread, size_t i) {
      const auto [r0, r1] = decode_rows(targets[i].w->n_rows, thread, n_threads);
      const size_t rows = r1 - r0;
      const size_t tail = rows * targets[i].w->row_bytes < steal_from_bytes_
                              ? 0
                              : std::min(rows, (rows / 4 + kStealRows - 1) / kStealRows * kStealRows);
      Share sh{r0, r1 - tail, r1, (tail + kStealRows - 1) / kStealRows};
      if (sh.has_head()) ++sh.units;
      return sh;
    };
    stealing_.reset(n_threads, [&](size_t thread) {
      size_t units = 0;
      for (size_t i = 0; i < count; ++i) units += share(thread, i).units;
      return units;
    });
    pool.run(
        [&](size_t thread, size_t) {
          size_t owner, unit;
          while (stealing_.next(thread, &owner, &unit)) {
            size_t i = 0;
            Share sh = share(owner, 0);
            for (; unit >= sh.units; sh = share(owner, ++i)) unit -= sh.units;
            if (sh.has_head() && unit == 0) {
              matmul_rows(targets[i], in, sh.r0, sh.head);
            } else {
              const size_t r = sh.head + (unit - (sh.has_head() ? 1 : 0)) * kStealRows;
              matmul_rows(targets[i], in, r, std::min(r + kStealRows, sh.r1));
            }
          }
        },
        reads_of(next));
    return;
  }
  // A batch: each target's rows are cut into chunks of whole 16-row groups, 4 per thread (one when the
  // pool has one thread), handed out dynamically. The chunks of all targets go through one dispatch, so
  // Q, K and V (or gate and up) cost one pool barrier, not three.
  constexpr size_t kMaxTargets = 3;
  size_t grain[kMaxTargets], first_chunk[kMaxTargets + 1] = {0};
  const size_t target_chunks = pool.size() == 1 ? 1 : pool.size() * 4;
  for (size_t i = 0; i < count; ++i) {
    const size_t rows = targets[i].w->n_rows;
    const size_t g = (rows + target_chunks - 1) / target_chunks;
    grain[i] = std::max<size_t>(16, (g + 15) / 16 * 16);
    first_chunk[i + 1] = first_chunk[i] + (rows + grain[i] - 1) / grain[i];
  }
  auto run_chunk = [&](size_t c) {
    size_t i = 0;
    while (c >= first_chunk[i + 1]) ++i;
    const size_t r0 = (c - first_chunk[i]) * grain[i];
    matmul_rows(targets[i], in, r0, std::min(r0 + grain[i], targets[i].w->n_rows));
  };
  pool.parallel_for(first_chunk[count], 1, [&](size_t c0, size_t c1) {
    for (size_t c = c0; c < c1; ++c) run_chunk(c);
  });
}

void LlamaGraph::plan_reads(const NextDispatch& next, size_t thread, size_t n_threads, NextReads& out) const {
  for (const WeightView* w : next.w) {
    if (w == nullptr) break;
    const auto [r0, r1] = decode_rows(w->n_rows, thread, n_threads);
    out.add(w->data + r0 * w->row_bytes, (r1 - r0) * w->row_bytes);
  }
  if (next.kv == nullptr) return;
  // The keys and values of this thread's heads, as attention() hands them out for one token.
  const ModelConfig& hp = model_.hparams();
  const KvArena& kv = *next.kv;
  const size_t row = kv.head_dim() * kv.entry_bytes();
  const bool by_kv_head = grouped_attention(kv);
  const uint32_t n_tasks = by_kv_head ? hp.n_head_kv : hp.n_head;
  const uint32_t group = hp.n_head / hp.n_head_kv;
  for (size_t task = thread; task < n_tasks; task += n_threads) {
    const uint32_t kvh = by_kv_head ? static_cast<uint32_t>(task) : static_cast<uint32_t>(task) / group;
    out.add(kv.key(next.layer, kvh, next.run_start), next.n_visible * row);
    out.add(kv.value(next.layer, kvh, next.run_start), next.n_visible * row);
  }
}

void LlamaGraph::attend_kv_head(uint32_t layer, const KvArena& kv, uint32_t t, uint32_t kvh, uint32_t start,
                                uint32_t n_visible, float* scratch, uint32_t run_start, const AttentionView* view,
                                uint16_t* gather) {
  const ModelConfig& hp = model_.hparams();
  const uint32_t hd = hp.head_dim, group = hp.n_head / hp.n_head_kv;
  const size_t q0 = static_cast<size_t>(t) * q_dim_ + static_cast<size_t>(kvh) * group * hd;
  const auto* keys = reinterpret_cast<const uint16_t*>(kv.key(layer, kvh, run_start + start));
  const auto* values = reinterpret_cast<const uint16_t*>(kv.value(layer, kvh, run_start + start));
  if (view != nullptr) {
    gather_rows(layer, kv, kvh, *view, start, n_visible, gather);
    keys = gather;
    values = gather + static_cast<size_t>(n_ctx_) * hd;
  }
  const uint32_t n = n_visible - start;
  if (!grouped_attention(kv)) {
    // No grouped kernel: each query head as attention() runs it, so both decode paths give the same bits.
    for (size_t q = q0; q < q0 + static_cast<size_t>(group) * hd; q += hd) {
      k_->scores_f16(q_.data() + q, keys, hd, n, hd, hp.attn_scale, scratch);
      k_->softmax(scratch, n);
      k_->weighted_sum_f16(att_out_.data() + q, scratch, values, hd, n, hd);
    }
    return;
  }
  k_->attend_heads_f16(q_.data() + q0, group, keys, values, n, hd, hp.attn_scale, scratch, att_out_.data() + q0);
}

bool LlamaGraph::grouped_attention(const KvArena& kv) const {
  const ModelConfig& hp = model_.hparams();
  return kv.type() == KvType::f16 && k_->attend_heads_f16 != nullptr && hp.head_dim % 16 == 0 &&
         hp.head_dim <= simd::kAttendHeadsMaxDim;
}

const float* LlamaGraph::rope_table(uint32_t layer, uint32_t pos) const {
  const ModelConfig& hp = model_.config();
  return (hp.local_rope(layer) ? rope_cs_local_ : rope_cs_).data() + static_cast<size_t>(pos) * hp.rope_dim;
}

void LlamaGraph::rope(uint32_t layer, float* vec, uint32_t head0, uint32_t head1, uint32_t pos) const {
  const ModelConfig& hp = model_.hparams();
  const uint32_t half = hp.rope_dim / 2;
  const float* cs = rope_table(layer, pos);
  const auto turn = hp.rope_style == RopeStyle::neox_halves ? k_->rope_neox : k_->rope;
  for (uint32_t h = head0; h < head1; ++h) turn(vec + static_cast<size_t>(h) * hp.head_dim, cs, half);
}

void LlamaGraph::finish_qkv(uint32_t layer, float* q, float* k, float* v, uint32_t kvh0, uint32_t kvh1,
                            uint32_t pos) const {
  const ModelConfig& hp = model_.config();
  const LayerWeights& L = model_.layers()[layer];
  const uint32_t hd = hp.head_dim, group = hp.n_head / hp.n_head_kv;
  const size_t q0 = static_cast<size_t>(kvh0) * group * hd, q1 = static_cast<size_t>(kvh1) * group * hd;
  const size_t k0 = static_cast<size_t>(kvh0) * hd, k1 = static_cast<size_t>(kvh1) * hd;
  if (L.bq != nullptr) k_->add(q + q0, L.bq + q0, q1 - q0);
  if (L.bk != nullptr) k_->add(k + k0, L.bk + k0, k1 - k0);
  if (L.bv != nullptr) k_->add(v + k0, L.bv + k0, k1 - k0);
  if (L.q_norm != nullptr)
    for (size_t i = q0; i < q1; i += hd) k_->rmsnorm(q + i, q + i, L.q_norm, hd, hp.rms_eps);
  if (L.k_norm != nullptr)
    for (size_t i = k0; i < k1; i += hd) k_->rmsnorm(k + i, k + i, L.k_norm, hd, hp.rms_eps);
  rope(layer, q, kvh0 * group, kvh1 * group, pos);
  rope(layer, k, kvh0, kvh1, pos);
}

bool LlamaGraph::heads_per_thread(const GraphBatch& batch, const KvArena& kv, size_t n_threads) const {
  // F16 keys and values (attend_kv_head, with or without the grouped kernel), heads in whole 16-row groups
  // shared evenly by the threads, and no soft-capping (the general scores path applies it).
  const ModelConfig& hp = model_.hparams();
  if (!batch.runs_only() || kv.type() != KvType::f16 || hp.head_dim % 16 != 0 || hp.attn_softcap != 0.0f ||
      hp.n_head_kv % n_threads != 0)
    return false;
  if (batch.n == 1) return true;
  // A decode step of several sequences: one token each (no query run to tile), few enough tokens that the
  // matmul splits its rows as decode does. Each thread then also ropes, stores and attends its heads of every
  // token, which saves a dispatch and the serial per-token steps between the two.
  if (batch.n > kSmallBatch || batch.views == nullptr) return false;
  for (uint32_t t = 0; t < batch.n; ++t)
    if (batch.query_run(t) != 1) return false;
  return true;
}

void LlamaGraph::attention_block_by_heads(uint32_t layer, const GraphBatch& batch, KvArena& kv, ThreadPool& pool,
                                          const NextDispatch& next) {
  const ModelConfig& hp = model_.hparams();
  const LayerWeights& L = model_.layers()[layer];
  const uint32_t hd = hp.head_dim, group = hp.n_head / hp.n_head_kv;
  const size_t per_thread = attention_scratch_floats(n_ctx_, hd, group);
  const uint32_t n = batch.n, kv_dim = hp.kv_dim();
  const MatmulTarget qkv[] = {
      {&L.wq, q_.data(), q_dim_}, {&L.wk, k_cur_.data(), kv_dim}, {&L.wv, v_cur_.data(), kv_dim}};
  const MatmulInput in = matmul_input(qkv, 3, n, xn_.data(), hp.n_embd, pool);
  pool.run(
      [&](size_t thread, size_t n_threads) {
        // KV heads [h0, h1) and their query heads: the same rows decode_rows gives this thread, since
        // n_threads divides n_head_kv and heads are whole 16-row groups.
        const uint32_t h0 = static_cast<uint32_t>(hp.n_head_kv * thread / n_threads);
        const uint32_t h1 = static_cast<uint32_t>(hp.n_head_kv * (thread + 1) / n_threads);
        matmul_rows(qkv[0], in, static_cast<size_t>(h0) * group * hd, static_cast<size_t>(h1) * group * hd);
        matmul_rows(qkv[1], in, static_cast<size_t>(h0) * hd, static_cast<size_t>(h1) * hd);
        matmul_rows(qkv[2], in, static_cast<size_t>(h0) * hd, static_cast<size_t>(h1) * hd);
        for (uint32_t t = 0; t < n; ++t) {
          float* k = k_cur_.data() + static_cast<size_t>(t) * kv_dim;
          float* v = v_cur_.data() + static_cast<size_t>(t) * kv_dim;
          finish_qkv(layer, q_.data() + static_cast<size_t>(t) * q_dim_, k, v, h0, h1, batch.pos_of(t));
          kv.store_heads(layer, batch.slot_of(t), h0, h1, k, v, k_->to_f16);
        }
        float* scratch = scores_.data() + thread * per_thread;
        for (uint32_t t = 0; t < n; ++t) {
          const uint32_t n_vis = batch.n_visible(t);
          for (uint32_t kvh = h0; kvh < h1; ++kvh)
            attend_kv_head(layer, kv, t, kvh, window_start(layer, n_vis), n_vis, scratch, batch.run_start(t));
        }
      },
      reads_of(next));
}

uint32_t LlamaGraph::plan_query_tiles(uint32_t layer, const GraphBatch& batch, const KvArena& kv) {
  const ModelConfig& hp = model_.hparams();
  tiles_.clear();
  if (kv.type() != KvType::f16 || k_->attend_f16 == nullptr || hp.attn_softcap != 0.0f || hp.window_of(layer) != 0)
    return 0;
  std::fill_n(tiled_.begin(), batch.n, 0);
  for (uint32_t t = 0; t < batch.n;) {
    const uint32_t run = batch.query_run(t);
    // The run's widest view holds every other one's slots; scattered, they are gathered into a run.
    uint32_t widest = t;
    for (uint32_t i = t + 1; i < t + run; ++i)
      if (batch.n_visible(i) > batch.n_visible(widest)) widest = i;
    const bool readable = batch.views == nullptr || batch.views[widest].contiguous || gather_.size() != 0;
    if (run >= kMinTiledRun && readable) {
      for (uint32_t t0 = t; t0 < t + run; t0 += simd::kAttendQueries)
        tiles_.push_back({t0, std::min<uint32_t>(simd::kAttendQueries, t + run - t0)});
      std::fill_n(tiled_.begin() + t, run, 1);
    }
    t += run;
  }
  return static_cast<uint32_t>(tiles_.size());
}

void LlamaGraph::attend_tiles(uint32_t layer, const GraphBatch& batch, const KvArena& kv, uint32_t n_tiles,
                              ThreadPool& pool) {
  const ModelConfig& hp = model_.hparams();
  const uint32_t hd = hp.head_dim, group = hp.n_head / hp.n_head_kv;
  const size_t per_thread = attention_scratch_floats(n_ctx_, hd, group);
  const size_t n_tasks = static_cast<size_t>(n_tiles) * hp.n_head_kv;
  pool.run([&](size_t thread, size_t n_threads) {
    float* scratch = scores_.data() + thread * per_thread;
    uint32_t n_vis[simd::kAttendQueries];
    for (size_t task = thread; task < n_tasks; task += n_threads) {
      const QueryTile& tile = tiles_[task / hp.n_head_kv];
      const uint32_t kvh = static_cast<uint32_t>(task % hp.n_head_kv);
      uint32_t widest = 0;
      for (uint32_t i = 0; i < tile.n_q; ++i) {
        n_vis[i] = batch.n_visible(tile.t0 + i);
        if (n_vis[i] > n_vis[widest]) widest = i;
      }
      // Every query's visible slots are the first of the widest query's: one run of keys and values
      // for the whole tile, read in place or gathered once (the same bits either way).
      const uint32_t tw = tile.t0 + widest;
      const auto* keys = reinterpret_cast<const uint16_t*>(kv.key(layer, kvh, batch.run_start(tw)));
      const auto* values = reinterpret_cast<const uint16_t*>(kv.value(layer, kvh, batch.run_start(tw)));
      if (batch.views != nullptr && !batch.views[tw].contiguous) {
        uint16_t* g = gather_slice(thread);
        gather_rows(layer, kv, kvh, batch.views[tw], 0, n_vis[widest], g);
        keys = g;
        values = g + static_cast<size_t>(n_ctx_) * hd;
      }
      for (uint32_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        const size_t row0 = static_cast<size_t>(tile.t0) * q_dim_ + static_cast<size_t>(h) * hd;
        k_->attend_f16(q_.data() + row0, q_dim_, tile.n_q, n_vis, keys, values, hd, hd, hp.attn_scale, scratch,
                       att_out_.data() + row0, q_dim_);
      }
    }
  });
}

void LlamaGraph::attention(uint32_t layer, const GraphBatch& batch, const KvArena& kv, ThreadPool& pool,
                           const NextDispatch& next) {
  const auto plan = reads_of(next);
  const uint32_t n = batch.n;
  const ModelConfig& hp = model_.hparams();
  const uint32_t hd = hp.head_dim;
  const uint32_t group = hp.n_head / hp.n_head_kv;
  const float scale = hp.attn_scale;
  const float softcap = hp.attn_softcap;  // needs the scores between the products and softmax
  const size_t per_thread = attention_scratch_floats(n_ctx_, hd, group);
  const bool f16 = kv.type() == KvType::f16;  // rows are read in place, F16 through the kernels
  // Prompts and prompt chunks (runs of a sequence's tokens) in tiles; the rest token by token below.
  const uint32_t n_tiles = plan_query_tiles(layer, batch, kv);
  if (n_tiles > 0) {
    attend_tiles(layer, batch, kv, n_tiles, pool);
    uint32_t n_tiled = 0;
    for (uint32_t i = 0; i < n_tiles; ++i) n_tiled += tiles_[i].n_q;
    if (n_tiled == n) return;
  }
  auto untiled = [&](uint32_t t) { return n_tiles == 0 || tiled_[t] == 0; };
  const bool gathers = gather_.size() != 0;  // a view that is not one run is read as one (reserve_gather)
  auto scattered = [&](uint32_t t) -> const AttentionView* {
    return batch.views != nullptr && !batch.views[t].contiguous ? &batch.views[t] : nullptr;
  };
  if (grouped_attention(kv) && softcap == 0.0f && (gathers || batch.runs_only())) {
    // Each task is one token and one KV head with all the query heads that read it, so every key and
    // value row is widened once per group rather than once per query head. Also without grouping (one
    // query head per KV head): this one pass per head beat scores + softmax + weighted sum by 14 % with
    // the arena from memory (110m shape decode: +3 to +9 %).
    const size_t n_tasks = static_cast<size_t>(n) * hp.n_head_kv;
    pool.run(
        [&](size_t thread, size_t n_threads) {
          float* scratch = scores_.data() + thread * per_thread;
          for (size_t task = thread; task < n_tasks; task += n_threads) {
            const uint32_t t = static_cast<uint32_t>(task / hp.n_head_kv);
            if (!untiled(t)) continue;
            const uint32_t n_vis = batch.n_visible(t);
            attend_kv_head(layer, kv, t, static_cast<uint32_t>(task % hp.n_head_kv), window_start(layer, n_vis), n_vis,
                           scratch, batch.run_start(t), scattered(t), gather_slice(thread));
          }
        },
        plan);
    return;
  }
  const size_t n_tasks = static_cast<size_t>(n) * hp.n_head;
  // Without views the visible slots are 0..n_pos-1 (with a contiguous view, one run from its first
  // slot): one head's consecutive entries, one kernel call.
  // scores_ holds one slice per thread of the pool the graph was created for.
  // Each (token, head) pair is independent: split them across threads, each with its own scores.
  pool.run(
      [&](size_t thread, size_t n_threads) {
        float* scores = scores_.data() + thread * per_thread;
        for (size_t task = thread; task < n_tasks; task += n_threads) {
          const uint32_t t = static_cast<uint32_t>(task / hp.n_head);
          if (!untiled(t)) continue;
          const uint32_t h = static_cast<uint32_t>(task % hp.n_head);
          const uint32_t kvh = h / group;
          // The visible positions [start, n_visible): all, or a windowed layer's last sliding_window.
          const uint32_t n_visible = batch.n_visible(t);
          const uint32_t start = window_start(layer, n_visible), n_pos = n_visible - start;
          auto slot = [&](uint32_t p) { return batch.visible_slot(t, start + p); };
          const bool gathered = f16 && gathers && scattered(t) != nullptr;
          const bool consecutive = f16 && (batch.views == nullptr || batch.views[t].contiguous || gathered);
          const uint32_t first = batch.run_start(t) + start;
          // The keys and values as one run: in place, or gathered (the same bits as a run).
          const uint16_t* keys = nullptr;
          const uint16_t* values = nullptr;
          if (gathered) {
            uint16_t* g = gather_slice(thread);
            gather_rows(layer, kv, kvh, batch.views[t], start, n_visible, g);
            keys = g;
            values = g + static_cast<size_t>(n_ctx_) * hd;
          } else if (consecutive) {
            keys = reinterpret_cast<const uint16_t*>(kv.key(layer, kvh, first));
            values = reinterpret_cast<const uint16_t*>(kv.value(layer, kvh, first));
          }
          const float* q = q_.data() + static_cast<size_t>(t) * q_dim_ + static_cast<size_t>(h) * hd;
          if (consecutive) {
            k_->scores_f16(q, keys, hd, n_pos, hd, scale, scores);
          } else if (f16) {
            for (uint32_t p = 0; p < n_pos; ++p)
              scores[p] = k_->dot_f16(q, reinterpret_cast<const uint16_t*>(kv.key(layer, kvh, slot(p))), hd) * scale;
          } else {
            for (uint32_t p = 0; p < n_pos; ++p)
              scores[p] = k_->dot_f32(q, reinterpret_cast<const float*>(kv.key(layer, kvh, slot(p))), hd) * scale;
          }
          if (softcap != 0.0f) k_->softcap(scores, n_pos, softcap);
          k_->softmax(scores, n_pos);
          float* out = att_out_.data() + static_cast<size_t>(t) * q_dim_ + static_cast<size_t>(h) * hd;
          if (consecutive) {
            k_->weighted_sum_f16(out, scores, values, hd, n_pos, hd);
            continue;
          }
          std::fill_n(out, hd, 0.0f);
          if (f16) {
            for (uint32_t p = 0; p < n_pos; ++p)
              k_->axpy_f16(out, scores[p], reinterpret_cast<const uint16_t*>(kv.value(layer, kvh, slot(p))), hd);
          } else {
            for (uint32_t p = 0; p < n_pos; ++p)
              k_->axpy(out, scores[p], reinterpret_cast<const float*>(kv.value(layer, kvh, slot(p))), hd);
          }
        }
      },
      plan);
}

void LlamaGraph::shift_kv(KvArena& kv, uint32_t n_keep, uint32_t n_discard, uint32_t n_past) {
  const ModelConfig& hp = model_.hparams();
  const uint32_t half = hp.rope_dim / 2;
  const bool neox = hp.rope_style == RopeStyle::neox_halves;
  float* k = k_cur_.data();  // scratch rows, free between forward passes
  float* v = v_cur_.data();
  for (uint32_t l = 0; l < hp.n_layer; ++l) {
    const float* cs = rope_table(l, n_discard);  // angle of n_discard, in this layer's table
    for (uint32_t p = n_keep + n_discard; p < n_past; ++p) {
      kv.load(l, p, k, v);
      for (uint32_t h = 0; h < hp.n_head_kv; ++h) {
        float* x = k + static_cast<size_t>(h) * hp.head_dim;
        for (uint32_t i = 0; i < half; ++i) {  // rotate by -angle: cos(-a) = cos a, sin(-a) = -sin a
          // The pair and its angle, in the layout of the RoPE style (rope_table()).
          const uint32_t ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
          const float c = cs[ia], sn = cs[ib];
          const float a = x[ia], b = x[ib];
          x[ia] = a * c + b * sn;
          x[ib] = b * c - a * sn;
        }
      }
      kv.store(l, p - n_discard, k, v, k_->to_f16);
    }
  }
}

void LlamaGraph::forward(const GraphBatch& batch, KvArena& kv, ThreadPool& pool) {
  const int32_t* tokens = batch.tokens;
  const uint32_t n = batch.n;
  const ModelConfig& hp = model_.hparams();
  const uint32_t dim = hp.n_embd, kv_dim = hp.kv_dim(), ff = hp.n_ff;
  float* x = x_.data();
  float* xn = xn_.data();

  // In a decode step every dispatch names the one after it (NextDispatch); the last names the first, for
  // the next token.
  const bool decode = n == 1 && batch.runs_only();
  const bool by_heads = heads_per_thread(batch, kv, pool.size());
  auto next_matmul = [&](const WeightView* a, const WeightView* b = nullptr, const WeightView* c = nullptr) {
    NextDispatch r;
    if (n <= kSmallBatch) r.w[0] = a, r.w[1] = b, r.w[2] = c;
    return r;
  };
  auto next_qkv = [&](uint32_t l) {
    const LayerWeights& L = model_.layers()[l];
    return next_matmul(&L.wq, &L.wk, &L.wv);
  };

  for (uint32_t t = 0; t < n; ++t) {
    model_.embed(tokens[t], x + static_cast<size_t>(t) * dim);
    if (hp.embd_scale != 1.0f) k_->scale(x + static_cast<size_t>(t) * dim, hp.embd_scale, dim);
  }

  for (uint32_t l = 0; l < hp.n_layer; ++l) {
    const LayerWeights& L = model_.layers()[l];

    // Attention block: RMSNorm -> Q, K, V (+ biases, per-head norms) -> RoPE -> KV arena -> attention
    // (over the window on windowed layers) -> output projection (+ bias, post-norm) -> residual. In
    // decode, when the threads can share the KV heads evenly, each thread runs the steps up to the
    // output projection for its own heads in one dispatch (attention_block_by_heads).
    for (uint32_t t = 0; t < n; ++t) k_->rmsnorm(xn + t * dim, x + t * dim, L.attn_norm, dim, hp.rms_eps);
    if (by_heads) {
      attention_block_by_heads(l, batch, kv, pool, next_matmul(&L.wo));
    } else {
      const MatmulTarget qkv[] = {
          {&L.wq, q_.data(), q_dim_}, {&L.wk, k_cur_.data(), kv_dim}, {&L.wv, v_cur_.data(), kv_dim}};
      NextDispatch next_attention;
      if (decode)
        next_attention.kv = &kv, next_attention.layer = l, next_attention.n_visible = batch.n_visible(0),
        next_attention.run_start = batch.run_start(0);
      matmul(qkv, 3, n, xn, dim, pool, next_attention);
      for (uint32_t t = 0; t < n; ++t) {
        finish_qkv(l, q_.data() + static_cast<size_t>(t) * q_dim_, k_cur_.data() + static_cast<size_t>(t) * kv_dim,
                   v_cur_.data() + static_cast<size_t>(t) * kv_dim, 0, hp.n_head_kv, batch.pos_of(t));
        kv.store(l, batch.slot_of(t), k_cur_.data() + static_cast<size_t>(t) * kv_dim,
                 v_cur_.data() + static_cast<size_t>(t) * kv_dim, k_->to_f16);
      }
      attention(l, batch, kv, pool, next_matmul(&L.wo));
    }
    const MatmulTarget wo[] = {{&L.wo, xn, dim}};
    matmul(wo, 1, n, att_out_.data(), q_dim_, pool, next_matmul(&L.w_gate, &L.w_up));
    for (uint32_t t = 0; t < n; ++t) {
      float* out = xn + t * dim;
      if (L.bo != nullptr) k_->add(out, L.bo, dim);
      if (L.post_attn_norm != nullptr) k_->rmsnorm(out, out, L.post_attn_norm, dim, hp.rms_eps);
      k_->add(x + t * dim, out, dim);
    }

    // Feed-forward block: RMSNorm -> SwiGLU or GELU-gated -> down projection (-> post-norm) -> residual.
    // kFfnTokens tokens at a time; each group's output overwrites its own normalized rows.
    for (uint32_t t = 0; t < n; ++t) k_->rmsnorm(xn + t * dim, x + t * dim, L.ffn_norm, dim, hp.rms_eps);
    for (uint32_t t0 = 0; t0 < n; t0 += kFfnTokens) {
      const uint32_t nt = std::min(kFfnTokens, n - t0);
      float* rows = xn + static_cast<size_t>(t0) * dim;
      const MatmulTarget gate_up[] = {{&L.w_gate, gate_.data(), ff}, {&L.w_up, up_.data(), ff}};
      matmul(gate_up, 2, nt, rows, dim, pool, next_matmul(&L.w_down));
      const auto activate = hp.activation == Activation::gelu_tanh ? k_->gelu_mul : k_->silu_mul;
      for (uint32_t t = 0; t < nt; ++t) activate(gate_.data() + t * ff, up_.data() + t * ff, ff);
      const MatmulTarget down[] = {{&L.w_down, rows, dim}};
      matmul(down, 1, nt, gate_.data(), ff, pool, l + 1 < hp.n_layer ? next_qkv(l + 1) : next_matmul(&model_.output()));
    }
    for (uint32_t t = 0; t < n; ++t) {
      if (L.post_ffn_norm != nullptr) k_->rmsnorm(xn + t * dim, xn + t * dim, L.post_ffn_norm, dim, hp.rms_eps);
      k_->add(x + t * dim, xn + t * dim, dim);
    }
  }

  // Output: final norm and classifier, for the last token only unless every logit (or a chosen
  // token's) is wanted.
  const uint32_t first = logits_all_ || batch.all_logits ? 0 : n - 1;
  const bool chosen = batch.logit_rows != nullptr && !logits_all_ && !batch.all_logits;
  const uint32_t count = chosen ? batch.n_logit_rows : n - first;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t t = chosen ? batch.logit_rows[i] : first + i;
    k_->rmsnorm(xn + static_cast<size_t>(i) * dim, x + static_cast<size_t>(t) * dim, model_.output_norm(), dim,
                hp.rms_eps);
  }
  const MatmulTarget output[] = {{&model_.output(), logits_.data(), n_vocab_}};
  matmul(output, 1, count, xn, dim, pool, next_qkv(0));
  if (hp.final_softcap != 0.0f)
    for (uint32_t i = 0; i < count; ++i)
      k_->softcap(logits_.data() + static_cast<size_t>(i) * n_vocab_, n_vocab_, hp.final_softcap);
}

}  // namespace lmrt
