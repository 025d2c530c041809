// AVX2 + FMA + F16C kernel table (plain maddubs/madd, so it runs on every AVX2 CPU), and compiled again with AVX-VNNI
// as the avx2vnni table (kernels_avx2vnni.cpp, simd/avx2_variant.h: the dot steps become vpdpbusd, same bits).
//
// Q4_0 (q4_0_gemm_avx2.h) keeps 8 rows in the 8 lanes of a register: maddubs multiplies the unsigned nibbles
// (q + 8) by the activation bytes and the offset is removed by adding -8 * sum(x), which quantize_q8_act stores with
// each activation block. Integer sums are exact; each row's float sum runs over its blocks in order, the same in
// decode and in a batch of any size. Q8_0 weights take float activations (kernels_scalar.cpp says why).
//
// Everything except the getter has internal linkage so no inline code built for AVX2 can be picked by
// the linker for another translation unit.
#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "formats/k_quants.h"
#include "formats/q4_0x16.h"
#include "simd/avx2_variant.h"
#include "simd/float_ops.h"
#include "simd/kernels.h"
#include "simd/kv_streams.h"
#include "simd/matmul_tiling.h"
#include "simd/prefetch_x86.h"
#include "simd/quant_kernels.h"
#include "simd/slab_gemm.h"

namespace lmrt::simd {
namespace {

using Ops = FloatOps<xsimd::fma3<xsimd::avx2>>;  // RMSNorm, softmax, SiLU-mul, add, RoPE (float_ops.h)

using tiling::MatmulArgs;

constexpr size_t kBlock = 32;
constexpr size_t kF32Lanes = 8;

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Mask for maskload/maskstore of the first n (< 8) floats.
__m256i first_floats(size_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Each loader gives 8 weights of a row starting at element k (load_part: the first n of them).
struct F32Weights {
  static constexpr size_t kLaneBytes = 8 * 4;  // bytes of 8 weights
  static __m256 load(const uint8_t* row, size_t k) { return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k); }
  static __m256 load_part(const uint8_t* row, size_t k, size_t n) {
    return _mm256_maskload_ps(reinterpret_cast<const float*>(row) + k, first_floats(n));
  }
};

// The first n (< 8) 16-bit values at p, zero-padded.
__m128i load_part_u16(const uint8_t* p, size_t n) {
  uint16_t buf[8] = {};
  __builtin_memcpy(buf, p, n * sizeof(uint16_t));
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf));
}

struct F16Weights {
  static constexpr size_t kLaneBytes = 8 * 2;
  static __m256 load(const uint8_t* row, size_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  }
  static __m256 load_part(const uint8_t* row, size_t k, size_t n) {
    return _mm256_cvtph_ps(load_part_u16(row + 2 * k, n));
  }
};

struct BF16Weights {
  static constexpr size_t kLaneBytes = 8 * 2;
  static __m256 widen(__m128i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)); }
  static __m256 load(const uint8_t* row, size_t k) {
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  }
  static __m256 load_part(const uint8_t* row, size_t k, size_t n) { return widen(load_part_u16(row + 2 * k, n)); }
};

// Q8_0 weights against float activations (see kernels_scalar.cpp for why): a quarter block, scaled.
struct Q8_0FloatWeights {
  static constexpr size_t kLaneBytes = 9;  // about a quarter of a 34-byte block
  static __m256 load(const uint8_t* row, size_t k) {
    const uint8_t* blk = row + (k / 32) * sizeof(BlockQ8_0);
    uint16_t d;
    __builtin_memcpy(&d, blk, sizeof d);
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + k % 32));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), _mm256_set1_ps(_cvtsh_ss(d)));
  }
  // Rows of Q8_0 are whole blocks, so a tail shorter than 8 never happens; zeroed for completeness.
  static __m256 load_part(const uint8_t* row, size_t k, size_t n) {
    return _mm256_and_ps(load(row, k), _mm256_castsi256_ps(first_floats(n)));
  }
};

template <class W>
struct FloatTiles {
  static constexpr size_t kDecodeRows = 4;
  static constexpr size_t kRows = 4;
  static constexpr size_t kToks = 2;

  template <int R, int T, bool kPrefetch>
  static void tile(const MatmulArgs& a, size_t r, size_t t) {
    const uint8_t* w[R];
    const float* x[T];
    __m256 acc[R][T];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      w[i] = a.w + (r + i * a.row_stride) * a.w_row_bytes;
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) acc[i][j] = _mm256_setzero_ps();
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) x[j] = reinterpret_cast<const float*>(a.x + (t + j) * a.x_row_bytes);
    const uint8_t* pf = a.w + (r + R) * a.w_row_bytes;
    constexpr size_t kPfStep = R * W::kLaneBytes;
    size_t k = 0;
    for (; k + kF32Lanes <= a.n; k += kF32Lanes) {
      if constexpr (kPrefetch) {
        prefetch_span<kPfStep>(pf);
        pf += kPfStep;
      }
      __m256 wv[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) wv[i] = W::load(w[i], k);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const __m256 xv = _mm256_loadu_ps(x[j] + k);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) acc[i][j] = _mm256_fmadd_ps(wv[i], xv, acc[i][j]);
      }
    }
    if (k < a.n) {
      __m256 wv[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) wv[i] = W::load_part(w[i], k, a.n - k);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const __m256 xv = _mm256_maskload_ps(x[j] + k, first_floats(a.n - k));
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) acc[i][j] = _mm256_fmadd_ps(wv[i], xv, acc[i][j]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) a.y[(t + j) * a.ldy + r + i * a.row_stride] = hsum(acc[i][j]);
  }
};

// Not inlined: every caller goes through the table anyway, and inlined with a constant row range GCC 12 warns
// about a loop it cannot prove finite.
template <class K>
[[gnu::noinline]] void matmul(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n,
                              size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy) {
  tiling::run_tiled<K>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

// The GEMM needs the transposition.
// clang-format off
#include "simd/transpose_avx2.h"
#include "simd/vnni256_x86.h"
#include "simd/q4_0_gemm_avx2.h"
// clang-format on

// Q4_0: every batch size through q4_0_gemm_avx2.h, whose decode kernel and GEMM sum each (row, token) alike, so a
// token's outputs are the same bits in a batch of any size as alone (issue 17 point 7).
[[gnu::noinline]] void matmul_q4_0(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n,
                                   size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy) {
  q4_0_gemm::matmul(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

// ---- Q4_0x16 decode (formats/q4_0x16.h) ----
//
// Each 64-byte line of a unit holds 4 nibble bytes of each of 16 rows: two registers of 8 rows, one row
// per 32-bit lane. maddubs multiplies the unsigned nibbles by the activation dword broadcast and adds
// pairs into 16 bits; all 8 products of a block's 4 lines fit in 16 bits (8 x 2 x 15 x 127 = 30480), so
// one madd per half block widens them. Up to 4 group streams at once (two accumulators each: 16 ymm).

constexpr size_t kX16UnitsAhead = 4;

template <int S>
void q4_0x16_decode_groups(const uint8_t* const (&p)[S], size_t nb, const BlockQ8Act* x, float* const (&y)[S]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  __m256 acc[S][2];
  for (int s = 0; s < S; ++s) acc[s][0] = acc[s][1] = _mm256_setzero_ps();
  for (size_t b = 0; b < nb; ++b) {
    const BlockQ8Act& xb = x[b];
    const auto* xd = reinterpret_cast<const uint8_t*>(xb.qs);
    __m256i sum16[S][2];
    for (int s = 0; s < S; ++s) {
      prefetch_span<kQ4_0x16UnitBytes>(p[s] + (b + kX16UnitsAhead) * kQ4_0x16UnitBytes);
      sum16[s][0] = sum16[s][1] = _mm256_setzero_si256();
    }
    for (size_t c = 0; c < 4; ++c) {
      int32_t lo_x, hi_x;
      std::memcpy(&lo_x, xd + 4 * c, 4);
      std::memcpy(&hi_x, xd + 16 + 4 * c, 4);
      const __m256i xl = _mm256_set1_epi32(lo_x), xh = _mm256_set1_epi32(hi_x);
      for (int s = 0; s < S; ++s)
        for (int h = 0; h < 2; ++h) {
          const __m256i q =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[s] + b * kQ4_0x16UnitBytes + 32 + 64 * c + 32 * h));
          const __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
          sum16[s][h] = _mm256_add_epi16(sum16[s][h],
                                         _mm256_add_epi16(_mm256_maddubs_epi16(lo, xl), _mm256_maddubs_epi16(hi, xh)));
        }
    }
    const __m256 dx = _mm256_set1_ps(xb.d);
    const __m256i m8 = _mm256_set1_epi32(xb.minus8_sum);  // the -8 offset of every weight
    for (int s = 0; s < S; ++s)
      for (int h = 0; h < 2; ++h) {
        const __m256i dot = _mm256_add_epi32(_mm256_madd_epi16(sum16[s][h], ones), m8);
        const __m256 dw =
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p[s] + b * kQ4_0x16UnitBytes + 16 * h)));
        acc[s][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, dx), acc[s][h]);
      }
  }
  for (int s = 0; s < S; ++s) {
    _mm256_storeu_ps(y[s], acc[s][0]);
    _mm256_storeu_ps(y[s] + 8, acc[s][1]);
  }
}

// ---- Q4_0x16 small batches ----
//
// Up to kX16TileTokens tokens per pass over a group's units: each line is loaded and split into nibbles once
// and multiplied against every token's activations, with the decode kernel's arithmetic per (row, token)
// (16-bit block sums, one madd, the offset, one FMA per block in order), so each token gets its decode bits.
// Batches of 2 to kX16SmallBatch tokens: the slab GEMM repacks and transposes what these read directly.

constexpr size_t kX16TileTokens = 4, kX16SmallBatch = 8;

template <size_t T>
void q4_0x16_token_tile(const uint8_t* group, size_t nb, const uint8_t* x, size_t x_row_bytes, float* y, size_t ldy) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  // One pass per 8-row half of the group (the second reads the units from cache): with both halves at once the
  // tokens' sums and accumulators alone fill the 16 registers and the loop spills (BENCHMARKS.md, "AVX2 small
  // batches without spills or round trips").
  for (int h = 0; h < 2; ++h) {
    __m256 acc[T];
    for (size_t t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* unit = group + b * kQ4_0x16UnitBytes;
      if (h == 0) prefetch_span<kQ4_0x16UnitBytes>(unit + kX16UnitsAhead * kQ4_0x16UnitBytes);
      __m256i sum16[T];
      for (size_t t = 0; t < T; ++t) sum16[t] = _mm256_setzero_si256();
      for (size_t c = 0; c < 4; ++c) {
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit + 32 + 64 * c + 32 * h));
        const __m256i lo = _mm256_and_si256(q, low4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        for (size_t t = 0; t < T; ++t) {
          const auto* xq =
              reinterpret_cast<const uint8_t*>(reinterpret_cast<const BlockQ8Act*>(x + t * x_row_bytes)[b].qs);
          int32_t lo_x, hi_x;
          std::memcpy(&lo_x, xq + 4 * c, 4);
          std::memcpy(&hi_x, xq + 16 + 4 * c, 4);
          sum16[t] = _mm256_add_epi16(sum16[t], _mm256_add_epi16(_mm256_maddubs_epi16(lo, _mm256_set1_epi32(lo_x)),
                                                                 _mm256_maddubs_epi16(hi, _mm256_set1_epi32(hi_x))));
          keep_chain(sum16[t]);  // a chain, not a tree of the products (vnni256_x86.h)
        }
      }
      const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit + 16 * h)));
      for (size_t t = 0; t < T; ++t) {
        const BlockQ8Act& xb = reinterpret_cast<const BlockQ8Act*>(x + t * x_row_bytes)[b];
        const __m256i dot = _mm256_add_epi32(_mm256_madd_epi16(sum16[t], ones), _mm256_set1_epi32(xb.minus8_sum));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, _mm256_set1_ps(xb.d)), acc[t]);
      }
    }
    for (size_t t = 0; t < T; ++t) _mm256_storeu_ps(y + t * ldy + 8 * h, acc[t]);
  }
}

void q4_0x16_small_batch(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes, size_t n,
                         size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy) {
  const size_t nb = n / 32;
  for (size_t g = r0 / kQ4_0x16Rows; g < r1 / kQ4_0x16Rows; ++g) {
    const uint8_t* group = w + g * kQ4_0x16Rows * w_row_bytes;
    for (size_t t0 = 0; t0 < n_tok; t0 += kX16TileTokens) {
      const uint8_t* xt = x + t0 * x_row_bytes;
      float* yt = y + t0 * ldy + g * kQ4_0x16Rows;
      switch (std::min(kX16TileTokens, n_tok - t0)) {
        case 1:
          q4_0x16_token_tile<1>(group, nb, xt, x_row_bytes, yt, ldy);
          break;
        case 2:
          q4_0x16_token_tile<2>(group, nb, xt, x_row_bytes, yt, ldy);
          break;
        case 3:
          q4_0x16_token_tile<3>(group, nb, xt, x_row_bytes, yt, ldy);
          break;
        default:
          q4_0x16_token_tile<4>(group, nb, xt, x_row_bytes, yt, ldy);
          break;
      }
    }
  }
}

struct Q4_0x16Decode {
  static constexpr int kStreams = 4;
  template <int S>
  static void groups(const uint8_t* const (&p)[S], size_t nb, const void* x, float* const (&y)[S]) {
    q4_0x16_decode_groups<S>(p, nb, static_cast<const BlockQ8Act*>(x), y);
  }
};

void matmul_q4_0x16(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                    size_t r0, size_t r1, float* y, size_t ldy) {
  if (n_tok > kX16SmallBatch) {  // the Q4_0 GEMM, its slabs split straight from the units
    q4_0_gemm::matmul_x16(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
    return;
  }
  if (n_tok > 1)
    return q4_0x16_small_batch(static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const uint8_t*>(x), x_row_bytes,
                               n, n_tok, r0, r1, y, ldy);
  tiling::run_x16_decode<Q4_0x16Decode>(w, w_row_bytes, x, n, r0, r1, y);
}

void quantize_q8_act(const float* x, BlockQ8Act* y, size_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (size_t b = 0; b < n / kBlock; ++b) {
    const float* xb = x + b * kBlock;
    __m256 v[4];
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(xb + 8 * k);
      m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[k]));
    }
    // Same operations as the scalar reference, so blocks are bit-identical.
    const float amax = hmax(m);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = d;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    // cvtps rounds to nearest even under the default MXCSR, as nearbyint does.
    for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], vid));
    // packs interleave 128-bit lanes; the permute puts the 32 bytes back in element order.
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs),
                        _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    // The sum of the rounded values (the scalar reference sums the stored int8s: the same integers).
    const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), p), _mm256_set1_epi16(1));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    y[b].minus8_sum = -8 * _mm_cvtsi128_si32(s4);
  }
}

float dot_f32(const float* a, const float* b, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  if (i < n) {
    const __m256i m = first_floats(n - i);
    s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), s1);
  }
  return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

void axpy(float* y, float a, const float* x, size_t n) {
  const __m256 va = _mm256_set1_ps(a);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  if (i < n) {
    const __m256i m = first_floats(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(va, _mm256_maskload_ps(x + i, m), _mm256_maskload_ps(y + i, m)));
  }
}

float dot_f16(const float* a, const uint16_t* b, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  auto h8 = [&](size_t i) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i))); };
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), h8(i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), h8(i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), h8(i), s0);
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) s += a[i] * _cvtsh_ss(b[i]);
  return s;
}

void axpy_f16(float* y, float a, const uint16_t* x, size_t n) {
  const __m256 va = _mm256_set1_ps(a);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 xv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i)));
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, xv, _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * _cvtsh_ss(x[i]);
}

// The four horizontal sums of a0..a3 in one 128-bit vector.
__m128 reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
}

__m256 load_f16x8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

constexpr size_t kKvRowsAhead = 8;  // per stream (simd/kv_streams.h)

// Scores of the 4 rows k0 + j * step (j < 4), written to out[at[j]].
void score4(const float* q, const uint16_t* k0, size_t step, size_t dim, float scale, float* out,
            const size_t (&at)[4]) {
  const size_t full = dim / 8 * 8;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i < full; i += 8) {
    const __m256 qv = _mm256_loadu_ps(q + i);
    a0 = _mm256_fmadd_ps(qv, load_f16x8(k0 + i), a0);
    a1 = _mm256_fmadd_ps(qv, load_f16x8(k0 + step + i), a1);
    a2 = _mm256_fmadd_ps(qv, load_f16x8(k0 + 2 * step + i), a2);
    a3 = _mm256_fmadd_ps(qv, load_f16x8(k0 + 3 * step + i), a3);
  }
  alignas(16) float s[4];
  _mm_store_ps(s, reduce4(a0, a1, a2, a3));
  for (size_t j = 0; j < 4; ++j) {
    for (size_t i = full; i < dim; ++i) s[j] += q[i] * _cvtsh_ss(k0[j * step + i]);
    out[at[j]] = s[j] * scale;
  }
}

void scores_f16(const float* q, const uint16_t* k, size_t stride, size_t n_keys, size_t dim, float scale, float* out) {
  scores_by_streams<kKvRowsAhead, score4, dot_f16>(q, k, stride, n_keys, dim, scale, out);
}

void weighted_sum_f16(float* out, const float* w, const uint16_t* v, size_t stride, size_t n_rows, size_t dim) {
  const size_t full = dim / 32 * 32, per = kv_stream_rows(n_rows);
  for (size_t i0 = 0; i0 < full; i0 += 32) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    auto add_row = [&](size_t p) {
      const __m256 wp = _mm256_set1_ps(w[p]);
      const uint16_t* row = v + p * stride + i0;
      for (size_t c = 0; c < 4; ++c) acc[c] = _mm256_fmadd_ps(wp, load_f16x8(row + 8 * c), acc[c]);
    };
    prefetch_kv_stream_starts(v + i0, per, stride, 32, kKvRowsAhead);
    for (size_t i = 0; i < per; ++i) {  // rows i, i + per, i + 2 per, i + 3 per
      prefetch_kv_streams_ahead(v + i0, per, i, stride, 32, kKvRowsAhead);
      for (size_t j = 0; j < kKvStreams; ++j) add_row(j * per + i);
    }
    for (size_t p = kKvStreams * per; p < n_rows; ++p) add_row(p);
    for (size_t c = 0; c < 4; ++c) _mm256_storeu_ps(out + i0 + 8 * c, acc[c]);
  }
  if (full < dim) {
    for (size_t i = full; i < dim; ++i) out[i] = 0.0f;
    for (size_t p = 0; p < n_rows; ++p) axpy_f16(out + full, w[p], v + p * stride + full, dim - full);
  }
}

void to_f16(const float* x, uint16_t* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) y[i] = static_cast<uint16_t>(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT));
}

template <MatmulFn kQ6Kx8>
constexpr Kernels make_avx2() {
  return {
      .isa = LMRT_AVX2_ISA,
      .matmul =
          {
              .f32 = {matmul<FloatTiles<F32Weights>>, ActivationFormat::f32},
              .f16 = {matmul<FloatTiles<F16Weights>>, ActivationFormat::f32},
              .q4_0 = {matmul_q4_0, ActivationFormat::q8_32},
              .q4_1 = {LMRT_AVX2_NS::matmul_q4_1, ActivationFormat::q8_32},
              .q5_0 = {LMRT_AVX2_NS::matmul_q5_0, ActivationFormat::q8_32},
              .q5_1 = {LMRT_AVX2_NS::matmul_q5_1, ActivationFormat::q8_32},
              .q8_0 = {matmul<FloatTiles<Q8_0FloatWeights>>, ActivationFormat::f32},
              .q2_k = {LMRT_AVX2_NS::matmul_q2_k, ActivationFormat::q8_k},
              .q3_k = {LMRT_AVX2_NS::matmul_q3_k, ActivationFormat::q8_k},
              .q4_k = {LMRT_AVX2_NS::matmul_q4_k, ActivationFormat::q8_k},
              .q5_k = {LMRT_AVX2_NS::matmul_q5_k, ActivationFormat::q8_k},
              .q6_k = {LMRT_AVX2_NS::matmul_q6_k, ActivationFormat::q8_k},
              .iq4_nl = {LMRT_AVX2_NS::matmul_iq4_nl, ActivationFormat::q8_32},
              .iq4_xs = {LMRT_AVX2_NS::matmul_iq4_xs, ActivationFormat::q8_k},
              .bf16 = {matmul<FloatTiles<BF16Weights>>, ActivationFormat::f32},
              .q4_0x16 = {matmul_q4_0x16, ActivationFormat::q8_32},
              .q4_kx8 = {LMRT_AVX2_NS::matmul_q4_kx8, ActivationFormat::q8_k},
              .q6_kx8 = {kQ6Kx8, ActivationFormat::q8_k},
          },
      .quantize_q8_act = quantize_q8_act,
      .quantize_q8_k = LMRT_AVX2_NS::quantize_q8_k,
      .rmsnorm = Ops::rmsnorm,
      .softmax = Ops::softmax,
      .silu_mul = Ops::silu_mul,
      .add = Ops::add,
      .dot_f32 = dot_f32,
      .axpy = axpy,
      .dot_f16 = dot_f16,
      .axpy_f16 = axpy_f16,
      .scores_f16 = scores_f16,
      .weighted_sum_f16 = weighted_sum_f16,
      .to_f16 = to_f16,
      .attend_f16 = nullptr,
      .attend_heads_f16 = nullptr,
      .rope = Ops::rope,
      .gelu_mul = Ops::gelu_mul,
      .softcap = Ops::softcap,
      .scale = Ops::scale,
      .rope_neox = Ops::rope_neox,
  };
}

const Kernels kAvx2 = make_avx2<LMRT_AVX2_NS::matmul_q6_kx8>();
const Kernels kAvx2Zen4 = make_avx2<LMRT_AVX2_NS::matmul_q6_kx8_prefetch_l2>();

}  // namespace

const Kernels* LMRT_AVX2_GETTER() { return cpu_tuning().zen4_tables ? &kAvx2Zen4 : &kAvx2; }

}  // namespace lmrt::simd
