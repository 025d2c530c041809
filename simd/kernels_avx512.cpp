// AVX-512 (F, BW, VL, DQ) + VNNI kernel table.
//
// Q4_0 keeps 16 rows in the 16 lanes of a register, transposed block by block in registers for up to a few tokens
// (decode, a batched step of a few sequences) or a slab at a time for all the tokens of a larger batch (the GEMM);
// both sum each (row, token) alike, so a token's bits do not depend on its batch (see the Q4_0 section). VNNI
// multiplies unsigned weights by signed activations, so the nibbles are used as stored (q + 8) and the offset is
// removed by starting each block's sum at -8 * sum(x), which quantize_q8_act stores with the activation block.
// Integer sums are exact; only the float accumulation order differs from the scalar reference.
//
// Everything except the getter has internal linkage so no inline code built for AVX-512 can be picked
// by the linker for another translation unit.
// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics (GCC bug
// 105593); the pragmas must precede the header to cover it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "formats/k_quants.h"
#include "formats/q4_0x16.h"
#include "simd/float_ops.h"
#include "simd/kernels.h"
#include "simd/kv_streams.h"
#include "simd/matmul_tiling.h"
#include "simd/prefetch_x86.h"
#include "simd/quant_kernels.h"

namespace lmrt::simd {
namespace {

using Ops = FloatOps<xsimd::avx512bw>;  // RMSNorm, softmax, SiLU-mul, add, RoPE (float_ops.h)

using tiling::MatmulArgs;

constexpr size_t kBlock = 32;                     // elements per Q4_0 / Q8_0 block
constexpr size_t kQ4Bytes = sizeof(BlockQ4_0);    // 18
constexpr size_t kQ8Bytes = sizeof(BlockQ8_0);    // 34
constexpr size_t kActBytes = sizeof(BlockQ8Act);  // 40
constexpr size_t kF32Lanes = 16;

// ---- Q4_0 ----
//
// Every Q4_0 path keeps 16 rows in the 16 lanes of a register: a block of 16 rows is transposed so that 32-bit
// lane r holds 4 nibble bytes (q + 8) of row r, a token costs 8 vpdpbusd against its activation dwords broadcast
// (its sum started at -8 * sum(x), which removes the nibbles' offset), one convert and one FMA with the rows'
// scales times the activation's, for all 16 rows at once and without horizontal sums. Up to kLanesToks tokens
// transpose each block in registers as they read it (decode, a batched step of a few sequences); more repack a
// slab once for all their token tiles (the GEMM, in L1). Both sum each (row, token) as one chain
// acc = fma(dot_b, d_w * d_x, acc) over the blocks in order, the GEMM carrying it across slabs, so a token gets
// the same bits alone and in any batch (issue 17 point 7), and Q4_0x16, whose units store this transposition,
// the bits of Q4_0.

constexpr size_t kPackRows = 16;

// t[j], 32-bit lane r: raw dword j (< 4) of the 16 nibble bytes at rows[r] + off. Raw dword j of a Q4_0 block
// holds elements 4j..4j+3 in its low nibbles and 16+4j..16+4j+3 in its high nibbles.
[[gnu::always_inline]] inline void transpose_nibbles16(const uint8_t* const (&rows)[kPackRows], size_t off,
                                                       __m512i (&t)[4]) {
  auto load16 = [](const uint8_t* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
  // z[i], lane L: the 16 bytes of row 4L + i.
  __m512i z[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    __m512i v = _mm512_castsi128_si512(load16(rows[i] + off));
    v = _mm512_inserti32x4(v, load16(rows[4 + i] + off), 1);
    v = _mm512_inserti32x4(v, load16(rows[8 + i] + off), 2);
    z[i] = _mm512_inserti32x4(v, load16(rows[12 + i] + off), 3);
  }
  // A 4x4 dword transpose inside each 128-bit lane: t[j], lane L, dword i = dword j of row 4L + i.
  const __m512i t01lo = _mm512_unpacklo_epi32(z[0], z[1]), t01hi = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i t23lo = _mm512_unpacklo_epi32(z[2], z[3]), t23hi = _mm512_unpackhi_epi32(z[2], z[3]);
  t[0] = _mm512_unpacklo_epi64(t01lo, t23lo);
  t[1] = _mm512_unpackhi_epi64(t01lo, t23lo);
  t[2] = _mm512_unpacklo_epi64(t01hi, t23hi);
  t[3] = _mm512_unpackhi_epi64(t01hi, t23hi);
}

// Register j (of 8) pairs with activation dword j: the low nibbles of raw dword j (< 4), then their high nibbles.
[[gnu::always_inline]] inline void split_nibbles(const __m512i (&t)[4], __m512i (&q)[8]) {
  const __m512i nib = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    q[j] = _mm512_and_si512(t[j], nib);
    q[4 + j] = _mm512_and_si512(_mm512_srli_epi32(t[j], 4), nib);
  }
}

// The scales of blocks [b, b + count) (count <= 4) of the 16 rows, d[k * 16 + r] for block b + k of rows[r].
// One row's 4 scales lie in its first 56 bytes (words 0, 9, 18, 27), so each row is one masked load (which never
// faults past the matrix) and a tree of word permutes gathers the 16 rows: 4 shuffles per block, where a gather
// (or 16 two-byte stores read back as one vector) halved decode speed.
[[gnu::always_inline]] inline void scales4x16(const uint8_t* const (&rows)[kPackRows], size_t b, size_t count,
                                              float* d) {
  const __mmask64 bytes = (__mmask64{1} << (count * kQ4Bytes - 16)) - 1;  // to the last block's scale
  // Level 1, rows (2m, 2m + 1): word 2k + i is block k of row 2m + i.
  const __m512i idx1 = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32 + 27,
                                        27, 32 + 18, 18, 32 + 9, 9, 32, 0);
  // Level 2, rows 4n..4n + 3: word 4k + j is block k of row 4n + j.
  const __m512i idx2 = _mm512_set_epi16(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 39, 38, 7, 6, 37, 36, 5, 4, 35,
                                        34, 3, 2, 33, 32, 1, 0);
  // Level 3, rows 8h..8h + 7: word 8k + j is block k of row 8h + j.
  const __m512i idx3 = _mm512_set_epi16(47, 46, 45, 44, 15, 14, 13, 12, 43, 42, 41, 40, 11, 10, 9, 8, 39, 38, 37, 36, 7,
                                        6, 5, 4, 35, 34, 33, 32, 3, 2, 1, 0);
  // Level 4: word 16k' + i is block k of row i, k = k' (blocks 0, 1) or 2 + k' (blocks 2, 3).
  const __m512i idx4a = _mm512_set_epi16(47, 46, 45, 44, 43, 42, 41, 40, 15, 14, 13, 12, 11, 10, 9, 8, 39, 38, 37, 36,
                                         35, 34, 33, 32, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i idx4b = _mm512_add_epi16(idx4a, _mm512_set1_epi16(16));
  __m512i p[8];
#pragma GCC unroll 8
  for (int m = 0; m < 8; ++m) {
    const __m512i lo = _mm512_maskz_loadu_epi8(bytes, rows[2 * m] + b * kQ4Bytes);
    const __m512i hi = _mm512_maskz_loadu_epi8(bytes, rows[2 * m + 1] + b * kQ4Bytes);
    p[m] = _mm512_permutex2var_epi16(lo, idx1, hi);
  }
  __m512i q[4];
#pragma GCC unroll 4
  for (int n = 0; n < 4; ++n) q[n] = _mm512_permutex2var_epi16(p[2 * n], idx2, p[2 * n + 1]);
  const __m512i r0 = _mm512_permutex2var_epi16(q[0], idx3, q[1]), r1 = _mm512_permutex2var_epi16(q[2], idx3, q[3]);
  const __m512i z01 = _mm512_permutex2var_epi16(r0, idx4a, r1), z23 = _mm512_permutex2var_epi16(r0, idx4b, r1);
  _mm512_store_ps(d, _mm512_cvtph_ps(_mm512_castsi512_si256(z01)));
  _mm512_store_ps(d + 16, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(z01, 1)));
  _mm512_store_ps(d + 32, _mm512_cvtph_ps(_mm512_castsi512_si256(z23)));
  _mm512_store_ps(d + 48, _mm512_cvtph_ps(_mm512_extracti64x4_epi64(z23, 1)));
}

// An int32 read that may alias the int8 activations.
using AliasedI32 = int32_t __attribute__((may_alias));

// sum + vpdpbusd(w, the dword at p broadcast), with the broadcast folded into the instruction
// ({1to16}): GCC 12 emits a separate vpbroadcastd, doubling the instructions of the inner loop.
__m512i dpbusd_bcast(__m512i sum, __m512i w, const AliasedI32* p) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(sum) : "v"(w), "m"(*p));
  return sum;
}

// One block of 16 rows (q, wd) against one token's activation block: the chain's next step.
[[gnu::always_inline]] inline __m512 block_step(const __m512i (&q)[8], __m512 wd, const BlockQ8Act& x, __m512 acc) {
  // Four independent chains of two (a chain of 8 dependent vpdpbusd per block would bound decode by their
  // latency); the integer sum is exact in any order.
  const auto* xq = reinterpret_cast<const AliasedI32*>(x.qs);
  __m512i s[4] = {_mm512_set1_epi32(x.minus8_sum), _mm512_setzero_si512(), _mm512_setzero_si512(),
                  _mm512_setzero_si512()};
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) s[j % 4] = dpbusd_bcast(s[j % 4], q[j], xq + j);
  const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(s[0], s[1]), _mm512_add_epi32(s[2], s[3]));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(wd, _mm512_set1_ps(x.d)), acc);
}

// Rows pointers of the 16-row group at r (rows past r1 repeat the last row: read from valid memory,
// never stored).
void group_rows(const MatmulArgs& a, size_t r, size_t r1, const uint8_t* (&rows)[kPackRows]) {
  const size_t n_rows = r1 - r < kPackRows ? r1 - r : kPackRows;
  for (size_t i = 0; i < kPackRows; ++i) rows[i] = a.w + (r + (i < n_rows ? i : n_rows - 1)) * a.w_row_bytes;
}

__mmask16 row_mask(size_t r, size_t r1) {
  const size_t n_rows = r1 - r < kPackRows ? r1 - r : kPackRows;
  return static_cast<__mmask16>((1u << n_rows) - 1);
}

// ---- Q4_0, up to kLanesToks tokens (Q4_0x16: kX16LanesToks): each block transposed in registers as it is read ----
//
// S groups far apart are read at once (one stream per group: one sequential stream reads far below a core's
// bandwidth), each prefetching the group that follows it, in address order, at the pace it reads its own. The
// transposition makes this decode about half as fast as Q4_0x16's, which reads it stored (lmrt_quant_matmul_bench
// avx512 5632 2048 12 5 8: 21 against 36 GB/s), so the loader repacks Q4_0 matrices into Q4_0x16 on AVX-512
// (runtime/model/weight_repack.cpp); this serves those it cannot (a tied embedding; LMRT_REPACK=0).
constexpr size_t kLanesToks = 8;

template <int S, int T>
void q4_0_lanes_groups(const MatmulArgs& a, const size_t (&r)[S], size_t r1) {
  constexpr size_t kPfStep = kPackRows * kQ4Bytes;  // the next group's bytes per block
  const size_t nb = a.n / kBlock;
  const uint8_t* rows[S][kPackRows];
  const uint8_t* pf[S];
  const BlockQ8Act* x[T];
  __m512 acc[S][T];
  alignas(64) float d[S][4 * kPackRows];
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s) {
    group_rows(a, r[s], r1, rows[s]);
    pf[s] = a.w + (r[s] + kPackRows) * a.w_row_bytes;
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[s][t] = _mm512_setzero_ps();
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const BlockQ8Act*>(a.x + t * a.x_row_bytes);
  for (size_t b4 = 0; b4 < nb; b4 += 4) {
    const size_t count = nb - b4 < 4 ? nb - b4 : 4;
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) scales4x16(rows[s], b4, count, d[s]);
    for (size_t k = 0; k < count; ++k) {
      const size_t b = b4 + k, off = b * kQ4Bytes;
#pragma GCC unroll 4
      for (int s = 0; s < S; ++s) {
        prefetch_span<kPfStep - 1, _MM_HINT_T1>(pf[s] + b * kPfStep);
        __m512i t4[4], q[8];
        transpose_nibbles16(rows[s], off + 2, t4);
        split_nibbles(t4, q);
        const __m512 wd = _mm512_load_ps(d[s] + k * kPackRows);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) acc[s][t] = block_step(q, wd, x[t][b], acc[s][t]);
      }
    }
  }
#pragma GCC unroll 4
  for (int s = 0; s < S; ++s) {
    const __mmask16 m = row_mask(r[s], r1);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(a.y + t * a.ldy + r[s], m, acc[s][t]);
  }
}

struct Q4_0Groups {
  template <int S, int T>
  static void run(const MatmulArgs& a, const size_t (&r)[S], size_t r1) {
    q4_0_lanes_groups<S, T>(a, r, r1);
  }
};

// Rows [r0, r1) for T tokens: S streams of groups (G::run<S, T>), then the rest one group at a time.
template <int T, class G>
void matmul_q4_0_lanes(const MatmulArgs& a, size_t r0, size_t r1) {
  constexpr int S = T <= 8 ? 2 : 1;  // S x T accumulators, 8 nibble registers and the scales in 32 registers
  tiling::group_streams<S, kPackRows>(
      r0, r1, [&](const size_t(&r)[S]) { G::template run<S, T>(a, r, r1); },
      [&](const size_t(&r)[1]) { G::template run<1, T>(a, r, r1); });
}

using LanesFn = void (*)(const MatmulArgs&, size_t, size_t);
template <class G, size_t... I>
constexpr auto lanes_fns(std::index_sequence<I...>) {
  return std::array<LanesFn, sizeof...(I)>{matmul_q4_0_lanes<static_cast<int>(I + 1), G>...};
}
// kLanes[n_tok - 1] handles n_tok tokens.
constexpr auto kLanes = lanes_fns<Q4_0Groups>(std::make_index_sequence<kLanesToks>());

// ---- Q4_0, more tokens: the GEMM ----
//
// For 16 rows and a slab of up to kSlabBlocks blocks, the rows' blocks are repacked once into PackedSlab (the
// registers q and the scales of each block, as the path above makes them in registers); token tiles of up to
// kPrefillToks tokens, with one float accumulator per token, then pass over it while the slab (18 KiB) stays in
// L1. Where the GEMM starts is a measured crossover (lmrt_quant_matmul_bench avx512 5632 2048 12 5 NTOK, tokens x
// batch GB/s): Q4_0 8 tokens in registers 88 against 9 through the slabs 78; Q4_0x16 16 in registers 114,
// 17 through the slabs 97.
constexpr size_t kSlabBlocks = 32;
constexpr size_t kPrefillToks = 12;

struct PackedSlab {
  __m512i q[kSlabBlocks][8];
  __m512 d[kSlabBlocks];
};

// Repacks blocks [b0, b0 + nbs) of the 16 rows rows[0..15] into s.
void repack_q4_0(const uint8_t* const (&rows)[kPackRows], size_t b0, size_t nbs, PackedSlab& s) {
  for (size_t b = 0; b < nbs; ++b) {
    __m512i t[4], q[8];
    transpose_nibbles16(rows, (b0 + b) * kQ4Bytes + 2, t);
    split_nibbles(t, q);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) _mm512_store_si512(&s.q[b][j], q[j]);
  }
  for (size_t b = 0; b < nbs; b += 4)
    scales4x16(rows, b0 + b, nbs - b < 4 ? nbs - b : 4, reinterpret_cast<float*>(&s.d[b]));
}

// Y[t * ldy + r'] for the slab's 16 rows (those in `rows`) and T tokens whose activation rows start at
// x (already advanced to the slab's first block), `x_row_bytes` apart. The first slab starts each chain at zero,
// later ones carry on from what the earlier slabs stored.
template <int T>
void prefill_tile(const PackedSlab& s, size_t nbs, const uint8_t* x, size_t x_row_bytes, bool first, float* y,
                  size_t ldy, __mmask16 rows) {
  const BlockQ8Act* xt[T];
  __m512 acc[T];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    xt[t] = reinterpret_cast<const BlockQ8Act*>(x + t * x_row_bytes);
    acc[t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rows, y + t * ldy);
  }
  for (size_t b = 0; b < nbs; ++b) {
    // Weight register outermost, tokens innermost: the T sums are independent, so consecutive
    // vpdpbusd never wait on each other (token-major order leaves chains of 8 dependent ones that
    // the scheduler cannot hide). The arithmetic is block_step's.
    __m512i sum[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) sum[t] = _mm512_set1_epi32(xt[t][b].minus8_sum);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m512i w = _mm512_load_si512(&s.q[b][j]);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t)
        sum[t] = dpbusd_bcast(sum[t], w, reinterpret_cast<const AliasedI32*>(xt[t][b].qs) + j);
    }
    const __m512 wd = _mm512_load_ps(&s.d[b]);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[t]), _mm512_mul_ps(wd, _mm512_set1_ps(xt[t][b].d)), acc[t]);
  }
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, rows, acc[t]);
}

using PrefillTileFn = void (*)(const PackedSlab&, size_t, const uint8_t*, size_t, bool, float*, size_t, __mmask16);

template <size_t... I>
constexpr auto prefill_tiles(std::index_sequence<I...>) {
  return std::array<PrefillTileFn, sizeof...(I)>{prefill_tile<static_cast<int>(I + 1)>...};
}
// kPrefillTiles[tn - 1] handles tn tokens.
constexpr auto kPrefillTiles = prefill_tiles(std::make_index_sequence<kPrefillToks>());

// Fetches blocks [b0, b0 + nbs) of the group's rows into L2 while the current slab is computed, so the
// next repack does not wait on memory (16 rows are more streams than the hardware prefetcher follows).
void prefetch_slab(const uint8_t* const (&rows)[kPackRows], size_t b0, size_t nbs) {
  for (size_t i = 0; i < kPackRows; ++i) {
    const uint8_t* p = rows[i] + b0 * kQ4Bytes;
    prefetch_lines<_MM_HINT_T1>(p, nbs * kQ4Bytes);
    _mm_prefetch(reinterpret_cast<const char*>(p + nbs * kQ4Bytes - 1), _MM_HINT_T1);
  }
}

// Repacks blocks [b0, b0 + nbs) of a Q4_0x16 group (formats/q4_0x16.h) into s: each 64-byte line
// of a unit already holds raw dword c of the 16 rows, one per lane, so this is only the nibble split.
void repack_q4_0x16(const uint8_t* group, size_t b0, size_t nbs, PackedSlab& s) {
  for (size_t b = 0; b < nbs; ++b) {
    const uint8_t* unit = group + (b0 + b) * kQ4_0x16UnitBytes;
    __m512i t[4], q[8];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) t[c] = _mm512_loadu_si512(unit + 32 + 64 * c);
    split_nibbles(t, q);
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) _mm512_store_si512(&s.q[b][j], q[j]);
    _mm512_store_ps(&s.d[b], _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit))));
  }
}

// kX16: the weights are Q4_0x16 (r0, r1 multiples of 16), else standard Q4_0 rows.
template <bool kX16>
void matmul_q4_0_prefill(const MatmulArgs& a, size_t n_tok, size_t r0, size_t r1) {
  const size_t nb = a.n / kBlock;
  // Equal token tiles of at most kPrefillToks (13 tokens run as 7 + 6, not 12 + 1).
  const size_t n_tiles = (n_tok + kPrefillToks - 1) / kPrefillToks;
  const size_t tile_toks = (n_tok + n_tiles - 1) / n_tiles;
  PackedSlab slab;
  for (size_t r = r0; r < r1; r += kPackRows) {
    const __mmask16 rows_mask = row_mask(r, r1);
    const uint8_t* rows[kPackRows];
    const uint8_t* group = a.w + r * a.w_row_bytes;  // Q4_0x16: the group's units, consecutive
    if constexpr (!kX16) group_rows(a, r, r1, rows);
    for (size_t b0 = 0; b0 < nb; b0 += kSlabBlocks) {
      const size_t nbs = nb - b0 < kSlabBlocks ? nb - b0 : kSlabBlocks;
      if constexpr (kX16) {
        repack_q4_0x16(group, b0, nbs, slab);
        // The next slab (of this group or the next) follows in memory: one span into L2.
        prefetch_lines<_MM_HINT_T1>(group + (b0 + nbs) * kPackRows * kQ4Bytes, kSlabBlocks * kPackRows * kQ4Bytes);
      } else {
        repack_q4_0(rows, b0, nbs, slab);
        if (b0 + nbs < nb) {
          prefetch_slab(rows, b0 + nbs, nb - b0 - nbs < kSlabBlocks ? nb - b0 - nbs : kSlabBlocks);
        } else if (r + kPackRows < r1) {
          const uint8_t* next[kPackRows];
          group_rows(a, r + kPackRows, r1, next);
          prefetch_slab(next, 0, nb < kSlabBlocks ? nb : kSlabBlocks);
        }
      }
      for (size_t t = 0; t < n_tok; t += tile_toks) {
        const size_t tn = n_tok - t < tile_toks ? n_tok - t : tile_toks;
        kPrefillTiles[tn - 1](slab, nbs, a.x + t * a.x_row_bytes + b0 * kActBytes, a.x_row_bytes, b0 == 0,
                              a.y + t * a.ldy + r, a.ldy, rows_mask);
      }
    }
  }
}

void matmul_q4_0(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                 size_t r0, size_t r1, float* y, size_t ldy) {
  if (r0 >= r1 || n_tok == 0) return;
  const MatmulArgs a{
      static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const uint8_t*>(x), x_row_bytes, n, y, ldy};
  if (n_tok <= kLanesToks) {
    kLanes[n_tok - 1](a, r0, r1);
    return;
  }
  matmul_q4_0_prefill<false>(a, n_tok, r0, r1);
}

// ---- end of Q4_0 ----

// ---- Q4_0x16 (formats/q4_0x16.h) ----
//
// One 64-byte load holds 4 nibble bytes of each of 16 rows, one row per 32-bit lane: its low nibbles
// against the token's activation dword broadcast, its high nibbles against the dword 16 elements on,
// and the unit's 16 scales are one 32-byte load. No shuffles, no horizontal sums; each group of 16
// rows is one sequential stream, and S groups from distant parts of the rows are read at once (one
// stream is far below a core's read bandwidth here).

// Prefetch distance, in units of each stream: 4 units (1.1 KiB per stream) over 8, +3-4 % on the 1.1B shape's
// decode once it reads 4 streams (16 was slower; BENCHMARKS.md, 2026-12-07).
constexpr size_t kX16UnitsAhead = 4;

template <int S>
void q4_0x16_decode_groups(const uint8_t* const (&p)[S], size_t nb, const BlockQ8Act* x, float* const (&y)[S]) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512 acc[S];
  for (int s = 0; s < S; ++s) acc[s] = _mm512_setzero_ps();
  for (size_t b = 0; b < nb; ++b) {
    const BlockQ8Act& xb = x[b];
    const auto* xd = reinterpret_cast<const uint8_t*>(xb.qs);
    __m512i sum[S];
    for (int s = 0; s < S; ++s) {
      prefetch_span<kQ4_0x16UnitBytes>(p[s] + (b + kX16UnitsAhead) * kQ4_0x16UnitBytes);
      sum[s] = _mm512_set1_epi32(xb.minus8_sum);  // the -8 offset of every weight, folded in up front
    }
    for (size_t c = 0; c < 4; ++c) {
      int32_t lo_x, hi_x;
      std::memcpy(&lo_x, xd + 4 * c, 4);
      std::memcpy(&hi_x, xd + 16 + 4 * c, 4);
      const __m512i xl = _mm512_set1_epi32(lo_x), xh = _mm512_set1_epi32(hi_x);
      for (int s = 0; s < S; ++s) {
        const __m512i q = _mm512_loadu_si512(p[s] + b * kQ4_0x16UnitBytes + 32 + 64 * c);
        sum[s] = _mm512_dpbusd_epi32(sum[s], _mm512_and_si512(q, low4), xl);
        sum[s] = _mm512_dpbusd_epi32(sum[s], _mm512_and_si512(_mm512_srli_epi16(q, 4), low4), xh);
      }
    }
    const __m512 dx = _mm512_set1_ps(xb.d);
    for (int s = 0; s < S; ++s) {
      const __m512 dw =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[s] + b * kQ4_0x16UnitBytes)));
      acc[s] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[s]), _mm512_mul_ps(dw, dx), acc[s]);
    }
  }
  for (int s = 0; s < S; ++s) _mm512_storeu_ps(y[s], acc[s]);
}

// kS streams, as CpuTuning says: 4 by default (8 decoded the 1.1B and 110m Q4_0 files 2-8 % slower on Zen 5), 1
// where one stream reads fastest (BENCHMARKS.md, 2026-12-07).
template <int kS>
struct Q4_0x16Decode {
  static constexpr int kStreams = kS;
  // The first kX16UnitsAhead units of each stream, into L2: a matmul's streams then start without a run
  // of demand misses (+1-2 % on the 110m shape's small matrices, same-process A/B; the 1.1B shape alike).
  template <int S>
  static void start(const uint8_t* const (&p)[S]) {
    for (int s = 0; s < S; ++s) prefetch_span<kX16UnitsAhead * kQ4_0x16UnitBytes, _MM_HINT_T1>(p[s]);
  }
  template <int S>
  static void groups(const uint8_t* const (&p)[S], size_t nb, const void* x, float* const (&y)[S]) {
    q4_0x16_decode_groups<S>(p, nb, static_cast<const BlockQ8Act*>(x), y);
  }
};

// Up to kX16LanesToks tokens straight from the units (r a multiple of 16): a unit's 4 lines are block_step's nibble
// registers before the split, its first 32 bytes the 16 scales, so the sums are those of Q4_0 and of the GEMM.
struct Q4_0x16Groups {
  template <int S, int T>
  static void run(const MatmulArgs& a, const size_t (&r)[S], size_t) {
    const size_t nb = a.n / kBlock;
    const uint8_t* p[S];
    const BlockQ8Act* x[T];
    __m512 acc[S][T];
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
      p[s] = a.w + r[s] * a.w_row_bytes;
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[s][t] = _mm512_setzero_ps();
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) x[t] = reinterpret_cast<const BlockQ8Act*>(a.x + t * a.x_row_bytes);
    for (size_t b = 0; b < nb; ++b) {
#pragma GCC unroll 4
      for (int s = 0; s < S; ++s) {
        const uint8_t* unit = p[s] + b * kQ4_0x16UnitBytes;
        prefetch_span<kQ4_0x16UnitBytes>(unit + kX16UnitsAhead * kQ4_0x16UnitBytes);
        __m512i lines[4], q[8];
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) lines[c] = _mm512_loadu_si512(unit + 32 + 64 * c);
        split_nibbles(lines, q);
        const __m512 wd = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit)));
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) acc[s][t] = block_step(q, wd, x[t][b], acc[s][t]);
      }
    }
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s)
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) _mm512_storeu_ps(a.y + t * a.ldy + r[s], acc[s][t]);
  }
};

constexpr size_t kX16LanesToks = 16;
constexpr auto kX16Lanes = lanes_fns<Q4_0x16Groups>(std::make_index_sequence<kX16LanesToks>());

template <int kDecodeStreams>
void matmul_q4_0x16(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                    size_t r0, size_t r1, float* y, size_t ldy) {
  if (r0 >= r1 || n_tok == 0) return;
  if (n_tok == 1) {
    tiling::run_x16_decode<Q4_0x16Decode<kDecodeStreams>>(w, w_row_bytes, x, n, r0, r1, y);
    return;
  }
  const MatmulArgs a{
      static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const uint8_t*>(x), x_row_bytes, n, y, ldy};
  if (n_tok <= kX16LanesToks) {
    kX16Lanes[n_tok - 1](a, r0, r1);
    return;
  }
  matmul_q4_0_prefill<true>(a, n_tok, r0, r1);  // the GEMM, its slabs split straight from the units
}

// ---- end of Q4_0x16 ----

// Float weight rows: 16 elements at a time, widened to f32.
// Each loader gives 16 weights of a row starting at element k (load_part: the first m of them).
struct F32Weights {
  static constexpr size_t kLaneBytes = 16 * 4;  // bytes of 16 weights
  static __m512 load(const uint8_t* row, size_t k) { return _mm512_loadu_ps(row + 4 * k); }
  static __m512 load_part(const uint8_t* row, size_t k, __mmask16 m) { return _mm512_maskz_loadu_ps(m, row + 4 * k); }
};
struct F16Weights {
  static constexpr size_t kLaneBytes = 16 * 2;
  static __m512 load(const uint8_t* row, size_t k) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k)));
  }
  static __m512 load_part(const uint8_t* row, size_t k, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * k));
  }
};
struct BF16Weights {
  static constexpr size_t kLaneBytes = 16 * 2;
  static __m512 widen(__m256i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16)); }
  static __m512 load(const uint8_t* row, size_t k) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k)));
  }
  static __m512 load_part(const uint8_t* row, size_t k, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, row + 2 * k));
  }
};
// Q8_0 weights against float activations (see kernels_scalar.cpp for why): half a block, scaled.
struct Q8_0FloatWeights {
  static constexpr size_t kLaneBytes = kQ8Bytes / 2;
  static __m512 load(const uint8_t* row, size_t k) {
    const uint8_t* blk = row + (k / 32) * kQ8Bytes;
    uint16_t d;
    __builtin_memcpy(&d, blk, sizeof d);
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2 + k % 32));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(_cvtsh_ss(d)));
  }
  // Rows of Q8_0 are whole blocks, so a tail is never shorter than 16; masked for completeness.
  static __m512 load_part(const uint8_t* row, size_t k, __mmask16 m) { return _mm512_maskz_mov_ps(m, load(row, k)); }
};

// Y tiles for float weights W against f32 activations.
template <class W>
struct FloatTiles {
  static constexpr size_t kDecodeRows = 4;
  static constexpr size_t kRows = 4;
  static constexpr size_t kToks = 4;

  template <int R, int T, bool kPrefetch>
  static void tile(const MatmulArgs& a, size_t r, size_t t) {
    const uint8_t* w[R];
    const uint8_t* x[T];
    __m512 acc[R][T];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      w[i] = a.w + (r + i * a.row_stride) * a.w_row_bytes;
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) acc[i][j] = _mm512_setzero_ps();
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) x[j] = a.x + (t + j) * a.x_row_bytes;
    const uint8_t* pf = a.w + (r + R) * a.w_row_bytes;
    constexpr size_t kPfStep = R * W::kLaneBytes;
    size_t k = 0;
    for (; k + kF32Lanes <= a.n; k += kF32Lanes) {
      if constexpr (kPrefetch) {
        prefetch_span<kPfStep>(pf);
        pf += kPfStep;
      }
      __m512 wv[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) wv[i] = W::load(w[i], k);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const __m512 xv = _mm512_loadu_ps(x[j] + k * sizeof(float));
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);
      }
    }
    if (k < a.n) {
      const __mmask16 m = static_cast<__mmask16>((1u << (a.n - k)) - 1);
      __m512 wv[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) wv[i] = W::load_part(w[i], k, m);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) {
        const __m512 xv = _mm512_maskz_loadu_ps(m, x[j] + k * sizeof(float));
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) a.y[(t + j) * a.ldy + r + i * a.row_stride] = _mm512_reduce_add_ps(acc[i][j]);
  }
};

template <class K>
void matmul(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok, size_t r0,
            size_t r1, float* y, size_t ldy) {
  tiling::run_tiled<K>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

// Mask of the first n (< 16) floats.
__mmask16 first_floats(size_t n) { return static_cast<__mmask16>((1u << n) - 1); }

void quantize_q8_act(const float* x, BlockQ8Act* y, size_t n) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  for (size_t b = 0; b < n / kBlock; ++b) {
    const __m512 v0 = _mm512_loadu_ps(x + b * kBlock);
    const __m512 v1 = _mm512_loadu_ps(x + b * kBlock + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
    // Same operations as the scalar reference, so blocks are bit-identical.
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = d;
    const __m512 vid = _mm512_set1_ps(id);
    // cvtps rounds to nearest even under the default MXCSR, as nearbyint does.
    const __m128i q0 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v0, vid)));
    const __m128i q1 = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(v1, vid)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs), q0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y[b].qs + 16), q1);
    y[b].minus8_sum =
        -8 * _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_cvtepi8_epi32(q0), _mm512_cvtepi8_epi32(q1)));
  }
}

// e^x for float lanes, about 1 ulp: x = n ln2 + r with |r| <= ln2 / 2, e^r by its degree-6 Taylor
// polynomial, scaled by 2^n with scalef (which also produces the subnormal and infinite results).
__m512 exp_ps(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(89.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln 2 = hi + lo with hi exact in 9 bits, so n * hi is exact.
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 720.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

float dot_f32(const float* a, const float* b, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
  if (i < n) {
    const __mmask16 m = first_floats(n - i);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

void axpy(float* y, float a, const float* x, size_t n) {
  const __m512 va = _mm512_set1_ps(a);
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
  if (i < n) {
    const __mmask16 m = first_floats(n - i);
    _mm512_mask_storeu_ps(y + i, m,
                          _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
  }
}

float dot_f16(const float* a, const uint16_t* b, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  auto h16 = [&](size_t i) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i))); };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), h16(i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), h16(i + 16), s1);
  }
  for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), h16(i), s0);
  if (i < n) {
    const __mmask16 m = first_floats(n - i);
    s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, b + i)), s1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

void axpy_f16(float* y, float a, const uint16_t* x, size_t n) {
  const __m512 va = _mm512_set1_ps(a);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 xv = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, xv, _mm512_loadu_ps(y + i)));
  }
  if (i < n) {
    const __mmask16 m = first_floats(n - i);
    const __m512 xv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, x + i));
    _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, xv, _mm512_maskz_loadu_ps(m, y + i)));
  }
}

// The four horizontal sums of a0..a3 in one 128-bit vector (fewer shuffles than four reductions).
__m128 reduce4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  const __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
  const __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
  // Each 128-bit lane now holds [a0, a1, a0, a1] and [a2, a3, a2, a3] partial sums.
  const __m512 v = _mm512_add_ps(_mm512_shuffle_ps(s01, s23, 0x44), _mm512_shuffle_ps(s01, s23, 0xEE));
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

__m512 load_f16(const uint16_t* p, size_t i, size_t dim) {
  if (i + 16 <= dim) return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first_floats(dim - i), p + i));
}
__m512 load_f32(const float* p, size_t i, size_t dim) {
  return i + 16 <= dim ? _mm512_loadu_ps(p + i) : _mm512_maskz_loadu_ps(first_floats(dim - i), p + i);
}

constexpr size_t kKvRowsAhead = 16;  // per stream (simd/kv_streams.h)

// Scores of the 4 rows k0 + j * step (j < 4), written to out[at[j]].
void score4(const float* q, const uint16_t* k0, size_t step, size_t dim, float scale, float* out,
            const size_t (&at)[4]) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t d = 0; d < dim; d += 16) {
    const __m512 qv = load_f32(q, d, dim);
    a0 = _mm512_fmadd_ps(qv, load_f16(k0, d, dim), a0);
    a1 = _mm512_fmadd_ps(qv, load_f16(k0 + step, d, dim), a1);
    a2 = _mm512_fmadd_ps(qv, load_f16(k0 + 2 * step, d, dim), a2);
    a3 = _mm512_fmadd_ps(qv, load_f16(k0 + 3 * step, d, dim), a3);
  }
  alignas(16) float r[4];
  _mm_store_ps(r, _mm_mul_ps(reduce4(a0, a1, a2, a3), _mm_set1_ps(scale)));
  for (size_t j = 0; j < 4; ++j) out[at[j]] = r[j];
}

void scores_f16(const float* q, const uint16_t* k, size_t stride, size_t n_keys, size_t dim, float scale, float* out) {
  scores_by_streams<kKvRowsAhead, score4, dot_f16>(q, k, stride, n_keys, dim, scale, out);
}

// Up to 64 output elements stay in registers (kRegs of them, a template parameter so the accumulators
// are registers, not a stack array), one set per stream, summed at the end.
template <size_t kRegs>
void weighted_sum_cols(float* out, const float* w, const uint16_t* v, size_t stride, size_t n_rows, size_t dim,
                       size_t i0) {
  __m512 acc[kKvStreams][kRegs];
  for (size_t j = 0; j < kKvStreams; ++j)
    for (size_t c = 0; c < kRegs; ++c) acc[j][c] = _mm512_setzero_ps();
  const size_t span = std::min<size_t>(dim - i0, 64);
  const size_t per = kv_stream_rows(n_rows);
  prefetch_kv_stream_starts(v + i0, per, stride, span, kKvRowsAhead);
  for (size_t i = 0; i < per; ++i) {
    prefetch_kv_streams_ahead(v + i0, per, i, stride, span, kKvRowsAhead);
#pragma GCC unroll 4
    for (size_t j = 0; j < kKvStreams; ++j) {
      const size_t p = j * per + i;
      const __m512 wp = _mm512_set1_ps(w[p]);
      const uint16_t* row = v + p * stride;
      for (size_t c = 0; c < kRegs; ++c) acc[j][c] = _mm512_fmadd_ps(wp, load_f16(row, i0 + 16 * c, dim), acc[j][c]);
    }
  }
  for (size_t p = kKvStreams * per; p < n_rows; ++p) {
    const __m512 wp = _mm512_set1_ps(w[p]);
    const uint16_t* row = v + p * stride;
    for (size_t c = 0; c < kRegs; ++c) acc[0][c] = _mm512_fmadd_ps(wp, load_f16(row, i0 + 16 * c, dim), acc[0][c]);
  }
  for (size_t c = 0; c < kRegs; ++c) {
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(acc[0][c], acc[1][c]), _mm512_add_ps(acc[2][c], acc[3][c]));
    const size_t i = i0 + 16 * c;
    if (i + 16 <= dim)
      _mm512_storeu_ps(out + i, sum);
    else
      _mm512_mask_storeu_ps(out + i, first_floats(dim - i), sum);
  }
}

void weighted_sum_f16(float* out, const float* w, const uint16_t* v, size_t stride, size_t n_rows, size_t dim) {
  for (size_t i0 = 0; i0 < dim; i0 += 64) {
    switch (std::min<size_t>((dim - i0 + 15) / 16, 4)) {
      case 4:
        weighted_sum_cols<4>(out, w, v, stride, n_rows, dim, i0);
        break;
      case 3:
        weighted_sum_cols<3>(out, w, v, stride, n_rows, dim, i0);
        break;
      case 2:
        weighted_sum_cols<2>(out, w, v, stride, n_rows, dim, i0);
        break;
      default:
        weighted_sum_cols<1>(out, w, v, stride, n_rows, dim, i0);
        break;
    }
  }
}

void to_f16(const float* x, uint16_t* y, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  if (i < n) {
    const __mmask16 m = first_floats(n - i);
    _mm256_mask_storeu_epi16(y + i, m, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT));
  }
}

// ---- Grouped-query decode attention (attend_heads_f16) ----
//
// The n_q query heads that share a KV head attend over the same rows: each key row is widened once and
// dotted with every head (4 rows at a time, from the 4 streams the kernels above read), and each value
// row is widened once per pass of up to 16 / D heads whose sums stay in registers. Per-head calls
// would widen every row n_q times (8 on a TinyLlama shape), which made decode attention compute-bound.

template <int D>  // D = hd / 16 registers per row
void attend_heads(const float* q, size_t n_q, const uint16_t* k, const uint16_t* v, size_t n_pos, float scale,
                  float* scratch, float* out) {
  constexpr size_t hd = 16 * D;
  const size_t per = kv_stream_rows(n_pos), streamed = kKvStreams * per;
  const __m128 sc = _mm_set1_ps(scale);
  // Head j's scores sit at scratch + j * n_pos in stream order: slot 4i + s holds position s * per + i
  // (so the 4 rows scored together are stored with one 4-float store and weighted together later),
  // then positions from 4 per on in order. The softmax does not care about the order.
  // Scores of 4 rows (positions p0 + j * step, j < 4; nr < 4 of them at the tail) into slots at..at+nr.
  auto score_rows = [&](size_t p0, size_t step, size_t nr, size_t at) {
    __m512 kr[4][D];
#pragma GCC unroll 4
    for (size_t r = 0; r < 4; ++r)
#pragma GCC unroll 8
      for (int c = 0; c < D; ++c)
        kr[r][c] = r < nr ? load_f16(k + (p0 + r * step) * hd, 16 * c, hd) : _mm512_setzero_ps();
    const __mmask8 m = static_cast<__mmask8>((1u << nr) - 1);
    for (size_t j = 0; j < n_q; ++j) {
      const float* qj = q + j * hd;
      __m512 a[4];
#pragma GCC unroll 4
      for (size_t r = 0; r < 4; ++r) {
        a[r] = _mm512_mul_ps(_mm512_loadu_ps(qj), kr[r][0]);
#pragma GCC unroll 8
        for (int c = 1; c < D; ++c) a[r] = _mm512_fmadd_ps(_mm512_loadu_ps(qj + 16 * c), kr[r][c], a[r]);
      }
      _mm_mask_storeu_ps(scratch + j * n_pos + at, m, _mm_mul_ps(reduce4(a[0], a[1], a[2], a[3]), sc));
    }
  };
  prefetch_kv_stream_starts(k, per, hd, hd, kKvRowsAhead);
  // The in-loop prefetches are written out here rather than through prefetch_kv_streams_ahead: with the
  // helper GCC 12 lays this kernel out ~5 % slower (same-process A/B), though the helper is inlined.
  for (size_t i = 0; i < per; ++i) {
    if (i + kKvRowsAhead < per)
      for (size_t s = 0; s < kKvStreams; ++s) prefetch_kv_row(k + (s * per + i + kKvRowsAhead) * hd, hd);
    score_rows(i, per, 4, 4 * i);
  }
  for (size_t p0 = streamed; p0 < n_pos; p0 += 4) score_rows(p0, 1, n_pos - p0 < 4 ? n_pos - p0 : 4, p0);
  prefetch_kv_stream_starts(v, per, hd, hd, kKvRowsAhead);  // arrives while the softmax runs
  for (size_t j = 0; j < n_q; ++j) Ops::softmax(scratch + j * n_pos, n_pos);

  // Values: passes of up to kPass heads.
  constexpr size_t kPass = D >= 4 ? 16 / D : 4;
  for (size_t j0 = 0; j0 < n_q; j0 += kPass) {
    const size_t qn = n_q - j0 < kPass ? n_q - j0 : kPass;
    __m512 acc[kPass][D];
#pragma GCC unroll 16
    for (size_t jj = 0; jj < kPass; ++jj)
#pragma GCC unroll 8
      for (int c = 0; c < D; ++c) acc[jj][c] = _mm512_setzero_ps();
    // Adds value row p weighted by the scores in slot `at`.
    auto add_row = [&](size_t p, size_t at) {
      __m512 vr[D];
#pragma GCC unroll 8
      for (int c = 0; c < D; ++c) vr[c] = load_f16(v + p * hd, 16 * c, hd);
#pragma GCC unroll 16
      for (size_t jj = 0; jj < kPass; ++jj) {
        if (jj >= qn) break;
        const __m512 w = _mm512_set1_ps(scratch[(j0 + jj) * n_pos + at]);
#pragma GCC unroll 8
        for (int c = 0; c < D; ++c) acc[jj][c] = _mm512_fmadd_ps(w, vr[c], acc[jj][c]);
      }
    };
    for (size_t i = 0; i < per; ++i) {
      if (i + kKvRowsAhead < per)
        for (size_t s = 0; s < kKvStreams; ++s) prefetch_kv_row(v + (s * per + i + kKvRowsAhead) * hd, hd);
#pragma GCC unroll 4
      for (size_t s = 0; s < kKvStreams; ++s) add_row(s * per + i, 4 * i + s);
    }
    for (size_t p = streamed; p < n_pos; ++p) add_row(p, p);
    for (size_t jj = 0; jj < qn; ++jj)
#pragma GCC unroll 8
      for (int c = 0; c < D; ++c) _mm512_storeu_ps(out + (j0 + jj) * hd + 16 * c, acc[jj][c]);
  }
}

using AttendHeadsFn = void (*)(const float*, size_t, const uint16_t*, const uint16_t*, size_t, float, float*, float*);

template <size_t... I>
constexpr auto attend_heads_table(std::index_sequence<I...>) {
  return std::array<AttendHeadsFn, sizeof...(I)>{attend_heads<static_cast<int>(I + 1)>...};
}
// kAttendHeads[hd / 16 - 1] handles head size hd.
constexpr auto kAttendHeads = attend_heads_table(std::make_index_sequence<kAttendHeadsMaxDim / 16>());

void attend_heads_f16(const float* q, size_t n_q, const uint16_t* k, const uint16_t* v, size_t n_pos, size_t hd,
                      float scale, float* scratch, float* out) {
  kAttendHeads[hd / 16 - 1](q, n_q, k, v, n_pos, scale, scratch, out);
}

// ---- Batched causal attention (attend_f16) ----
//
// Queries sit in the 16 lanes of a register, so scores, softmax and the weighted sum of values are
// plain vertical FMAs with one key or value element broadcast from memory, and no horizontal sums.
// Keys and values are widened from F16 a few rows at a time into a small buffer. Scores are kept
// transposed (st[p * 16 + i]); unnormalized weights are summed into the output, which is divided by
// the softmax denominator at the end.

constexpr size_t kAttendKeys = 8;     // keys per score step (one accumulator each)
constexpr size_t kAttendValues = 48;  // value rows widened at a time

// Widens the hd halves at src to floats at dst.
void widen_row(const uint16_t* src, float* dst, size_t hd) {
  size_t d = 0;
  for (; d + 16 <= hd; d += 16)
    _mm512_storeu_ps(dst + d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + d))));
  if (d < hd) {
    const __mmask16 m = first_floats(hd - d);
    _mm512_mask_storeu_ps(dst + d, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + d)));
  }
}

void attend_f16(const float* q, size_t ldq, size_t n_q, const uint32_t* n_vis, const uint16_t* k, const uint16_t* v,
                size_t kv_stride, size_t hd, float scale, float* scratch, float* out, size_t ldo) {
  float* qt = scratch;             // [hd][16] scaled queries, transposed
  float* ot = scratch + 16 * hd;   // [hd][16] output, transposed
  float* buf = scratch + 32 * hd;  // [48][hd] widened key or value rows
  float* st = scratch + 80 * hd;   // [n_max][16] scores, then weights
  // Unused lanes see position 0 with a zero query: finite, never stored.
  alignas(64) int32_t nv[16];
  size_t n_max = 0;
  for (size_t i = 0; i < 16; ++i) {
    nv[i] = i < n_q ? static_cast<int32_t>(n_vis[i]) : 1;
    n_max = static_cast<size_t>(nv[i]) > n_max ? static_cast<size_t>(nv[i]) : n_max;
  }
  const __m512i nvis = _mm512_load_si512(nv);
  for (size_t d = 0; d < hd; ++d)
    for (size_t i = 0; i < 16; ++i) qt[d * 16 + i] = i < n_q ? q[i * ldq + d] * scale : 0.0f;

  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  __m512 mx = neg_inf;
  for (size_t p0 = 0; p0 < n_max; p0 += kAttendKeys) {
    const size_t np = n_max - p0 < kAttendKeys ? n_max - p0 : kAttendKeys;
    __m512 acc[kAttendKeys];
    for (size_t j = 0; j < np; ++j) widen_row(k + (p0 + j) * kv_stride, buf + j * hd, hd);
    if (np == kAttendKeys) {
#pragma GCC unroll 8
      for (size_t j = 0; j < kAttendKeys; ++j) acc[j] = _mm512_setzero_ps();
      for (size_t d = 0; d < hd; ++d) {
        const __m512 qv = _mm512_load_ps(qt + d * 16);
#pragma GCC unroll 8
        for (size_t j = 0; j < kAttendKeys; ++j) acc[j] = _mm512_fmadd_ps(qv, _mm512_set1_ps(buf[j * hd + d]), acc[j]);
      }
    } else {
      for (size_t j = 0; j < np; ++j) {
        __m512 a = _mm512_setzero_ps();
        for (size_t d = 0; d < hd; ++d)
          a = _mm512_fmadd_ps(_mm512_load_ps(qt + d * 16), _mm512_set1_ps(buf[j * hd + d]), a);
        acc[j] = a;
      }
    }
    for (size_t j = 0; j < np; ++j) {
      const __mmask16 visible = _mm512_cmplt_epi32_mask(_mm512_set1_epi32(static_cast<int32_t>(p0 + j)), nvis);
      const __m512 sc = _mm512_mask_mov_ps(neg_inf, visible, acc[j]);
      _mm512_store_ps(st + (p0 + j) * 16, sc);
      mx = _mm512_max_ps(mx, sc);
    }
  }
  __m512 sum = _mm512_setzero_ps();
  for (size_t p = 0; p < n_max; ++p) {
    const __mmask16 visible = _mm512_cmplt_epi32_mask(_mm512_set1_epi32(static_cast<int32_t>(p)), nvis);
    const __m512 e = _mm512_maskz_mov_ps(visible, exp_ps(_mm512_sub_ps(_mm512_load_ps(st + p * 16), mx)));
    _mm512_store_ps(st + p * 16, e);
    sum = _mm512_add_ps(sum, e);
  }

  for (size_t d = 0; d < hd; ++d) _mm512_store_ps(ot + d * 16, _mm512_setzero_ps());
  for (size_t p0 = 0; p0 < n_max; p0 += kAttendValues) {
    const size_t np = n_max - p0 < kAttendValues ? n_max - p0 : kAttendValues;
    for (size_t j = 0; j < np; ++j) widen_row(v + (p0 + j) * kv_stride, buf + j * hd, hd);
    size_t d0 = 0;
    for (; d0 + 16 <= hd; d0 += 16) {
      __m512 acc[16];
#pragma GCC unroll 16
      for (size_t dd = 0; dd < 16; ++dd) acc[dd] = _mm512_load_ps(ot + (d0 + dd) * 16);
      for (size_t j = 0; j < np; ++j) {
        const __m512 e = _mm512_load_ps(st + (p0 + j) * 16);
        const float* vr = buf + j * hd + d0;
#pragma GCC unroll 16
        for (size_t dd = 0; dd < 16; ++dd) acc[dd] = _mm512_fmadd_ps(e, _mm512_set1_ps(vr[dd]), acc[dd]);
      }
#pragma GCC unroll 16
      for (size_t dd = 0; dd < 16; ++dd) _mm512_store_ps(ot + (d0 + dd) * 16, acc[dd]);
    }
    for (; d0 < hd; ++d0) {  // heads whose size is not a multiple of 16
      __m512 a = _mm512_load_ps(ot + d0 * 16);
      for (size_t j = 0; j < np; ++j)
        a = _mm512_fmadd_ps(_mm512_load_ps(st + (p0 + j) * 16), _mm512_set1_ps(buf[j * hd + d0]), a);
      _mm512_store_ps(ot + d0 * 16, a);
    }
  }
  const __m512 inv = _mm512_div_ps(_mm512_set1_ps(1.0f), sum);
  alignas(64) float row[16];
  for (size_t d = 0; d < hd; ++d) {
    _mm512_store_ps(row, _mm512_mul_ps(_mm512_load_ps(ot + d * 16), inv));
    for (size_t i = 0; i < n_q; ++i) out[i * ldo + d] = row[i];
  }
}

// ---- end of batched attention ----

template <int kDecodeStreams, MatmulFn kQ6Kx8>
constexpr Kernels make_avx512() {
  return {
      .isa = Isa::avx512,
      .matmul =
          {
              .f32 = {matmul<FloatTiles<F32Weights>>, ActivationFormat::f32},
              .f16 = {matmul<FloatTiles<F16Weights>>, ActivationFormat::f32},
              .q4_0 = {matmul_q4_0, ActivationFormat::q8_32},
              .q4_1 = {avx512::matmul_q4_1, ActivationFormat::q8_32},
              .q5_0 = {avx512::matmul_q5_0, ActivationFormat::q8_32},
              .q5_1 = {avx512::matmul_q5_1, ActivationFormat::q8_32},
              .q8_0 = {matmul<FloatTiles<Q8_0FloatWeights>>, ActivationFormat::f32},
              .q2_k = {avx512::matmul_q2_k, ActivationFormat::q8_k},
              .q3_k = {avx512::matmul_q3_k, ActivationFormat::q8_k},
              .q4_k = {avx512::matmul_q4_k, ActivationFormat::q8_k},
              .q5_k = {avx512::matmul_q5_k, ActivationFormat::q8_k},
              .q6_k = {avx512::matmul_q6_k, ActivationFormat::q8_k},
              .iq4_nl = {avx512::matmul_iq4_nl, ActivationFormat::q8_32},
              .iq4_xs = {avx512::matmul_iq4_xs, ActivationFormat::q8_k},
              .bf16 = {matmul<FloatTiles<BF16Weights>>, ActivationFormat::f32},
              .q4_0x16 = {matmul_q4_0x16<kDecodeStreams>, ActivationFormat::q8_32},
              .q4_kx8 = {avx512::matmul_q4_kx8, ActivationFormat::q8_k},
              .q6_kx8 = {kQ6Kx8, ActivationFormat::q8_k},
          },
      .quantize_q8_act = quantize_q8_act,
      .quantize_q8_k = avx512::quantize_q8_k,
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
      .attend_f16 = attend_f16,
      .attend_heads_f16 = attend_heads_f16,
      .rope = Ops::rope,
      .gelu_mul = Ops::gelu_mul,
      .softcap = Ops::softcap,
      .scale = Ops::scale,
      .rope_neox = Ops::rope_neox,
  };
}

const Kernels kAvx512 = make_avx512<4, avx512::matmul_q6_kx8>();
const Kernels kAvx512Zen4 = make_avx512<1, avx512::matmul_q6_kx8_prefetch_l2>();

}  // namespace

const Kernels* avx512_kernels() { return cpu_tuning().zen4_tables ? &kAvx512Zen4 : &kAvx512; }

}  // namespace lmrt::simd
