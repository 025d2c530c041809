// Reference quantizers: float32 rows to each weight type's blocks (formats/blocks.h), reproducing what
// llama.cpp's quantizer (llama_model_quantize without an importance matrix) writes, byte for byte: the
// same scale searches, the same float rounding (these files are compiled with -ffp-contract=off, as
// ggml's generic code is), the same packing. `lmrt quantize` and the synthetic test models use them.
#pragma once

#include <cstddef>

#include "formats/tensor_type.h"

namespace lmrt {

// 32-element blocks (quantize_legacy.cpp).
void quantize_row_q4_0(const float* x, void* out, size_t n);
void quantize_row_q4_1(const float* x, void* out, size_t n);
void quantize_row_q5_0(const float* x, void* out, size_t n);
void quantize_row_q5_1(const float* x, void* out, size_t n);
void quantize_row_q8_0(const float* x, void* out, size_t n);

// 256-element super-blocks (quantize_k.cpp).
void quantize_row_q2_k(const float* x, void* out, size_t n);
void quantize_row_q3_k(const float* x, void* out, size_t n);
void quantize_row_q4_k(const float* x, void* out, size_t n);
void quantize_row_q5_k(const float* x, void* out, size_t n);
void quantize_row_q6_k(const float* x, void* out, size_t n);

// The non-linear 4-bit grid (quantize_iq4.cpp): what quantize_iq4_nl / quantize_iq4_xs write without
// an importance matrix (7 scale trials either side of the first guess).
void quantize_row_iq4_nl(const float* x, void* out, size_t n);
void quantize_row_iq4_xs(const float* x, void* out, size_t n);

// Float targets, for tensors no block type fits (quantize.cpp).
void quantize_row_f32(const float* x, void* out, size_t n);
void quantize_row_f16(const float* x, void* out, size_t n);

// The quantizer writing `type` (the traits table's column), or nullptr for a type lmrt cannot write
// (BF16, Q4_0x16).
QuantizeRowFn quantize_fn_for(TensorType type);

}  // namespace lmrt
