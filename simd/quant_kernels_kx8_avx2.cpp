// AVX2 kernels for Q4_Kx8 and Q6_Kx8 (formats/k_quants_x8.h): decode and batches of up to 16 tokens read each
// group of 8 rows as one sequential stream. A 256-bit load takes 8 bytes of each of 4 rows (half h of a 64-byte
// sub-unit holds rows 4h..4h+3), so row j of a half owns int16 lanes 4j..4j+3 after vpmaddubsw against the token's 8
// activation bytes broadcast to every row, and int32 lanes 2j, 2j + 1 once a sub-block's 16-bit sums are
// multiplied by its per-row scale (vpmaddwd). The four 16-bit sums of a sub-block stay below 2^15 (4 x 2 x 15 x
// 127). Each (row, token) is the exact integer sums of every super-block and then the float chain of the
// standard Q4_K kernels (quant_kernels_x86.h): acc = fma(s, d * xd, acc), acc = fma(m, -dmin * xd, acc), so a
// token's result has the same bits here, in the standard tiles and in the GEMM that larger batches take through
// kx8_via_standard.h. Q6_Kx8 likewise (its section below).
//
// Everything but the namespace's entry points has internal linkage (see simd/README.md).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "formats/k_quants_x8.h"
#include "simd/avx2_variant.h"
#include "simd/kx8_scales_x86.h"
#include "simd/kx8_via_standard.h"
#include "simd/prefetch_x86.h"
#include "simd/quant_kernels.h"

namespace lmrt::simd::LMRT_AVX2_NS {
namespace {

#include "simd/vnni256_x86.h"  // inside the anonymous namespace: its inline steps differ per ISA

// Tokens the interleaved kernels take (Q4_Kx8: one pass per token over each unit, in cache after the first; Q6_Kx8:
// each unit's codes unpacked once, then every token); more take the GEMM, whose per-call deinterleave and transposition
// only pay off beyond a decode step's batch (BENCHMARKS.md, "AVX2 small batches without spills or round trips").
constexpr size_t kMaxTiled = 16;
// From this many tokens q4_kx8_groups_by_unit decodes each unit's scales once for all of them.
constexpr size_t kByUnitFrom = 3;

// Dwords [i0..i7] of the 24 dwords a, b, c (a holds 0-7, b 8-15, c 16-23), each index in a, b or c as the mask
// bits say: the three permutes give every lane's dword from its source, the blends pick the source.
template <int kFromB, int kFromC>
[[gnu::always_inline]] inline __m256i pick24(__m256i a, __m256i b, __m256i c, __m256i ia, __m256i ib, __m256i ic) {
  const __m256i ab = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(a, ia), _mm256_permutevar8x32_epi32(b, ib), kFromB);
  return _mm256_blend_epi32(ab, _mm256_permutevar8x32_epi32(c, ic), kFromC);
}

// One unit's scales and mins for the 8 rows. scale[h]: rows 4h..4h+3 of a half, row j's 8 scales at bytes
// 8j..8j+7. minsA[h] / minsB[h]: the mins of rows (4h, 4h + 2) / (4h + 1, 4h + 3) as 16-bit words, one row
// per 128-bit lane, so vpmaddwd with the sub-block sums and one vphaddd give row j in int32 lanes 2j, 2j + 1.
struct Q4KScales {
  __m256i scale[2], minsA[2], minsB[2];
};

[[gnu::always_inline]] inline Q4KScales q4_kx8_scales(const uint8_t* unit) {
  const uint8_t* p = unit + kQ4_Kx8ScalesOffset;  // row j's packed words u0, u1, u2 at dwords 3j, 3j + 1, 3j + 2
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64));
  // u0 = dwords 0, 3, 6 | 9, 12, 15 | 18, 21; u1 = 1, 4, 7 | 10, 13 | 16, 19, 22; u2 = 2, 5 | 8, 11, 14 | 17, 20, 23.
  const __m256i u0 =
      pick24<0x38, 0xc0>(a, b, c, _mm256_setr_epi32(0, 3, 6, 0, 0, 0, 0, 0), _mm256_setr_epi32(0, 0, 0, 1, 4, 7, 0, 0),
                         _mm256_setr_epi32(0, 0, 0, 0, 0, 0, 2, 5));
  const __m256i u1 =
      pick24<0x18, 0xe0>(a, b, c, _mm256_setr_epi32(1, 4, 7, 0, 0, 0, 0, 0), _mm256_setr_epi32(0, 0, 0, 2, 5, 0, 0, 0),
                         _mm256_setr_epi32(0, 0, 0, 0, 0, 0, 3, 6));
  const __m256i u2 =
      pick24<0x1c, 0xe0>(a, b, c, _mm256_setr_epi32(2, 5, 0, 0, 0, 0, 0, 0), _mm256_setr_epi32(0, 0, 0, 3, 6, 0, 0, 0),
                         _mm256_setr_epi32(0, 0, 0, 0, 0, 1, 4, 7));
  const Q4KScalesMins8 m = q4_k_scales_mins8(u0, u1, u2);
  Q4KScales s;
  // Per 128-bit lane: rows (0, 1) / (4, 5) in lo, (2, 3) / (6, 7) in hi, 8 bytes each.
  const __m256i slo = _mm256_unpacklo_epi32(m.scales_low, m.scales_high);
  const __m256i shi = _mm256_unpackhi_epi32(m.scales_low, m.scales_high);
  s.scale[0] = _mm256_permute2x128_si256(slo, shi, 0x20);
  s.scale[1] = _mm256_permute2x128_si256(slo, shi, 0x31);
  const __m256i mlo = _mm256_unpacklo_epi32(m.mins_low, m.mins_high);
  const __m256i mhi = _mm256_unpackhi_epi32(m.mins_low, m.mins_high);
  const __m256i even = _mm256_unpacklo_epi64(mlo, mhi);  // rows (0, 2) | (4, 6)
  const __m256i odd = _mm256_unpackhi_epi64(mlo, mhi);   // rows (1, 3) | (5, 7)
  s.minsA[0] = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(even));
  s.minsA[1] = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(even, 1));
  s.minsB[0] = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(odd));
  s.minsB[1] = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(odd, 1));
  return s;
}

// Scale of sub-block sb for the 4 rows of a half, in each of the row's four 16-bit lanes.
[[gnu::always_inline]] inline __m256i scale_words(__m256i scale, int sb) {
  // Word k of a 128-bit lane takes byte 8 * (k / 4) + sb; 0x80 zeroes its high byte.
  const __m256i idx = _mm256_setr_epi16(0x8000, 0x8000, 0x8000, 0x8000, 0x8008, 0x8008, 0x8008, 0x8008, 0x8000, 0x8000,
                                        0x8000, 0x8000, 0x8008, 0x8008, 0x8008, 0x8008);
  return _mm256_shuffle_epi8(scale, _mm256_add_epi16(idx, _mm256_set1_epi16(static_cast<int16_t>(sb))));
}

// The 8 bytes of activations at p in every 64-bit lane.
[[gnu::always_inline]] inline __m256i bcast8(const int8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return _mm256_set1_epi64x(v);
}

// Two halves' int32 pairs (row j of half h in lanes 2j, 2j + 1) as one sum per row, row r in lane r.
[[gnu::always_inline]] inline __m256i rows8(__m256i h0, __m256i h1) {
  // vphaddd gives rows 0, 1, 4, 5 | 2, 3, 6, 7.
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(h0, h1), 0xd8);
}

// A unit's 8 row factors: d, and the mins' -dmin (its sign bit flipped, as the standard kernels negate it).
struct Q4KFactors {
  __m256 d, ndmin;
};

[[gnu::always_inline]] inline Q4KFactors q4_kx8_factors(const uint8_t* unit) {
  const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit + 16)));
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit))),
          _mm256_xor_ps(_mm256_set1_ps(-0.0f), dmin)};
}

// acc (row r in lane r) += one unit's dot products with one token's Q8_K block.
[[gnu::always_inline]] inline __m256 q4_kx8_unit_dot(const uint8_t* unit, const Q4KScales& sc, __m256 d, __m256 ndmin,
                                                     const BlockQ8_K& x, __m256 acc) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const uint8_t* qs = unit + kQ4_Kx8QsOffset;
  __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    __m256i lo[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    __m256i hi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      const __m256i xl = bcast8(x.qs + 64 * c + 8 * g), xh = bcast8(x.qs + 64 * c + 32 + 8 * g);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * (4 * c + g) + 32 * h));
        lo[h] = _mm256_add_epi16(lo[h], _mm256_maddubs_epi16(_mm256_and_si256(w, low4), xl));
        hi[h] = _mm256_add_epi16(hi[h], _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(w, 4), low4), xh));
        keep_chain(lo[h]);  // linear chains: reassociated into trees they spill (vnni256_x86.h)
        keep_chain(hi[h]);
      }
    }
    // Sub-blocks 2c (low nibbles) and 2c + 1 (high).
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) {
      sumi[h] = _mm256_add_epi32(sumi[h], _mm256_madd_epi16(lo[h], scale_words(sc.scale[h], 2 * c)));
      sumi[h] = _mm256_add_epi32(sumi[h], _mm256_madd_epi16(hi[h], scale_words(sc.scale[h], 2 * c + 1)));
      keep_chain(sumi[h]);
    }
  }
  // The mins against the sub-blocks' activation sums (each the sum of two 16-element bsums), in both lanes.
  const __m256i bsub =
      _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)), _mm256_set1_epi16(1));
  const __m256i b8 =
      _mm256_broadcastsi128_si256(_mm_packs_epi32(_mm256_castsi256_si128(bsub), _mm256_extracti128_si256(bsub, 1)));
  __m256i summ[2];
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)
    summ[h] = _mm256_hadd_epi32(_mm256_madd_epi16(sc.minsA[h], b8), _mm256_madd_epi16(sc.minsB[h], b8));
  const __m256 xd = _mm256_set1_ps(x.d);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(rows8(sumi[0], sumi[1])), _mm256_mul_ps(d, xd), acc);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(rows8(summ[0], summ[1])), _mm256_mul_ps(ndmin, xd), acc);
}

void q4_kx8_groups_by_token(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes, size_t n_tok,
                            size_t nb, size_t g0, size_t g1, float* y, size_t ldy) {
  for (size_t g = g0; g < g1; ++g) {
    const uint8_t* group = w + g * kKx8Rows * w_row_bytes;
    // One pass over the group per token: the group (at most a few tens of KiB) is in cache after the first.
    for (size_t t = 0; t < n_tok; ++t) {
      const auto* xt = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes);
      __m256 acc = _mm256_setzero_ps();
      for (size_t b = 0; b < nb; ++b) {
        const uint8_t* unit = group + b * kQ4_Kx8UnitBytes;
        const Q4KFactors f = q4_kx8_factors(unit);
        acc = q4_kx8_unit_dot(unit, q4_kx8_scales(unit), f.d, f.ndmin, xt[b], acc);
      }
      _mm256_storeu_ps(y + t * ldy + g * kKx8Rows, acc);
    }
  }
}

void q4_kx8_groups_by_unit(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes, size_t n_tok,
                           size_t nb, size_t g0, size_t g1, float* y, size_t ldy) {
  for (size_t g = g0; g < g1; ++g) {
    const uint8_t* group = w + g * kKx8Rows * w_row_bytes;
    // Unit by unit, each token in turn: a unit's scales are decoded once for all the tokens, and the unit
    // (1152 bytes) is in L1 after the first. Each token's chain over the units is the decode order.
    __m256 acc[kMaxTiled];
    for (size_t t = 0; t < n_tok; ++t) acc[t] = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* unit = group + b * kQ4_Kx8UnitBytes;
      const Q4KFactors f = q4_kx8_factors(unit);
      const Q4KScales sc = q4_kx8_scales(unit);
      // The next unit's lines requested now, all at once, while this one is multiplied with every token (a
      // unit takes about a thousand cycles at 8 tokens, a DRAM miss a few hundred): its first-token pass would
      // otherwise wait for them line by line.
      if (b + 1 < nb || g + 1 < g1)  // the next group's first unit follows the last
        prefetch_lines_written_out<kQ4_Kx8UnitBytes>(unit + kQ4_Kx8UnitBytes);
      for (size_t t = 0; t < n_tok; ++t) {
        const auto* xt = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes);
        acc[t] = q4_kx8_unit_dot(unit, sc, f.d, f.ndmin, xt[b], acc[t]);
      }
    }
    for (size_t t = 0; t < n_tok; ++t) _mm256_storeu_ps(y + t * ldy + g * kKx8Rows, acc[t]);
  }
}

// ---- Q6_Kx8 ----
//
// Half hh of a 64-byte sub-unit holds rows 4hh..4hh+3, so one 256-bit load gives 8 codes of each of 4 rows, as
// for Q4_Kx8. Sub-block s (16 elements, 16s..16s+15) is two such 8-element pieces i = 0, 1; its codes (q + 32,
// 0..63) come from the ql sub-units 8P + 4(k & 1) + l8 (nibble k / 2) and the qh sub-unit 4P + l8 (bits 2k, 2k + 1),
// where s = 8P + 2k + m and l8 = 2m + i (formats/k_quants_x8.h). vpmaddubsw against the piece's 8 activation bytes
// gives 4 words a row, each 2 products; the two pieces' words added hold 4 products (<= 4 * 63 * 128 < 2^15), and
// vpmaddwd against the row's scale gives its scaled sums in int32 lanes 2r, 2r + 1. The -32 offset of the codes is
// the scales against the activations' bsums, subtracted from the integer total, which is then the standard kernels'
// (Q6K in quant_kernels_x86.h) and takes the same float step: the bits are theirs.

// How a Q6_Kx8 stream prefetches: the ql and qh parts of a unit are two interleaved sequences the hardware prefetcher
// does not follow (as on AVX-512, quant_kernels_kx8_avx512.cpp). By default into L1, 3 units ahead in decode and the
// next unit in batches; on Zen 4 into L2, 6 units ahead in both, where the L1 requests held decode to 13-15 GB/s
// against 20-24 with the L2 ones (BENCHMARKS.md, "Zen 4: Q6_Kx8 prefetched into L2").
struct Q6Prefetch {
  PrefetchPlan decode, batch;
};
constexpr Q6Prefetch kQ6PrefetchL1{{_MM_HINT_T0, 3}, {_MM_HINT_T0, 1}},
    kQ6PrefetchL2{{_MM_HINT_T1, 6}, {_MM_HINT_T1, 6}};

// The codes of piece (P, l8) for rows 4hh..4hh+3, k = 0..3 (sub-blocks 8P + 2k + l8 / 2).
[[gnu::always_inline]] inline void q6_kx8_codes(const uint8_t* unit, int P, int l8, int hh, __m256i (&c)[4]) {
  const __m256i low4 = _mm256_set1_epi8(0x0f), bits45 = _mm256_set1_epi8(0x30);
  const uint8_t* ql = unit + kQ6_Kx8QlOffset + 32 * hh;
  const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * (8 * P + l8)));
  const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * (8 * P + 4 + l8)));
  const __m256i h =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit + kQ6_Kx8QhOffset + 32 * hh + 64 * (4 * P + l8)));
  c[0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(h, 4), bits45));
  c[1] = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(h, 2), bits45));
  c[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(h, bits45));
  c[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                         _mm256_and_si256(_mm256_srli_epi16(h, 2), bits45));
}

// Sub-block s's int8 scale of rows 4hh..4hh+3 in each of the row's four 16-bit lanes.
[[gnu::always_inline]] inline __m256i q6_kx8_scale_words(const uint8_t* unit, int s, int hh) {
  int32_t four;
  std::memcpy(&four, unit + kQ6_Kx8ScalesOffset + 8 * s + 4 * hh, 4);
  const __m128i rep =
      _mm_shuffle_epi8(_mm_cvtsi32_si128(four), _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
  return _mm256_cvtepi8_epi16(rep);
}

// Scales 2i and 2i + 1 of the 8 rows as words 2r, 2r + 1 (row r): vpmaddwd against the token's bsums 2i, 2i + 1 gives
// row r's part of the bias in int32 lane r.
[[gnu::always_inline]] inline __m256i q6_kx8_bias_words(const uint8_t* unit, int i) {
  const uint8_t* sc = unit + kQ6_Kx8ScalesOffset + 16 * i;
  return _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)),
                                                _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8))));
}

// bsums 2i and 2i + 1 of a token in every dword.
[[gnu::always_inline]] inline __m256i bsums_pair(const BlockQ8_K& x, int i) {
  int32_t v;
  std::memcpy(&v, x.bsums + 2 * i, 4);
  return _mm256_set1_epi32(v);
}

// The unit's 8 row factors d (row r in lane r).
[[gnu::always_inline]] inline __m256 q6_kx8_d(const uint8_t* unit) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit)));
}

// acc (row r in lane r) += the unit's dot products with one token, from the per-row integer sums (sumi[hh]: rows of
// half hh in int32 lanes 2r, 2r + 1), the bias (row r in lane r, before the factor 32) and the unit's d.
[[gnu::always_inline]] inline __m256 q6_kx8_finish(__m256 d, const BlockQ8_K& x, const __m256i (&sumi)[2], __m256i bias,
                                                   __m256 acc) {
  const __m256i total = _mm256_sub_epi32(rows8(sumi[0], sumi[1]), _mm256_slli_epi32(bias, 5));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(total), _mm256_mul_ps(d, _mm256_set1_ps(x.d)), acc);
}

// Decode: one token, the codes unpacked on the way and multiplied at once. Through q6_kx8_groups_by_unit's stack
// buffer a single token streams at 16-18 GB/s against 27 here (lmrt_quant_matmul_bench avx2 5632 2048 24 7 1 Q6_Kx8).
template <PrefetchPlan kPrefetch>
void q6_kx8_groups_one(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t nb, size_t g0, size_t g1,
                       float* y) {
  const auto* xt = reinterpret_cast<const BlockQ8_K*>(x);
  for (size_t g = g0; g < g1; ++g) {
    const uint8_t* group = w + g * kKx8Rows * w_row_bytes;
    __m256 acc = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* unit = group + b * kQ6_Kx8UnitBytes;
      prefetch_lines_written_out<kQ6_Kx8UnitBytes, kPrefetch.hint>(unit + kPrefetch.units * kQ6_Kx8UnitBytes);
      const int8_t* qs = xt[b].qs;
      __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 2
      for (int hh = 0; hh < 2; ++hh)
#pragma GCC unroll 2
        for (int P = 0; P < 2; ++P)
#pragma GCC unroll 2
          for (int m = 0; m < 2; ++m) {
            __m256i p[4];
#pragma GCC unroll 2
            for (int i = 0; i < 2; ++i) {
              __m256i c[4];
              q6_kx8_codes(unit, P, 2 * m + i, hh, c);
#pragma GCC unroll 4
              for (int k = 0; k < 4; ++k) {
                const __m256i prod = _mm256_maddubs_epi16(c[k], bcast8(qs + 16 * (8 * P + 2 * k + m) + 8 * i));
                p[k] = i == 0 ? prod : _mm256_add_epi16(p[k], prod);
              }
            }
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
              sumi[hh] =
                  _mm256_add_epi32(sumi[hh], _mm256_madd_epi16(p[k], q6_kx8_scale_words(unit, 8 * P + 2 * k + m, hh)));
              keep_chain(sumi[hh]);
            }
          }
      __m256i bias = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        bias = _mm256_add_epi32(bias, _mm256_madd_epi16(q6_kx8_bias_words(unit, i), bsums_pair(xt[b], i)));
      acc = q6_kx8_finish(q6_kx8_d(unit), xt[b], sumi, bias, acc);
    }
    _mm256_storeu_ps(y + g * kKx8Rows, acc);
  }
}

// Batches: each unit's codes and scales unpacked once to the stack (3.25 KiB, in L1), then every token in turn. At
// 8 tokens re-unpacking the codes per token would cost more than the products.
template <PrefetchPlan kPrefetch>
void q6_kx8_groups_by_unit(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes, size_t n_tok,
                           size_t nb, size_t g0, size_t g1, float* y, size_t ldy) {
  alignas(32) __m256i codes[2][16][2];  // [hh][sub-block][piece]
  alignas(32) __m256i scales[2][16];    // [hh][sub-block]
  alignas(32) __m256i bias_words[8];
  for (size_t g = g0; g < g1; ++g) {
    const uint8_t* group = w + g * kKx8Rows * w_row_bytes;
    __m256 acc[kMaxTiled];
    for (size_t t = 0; t < n_tok; ++t) acc[t] = _mm256_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* unit = group + b * kQ6_Kx8UnitBytes;
      if (b + 1 < nb || g + 1 < g1)
        prefetch_lines_written_out<kQ6_Kx8UnitBytes, kPrefetch.hint>(unit + kPrefetch.units * kQ6_Kx8UnitBytes);
#pragma GCC unroll 2
      for (int hh = 0; hh < 2; ++hh)
#pragma GCC unroll 2
        for (int P = 0; P < 2; ++P)
#pragma GCC unroll 4
          for (int l8 = 0; l8 < 4; ++l8) {
            __m256i c[4];
            q6_kx8_codes(unit, P, l8, hh, c);
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) codes[hh][8 * P + 2 * k + l8 / 2][l8 % 2] = c[k];
          }
#pragma GCC unroll 2
      for (int hh = 0; hh < 2; ++hh)
#pragma GCC unroll 16
        for (int s = 0; s < 16; ++s) scales[hh][s] = q6_kx8_scale_words(unit, s, hh);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) bias_words[i] = q6_kx8_bias_words(unit, i);
      const __m256 d = q6_kx8_d(unit);
      for (size_t t = 0; t < n_tok; ++t) {
        const BlockQ8_K& xt = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes)[b];
        __m256i sumi[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 16
        for (int s = 0; s < 16; ++s) {
          const __m256i x0 = bcast8(xt.qs + 16 * s), x1 = bcast8(xt.qs + 16 * s + 8);
#pragma GCC unroll 2
          for (int hh = 0; hh < 2; ++hh) {
            const __m256i p =
                _mm256_add_epi16(_mm256_maddubs_epi16(codes[hh][s][0], x0), _mm256_maddubs_epi16(codes[hh][s][1], x1));
            sumi[hh] = _mm256_add_epi32(sumi[hh], _mm256_madd_epi16(p, scales[hh][s]));
            keep_chain(sumi[hh]);
          }
        }
        __m256i bias = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) bias = _mm256_add_epi32(bias, _mm256_madd_epi16(bias_words[i], bsums_pair(xt, i)));
        acc[t] = q6_kx8_finish(d, xt, sumi, bias, acc[t]);
      }
    }
    for (size_t t = 0; t < n_tok; ++t) _mm256_storeu_ps(y + t * ldy + g * kKx8Rows, acc[t]);
  }
}

// The 64 bytes of pieces 0..7 of each of the 8 rows from 8 sub-units of 64 bytes (sub-unit u at src + 64u holds
// row j's piece u at qword j), row j to dst + j * stride: four 4x4 transposes of qwords.
void rows_of_subunits(const uint8_t* src, uint8_t* dst, size_t stride) {
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)  // rows 4h..4h+3
#pragma GCC unroll 2
    for (int q = 0; q < 2; ++q) {  // pieces 4q..4q+3
      __m256i a[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
        a[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 64 * (4 * q + i) + 32 * h));
      const __m256i t0 = _mm256_unpacklo_epi64(a[0], a[1]), t1 = _mm256_unpackhi_epi64(a[0], a[1]);
      const __m256i t2 = _mm256_unpacklo_epi64(a[2], a[3]), t3 = _mm256_unpackhi_epi64(a[2], a[3]);
      const __m256i r[4] = {_mm256_permute2x128_si256(t0, t2, 0x20), _mm256_permute2x128_si256(t1, t3, 0x20),
                            _mm256_permute2x128_si256(t0, t2, 0x31), _mm256_permute2x128_si256(t1, t3, 0x31)};
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (4 * h + j) * stride + 32 * q), r[j]);
    }
}

// The 8 rows' 16 scales from a Q6_Kx8 unit's sub-block-major scales (deinterleave_q6_kx8_group in
// kx8_via_standard.h): a pshufb pairs scales 2k and 2k + 1 of each row, then an 8x8 transpose of those 16-bit pairs.
void scales_of_rows(const uint8_t* src, uint8_t* dst, size_t stride) {
  const __m128i pair = _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15);
  __m128i w[8];  // word j of w[k]: scales 2k, 2k + 1 of row j
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k)
    w[k] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * k)), pair);
  __m128i a[8], c[8];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    a[2 * k] = _mm_unpacklo_epi16(w[2 * k], w[2 * k + 1]);      // rows 0-3, pairs 2k, 2k + 1
    a[2 * k + 1] = _mm_unpackhi_epi16(w[2 * k], w[2 * k + 1]);  // rows 4-7
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    c[4 * h + 0] = _mm_unpacklo_epi32(a[h], a[2 + h]);      // rows 4h, 4h + 1: pairs 0-3
    c[4 * h + 1] = _mm_unpackhi_epi32(a[h], a[2 + h]);      // rows 4h + 2, 4h + 3
    c[4 * h + 2] = _mm_unpacklo_epi32(a[4 + h], a[6 + h]);  // rows 4h, 4h + 1: pairs 4-7
    c[4 * h + 3] = _mm_unpackhi_epi32(a[4 + h], a[6 + h]);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
    for (int q = 0; q < 2; ++q) {
      const __m128i lo = c[4 * h + q], hi = c[4 * h + 2 + q];
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (4 * h + 2 * q) * stride), _mm_unpacklo_epi64(lo, hi));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (4 * h + 2 * q + 1) * stride), _mm_unpackhi_epi64(lo, hi));
    }
}

// Batches past the x8 kernels'. A plain function, not instantiated inside matmul_q6_kx8_with: GCC 12 with
// -fsanitize=undefined does not take the deinterleave function's address as a constant there.
void q6_kx8_via_standard(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0,
                         size_t r1, float* y, size_t ldy) {
  matmul_kx8_via_standard<TensorType::q6_k, matmul_q6_k, matmul_q6_k_resume,
                          deinterleave_q6_kx8_group<rows_of_subunits, scales_of_rows>>(w, wrb, x, xrb, n, nt, r0, r1, y,
                                                                                       ldy);
}

template <Q6Prefetch kPrefetch>
void matmul_q6_kx8_with(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                        float* y, size_t ldy) {
  if (r0 >= r1 || nt == 0) return;
  if (nt > kMaxTiled) return q6_kx8_via_standard(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x);
  if (nt == 1) return q6_kx8_groups_one<kPrefetch.decode>(wb, wrb, xb, n / kQK, r0 / kKx8Rows, r1 / kKx8Rows, y);
  q6_kx8_groups_by_unit<kPrefetch.batch>(wb, wrb, xb, xrb, nt, n / kQK, r0 / kKx8Rows, r1 / kKx8Rows, y, ldy);
}

}  // namespace

void matmul_q4_kx8(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  if (r0 >= r1 || nt == 0) return;
  if (nt > kMaxTiled)
    return matmul_kx8_via_standard<TensorType::q4_k, matmul_q4_k, matmul_q4_k_resume,
                                   deinterleave_q4_kx8_group<rows_of_subunits>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
  auto* groups = nt < kByUnitFrom ? q4_kx8_groups_by_token : q4_kx8_groups_by_unit;
  groups(static_cast<const uint8_t*>(w), wrb, static_cast<const uint8_t*>(x), xrb, nt, n / kQK, r0 / kKx8Rows,
         r1 / kKx8Rows, y, ldy);
}

void matmul_q6_kx8(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_q6_kx8_with<kQ6PrefetchL1>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

void matmul_q6_kx8_prefetch_l2(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0,
                               size_t r1, float* y, size_t ldy) {
  matmul_q6_kx8_with<kQ6PrefetchL2>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

}  // namespace lmrt::simd::LMRT_AVX2_NS
