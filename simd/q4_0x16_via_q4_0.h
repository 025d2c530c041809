// Q4_0x16 batches where a table has no kernel of its own (AVX2, NEON): each group of 16 rows is turned
// back into standard Q4_0 rows on the stack, a slab of blocks at a time, and handed to the ISA's own
// Q4_0 matmul. Correct everywhere; it costs an extra copy, which is why every table's decode reads the
// interleaved units directly.
//
// Included by each ISA's kernel file; the anonymous namespace gives every file its own copy, so
// code compiled for different ISAs is never merged at link time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/q4_0x16.h"
#include "simd/kernels.h"

namespace lmrt::simd {
namespace {

template <MatmulFn kQ4_0>
void matmul_q4_0x16_via_q4_0(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n,
                             size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy) {
  constexpr size_t kRows = kQ4_0x16Rows, kBlockBytes = 18, kSlabBlocks = 64;
  constexpr size_t kMaxTokens = 64;  // tokens per pass when a row needs more than one slab
  const size_t nb = n / 32;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x);
  alignas(64) uint8_t rows[kRows * kSlabBlocks * kBlockBytes];
  alignas(64) float part[kMaxTokens * kRows];
  for (size_t g = r0 / kRows; g < r1 / kRows; ++g) {
    const uint8_t* group = wb + g * kRows * w_row_bytes;
    float* yg = y + g * kRows;
    for (size_t t0 = 0; t0 < n_tok; t0 += kMaxTokens) {
      const size_t nt = n_tok - t0 < kMaxTokens ? n_tok - t0 : kMaxTokens;
      for (size_t b0 = 0; b0 < nb; b0 += kSlabBlocks) {
        const size_t sb = nb - b0 < kSlabBlocks ? nb - b0 : kSlabBlocks;
        deinterleave_q4_0x16_group(group, b0, sb, rows);
        const uint8_t* xs = xb + t0 * x_row_bytes + b0 * sizeof(BlockQ8Act);
        if (b0 == 0) {
          kQ4_0(rows, sb * kBlockBytes, xs, x_row_bytes, sb * 32, nt, 0, kRows, yg + t0 * ldy, ldy);
          continue;
        }
        kQ4_0(rows, sb * kBlockBytes, xs, x_row_bytes, sb * 32, nt, 0, kRows, part, kRows);
        for (size_t t = 0; t < nt; ++t)
          for (size_t j = 0; j < kRows; ++j) yg[(t0 + t) * ldy + j] += part[t * kRows + j];
      }
    }
  }
}

}  // namespace
}  // namespace lmrt::simd
