// AVX-512 VNNI kernels for Q4_Kx8 and Q6_Kx8 (formats/k_quants_x8.h): decode and small batches (up to
// kMaxBatch tokens) read each group of 8 rows as one sequential stream, every 512-bit load giving 8 bytes
// of each of the 8 rows. Row j owns dword lanes 2j and 2j + 1 of every accumulator: vpdpbusd multiplies
// the row's unsigned codes with the token's 8 activation bytes broadcast to every row. A lane's share of
// a sub-block fits in 16 bits, so two sub-blocks' (or halves') sums are packed into words and one vpdpwssd
// against the rows' scales adds them, scaled; the lanes of a row are added once per super-block. Each
// token's sums take the same arithmetic whatever the batch size (a batch only shares the unpacking of the
// codes and scales), and its integer total per super-block is the standard kernels', so its result is
// bit-identical alone, in a batch and in the standard layout. Q4_Kx8 takes batches of up to 48 tokens, and
// Q6_Kx8 up to 16, in chunks of kMaxBatch; larger batches un-interleave slabs on the stack for the standard
// Q4_K / Q6_K GEMM (kx8_via_standard.h).
//
// Everything but the namespace's entry points has internal linkage (see simd/README.md).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "formats/blocks.h"
#include "formats/k_quants_x8.h"
#include "simd/kx8_scales_x86.h"
#include "simd/kx8_via_standard.h"
#include "simd/prefetch_x86.h"
#include "simd/quant_kernels.h"

namespace lmrt::simd::avx512 {
namespace {

#include "simd/vnni256_x86.h"  // inside the anonymous namespace: its inline steps differ per ISA

constexpr size_t kMaxBatch = 8;  // tokens the interleaved kernels take; more go through the GEMM
// How many units ahead of the one being read the stream prefetches. Q4_Kx8 reads its unit front to back and
// the hardware prefetcher follows it in decode and small batches (software prefetch measured no faster), but
// not once a unit takes 6 or more tokens' arithmetic: the 8-token batch streamed at 11-12 GB/s without a
// software prefetch and 15-16 with one. Q6_Kx8 reads the ql and qh parts of a unit in step, two interleaved
// sequences the prefetcher does not follow: without a software prefetch it streamed at two thirds of the
// rate it reaches with one (BENCHMARKS.md, "Q6_K repacked at load on AVX-512" and "Q6_Kx8 batches share the
// unpacking"). Where the Q6_Kx8 prefetch lands is a per-CPU choice (simd::CpuTuning): into L1, 3 units ahead, by
// default; into L2, 6 ahead, on Zen 4, whose Q6_Kx8 stream read half as fast with L1 requests as with L2 ones
// (BENCHMARKS.md, "Zen 4: Q6_Kx8 prefetched into L2").
template <size_t T>
constexpr size_t kQ4PrefetchUnits = T >= 6 ? 2 : 0;
constexpr PrefetchPlan kPrefetchPlanL1{_MM_HINT_T0, 3}, kPrefetchPlanL2{_MM_HINT_T1, 6};

// 8 per-row values (dword j = row j) spread to the row's two lanes.
[[gnu::always_inline]] inline __m512i pairs_epi32(__m256i v) {
  const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  return _mm512_permutexvar_epi32(idx, _mm512_castsi256_si512(v));
}
[[gnu::always_inline]] inline __m512 pairs_ps(__m256 v) {
  const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  return _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(v));
}

// The 8 bytes of activations at p in every 64-bit lane.
[[gnu::always_inline]] inline __m512i bcast8(const int8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return _mm512_set1_epi64(v);
}

// Each row's two lanes added: both then hold the row's sum.
[[gnu::always_inline]] inline __m512i row_sums(__m512i v) {
  return _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
}

// The rows of an accumulator whose lanes 2j and 2j + 1 both hold row j: lane 2j -> y[j].
[[gnu::always_inline]] inline void store_rows(__m512 acc, float* y) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  _mm256_storeu_ps(y, _mm512_castps512_ps256(_mm512_permutexvar_ps(even, acc)));
}

// ---- Q4_Kx8 ----

// The 8 rows' 6-bit scales and mins of one unit: sl/sh hold scales 0-3 / 4-7 of row j as the bytes of
// lanes 2j and 2j + 1; ml/mh the mins 0-3 / 4-7 of row j as 16-bit words 4j..4j+3 (madd pairs them with the
// activation sums into lanes 2j, 2j + 1).
struct Q4KScales {
  __m512i sl, sh, ml, mh;
};

[[gnu::always_inline]] inline Q4KScales q4_kx8_scales(const uint8_t* unit) {
  // Dwords 3j, 3j + 1, 3j + 2 of the 96 scale bytes are row j's packed words u0, u1, u2.
  const __m512i lo = _mm512_loadu_si512(unit + kQ4_Kx8ScalesOffset);
  const __m512i hi =
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit + kQ4_Kx8ScalesOffset + 64)));
  const __m512i idx01 = _mm512_setr_epi32(0, 3, 6, 9, 12, 15, 18, 21, 1, 4, 7, 10, 13, 16, 19, 22);
  const __m512i idx2 = _mm512_setr_epi32(2, 5, 8, 11, 14, 17, 20, 23, 2, 5, 8, 11, 14, 17, 20, 23);
  const __m512i u01 = _mm512_permutex2var_epi32(lo, idx01, hi);
  const __m256i u0 = _mm512_castsi512_si256(u01), u1 = _mm512_extracti64x4_epi64(u01, 1);
  const __m256i u2 = _mm512_castsi512_si256(_mm512_permutex2var_epi32(lo, idx2, hi));
  const Q4KScalesMins8 m = q4_k_scales_mins8(u0, u1, u2);
  return {pairs_epi32(m.scales_low), pairs_epi32(m.scales_high), _mm512_cvtepu8_epi16(m.mins_low),
          _mm512_cvtepu8_epi16(m.mins_high)};
}

// Scale s (0-3) of every row from sl or sh, as a dword in both of the row's lanes.
[[gnu::always_inline]] inline __m512i scale_byte(__m512i s4, int s) {
  return _mm512_and_si512(_mm512_srli_epi32(s4, 8 * s), _mm512_set1_epi32(0xff));
}

// Adds to tot the sums of the unit's sub-block pair c (sub-blocks 2c and 2c + 1) with one token's activations,
// scaled by their 6-bit scales: wl / wh are the low / high nibbles of the 4 loads of chunk c. A lane's share of
// a sub-block is 16 products of a 4-bit code and an 8-bit activation (|sum| <= 16 * 15 * 128 < 2^15), so the
// two sub-blocks' lanes pack into 16-bit words without saturating, and one vpdpwssd against the scales packed
// the same way adds both rows' lanes times their scales: tot's 128-bit lane L then holds, for rows 2L and
// 2L + 1, the low sub-blocks' sums in dwords 0, 1 and the high ones' in dwords 2, 3 (tot_rows adds them).
[[gnu::always_inline]] inline __m512i q4_kx8_chunk(const __m512i (&wl)[4], const __m512i (&wh)[4], __m512i scales,
                                                   const int8_t* xq, __m512i tot) {
  __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    lo = _mm512_dpbusd_epi32(lo, wl[g], bcast8(xq + 8 * g));
    hi = _mm512_dpbusd_epi32(hi, wh[g], bcast8(xq + 32 + 8 * g));
  }
  return _mm512_dpwssd_epi32(tot, _mm512_packs_epi32(lo, hi), scales);
}

// The packed totals of q4_kx8_chunk and q6_kx8_unit back in the kernels' layout: row j's sum in both of
// lanes 2j and 2j + 1.
[[gnu::always_inline]] inline __m512i tot_rows(__m512i tot) {
  return _mm512_add_epi32(_mm512_shuffle_epi32(tot, _MM_PERM_BBAA), _mm512_shuffle_epi32(tot, _MM_PERM_DDCC));
}

// The nibbles of chunk c of a unit (4 loads of 64 bytes).
[[gnu::always_inline]] inline void q4_kx8_unpack(const uint8_t* unit, int c, __m512i (&wl)[4], __m512i (&wh)[4]) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    const __m512i w = _mm512_loadu_si512(unit + kQ4_Kx8QsOffset + 64 * (4 * c + g));
    wl[g] = _mm512_and_si512(w, low4);
    wh[g] = _mm512_and_si512(_mm512_srli_epi16(w, 4), low4);
  }
}

// acc += the unit's scaled sums (sumi, from q4_kx8_chunk) and its mins against one token's Q8_K block.
[[gnu::always_inline]] inline __m512 q4_kx8_finish(const Q4KScales& sc, __m512 d2, __m512 ndmin2, const BlockQ8_K& x,
                                                   __m512i sumi, __m512 acc) {
  // The mins against the sub-blocks' activation sums (each the sum of two 16-element bsums).
  const __m256i bs16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums));
  const __m256i bsub = _mm256_madd_epi16(bs16, _mm256_set1_epi16(1));
  const __m128i b8 = _mm_packs_epi32(_mm256_castsi256_si128(bsub), _mm256_extracti128_si256(bsub, 1));
  const __m512i summ = _mm512_add_epi32(_mm512_madd_epi16(sc.ml, _mm512_broadcastq_epi64(b8)),
                                        _mm512_madd_epi16(sc.mh, _mm512_broadcastq_epi64(_mm_unpackhi_epi64(b8, b8))));
  const __m512 xd = _mm512_set1_ps(x.d);
  acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot_rows(sumi)), _mm512_mul_ps(d2, xd), acc);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(row_sums(summ)), _mm512_mul_ps(ndmin2, xd), acc);
}

// Each 64-code chunk of a unit is unpacked once for all T tokens.
template <size_t T>
void q4_kx8_groups(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes, size_t nb, size_t g0,
                   size_t g1, float* y, size_t ldy) {
  constexpr size_t kAhead = kQ4PrefetchUnits<T>;
  for (size_t g = g0; g < g1; ++g) {
    const uint8_t* group = w + g * kKx8Rows * w_row_bytes;
    __m512 acc[T];
#pragma GCC unroll 8
    for (size_t t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* unit = group + b * kQ4_Kx8UnitBytes;
      if constexpr (kAhead != 0) prefetch_lines_written_out<kQ4_Kx8UnitBytes>(unit + kAhead * kQ4_Kx8UnitBytes);
      const Q4KScales sc = q4_kx8_scales(unit);
      const __m512 d2 = pairs_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit))));
      // -dmin by flipping the sign bit, as the standard kernels negate it.
      const __m512 ndmin2 =
          _mm512_xor_ps(_mm512_set1_ps(-0.0f),
                        pairs_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit + 16)))));
      const BlockQ8_K* xb[T];
#pragma GCC unroll 8
      for (size_t t = 0; t < T; ++t) xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes) + b;
      __m512i sumi[T];
#pragma GCC unroll 8
      for (size_t t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        // Sub-blocks 2c (low nibbles) and 2c + 1 (high).
        const __m512i s4 = c < 2 ? sc.sl : sc.sh;
        // Packed as q4_kx8_chunk packs the sums: word pairs of the low scale of rows 2L, 2L + 1, then the high.
        const __m512i scales = _mm512_packs_epi32(scale_byte(s4, (2 * c) % 4), scale_byte(s4, (2 * c + 1) % 4));
        __m512i wl[4], wh[4];
        q4_kx8_unpack(unit, c, wl, wh);
#pragma GCC unroll 8
        for (size_t t = 0; t < T; ++t) sumi[t] = q4_kx8_chunk(wl, wh, scales, xb[t]->qs + 64 * c, sumi[t]);
      }
#pragma GCC unroll 8
      for (size_t t = 0; t < T; ++t) acc[t] = q4_kx8_finish(sc, d2, ndmin2, *xb[t], sumi[t], acc[t]);
    }
#pragma GCC unroll 8
    for (size_t t = 0; t < T; ++t) store_rows(acc[t], y + t * ldy + g * kKx8Rows);
  }
}

// ---- Q6_Kx8 ----

// The codes (q + 32, 0..63) of sub-block s = 8h + 2k + m (16 elements: 128h + 32k + 16m ..) for one of its
// two 8-element halves l8 = 2m or 2m + 1: the ql sub-unit 8h + 4(k & 1) + l8 (nibble k / 2) with the qh
// sub-unit 4h + l8 (bits 2k, 2k + 1).
[[gnu::always_inline]] inline __m512i q6_kx8_codes(const uint8_t* unit, int h, int k, int l8) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
  const __m512i l = _mm512_loadu_si512(unit + kQ6_Kx8QlOffset + 64 * (8 * h + 4 * (k & 1) + l8));
  const __m512i hb = _mm512_loadu_si512(unit + kQ6_Kx8QhOffset + 64 * (4 * h + l8));
  const __m512i lo = _mm512_and_si512(k < 2 ? l : _mm512_srli_epi16(l, 4), low4);
  // Bits 2k, 2k + 1 of qh moved to bits 4, 5.
  const __m512i hi2 = 2 * k <= 4 ? _mm512_slli_epi16(hb, 4 - 2 * k) : _mm512_srli_epi16(hb, 2 * k - 4);
  return _mm512_or_si512(lo, _mm512_and_si512(hi2, bits45));
}

// The 8 rows' int8 scales of sub-block s as 16-bit words in the order q6_kx8_unit packs the sums: rows 2L,
// 2L + 1 twice each, then again, in 128-bit lane L.
[[gnu::always_inline]] inline __m512i q6_kx8_scale_words(const uint8_t* unit, int s) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(unit + kQ6_Kx8ScalesOffset + 8 * s));
  const __m512i pairs = _mm512_cvtepi8_epi32(_mm_unpacklo_epi8(b, b));  // row j in dwords 2j, 2j + 1
  return _mm512_packs_epi32(pairs, pairs);
}

// The 8 rows' 16 scales as words, four sub-blocks a register: word 4j + i of w[k] is scale 4k + i of row j,
// so that vpmaddwd against 4 of a token's bsums gives row j's two partial sums in dwords 2j, 2j + 1.
[[gnu::always_inline]] inline void q6_kx8_scales_by_row(const uint8_t* unit, __m512i (&w)[4]) {
  alignas(64) static constexpr uint16_t kIdx[32] = {0, 8,  16, 24, 1, 9,  17, 25, 2, 10, 18, 26, 3, 11, 19, 27,
                                                    4, 12, 20, 28, 5, 13, 21, 29, 6, 14, 22, 30, 7, 15, 23, 31};
  const __m512i idx = _mm512_load_si512(kIdx);
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k)
    w[k] = _mm512_permutexvar_epi16(idx, _mm512_cvtepi8_epi16(_mm256_loadu_si256(
                                             reinterpret_cast<const __m256i*>(unit + kQ6_Kx8ScalesOffset + 32 * k))));
}

// acc[t] += one unit's dot products with token t's Q8_K block, for T tokens that share the unpacking of the
// codes and scales. The codes are q + 32, so a row's integer sum is sum_s scale_s * (codes . x)_s minus 32
// sum_s scale_s * bsums[s]. One vpdpbusd from zero gives each lane 4 products of a code (<= 63) and an
// activation (|sum| <= 4 * 63 * 128 < 2^15), so a sub-block's two halves pack into 16-bit words (lane order
// as in q4_kx8_chunk) and one vpdpwssd against the scale words adds them, scaled; the bias is a vpmaddwd of
// the scales with the bsums. The integer total is the one the standard kernels form, so the bits are theirs.
template <size_t T>
[[gnu::always_inline]] inline void q6_kx8_unit(const uint8_t* unit, __m512 d2, const BlockQ8_K* const* xb,
                                               __m512 (&acc)[T]) {
  __m512i tot[T];
#pragma GCC unroll 8
  for (size_t t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
#pragma GCC unroll 2
      for (int m = 0; m < 2; ++m) {
        const __m512i q0 = q6_kx8_codes(unit, h, k, 2 * m), q1 = q6_kx8_codes(unit, h, k, 2 * m + 1);
        const __m512i sc = q6_kx8_scale_words(unit, 8 * h + 2 * k + m);
        const int x0 = 128 * h + 32 * k + 16 * m;
#pragma GCC unroll 8
        for (size_t t = 0; t < T; ++t) {
          const __m512i a = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q0, bcast8(xb[t]->qs + x0));
          const __m512i b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q1, bcast8(xb[t]->qs + x0 + 8));
          tot[t] = _mm512_dpwssd_epi32(tot[t], _mm512_packs_epi32(a, b), sc);
        }
      }
  __m512i sw[4];
  q6_kx8_scales_by_row(unit, sw);
#pragma GCC unroll 8
  for (size_t t = 0; t < T; ++t) {
    __m512i bias = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i b4 = bcast8(reinterpret_cast<const int8_t*>(xb[t]->bsums + 4 * k));  // 4 bsums, every lane
      bias = _mm512_add_epi32(bias, _mm512_madd_epi16(sw[k], b4));
    }
    const __m512i total = _mm512_sub_epi32(tot_rows(tot[t]), _mm512_slli_epi32(row_sums(bias), 5));
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total), _mm512_mul_ps(d2, _mm512_set1_ps(xb[t]->d)), acc[t]);
  }
}

template <size_t T, PrefetchPlan kPrefetch>
void q6_kx8_groups(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes, size_t nb, size_t g0,
                   size_t g1, float* y, size_t ldy) {
  for (size_t g = g0; g < g1; ++g) {
    const uint8_t* group = w + g * kKx8Rows * w_row_bytes;
    __m512 acc[T];
#pragma GCC unroll 8
    for (size_t t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (size_t b = 0; b < nb; ++b) {
      const uint8_t* unit = group + b * kQ6_Kx8UnitBytes;
      prefetch_lines_written_out<kQ6_Kx8UnitBytes, kPrefetch.hint>(unit + kPrefetch.units * kQ6_Kx8UnitBytes);
      const __m512 d2 = pairs_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(unit))));
      const BlockQ8_K* xb[T];
#pragma GCC unroll 8
      for (size_t t = 0; t < T; ++t) xb[t] = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes) + b;
      q6_kx8_unit<T>(unit, d2, xb, acc);
    }
#pragma GCC unroll 8
    for (size_t t = 0; t < T; ++t) store_rows(acc[t], y + t * ldy + g * kKx8Rows);
  }
}

using GroupsFn = void (*)(const uint8_t*, size_t, const uint8_t*, size_t, size_t, size_t, size_t, float*, size_t);

// ---- Back to the standard layout (kx8_via_standard.h) ----

// z[u] holds at qword j the 8-byte piece u of row j; afterwards z[j] holds row j's pieces 0..7 in order.
[[gnu::always_inline]] inline void transpose8x8_epi64(__m512i (&z)[8]) {
  __m512i t[8];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_epi64(z[2 * i], z[2 * i + 1]);      // 128-bit lane k: pieces 2i, 2i + 1 of row 2k
    t[2 * i + 1] = _mm512_unpackhi_epi64(z[2 * i], z[2 * i + 1]);  // ... of row 2k + 1
  }
#pragma GCC unroll 2
  for (int odd = 0; odd < 2; ++odd) {
    const __m512i a = _mm512_shuffle_i64x2(t[odd], t[2 + odd], 0x88);  // lanes 0, 2 of each: rows 0, 4 (+odd)
    const __m512i b = _mm512_shuffle_i64x2(t[4 + odd], t[6 + odd], 0x88);
    const __m512i c = _mm512_shuffle_i64x2(t[odd], t[2 + odd], 0xdd);  // lanes 1, 3: rows 2, 6 (+odd)
    const __m512i d = _mm512_shuffle_i64x2(t[4 + odd], t[6 + odd], 0xdd);
    z[0 + odd] = _mm512_shuffle_i64x2(a, b, 0x88);
    z[4 + odd] = _mm512_shuffle_i64x2(a, b, 0xdd);
    z[2 + odd] = _mm512_shuffle_i64x2(c, d, 0x88);
    z[6 + odd] = _mm512_shuffle_i64x2(c, d, 0xdd);
  }
}

// The 64 bytes of pieces 0..7 of each of the 8 rows from 8 sub-units of 64 bytes (sub-unit u at src + 64u),
// row j to dst + j * stride.
void rows_of_subunits(const uint8_t* src, uint8_t* dst, size_t stride) {
  __m512i z[8];
#pragma GCC unroll 8
  for (int u = 0; u < 8; ++u) z[u] = _mm512_loadu_si512(src + 64 * u);
  transpose8x8_epi64(z);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) _mm512_storeu_si512(dst + j * stride, z[j]);
}

// The 8 rows' 16 scales from a Q6_Kx8 unit's sub-block-major scales (deinterleave_q6_kx8_group in
// kx8_via_standard.h): byte 8s + j of each 64-byte half (s < 8) is scale s (+ 8 per half) of row j. pshufb pairs
// scales 2k and 2k + 1 of row j as word j of lane k; vpermw gathers row j's 4 words into qword j.
void scales_of_rows(const uint8_t* src, uint8_t* dst, size_t stride) {
  alignas(64) static constexpr uint16_t kGatherRows[32] = {0, 8,  16, 24, 1, 9,  17, 25, 2, 10, 18, 26, 3, 11, 19, 27,
                                                           4, 12, 20, 28, 5, 13, 21, 29, 6, 14, 22, 30, 7, 15, 23, 31};
  const __m512i pair = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
  const __m512i gather_rows = _mm512_load_si512(kGatherRows);
  const __m512i s_lo = _mm512_permutexvar_epi16(gather_rows, _mm512_shuffle_epi8(_mm512_loadu_si512(src), pair));
  const __m512i s_hi = _mm512_permutexvar_epi16(gather_rows, _mm512_shuffle_epi8(_mm512_loadu_si512(src + 64), pair));
  alignas(64) uint64_t lo[8], hi[8];
  _mm512_store_si512(lo, s_lo);
  _mm512_store_si512(hi, s_hi);
#pragma GCC unroll 8
  for (size_t j = 0; j < kKx8Rows; ++j) {
    std::memcpy(dst + j * stride, &lo[j], 8);
    std::memcpy(dst + j * stride + 8, &hi[j], 8);
  }
}

// Batches of up to kChunkedTokens go through the x8 kernels kMaxBatch tokens or fewer at a time, larger ones
// through the standard-layout GEMM. The batch kernels, which re-read the weights for every chunk, outrun
// the round trip through the standard layout up to 48 tokens (Q4_Kx8) and 16 (Q6_Kx8, whose codes cost more
// to unpack) (BENCHMARKS.md, "Q6_K repacked at load on AVX-512" and "Q6_Kx8 batches share the unpacking").
template <GroupsFn const (&kByBatch)[kMaxBatch], size_t kChunkedTokens, TensorType kStandard, MatmulFn kGemm,
          MatmulFn kGemmResume, DeinterleaveGroupFn kDeinterleave>
void matmul_kx8(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok, size_t r0,
                size_t r1, float* y, size_t ldy) {
  if (r0 >= r1 || n_tok == 0) return;
  if (n_tok > kChunkedTokens)
    return matmul_kx8_via_standard<kStandard, kGemm, kGemmResume, kDeinterleave>(w, w_row_bytes, x, x_row_bytes, n,
                                                                                 n_tok, r0, r1, y, ldy);
  // Chunks of as equal a size as can be: the kernels' rate per token grows with the batch.
  const size_t chunks = (n_tok + kMaxBatch - 1) / kMaxBatch;
  for (size_t c = 0, t0 = 0; c < chunks; ++c) {
    const size_t nt = (n_tok - t0) / (chunks - c);
    kByBatch[nt - 1](static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const uint8_t*>(x) + t0 * x_row_bytes,
                     x_row_bytes, n / kQK, r0 / kKx8Rows, r1 / kKx8Rows, y + t0 * ldy, ldy);
    t0 += nt;
  }
}

constexpr GroupsFn kQ4Kx8ByBatch[kMaxBatch] = {q4_kx8_groups<1>, q4_kx8_groups<2>, q4_kx8_groups<3>, q4_kx8_groups<4>,
                                               q4_kx8_groups<5>, q4_kx8_groups<6>, q4_kx8_groups<7>, q4_kx8_groups<8>};
template <PrefetchPlan P>
constexpr GroupsFn kQ6Kx8ByBatch[kMaxBatch] = {q6_kx8_groups<1, P>, q6_kx8_groups<2, P>, q6_kx8_groups<3, P>,
                                               q6_kx8_groups<4, P>, q6_kx8_groups<5, P>, q6_kx8_groups<6, P>,
                                               q6_kx8_groups<7, P>, q6_kx8_groups<8, P>};

template <PrefetchPlan P>
void matmul_q6_kx8_with(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                        float* y, size_t ldy) {
  matmul_kx8<kQ6Kx8ByBatch<P>, 16, TensorType::q6_k, matmul_q6_k, matmul_q6_k_resume,
             deinterleave_q6_kx8_group<rows_of_subunits, scales_of_rows>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

}  // namespace

void matmul_q4_kx8(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_kx8<kQ4Kx8ByBatch, 48, TensorType::q4_k, matmul_q4_k, matmul_q4_k_resume,
             deinterleave_q4_kx8_group<rows_of_subunits>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

void matmul_q6_kx8(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_q6_kx8_with<kPrefetchPlanL1>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

void matmul_q6_kx8_prefetch_l2(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0,
                               size_t r1, float* y, size_t ldy) {
  matmul_q6_kx8_with<kPrefetchPlanL2>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

}  // namespace lmrt::simd::avx512
