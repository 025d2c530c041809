// Rows of the float weight types (F32, F16, BF16) as float32.
#pragma once

#include <cstddef>

namespace lmrt {

void dequantize_row_f32(const void* x, float* y, size_t n);
void dequantize_row_f16(const void* x, float* y, size_t n);
void dequantize_row_bf16(const void* x, float* y, size_t n);

}  // namespace lmrt
