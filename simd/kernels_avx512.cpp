// AVX-512 (F, BW, VL, DQ) + VNNI kernel table.
//
// The Q4_0 matmul has two paths. Decode (one token) keeps the GGUF block layout and puts one block in
// each 128-bit lane: a 512-bit step covers 4 blocks, with the block's first 16 elements in one register
// and its last 16 in another (exactly its low and high nibbles); 2 or 3 tokens take the same steps in tiles of 4
// rows x 3 tokens, 4 to 6 tokens the small-batch kernel (each step split once for all tokens). Prefill (7 tokens
// or more) first repacks
// 16 rows at a time so one register holds 4 elements of each of the 16 rows, then streams every token
// through the repacked slab (see the prefill section). VNNI multiplies unsigned weights by signed
// activations, so the nibbles are used as stored (q + 8) and the offset is removed by starting each
// block's sum at -8 * sum(x), which quantize_q8_act stores with the activation block. Integer sums are
// exact; only the float accumulation order differs from the scalar reference.
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
#include "simd/quant_kernels.h"

namespace lmrt::simd {
namespace {

using Ops = FloatOps<xsimd::avx512bw>;  // RMSNorm, softmax, SiLU-mul, add, RoPE (float_ops.h)

using tiling::MatmulArgs;

constexpr size_t kBlock = 32;                     // elements per Q4_0 / Q8_0 block
constexpr size_t kGroup = 4;                      // blocks per 512-bit step, one per 128-bit lane
constexpr size_t kQ4Bytes = sizeof(BlockQ4_0);    // 18
constexpr size_t kQ8Bytes = sizeof(BlockQ8_0);    // 34
constexpr size_t kActBytes = sizeof(BlockQ8Act);  // 40
constexpr size_t kLine = 64;                      // cache line
constexpr size_t kF32Lanes = 16;

// Mask of the first n (<= 64) bytes.
__mmask64 first_bytes(size_t n) { return n >= 64 ? ~__mmask64{0} : (__mmask64{1} << n) - 1; }

// Prefetches [p, p + bytes) (whole lines) into L1, or the cache kHint names.
template <size_t kBytes, _mm_hint kHint = _MM_HINT_T0>
void prefetch_span(const uint8_t* p) {
  for (size_t o = 0; o <= kBytes; o += kLine) _mm_prefetch(reinterpret_cast<const char*>(p + o), kHint);
}

// The 16 bytes at p + k * stride in 128-bit lane k, for k < count (all 4 when kFull); other lanes zero.
template <bool kFull>
__m512i load_lanes(const uint8_t* p, size_t stride, size_t count) {
  auto load16 = [](const uint8_t* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
  if constexpr (kFull) {
    __m512i v = _mm512_castsi128_si512(load16(p));
    v = _mm512_inserti32x4(v, load16(p + stride), 1);
    v = _mm512_inserti32x4(v, load16(p + 2 * stride), 2);
    return _mm512_inserti32x4(v, load16(p + 3 * stride), 3);
  } else {
    __m512i v = _mm512_setzero_si512();
    if (count > 0) v = _mm512_inserti32x4(v, load16(p), 0);
    if (count > 1) v = _mm512_inserti32x4(v, load16(p + stride), 1);
    if (count > 2) v = _mm512_inserti32x4(v, load16(p + 2 * stride), 2);
    return v;
  }
}

// fp16 scales of `count` blocks starting at p, each broadcast over its block's 128-bit lane.
// Q4_0 blocks are 18 bytes (9 words) apart, so 4 scales lie in the first 64 bytes.
template <bool kFull>
__m512 scales_q4_0(const uint8_t* p, size_t count) {
  const __m512i idx = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 27 << 16 | 27, 27 << 16 | 27, 18 << 16 | 18,
                                       18 << 16 | 18, 9 << 16 | 9, 9 << 16 | 9, 0, 0);
  const __m512i v = kFull ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(first_bytes(count * kQ4Bytes), p);
  return _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(idx, v)));
}

// One 4-block step of a weight row or activation row: first and last 16 elements of each block as
// unsigned bytes (weights) or signed bytes (activations), and the per-lane scale.
struct QuantStep {
  __m512i first;
  __m512i last;
  __m512 d;
};

// Q4_0 weights: nibbles as stored (q + 8).
struct Q4_0Weights {
  static constexpr size_t kBlockBytes = kQ4Bytes;
  template <bool kFull>
  static QuantStep load(const uint8_t* p, size_t count) {
    const __m512i nib = _mm512_set1_epi8(0x0F);
    const __m512i q = load_lanes<kFull>(p + 2, kQ4Bytes, count);
    return {_mm512_and_si512(q, nib), _mm512_and_si512(_mm512_srli_epi16(q, 4), nib), scales_q4_0<kFull>(p, count)};
  }
};

// Decode tiles whose rows are separate streams: the two lines at `offset` in each stream's row
// tiling::kStreamAheadRows rows ahead (a core keeps too few lines in flight while it also computes).
template <int R>
void prefetch_streams(const uint8_t* const (&w)[R], size_t row_bytes, size_t offset) {
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    const uint8_t* ahead = w[i] + tiling::kStreamAheadRows * row_bytes + offset;
    _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(ahead + kLine), _MM_HINT_T0);
  }
}

// One token's activations for a 4-block step, laid out as the weight step is: per 128-bit lane the
// block's scale, -8 * sum(qs) in the lane's first dword (so that sum((w + 8) * x) + init = sum(w * x)),
// and the block's first and last 16 values.
struct LaneX {
  __m512 d;
  __m512i init;
  __m512i first;
  __m512i last;
};

template <bool kFull>
LaneX lane_x(const uint8_t* xp, size_t count) {
  const __m512i head = load_lanes<kFull>(xp, kActBytes, count);  // d, -8 * sum(qs), qs[0..7]
  return {_mm512_permute_ps(_mm512_castsi512_ps(head), 0x00), _mm512_maskz_shuffle_epi32(0x1111, head, _MM_PERM_BBBB),
          load_lanes<kFull>(xp + 8, kActBytes, count), load_lanes<kFull>(xp + 8 + 16, kActBytes, count)};
}

// sum over the step of w * x, scaled, added to acc.
inline __m512 step_dot(const QuantStep& w, const LaneX& x, __m512 acc) {
  __m512i s = _mm512_dpbusd_epi32(x.init, w.first, x.first);
  s = _mm512_dpbusd_epi32(s, w.last, x.last);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(w.d, x.d), acc);
}

// Y tiles for Q4_0 weights against Q8_0 activations.
template <class W>
struct QuantTiles {
  static constexpr size_t kDecodeRows = 4;
  static constexpr size_t kRows = 4;
  static constexpr size_t kToks = 3;

  template <int R, int T, bool kFull>
  static void step(const uint8_t* const (&w)[R], const uint8_t* const (&x)[T], size_t b, size_t count,
                   __m512 (&acc)[R][T]) {
    QuantStep ws[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) ws[i] = W::template load<kFull>(w[i] + b * W::kBlockBytes, count);
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      const LaneX xs = lane_x<kFull>(x[j] + b * kActBytes, count);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) acc[i][j] = step_dot(ws[i], xs, acc[i][j]);
    }
  }

  template <int R, int T, bool kPrefetch>
  static void tile(const MatmulArgs& a, size_t r, size_t t) {
    const size_t nb = a.n / kBlock;
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
    // Adjacent rows: the next tile's rows, in address order, at the pace this tile reads its own.
    // Rows from separate streams (decode): each stream a couple of rows ahead. Without it a core keeps
    // too few lines in flight while it also computes (measured: about +30 % decode on the 1.1B shape).
    const uint8_t* pf = a.w + (r + R) * a.w_row_bytes;
    constexpr size_t kPfStep = R * kGroup * W::kBlockBytes;
    const bool streams = a.row_stride != 1;
    size_t b = 0;
    for (; b + kGroup <= nb; b += kGroup) {
      if constexpr (kPrefetch) {
        if (streams) {
          prefetch_streams(w, a.w_row_bytes, b * W::kBlockBytes);
        } else {
          prefetch_span<kPfStep>(pf);
          pf += kPfStep;
        }
      }
      step<R, T, true>(w, x, b, kGroup, acc);
    }
    if (b < nb) step<R, T, false>(w, x, b, nb - b, acc);
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) a.y[(t + j) * a.ldy + r + i * a.row_stride] = _mm512_reduce_add_ps(acc[i][j]);
  }
};

// Decode (one token) over activations prepared once per call as LaneX steps (matmul_q4_0): every tile
// reuses them, so a step costs only the weight loads and the arithmetic.
struct Q4_0DecodeTiles {
  static constexpr size_t kDecodeRows = 4;
  static constexpr size_t kRows = 4;  // the batched path of run_tiled is never taken (one token)
  static constexpr size_t kToks = 1;

  template <int R, int T, bool kPrefetch>
  static void tile(const MatmulArgs& a, size_t r, size_t) {
    static_assert(T == 1, "one token");
    const size_t nb = a.n / kBlock;
    const auto* xs = reinterpret_cast<const LaneX*>(a.x);
    const uint8_t* w[R];
    __m512 acc[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      w[i] = a.w + (r + i * a.row_stride) * a.w_row_bytes;
      acc[i] = _mm512_setzero_ps();
    }
    const bool streams = a.row_stride != 1;
    size_t b = 0;
    for (; b + kGroup <= nb; b += kGroup) {
      if constexpr (kPrefetch) {
        if (streams) prefetch_streams(w, a.w_row_bytes, b * kQ4Bytes);
      }
      const LaneX& x = xs[b / kGroup];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) acc[i] = step_dot(Q4_0Weights::load<true>(w[i] + b * kQ4Bytes, kGroup), x, acc[i]);
    }
    if (b < nb) {
      const LaneX& x = xs[b / kGroup];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) acc[i] = step_dot(Q4_0Weights::load<false>(w[i] + b * kQ4Bytes, nb - b), x, acc[i]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) a.y[r + i * a.row_stride] = _mm512_reduce_add_ps(acc[i]);
  }
};

// Steps of prepared activations a decode call keeps on its stack (K up to 16384).
constexpr size_t kMaxLaneSteps = 128;

// ---- Q4_0 prefill (n_tok > 1) ----
//
// For 16 rows and a slab of up to kSlabBlocks blocks, the rows' blocks are repacked once into
// PackedSlab: per block, 8 registers where 32-bit lane r holds 4 consecutive elements of row r as
// unsigned bytes (q + 8), and one register of the 16 rows' scales. Each token then costs, per block,
// 8 vpdpbusd against its activation dwords broadcast from memory plus one convert and one FMA, for all
// 16 rows at once; the repacking is shared by every token. The slab (18 KiB) stays in L1 while token
// tiles of up to kPrefillToks tokens, with one float accumulator per token, pass over it; partial sums
// of later slabs are added to Y.

constexpr size_t kPackRows = 16;
constexpr size_t kSlabBlocks = 32;
constexpr size_t kPrefillToks = 12;
// Fewer tokens (a batched decode step of 2 or 3 sequences) take QuantTiles, up to kSmallBatchToks the small-batch
// kernel: repacking a slab for so few tokens costs more than it saves (lmrt_quant_matmul_bench avx512 2048 768 200 5
// NTOK, weights from memory: 2 tokens 9.6 GB/s through the tiles against 7.5 through the slabs; 4 tokens 4.7
// against 6.0).
constexpr size_t kPrefillMinToks = 4;

// Register j of a block pairs with activation dword j: raw dword j (< 4) of a Q4_0 block holds elements
// 4j..4j+3 in its low nibbles and 16+4j..16+4j+3 in its high nibbles, so register j holds the low
// nibbles of raw dword j and register 4 + j their high nibbles.
struct PackedSlab {
  __m512i q[kSlabBlocks][8];
  __m512 d[kSlabBlocks];
};

// An int32 read that may alias the int8 activations.
using AliasedI32 = int32_t __attribute__((may_alias));

// sum + vpdpbusd(w, the dword at p broadcast), with the broadcast folded into the instruction
// ({1to16}): GCC 12 emits a separate vpbroadcastd, doubling the instructions of the inner loop.
__m512i dpbusd_bcast(__m512i sum, __m512i w, const AliasedI32* p) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(sum) : "v"(w), "m"(*p));
  return sum;
}

// Repacks blocks [b0, b0 + nbs) of the 16 rows rows[0..15] into s.
void repack_q4_0(const uint8_t* const (&rows)[kPackRows], size_t b0, size_t nbs, PackedSlab& s) {
  const __m512i nib = _mm512_set1_epi8(0x0F);
  auto load16 = [](const uint8_t* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
  for (size_t b = 0; b < nbs; ++b) {
    const size_t off = (b0 + b) * kQ4Bytes;
    // z[a], lane L: the 16 nibble bytes of row 4L + a.
    __m512i z[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      __m512i v = _mm512_castsi128_si512(load16(rows[i] + off + 2));
      v = _mm512_inserti32x4(v, load16(rows[4 + i] + off + 2), 1);
      v = _mm512_inserti32x4(v, load16(rows[8 + i] + off + 2), 2);
      z[i] = _mm512_inserti32x4(v, load16(rows[12 + i] + off + 2), 3);
    }
    // A 4x4 dword transpose inside each 128-bit lane: t[j], lane L, dword i = dword j of z[i]'s lane L,
    // that is dword j of row 4L + i, so dword r of t[j] is dword j of row r.
    const __m512i t01lo = _mm512_unpacklo_epi32(z[0], z[1]), t01hi = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i t23lo = _mm512_unpacklo_epi32(z[2], z[3]), t23hi = _mm512_unpackhi_epi32(z[2], z[3]);
    const __m512i t[4] = {_mm512_unpacklo_epi64(t01lo, t23lo), _mm512_unpackhi_epi64(t01lo, t23lo),
                          _mm512_unpacklo_epi64(t01hi, t23hi), _mm512_unpackhi_epi64(t01hi, t23hi)};
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      _mm512_store_si512(&s.q[b][j], _mm512_and_si512(t[j], nib));
      _mm512_store_si512(&s.q[b][4 + j], _mm512_and_si512(_mm512_srli_epi32(t[j], 4), nib));
    }
    alignas(32) uint16_t d[kPackRows];
#pragma GCC unroll 16
    for (size_t r = 0; r < kPackRows; ++r) __builtin_memcpy(&d[r], rows[r] + off, sizeof(uint16_t));
    _mm512_store_ps(&s.d[b], _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(d))));
  }
}

// Y[t * ldy + r'] for the slab's 16 rows (those in `rows`) and T tokens whose activation rows start at
// x (already advanced to the slab's first block), `x_row_bytes` apart. The first slab stores, later ones
// add.
template <int T>
void prefill_tile(const PackedSlab& s, size_t nbs, const uint8_t* x, size_t x_row_bytes, bool first, float* y,
                  size_t ldy, __mmask16 rows) {
  const BlockQ8Act* xt[T];
  __m512 acc[T];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    xt[t] = reinterpret_cast<const BlockQ8Act*>(x + t * x_row_bytes);
    acc[t] = _mm512_setzero_ps();
  }
  for (size_t b = 0; b < nbs; ++b) {
    // Weight register outermost, tokens innermost: the T sums are independent, so consecutive
    // vpdpbusd never wait on each other (token-major order leaves chains of 8 dependent ones that
    // the scheduler cannot hide).
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
  for (int t = 0; t < T; ++t) {
    float* yt = y + t * ldy;
    const __m512 v = first ? acc[t] : _mm512_add_ps(acc[t], _mm512_maskz_loadu_ps(rows, yt));
    _mm512_mask_storeu_ps(yt, rows, v);
  }
}

using PrefillTileFn = void (*)(const PackedSlab&, size_t, const uint8_t*, size_t, bool, float*, size_t, __mmask16);

template <size_t... I>
constexpr auto prefill_tiles(std::index_sequence<I...>) {
  return std::array<PrefillTileFn, sizeof...(I)>{prefill_tile<static_cast<int>(I + 1)>...};
}
// kPrefillTiles[tn - 1] handles tn tokens.
constexpr auto kPrefillTiles = prefill_tiles(std::make_index_sequence<kPrefillToks>());

// Rows pointers of the 16-row group at r (rows past r1 repeat the last row: read from valid memory,
// never stored).
void group_rows(const MatmulArgs& a, size_t r, size_t r1, const uint8_t* (&rows)[kPackRows]) {
  const size_t n_rows = r1 - r < kPackRows ? r1 - r : kPackRows;
  for (size_t i = 0; i < kPackRows; ++i) rows[i] = a.w + (r + (i < n_rows ? i : n_rows - 1)) * a.w_row_bytes;
}

// Fetches blocks [b0, b0 + nbs) of the group's rows into L2 while the current slab is computed, so the
// next repack does not wait on memory (16 rows are more streams than the hardware prefetcher follows).
void prefetch_slab(const uint8_t* const (&rows)[kPackRows], size_t b0, size_t nbs) {
  for (size_t i = 0; i < kPackRows; ++i) {
    const uint8_t* p = rows[i] + b0 * kQ4Bytes;
    for (size_t o = 0; o < nbs * kQ4Bytes; o += kLine) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(p + nbs * kQ4Bytes - 1), _MM_HINT_T1);
  }
}

// Repacks blocks [b0, b0 + nbs) of a Q4_0x16 group (formats/q4_0x16.h) into s: each 64-byte line
// of a unit already holds raw dword c of the 16 rows, one per lane, so this is only the nibble split.
void repack_q4_0x16(const uint8_t* group, size_t b0, size_t nbs, PackedSlab& s) {
  const __m512i nib = _mm512_set1_epi8(0x0F);
  for (size_t b = 0; b < nbs; ++b) {
    const uint8_t* unit = group + (b0 + b) * kQ4_0x16UnitBytes;
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i q = _mm512_loadu_si512(unit + 32 + 64 * c);
      _mm512_store_si512(&s.q[b][c], _mm512_and_si512(q, nib));
      _mm512_store_si512(&s.q[b][4 + c], _mm512_and_si512(_mm512_srli_epi32(q, 4), nib));
    }
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
    const size_t n_rows = r1 - r < kPackRows ? r1 - r : kPackRows;
    const __mmask16 row_mask = static_cast<__mmask16>((1u << n_rows) - 1);
    const uint8_t* rows[kPackRows];
    const uint8_t* group = a.w + r * a.w_row_bytes;  // Q4_0x16: the group's units, consecutive
    if constexpr (!kX16) group_rows(a, r, r1, rows);
    for (size_t b0 = 0; b0 < nb; b0 += kSlabBlocks) {
      const size_t nbs = nb - b0 < kSlabBlocks ? nb - b0 : kSlabBlocks;
      if constexpr (kX16) {
        repack_q4_0x16(group, b0, nbs, slab);
        // The next slab (of this group or the next) follows in memory: one span into L2.
        const char* next = reinterpret_cast<const char*>(group + (b0 + nbs) * kPackRows * kQ4Bytes);
        for (size_t o = 0; o < kSlabBlocks * kPackRows * kQ4Bytes; o += kLine) _mm_prefetch(next + o, _MM_HINT_T1);
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
                              a.y + t * a.ldy + r, a.ldy, row_mask);
      }
    }
  }
}

// ---- Q4_0 small batches (a batched decode step of kPrefillMinToks to kSmallBatchToks sequences) ----
//
// The decode layout, no repacking: each row's 4-block step is loaded and split once for all T tokens, whose
// activation lanes (LaneX) are prepared once per call for a stretch of steps (kMaxLaneSteps lanes on the stack,
// as one-token decode), so a step costs one weight load and T dot products. lmrt_quant_matmul_bench avx512 2048
// 768 200 5 NTOK, weights from memory: 4 tokens 7.6 GB/s against 6.3 through the slab GEMM, 8 tokens 4.9 against
// 4.8 (so the GEMM from 7 on); 2 and 3 tokens 9.8 and 7.9 against 12.2 and 9.3 through QuantTiles (which keeps them).
constexpr size_t kSmallBatchToks = 6;

// Rows [r0, r1) over steps [s0, s1) of T tokens whose lanes are xs[(s - s0) * T + t]; the first stretch stores Y,
// later ones add.
template <int T>
void q4_0_small_rows(const MatmulArgs& a, const LaneX* xs, size_t s0, size_t s1, size_t r0, size_t r1) {
  const size_t nb = a.n / kBlock;
  for (size_t r = r0; r < r1; ++r) {
    const uint8_t* row = a.w + r * a.w_row_bytes;
    __m512 acc[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (size_t s = s0; s < s1; ++s) {
      const size_t b = s * kGroup;
      // The row after next, at the pace this one is read (adjacent rows are one stream).
      const uint8_t* ahead = row + 2 * a.w_row_bytes + b * kQ4Bytes;
      _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(ahead + kLine), _MM_HINT_T0);
      const QuantStep ws = nb - b >= kGroup ? Q4_0Weights::load<true>(row + b * kQ4Bytes, kGroup)
                                            : Q4_0Weights::load<false>(row + b * kQ4Bytes, nb - b);
      const LaneX* xt = xs + (s - s0) * T;
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[t] = step_dot(ws, xt[t], acc[t]);
    }
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      const float v = _mm512_reduce_add_ps(acc[t]);
      float& out = a.y[t * a.ldy + r];
      out = s0 == 0 ? v : out + v;
    }
  }
}

template <int T>
void matmul_q4_0_small(const MatmulArgs& a, size_t r0, size_t r1) {
  const size_t nb = a.n / kBlock, steps = (nb + kGroup - 1) / kGroup;
  constexpr size_t kStretch = kMaxLaneSteps / T;  // steps whose lanes fit the stack buffer
  LaneX xs[kStretch * T];
  for (size_t s0 = 0; s0 < steps; s0 += kStretch) {
    const size_t s1 = steps - s0 < kStretch ? steps : s0 + kStretch;
    for (size_t s = s0; s < s1; ++s) {
      const size_t b = s * kGroup;
      for (int t = 0; t < T; ++t) {
        const uint8_t* xp = a.x + t * a.x_row_bytes + b * kActBytes;
        xs[(s - s0) * T + t] = nb - b >= kGroup ? lane_x<true>(xp, kGroup) : lane_x<false>(xp, nb - b);
      }
    }
    q4_0_small_rows<T>(a, xs, s0, s1, r0, r1);
  }
}

using SmallBatchFn = void (*)(const MatmulArgs&, size_t, size_t);
template <size_t... I>
constexpr auto small_batch_fns(std::index_sequence<I...>) {
  return std::array<SmallBatchFn, sizeof...(I)>{matmul_q4_0_small<static_cast<int>(I + kPrefillMinToks)>...};
}
// kSmallBatch[n_tok - kPrefillMinToks] handles n_tok tokens.
constexpr auto kSmallBatch = small_batch_fns(std::make_index_sequence<kSmallBatchToks - kPrefillMinToks + 1>());

void matmul_q4_0(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                 size_t r0, size_t r1, float* y, size_t ldy) {
  if (n_tok >= kPrefillMinToks && n_tok <= kSmallBatchToks && r0 < r1) {
    const MatmulArgs a{
        static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const uint8_t*>(x), x_row_bytes, n, y, ldy};
    kSmallBatch[n_tok - kPrefillMinToks](a, r0, r1);
    return;
  }
  const size_t steps = (n / kBlock + kGroup - 1) / kGroup;
  if (n_tok == 1 && r0 < r1 && steps <= kMaxLaneSteps) {
    LaneX xs[kMaxLaneSteps];
    const auto* xb = static_cast<const uint8_t*>(x);
    const size_t nb = n / kBlock;
    for (size_t g = 0; g < steps; ++g) {
      const size_t b = g * kGroup;
      xs[g] = nb - b >= kGroup ? lane_x<true>(xb + b * kActBytes, kGroup) : lane_x<false>(xb + b * kActBytes, nb - b);
    }
    tiling::run_tiled<Q4_0DecodeTiles>(w, w_row_bytes, xs, 0, n, 1, r0, r1, y, ldy);
    return;
  }
  if (n_tok < kPrefillMinToks || r0 >= r1) {
    tiling::run_tiled<QuantTiles<Q4_0Weights>>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
    return;
  }
  const MatmulArgs a{
      static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const uint8_t*>(x), x_row_bytes, n, y, ldy};
  matmul_q4_0_prefill<false>(a, n_tok, r0, r1);
}

// ---- end of Q4_0 prefill ----

// ---- Q4_0x16 (formats/q4_0x16.h) ----
//
// One 64-byte load holds 4 nibble bytes of each of 16 rows, one row per 32-bit lane: its low nibbles
// against the token's activation dword broadcast, its high nibbles against the dword 16 elements on,
// and the unit's 16 scales are one 32-byte load. No shuffles, no horizontal sums; each group of 16
// rows is one sequential stream, and S groups from distant parts of the rows are read at once (one
// stream is far below a core's read bandwidth here).

// Prefetch distance, in units of each stream. 8 units (2.3 KiB per stream) over 4: +3-4 % on the 1.1B
// shape's decode matmuls from memory, in alternating same-process passes (6 to 12 measured alike).
constexpr size_t kX16UnitsAhead = 8;

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

struct Q4_0x16Decode {
  static constexpr int kMaxStreams = 8;
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

void matmul_q4_0x16(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                    size_t r0, size_t r1, float* y, size_t ldy) {
  if (n_tok != 1) {  // a batch: the Q4_0 GEMM, its slabs unpacked straight from the groups
    const MatmulArgs a{
        static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const uint8_t*>(x), x_row_bytes, n, y, ldy};
    matmul_q4_0_prefill<true>(a, n_tok, r0, r1);
    return;
  }
  tiling::run_x16_decode<Q4_0x16Decode>(w, w_row_bytes, x, n, r0, r1, y);
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

const Kernels kAvx512 = {
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
            .q4_0x16 = {matmul_q4_0x16, ActivationFormat::q8_32},
            .q4_kx8 = {avx512::matmul_q4_kx8, ActivationFormat::q8_k},
            .q6_kx8 = {avx512::matmul_q6_kx8, ActivationFormat::q8_k},
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

}  // namespace

const Kernels* avx512_kernels() { return &kAvx512; }

}  // namespace lmrt::simd
