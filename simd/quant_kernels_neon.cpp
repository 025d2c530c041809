// NEON kernels for the K-quants and the other new quant types (simd/quant_kernels.h).
//
// None is native yet: every entry forwards to the scalar reference.
#include "simd/quant_kernels.h"

namespace lmrt::simd::neon {

void quantize_q8_k(const float* x, BlockQ8_K* y, size_t n) { scalar::quantize_q8_k(x, y, n); }
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_q2_k)
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_q3_k)
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_q4_k)
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_q5_k)
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_q6_k)
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_iq4_xs)
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_q4_1)
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_q5_0)
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_q5_1)
LMRT_QUANT_MATMUL_FROM_SCALAR(matmul_iq4_nl)

}  // namespace lmrt::simd::neon
