// Decode attention reads one head's consecutive KV rows (runtime/kv/kv_arena.h). One sequential read
// stream leaves a core at about 60 % of its read bandwidth here (a single stream gets ~12 GB/s from
// memory, four ~18), so from 64 rows on the x86 kernels read the rows as kKvStreams interleaved
// streams, each over its own quarter of the positions, and prefetch each stream a few rows ahead.
//
// Included by the x86 kernel files; everything sits in an anonymous namespace, so each file gets its
// own copy and code compiled for different ISAs is never merged at link time.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "simd/prefetch_x86.h"

namespace lmrt::simd {
namespace {

constexpr size_t kKvStreams = 4;
constexpr size_t kMinKvStreamRows = 16;

// Rows per stream when n rows are read as kKvStreams streams (0: too few rows, read them in order).
size_t kv_stream_rows(size_t n) { return n / kKvStreams >= kMinKvStreamRows ? n / kKvStreams : 0; }

// Prefetches the dim halves of one KV row (into L1 unless told otherwise).
template <_mm_hint kHint = _MM_HINT_T0>
void prefetch_kv_row(const uint16_t* row, size_t dim) {
  prefetch_lines<kHint>(row, dim * 2);
}

// In step i of a loop over the kKvStreams streams of `per` rows (rows j * per + i, `stride` halves
// apart), prefetches row i + ahead of each stream, none past a stream's end.
void prefetch_kv_streams_ahead(const uint16_t* rows, size_t per, size_t i, size_t stride, size_t dim, size_t ahead) {
  if (i + ahead < per)
    for (size_t j = 0; j < kKvStreams; ++j) prefetch_kv_row(rows + (j * per + i + ahead) * stride, dim);
}

// Prefetches into L2 the first `ahead` rows of each stream: prefetch_kv_streams_ahead runs `ahead` rows
// in front of the reads and never covers a stream's start, which at a few hundred positions is a large
// share of its rows.
void prefetch_kv_stream_starts(const uint16_t* rows, size_t per, size_t stride, size_t dim, size_t ahead) {
  const size_t n = ahead < per ? ahead : per;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < kKvStreams; ++j) prefetch_kv_row<_MM_HINT_T1>(rows + (j * per + i) * stride, dim);
}

// out[p] = scale * q . k_p for the n_keys rows k_p = k + p * stride: 4 rows at a time through the ISA
// file's kScore4(q, k0, step, dim, scale, out, at) (rows k0 + j * step, j < 4, to out[at[j]]), first
// one row from each stream, then consecutive rows, then kDot for the last few.
template <size_t kRowsAhead, auto kScore4, auto kDot>
void scores_by_streams(const float* q, const uint16_t* k, size_t stride, size_t n_keys, size_t dim, float scale,
                       float* out) {
  const size_t per = kv_stream_rows(n_keys);
  prefetch_kv_stream_starts(k, per, stride, dim, kRowsAhead);
  for (size_t i = 0; i < per; ++i) {  // rows i, i + per, i + 2 per, i + 3 per
    prefetch_kv_streams_ahead(k, per, i, stride, dim, kRowsAhead);
    const size_t at[4] = {i, per + i, 2 * per + i, 3 * per + i};
    kScore4(q, k + i * stride, per * stride, dim, scale, out, at);
  }
  size_t p = kKvStreams * per;
  for (; p + 4 <= n_keys; p += 4) {
    const size_t at[4] = {p, p + 1, p + 2, p + 3};
    kScore4(q, k + p * stride, stride, dim, scale, out, at);
  }
  for (; p < n_keys; ++p) out[p] = kDot(q, k + p * stride, dim) * scale;
}

}  // namespace
}  // namespace lmrt::simd
