// Q4_Kx8 / Q6_Kx8 (formats/k_quants_x8.h) through a standard-layout kernel: each group of 8 rows is turned
// back into standard rows on the stack, a slab of super-blocks at a time, and handed to the ISA's Q4_K or
// Q6_K matmul. The scalar table's reference for the x8 types, and the prefill path of tables whose own x8
// kernels serve small batches only (the copy is small next to a prefill tile's arithmetic). With kResume (a
// matmul that carries each (row, token)'s sum on from the value in Y) the slabs after the first continue the
// chains the first started, so the result has the bits of one pass over the whole rows; without it each slab's
// sums are added to Y. kDeinterleave: the ISA's own deinterleave_kx8_group for kStandard, where it has one.
//
// Included by each ISA's kernel file; the anonymous namespace gives every file its own copy, so code
// compiled for different ISAs is never merged at link time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "formats/blocks.h"
#include "formats/k_quants_x8.h"
#include "simd/kernels.h"

namespace lmrt::simd {
namespace {

// deinterleave_kx8_group's signature without the type (an ISA's own copy for one type).
using DeinterleaveGroupFn = void (*)(const uint8_t* group, size_t b0, size_t n_blocks, uint8_t* dst);

// deinterleave_kx8_group for Q4_Kx8 with an ISA's register transpose of 8 sub-units (kRowsOfSubunits: the 64 bytes
// of pieces 0..7 of each of the 8 rows from 8 consecutive sub-units at src, row j to dst + j * stride) in place of
// 8-byte copies: the prefill path's round trip cost more than its GEMM did at 16 tokens (BENCHMARKS.md, "Q6_K
// repacked at load on AVX-512").
template <void (*kRowsOfSubunits)(const uint8_t* src, uint8_t* dst, size_t stride)>
void deinterleave_q4_kx8_group(const uint8_t* group, size_t b0, size_t n_blocks, uint8_t* dst) {
  const size_t stride = n_blocks * sizeof(BlockQ4_K), qs = offsetof(BlockQ4_K, qs);
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* unit = group + (b0 + b) * kQ4_Kx8UnitBytes;
    uint8_t* out = dst + b * sizeof(BlockQ4_K);
    for (size_t j = 0; j < kKx8Rows; ++j) {
      auto* blk = reinterpret_cast<BlockQ4_K*>(out + j * stride);
      std::memcpy(&blk->d, unit + 2 * j, 2);
      std::memcpy(&blk->dmin, unit + 16 + 2 * j, 2);
      std::memcpy(blk->scales, unit + kQ4_Kx8ScalesOffset + 12 * j, 12);
    }
    kRowsOfSubunits(unit + kQ4_Kx8QsOffset, out + qs, stride);
    kRowsOfSubunits(unit + kQ4_Kx8QsOffset + 512, out + qs + 64, stride);
  }
}

// The same for Q6_Kx8: ql and qh through the register transpose, the scales through kScalesOfRows (the 128 bytes at
// src, sub-block major: scale s of row j at 8s + j, as each row's 16 scales to dst + j * stride).
template <void (*kRowsOfSubunits)(const uint8_t* src, uint8_t* dst, size_t stride),
          void (*kScalesOfRows)(const uint8_t* src, uint8_t* dst, size_t stride)>
void deinterleave_q6_kx8_group(const uint8_t* group, size_t b0, size_t n_blocks, uint8_t* dst) {
  const size_t stride = n_blocks * sizeof(BlockQ6_K);
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* unit = group + (b0 + b) * kQ6_Kx8UnitBytes;
    uint8_t* out = dst + b * sizeof(BlockQ6_K);
    kRowsOfSubunits(unit + kQ6_Kx8QlOffset, out + offsetof(BlockQ6_K, ql), stride);
    kRowsOfSubunits(unit + kQ6_Kx8QlOffset + 512, out + offsetof(BlockQ6_K, ql) + 64, stride);
    kRowsOfSubunits(unit + kQ6_Kx8QhOffset, out + offsetof(BlockQ6_K, qh), stride);
    kScalesOfRows(unit + kQ6_Kx8ScalesOffset, out + offsetof(BlockQ6_K, scales), stride);
    for (size_t j = 0; j < kKx8Rows; ++j) std::memcpy(out + j * stride + offsetof(BlockQ6_K, d), unit + 2 * j, 2);
  }
}

template <TensorType kStandard, MatmulFn kMatmul, MatmulFn kResume = nullptr,
          DeinterleaveGroupFn kDeinterleave = nullptr>
void matmul_kx8_via_standard(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n,
                             size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy) {
  constexpr size_t kBlockBytes = kStandard == TensorType::q4_k ? 144 : 210;
  constexpr size_t kPassRows = 16;    // two groups per pass: the GEMMs put 16 rows in a register's lanes
  constexpr size_t kSlabBlocks = 16;  // 16 rows x 16 blocks: at most 53 KiB on the stack
  constexpr size_t kMaxTokens = 64;   // tokens per matmul call without kResume (its partial sums below)
  const size_t tok_step = kResume != nullptr ? n_tok : kMaxTokens;
  const size_t nb = n / kQK;
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x);
  alignas(64) uint8_t rows[kPassRows * kSlabBlocks * kBlockBytes];
  alignas(64) float part[kMaxTokens * kPassRows];
  for (size_t p0 = r0; p0 < r1; p0 += kPassRows) {
    const size_t pr = r1 - p0 < kPassRows ? r1 - p0 : kPassRows;  // 8 or 16 rows
    float* yp = y + p0;
    // Each slab is turned back once for every token (slabs outermost): a token's slabs still run in order.
    for (size_t b0 = 0; b0 < nb; b0 += kSlabBlocks) {
      const size_t sb = nb - b0 < kSlabBlocks ? nb - b0 : kSlabBlocks;
      for (size_t g = 0; g < pr / kKx8Rows; ++g)
        if constexpr (kDeinterleave != nullptr)
          kDeinterleave(wb + (p0 + g * kKx8Rows) * w_row_bytes, b0, sb, rows + g * kKx8Rows * sb * kBlockBytes);
        else
          deinterleave_kx8_group(kStandard, wb + (p0 + g * kKx8Rows) * w_row_bytes, b0, sb,
                                 rows + g * kKx8Rows * sb * kBlockBytes);
      for (size_t t0 = 0; t0 < n_tok; t0 += tok_step) {
        const size_t nt = n_tok - t0 < tok_step ? n_tok - t0 : tok_step;
        const uint8_t* xs = xb + t0 * x_row_bytes + b0 * sizeof(BlockQ8_K);
        if (b0 == 0 || kResume != nullptr) {
          (b0 == 0 ? kMatmul : kResume)(rows, sb * kBlockBytes, xs, x_row_bytes, sb * kQK, nt, 0, pr, yp + t0 * ldy,
                                        ldy);
          continue;
        }
        kMatmul(rows, sb * kBlockBytes, xs, x_row_bytes, sb * kQK, nt, 0, pr, part, kPassRows);
        for (size_t t = 0; t < nt; ++t)
          for (size_t j = 0; j < pr; ++j) yp[(t0 + t) * ldy + j] += part[t * kPassRows + j];
      }
    }
  }
}

}  // namespace
}  // namespace lmrt::simd
