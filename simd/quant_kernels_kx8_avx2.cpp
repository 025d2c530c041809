// AVX2 kernel for Q4_Kx8 (formats/k_quants_x8.h): decode and batches of up to 16 tokens read each group of 8
// rows as one sequential stream. A 256-bit load takes 8 bytes of each of 4 rows (half h of a 64-byte sub-unit
// holds rows 4h..4h+3), so row j of a half owns int16 lanes 4j..4j+3 after vpmaddubsw against the token's 8
// activation bytes broadcast to every row, and int32 lanes 2j, 2j + 1 once a sub-block's 16-bit sums are
// multiplied by its per-row scale (vpmaddwd). The four 16-bit sums of a sub-block stay below 2^15 (4 x 2 x 15 x
// 127). Each (row, token) is the exact integer sums of every super-block and then the float chain of the
// standard Q4_K kernels (quant_kernels_x86.h): acc = fma(s, d * xd, acc), acc = fma(m, -dmin * xd, acc), so a
// token's result has the same bits here, in the standard tiles and in the GEMM that larger batches take through
// kx8_via_standard.h.
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

// Tokens the interleaved kernel takes (one pass per token over the group, in cache after the first); more take the
// GEMM, whose per-call deinterleave and transposition only pay off beyond a decode step's batch (BENCHMARKS.md,
// "AVX2 small batches without spills or round trips").
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
        prefetch_lines(unit + kQ4_Kx8UnitBytes, kQ4_Kx8UnitBytes);
      for (size_t t = 0; t < n_tok; ++t) {
        const auto* xt = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes);
        acc[t] = q4_kx8_unit_dot(unit, sc, f.d, f.ndmin, xt[b], acc[t]);
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

}  // namespace lmrt::simd::LMRT_AVX2_NS
