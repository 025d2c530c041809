// The loop nest of the prefill GEMMs over transposed weight slabs (quant_gemm_avx512.h, quant_gemm_avx2.h,
// q4_0_gemm_avx2.h): for each group of K::kRows rows, each slab of K::kSlabBlocks blocks is repacked once
// (K::repack) and then every token tile runs over it (K::tile); later slabs add to Y. While a slab is computed
// the next one is fetched into L2 (a group's rows are more streams than the hardware prefetcher follows).
//
// Templates over the ISA file's K (internal linkage), as matmul_tiling.h. Included by x86 files only.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace lmrt::simd::slab_gemm {

// Pointers to the kRows rows from r (rows past r1 repeat the last row: read from valid memory, never stored).
template <size_t kRows>
void group_rows(const uint8_t* w, size_t w_row_bytes, size_t r, size_t r1, const uint8_t* (&rows)[kRows]) {
  const size_t n_rows = r1 - r < kRows ? r1 - r : kRows;
  for (size_t i = 0; i < kRows; ++i) rows[i] = w + (r + (i < n_rows ? i : n_rows - 1)) * w_row_bytes;
}

// Fetches blocks [b0, b0 + nbs) of the rows into L2.
template <size_t kRows, size_t kBlockBytes>
void prefetch_rows(const uint8_t* const (&rows)[kRows], size_t b0, size_t nbs) {
  constexpr size_t kLineBytes = 64;
  for (size_t i = 0; i < kRows; ++i) {
    const uint8_t* p = rows[i] + b0 * kBlockBytes;
    for (size_t o = 0; o < nbs * kBlockBytes; o += kLineBytes) __builtin_prefetch(p + o, 0, 2);
    __builtin_prefetch(p + nbs * kBlockBytes - 1, 0, 2);
  }
}

// The end of every tile: acc[t] stored (first slab) or added to what earlier slabs stored, in the first n_rows
// floats of y + t * ldy, t < T; rows past n_rows are never touched. V is the ISA file's accumulator: __m512 (16
// rows, AVX-512) or __m256 (8 rows, AVX2).
template <int T, class V>
[[gnu::always_inline]] inline void store_rows(const V (&acc)[T], bool first, float* y, size_t ldy, int n_rows) {
  if constexpr (sizeof(V) == 64) {
    const auto rows = static_cast<__mmask16>((1u << n_rows) - 1);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      float* yt = y + t * ldy;
      _mm512_mask_storeu_ps(yt, rows, first ? acc[t] : _mm512_add_ps(acc[t], _mm512_maskz_loadu_ps(rows, yt)));
    }
  } else {
    static_assert(sizeof(V) == 32);
    const __m256i rows = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      float* yt = y + t * ldy;
      _mm256_maskstore_ps(yt, rows, first ? acc[t] : _mm256_add_ps(acc[t], _mm256_maskload_ps(yt, rows)));
    }
  }
}

// The chained pair of store_rows, for GEMMs that sum each (row, token) as one FMA chain over the blocks in order
// (the K-quant GEMMs: a token's bits then never depend on the batch or the slab): resume_rows starts acc[t] at
// zero (first slab) or at what the earlier slabs stored, put_rows stores it back whole.
template <int T, class V>
[[gnu::always_inline]] inline void resume_rows(V (&acc)[T], bool first, const float* y, size_t ldy, int n_rows) {
  if constexpr (sizeof(V) == 64) {
    const auto rows = static_cast<__mmask16>((1u << n_rows) - 1);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rows, y + t * ldy);
  } else {
    static_assert(sizeof(V) == 32);
    const __m256i rows = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[t] = first ? _mm256_setzero_ps() : _mm256_maskload_ps(y + t * ldy, rows);
  }
}
template <int T, class V>
[[gnu::always_inline]] inline void put_rows(const V (&acc)[T], float* y, size_t ldy, int n_rows) {
  if constexpr (sizeof(V) == 64) {
    const auto rows = static_cast<__mmask16>((1u << n_rows) - 1);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, rows, acc[t]);
  } else {
    static_assert(sizeof(V) == 32);
    const __m256i rows = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) _mm256_maskstore_ps(y + t * ldy, rows, acc[t]);
  }
}

// The K of run() for a GEMM written once for every weight type W it serves (the K-quant GEMMs): G provides kRows,
// kSlabBlocks, kToks, kActBytes, Slab, template <class W> static void repack(...) and template <class W, int T>
// static void tile(...) with the arguments below; W provides kBlockBytes.
template <class G, class W>
struct ForType {
  static constexpr size_t kRows = G::kRows, kSlabBlocks = G::kSlabBlocks, kToks = G::kToks;
  static constexpr size_t kBlockBytes = W::kBlockBytes, kActBytes = G::kActBytes;
  using Slab = typename G::Slab;
  static void repack(const uint8_t* const (&rows)[kRows], size_t b0, size_t nbs, Slab& s) {
    G::template repack<W>(rows, b0, nbs, s);
  }
  template <int T>
  static void tile(const Slab& s, size_t nbs, const uint8_t* x, size_t x_row_bytes, bool first, float* y, size_t ldy,
                   int n_rows) {
    G::template tile<W, T>(s, nbs, x, x_row_bytes, first, y, ldy, n_rows);
  }
};

// The MatmulFn contract (simd/kernels.h) for a batch. K provides kRows, kSlabBlocks, kToks, kBlockBytes (weight
// block), kActBytes (activation block), Slab, static void repack(const uint8_t* const (&rows)[kRows], size_t b0,
// size_t nbs, Slab&), and template <int T> static void tile(const Slab&, size_t nbs, const uint8_t* x,
// size_t x_row_bytes, bool first, float* y, size_t ldy, int n_rows), which writes (first) or adds to Y for the
// group's first n_rows rows and T tokens whose activation rows start at x (advanced to the slab's first block).
// With `resume`, even the first slab carries on from what Y holds (a caller that feeds a row's blocks in parts).
template <class K>
void run(const void* wp, size_t w_row_bytes, const void* xp, size_t x_row_bytes, size_t n_blocks, size_t n_tok,
         size_t r0, size_t r1, float* y, size_t ldy, bool resume = false) {
  using Slab = typename K::Slab;
  using TileFn = void (*)(const Slab&, size_t, const uint8_t*, size_t, bool, float*, size_t, int);
  static constexpr auto kTiles = []<size_t... I>(std::index_sequence<I...>) {
    return std::array<TileFn, sizeof...(I)>{&K::template tile<static_cast<int>(I + 1)>...};
  }
  (std::make_index_sequence<K::kToks>());
  constexpr size_t R = K::kRows, S = K::kSlabBlocks;
  const auto* w = static_cast<const uint8_t*>(wp);
  const auto* x = static_cast<const uint8_t*>(xp);
  const size_t nb = n_blocks;
  // Equal token tiles of at most kToks (9 tokens in tiles of 8 run as 5 + 4, not 8 + 1).
  const size_t n_tiles = (n_tok + K::kToks - 1) / K::kToks;
  const size_t tile_toks = (n_tok + n_tiles - 1) / n_tiles;
  alignas(64) Slab slab;
  for (size_t r = r0; r < r1; r += R) {
    const int n_rows = static_cast<int>(r1 - r < R ? r1 - r : R);
    const uint8_t* rows[R];
    group_rows<R>(w, w_row_bytes, r, r1, rows);
    for (size_t b0 = 0; b0 < nb; b0 += S) {
      const size_t nbs = nb - b0 < S ? nb - b0 : S;
      K::repack(rows, b0, nbs, slab);
      if (b0 + nbs < nb) {
        prefetch_rows<R, K::kBlockBytes>(rows, b0 + nbs, nb - b0 - nbs < S ? nb - b0 - nbs : S);
      } else if (r + R < r1) {
        const uint8_t* next[R];
        group_rows<R>(w, w_row_bytes, r + R, r1, next);
        prefetch_rows<R, K::kBlockBytes>(next, 0, nb < S ? nb : S);
      }
      for (size_t t = 0; t < n_tok; t += tile_toks) {
        const size_t tn = n_tok - t < tile_toks ? n_tok - t : tile_toks;
        kTiles[tn - 1](slab, nbs, x + t * x_row_bytes + b0 * K::kActBytes, x_row_bytes, b0 == 0 && !resume,
                       y + t * ldy + r, ldy, n_rows);
      }
    }
  }
}

}  // namespace lmrt::simd::slab_gemm
