// The hot kernels, one table per instruction set. The forward pass calls them only through a
// Kernels table chosen once (select_kernels), so every ISA runs the same graph code and tests can
// compare each table against the scalar reference.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/tensor_type.h"

namespace lmrt::simd {

// A Q8 activation block, the input format of Q4_0 matmuls: 32 int8 values x = qs * d, with the
// term -8 * sum(qs) precomputed once per token so Q4_0 kernels can use the stored nibbles (q + 8)
// as unsigned bytes and start each block's integer sum at `minus8_sum`. 4-byte aligned so kernels can
// broadcast any dword of it straight from memory.
struct BlockQ8Act {
  float d;
  int32_t minus8_sum;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8Act) == 40);

// avx2vnni: the AVX2 table's sources built with AVX-VNNI (simd/avx2_variant.h), bit-identical to avx2.
enum class Isa { scalar = 0, avx2 = 1, avx512 = 2, neon = 3, avx2vnni = 4 };
// Every ISA, for loops over them (LMRT_ISA names, tests, benchmarks).
inline constexpr Isa kAllIsas[] = {Isa::scalar, Isa::avx2, Isa::avx2vnni, Isa::avx512, Isa::neon};

const char* isa_name(Isa isa);

// Y[t * ldy + r] = dot(row r of W, row t of X) for rows r in [r0, r1) and tokens t in [0, n_tok).
// W rows are `n` elements of the weight type, `w_row_bytes` apart. X rows are `x_row_bytes` apart (a
// multiple of 4) and hold what the kernel's table entry says it takes (Matmul::input): float32, n / 32
// BlockQ8Act blocks or n / 256 BlockQ8_K blocks. Q8_0 weights take float activations for accuracy (see
// kernels_scalar.cpp); Q4_0 takes int8 ones for speed.
using MatmulFn = void (*)(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                          size_t r0, size_t r1, float* y, size_t ldy);

// One weight type's row-matmul kernel and the activation rows it reads. Plugging in a kernel that takes
// another activation format (e.g. Q8_K for a K-quant) is a change of this one entry: the graph quantizes
// its input to whatever the entry asks for.
struct Matmul {
  MatmulFn fn = nullptr;
  ActivationFormat input = ActivationFormat::f32;
};

// An ISA table's entry for a type it has no kernel of its own for: matmul_for() then serves the type with
// the scalar table's entry.
inline constexpr Matmul kServedByScalar{};

// One matmul per weight type, in ggml id order; every ISA fills each member with designated initializers
// (a kernel, or kServedByScalar). The scalar table fills every member.
struct MatmulTable {
  Matmul f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, bf16;
  // Q4_0x16 (formats/q4_0x16.h): r0, r1 and the matrix's row count are multiples of 16;
  // w_row_bytes is a standard Q4_0 row's (a group of 16 rows spans 16 of them).
  Matmul q4_0x16;
  // Q4_Kx8 and Q6_Kx8 (formats/k_quants_x8.h), made at load from Q4_K / Q6_K matrices: r0, r1 and the
  // matrix's row count are multiples of 8; w_row_bytes is a standard row's. The model repacks a matrix
  // only when the active table has its own entry here (not kServedByScalar).
  Matmul q4_kx8, q6_kx8;
};

struct Kernels {
  Isa isa;
  // Indexed by weight type: use matmul_for().
  MatmulTable matmul;

  // Quantizes n floats (n % 32 == 0) to n / 32 activation blocks (round to nearest, scale =
  // max|x| / 127), bit-identical on every ISA.
  void (*quantize_q8_act)(const float* x, BlockQ8Act* y, size_t n);
  // Quantizes n floats (n % 256 == 0) to n / 256 Q8_K blocks exactly as ggml's quantize_row_q8_K
  // (formats/k_quants.h), bit-identical on every ISA.
  void (*quantize_q8_k)(const float* x, BlockQ8_K* y, size_t n);
  // out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]; out may alias x.
  void (*rmsnorm)(float* out, const float* x, const float* w, size_t n, float eps);
  // In-place numerically stable softmax.
  void (*softmax)(float* x, size_t n);
  // gate[i] = silu(gate[i]) * up[i].
  void (*silu_mul)(float* gate, const float* up, size_t n);
  // y[i] += x[i].
  void (*add)(float* y, const float* x, size_t n);
  // sum_i a[i] * b[i] in float32 (attention scores).
  float (*dot_f32)(const float* a, const float* b, size_t n);
  // y[i] += a * x[i] (attention value accumulation).
  void (*axpy)(float* y, float a, const float* x, size_t n);
  // sum_i a[i] * fp16(b[i]) and y[i] += a * fp16(x[i]): attention over an F16 KV arena without
  // converting its rows first.
  float (*dot_f16)(const float* a, const uint16_t* b, size_t n);
  void (*axpy_f16)(float* y, float a, const uint16_t* x, size_t n);
  // Attention over consecutive F16 KV rows `stride` elements apart, one call per (token, head) instead
  // of one per key, so the loop overhead and horizontal sums are paid once per few keys:
  // out[p] = scale * sum_i q[i] * fp16(k[p * stride + i]) for p < n_keys.
  void (*scores_f16)(const float* q, const uint16_t* k, size_t stride, size_t n_keys, size_t dim, float scale,
                     float* out);
  // out[i] = sum_p w[p] * fp16(v[p * stride + i]) for i < dim (overwrites out).
  void (*weighted_sum_f16)(float* out, const float* w, const uint16_t* v, size_t stride, size_t n_rows, size_t dim);

  // y[i] = fp16(x[i]), rounded to nearest even exactly as f32_to_fp16 (runtime/util/fp16.h) for every
  // non-NaN input: rows entering an F16 KV arena (KvArena::store). Optional (nullptr: store converts one
  // value at a time).
  void (*to_f16)(const float* x, uint16_t* y, size_t n);
  // Optional (nullptr when the ISA has none; the graph then attends token by token with the
  // kernels above). Batched causal attention of n_q <= kAttendQueries queries of one head over an F16
  // KV arena: for query i, out[i * ldo + d] = sum_{p < n_vis[i]} softmax_p(scale * q_i . k_p) v_p[d],
  // where q_i = q + i * ldq, k_p = k + p * kv_stride and v_p = v + p * kv_stride (hd halves each) and
  // every n_vis[i] >= 1. `scratch` holds attend_scratch_floats(max n_vis, hd) floats, 64-byte aligned.
  void (*attend_f16)(const float* q, size_t ldq, size_t n_q, const uint32_t* n_vis, const uint16_t* k,
                     const uint16_t* v, size_t kv_stride, size_t hd, float scale, float* scratch, float* out,
                     size_t ldo);
  // Optional (nullptr: the graph runs scores_f16, softmax and weighted_sum_f16 per query head). Decode
  // attention of the n_q query heads that share one KV head (grouped-query attention) over n_pos
  // consecutive F16 rows (k_p = k + p * hd, v_p likewise): for head j, out[j * hd + d] =
  // sum_p softmax_p(scale * q_j . k_p) v_p[d] with q_j = q + j * hd. Each key and value row is read and
  // widened once for all n_q heads. hd % 16 == 0, hd <= kAttendHeadsMaxDim, n_pos >= 1; `scratch` holds
  // n_q * n_pos floats.
  void (*attend_heads_f16)(const float* q, size_t n_q, const uint16_t* k, const uint16_t* v, size_t n_pos, size_t hd,
                           float scale, float* scratch, float* out);
  // Rotates the pairs (v[2i], v[2i + 1]) for i < n_pairs by the angles whose cosine and sine are
  // cs[2i] and cs[2i + 1]: (a, b) -> (a cos - b sin, a sin + b cos). RoPE on one head.
  void (*rope)(float* v, const float* cs, size_t n_pairs);

  // The kernels other architectures than Llama's need (runtime/model/model_config.h).
  // gate[i] = gelu(gate[i]) * up[i], GELU in its tanh approximation (llama.cpp's ggml_gelu): Gemma's FFN.
  void (*gelu_mul)(float* gate, const float* up, size_t n);
  // x[i] = cap * tanh(x[i] / cap): Gemma 2's soft-capping of attention scores and final logits.
  void (*softcap)(float* x, size_t n, float cap);
  // x[i] *= a (Gemma's embedding scale).
  void (*scale)(float* x, float a, size_t n);
  // NeoX-style RoPE on one head: rotates the pairs (v[i], v[i + n_pairs]) for i < n_pairs by the angles
  // whose cosines are cs[0, n_pairs) and sines cs[n_pairs, 2 n_pairs) (halves, not interleaved pairs).
  void (*rope_neox)(float* v, const float* cs, size_t n_pairs);
};

// Queries per attend_f16 call (one per 512-bit lane).
inline constexpr size_t kAttendQueries = 16;
// Scratch of attend_f16: transposed scores for n_pos positions plus buffers of a few head rows.
inline constexpr size_t attend_scratch_floats(size_t n_pos, size_t hd) {
  return kAttendQueries * (n_pos + 2 * hd) + 48 * hd;
}

// Largest head size attend_heads_f16 takes.
inline constexpr size_t kAttendHeadsMaxDim = 128;

// The row-matmul kernel for a weight type: the table's own entry, or the scalar table's where the table
// has none (kServedByScalar). Never has a null fn.
const Matmul& matmul_for(const Kernels& k, TensorType type);

// The kernel tables compiled into this build; nullptr when an ISA is not compiled in.
const Kernels* scalar_kernels();
const Kernels* avx2_kernels();
const Kernels* avx2vnni_kernels();
const Kernels* avx512_kernels();
const Kernels* neon_kernels();

// Choices that differ between CPUs of the same ISA, set from this CPU's identity once per process. Each was
// measured on the CPUs it names; every other CPU gets the defaults, measured on Zen 5. Off x86 the defaults.
struct CpuTuning {
  // Whether the x86 tables are Zen 4's (kernels_avx512.cpp and kernels_avx2.cpp build both kinds), which differ in
  // two kernels (BENCHMARKS.md, "Zen 4: one decode stream, Q6_K left unpacked" and "Zen 4: Q6_Kx8 prefetched into
  // L2"):
  // - the AVX-512 Q4_0x16 decode reads one group stream instead of 4: one sequential stream reads memory fastest
  //   there (the read probe: 28 GB/s against 11-17 for 2-8 streams);
  // - Q6_Kx8 prefetches into L2 instead of L1: with L1 requests its decode read half as fast there.
  bool zen4_tables;
};
const CpuTuning& cpu_tuning();

// Whether this CPU can run `isa` (cpuid/xgetbv on x86, hwcaps on ARM) and it is compiled in.
bool isa_available(Isa isa);
// The best available ISA, or the one named by LMRT_ISA (scalar|avx2|avx2vnni|avx512|neon) when set and
// available. Evaluated once per process call; has no hidden state.
Isa best_isa();
const Kernels& kernels_for(Isa isa);

}  // namespace lmrt::simd
