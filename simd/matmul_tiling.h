// The loop nest shared by the SIMD matmul kernels: it cuts [r0, r1) x [0, n_tok) into register tiles
// and leaves the arithmetic of one tile to the ISA file.
//
// Everything here is a template over the ISA file's tile kernel, which lives in an anonymous namespace,
// so every instantiation has internal linkage: code compiled for AVX-512 never merges with AVX2 or
// scalar code at link time. Do not add non-template functions here for the same reason.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/q4_0x16.h"

namespace lmrt::simd::tiling {

struct MatmulArgs {
  const uint8_t* w;
  size_t w_row_bytes;
  const uint8_t* x;
  size_t x_row_bytes;
  size_t n;
  float* y;
  size_t ldy;
  // Rows between the rows of one tile: 1 for adjacent rows; larger in decode, where each row of a tile
  // is the head of its own stream (see run_tiled).
  size_t row_stride = 1;
};

// Decode reads each weight once, so it is bound by how many lines a core keeps in flight. One
// sequential stream leaves the core far below its read bandwidth; R streams far apart (each tile row
// from its own quarter of the rows) let the hardware prefetcher run R streams at once.
inline constexpr size_t kMinStreamRows = 16;
// How far ahead, in rows of its own stream, a decode tile prefetches (ISA files that prefetch).
inline constexpr size_t kStreamAheadRows = 2;

// The groups of kRows rows of [r0, r1) read as S streams far apart: run(r) with the first rows of S groups, one
// from each stream's stretch, then run_one(r) for each group left (the last may be partial).
template <int S, size_t kRows, class Run, class RunOne>
void group_streams(size_t r0, size_t r1, Run&& run, RunOne&& run_one) {
  const size_t per = (r1 - r0) / kRows / S;
  size_t g = 0;
  if (per * kRows >= kMinStreamRows) {
    for (size_t i = 0; i < per; ++i) {
      size_t r[S];
      for (int s = 0; s < S; ++s) r[s] = r0 + (s * per + i) * kRows;
      run(r);
    }
    g = S * per;
  }
  for (size_t r = r0 + g * kRows; r < r1; r += kRows) {
    const size_t one[1] = {r};
    run_one(one);
  }
}

// Weight bytes kept hot (L2) while every token tile passes over them during prefill.
inline constexpr size_t kRowChunkBytes = 256 * 1024;

// Calls K::tile<R, T', Prefetch> with T' == tn (1 <= tn <= T), all sizes known at compile time.
template <class K, int R, int T>
void tile_with_tokens(const MatmulArgs& a, size_t r, size_t t, size_t tn, bool prefetch) {
  if constexpr (T > 1) {
    if (tn < static_cast<size_t>(T)) return tile_with_tokens<K, R, T - 1>(a, r, t, tn, prefetch);
  }
  if (prefetch)
    K::template tile<R, T, true>(a, r, t);
  else
    K::template tile<R, T, false>(a, r, t);
}

// K provides kDecodeRows (rows per tile when n_tok == 1), kRows x kToks (the prefill tile) and
// template <int R, int T, bool Prefetch> static void tile(const MatmulArgs&, size_t r, size_t t), which
// writes Y for rows [r, r + R) and tokens [t, t + T) and, when Prefetch, prefetches rows [r + R, r + 2R)
// at the pace it reads its own rows.
template <class K>
void run_tiled(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok, size_t r0,
               size_t r1, float* y, size_t ldy) {
  const MatmulArgs a{
      static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const uint8_t*>(x), x_row_bytes, n, y, ldy};
  if (n_tok == 1) {
    constexpr size_t R = K::kDecodeRows;
    const size_t per_stream = (r1 - r0) / R;
    size_t r = r0;
    if (per_stream >= kMinStreamRows) {
      MatmulArgs s = a;
      s.row_stride = per_stream;
      for (size_t i = 0; i < per_stream; ++i) K::template tile<static_cast<int>(R), 1, true>(s, r0 + i, 0);
      r = r0 + R * per_stream;
    }
    for (; r + R <= r1; r += R) K::template tile<static_cast<int>(R), 1, true>(a, r, 0);
    for (; r < r1; ++r) K::template tile<1, 1, false>(a, r, 0);
    return;
  }
  constexpr size_t R = K::kRows, T = K::kToks;
  size_t chunk = w_row_bytes > 0 ? kRowChunkBytes / w_row_bytes / R * R : R;
  if (chunk < R) chunk = R;
  for (size_t rc = r0; rc < r1; rc += chunk) {
    const size_t re = r1 - rc < chunk ? r1 : rc + chunk;
    for (size_t t = 0; t < n_tok; t += T) {
      const size_t tn = n_tok - t < T ? n_tok - t : T;
      // The first token tile streams the chunk's weights from memory; later ones find them in cache.
      const bool prefetch = t == 0;
      size_t r = rc;
      for (; r + R <= re; r += R) tile_with_tokens<K, static_cast<int>(R), static_cast<int>(T)>(a, r, t, tn, prefetch);
      for (; r < re; ++r) tile_with_tokens<K, 1, static_cast<int>(T)>(a, r, t, tn, false);
    }
  }
}

// S groups of 16 rows at once, stream s reading groups g0 + s * per + i for i < per. A K that has
// `template <int S> static void start(const uint8_t* const (&p)[S])` is told where its streams begin
// (to prefetch their first units, which its in-loop prefetch, running ahead of the read, never covers).
template <class K, int S>
void x16_streams(const uint8_t* w, size_t group_bytes, size_t nb, const void* x, size_t g0, size_t per, float* y) {
  if constexpr (requires(const uint8_t* const(&p)[S]) { K::template start<S>(p); }) {
    const uint8_t* first[S];
    for (int s = 0; s < S; ++s) first[s] = w + (g0 + s * per) * group_bytes;
    K::template start<S>(first);
  }
  for (size_t i = 0; i < per; ++i) {
    const uint8_t* p[S];
    float* ys[S];
    for (int s = 0; s < S; ++s) {
      const size_t g = g0 + s * per + i;
      p[s] = w + g * group_bytes;
      ys[s] = y + g * kQ4_0x16Rows;
    }
    K::template groups<S>(p, nb, x, ys);
  }
}

// Q4_0x16 decode (formats/q4_0x16.h, one token): the 16-row groups of [r0, r1) (multiples of 16)
// are read as K::kStreams streams far apart, each over its own stretch of the groups (one sequential
// stream reads far below a core's bandwidth), then the rest one at a time. K provides kStreams and
// template <int S> static void groups(const uint8_t* const (&p)[S], size_t nb, const void* x,
// float* const (&y)[S]), which writes the 16 outputs of group p[s] to y[s].
template <class K>
void run_x16_decode(const void* w, size_t w_row_bytes, const void* x, size_t n, size_t r0, size_t r1, float* y) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const size_t nb = n / 32, group_bytes = kQ4_0x16Rows * w_row_bytes;
  constexpr int S = K::kStreams;
  size_t g = r0 / kQ4_0x16Rows;
  const size_t g1 = r1 / kQ4_0x16Rows;
  if (const size_t per = (g1 - g) / S; per >= 1) {
    x16_streams<K, S>(wb, group_bytes, nb, x, g, per, y);
    g += S * per;
  }
  for (; g < g1; ++g) x16_streams<K, 1>(wb, group_bytes, nb, x, g, 1, y);
}

}  // namespace lmrt::simd::tiling
