// ggml's non-linear 4-bit types IQ4_NL (32-element blocks) and IQ4_XS (256-element super-blocks of 8 groups
// with 6-bit scales): dequantizers bit-exact with ggml's dequantize_row_iq4_nl / _xs. x points at the first
// block of a row (no alignment needed).
#pragma once

#include <cstddef>

namespace lmrt {

void dequantize_row_iq4_nl(const void* x, float* y, size_t n);
void dequantize_row_iq4_xs(const void* x, float* y, size_t n);

}  // namespace lmrt
