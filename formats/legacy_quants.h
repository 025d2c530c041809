// ggml's 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): dequantizers bit-exact with ggml's
// dequantize_row_* (the quantizers are in formats/quantize.h). n is a multiple of 32; x points at
// the first block of a row (no alignment needed).
#pragma once

#include <cstddef>

namespace lmrt {

void dequantize_row_q4_0(const void* x, float* y, size_t n);
void dequantize_row_q4_1(const void* x, float* y, size_t n);
void dequantize_row_q5_0(const void* x, float* y, size_t n);
void dequantize_row_q5_1(const void* x, float* y, size_t n);
void dequantize_row_q8_0(const void* x, float* y, size_t n);

}  // namespace lmrt
