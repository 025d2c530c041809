// ggml's K-quants (256-element super-blocks): dequantizers bit-exact with ggml's dequantize_row_q*_K, and
// the Q8_K activation quantizer the K-quants' integer kernels take (ggml's quantize_row_q8_K). n is a
// multiple of 256; x points at the first block of a row (no alignment needed).
#pragma once

#include <cstddef>

#include "formats/blocks.h"

namespace lmrt {

void dequantize_row_q2_k(const void* x, float* y, size_t n);
void dequantize_row_q3_k(const void* x, float* y, size_t n);
void dequantize_row_q4_k(const void* x, float* y, size_t n);
void dequantize_row_q5_k(const void* x, float* y, size_t n);
void dequantize_row_q6_k(const void* x, float* y, size_t n);

// n floats to n / 256 Q8_K blocks: d = (signed value of largest magnitude) / -127, qs = round to nearest
// of x / d (at most 127), bsums[g] = sum of qs[16g, 16g + 16). An all-zero block gets d = 0.
void quantize_row_q8_k(const float* x, BlockQ8_K* y, size_t n);

}  // namespace lmrt
