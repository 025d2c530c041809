// Matmul kernels for ggml's K-quants, IQ4_XS and the 32-element types Q4_1, Q5_0, Q5_1 and IQ4_NL
// (formats/blocks.h), one namespace per instruction set, plus Q8_K activation quantization.
//
// Every matmul has the MatmulFn signature (simd/kernels.h): Y[t * ldy + r] = dot(row r of W, row t of X)
// for r in [r0, r1) and t in [0, n_tok). The activations are int8 blocks quantized once per matmul input:
// - Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS (n % 256 == 0): X rows are n / 256 BlockQ8_K (quantize_q8_k);
// - Q4_1, Q5_0, Q5_1, IQ4_NL (n % 32 == 0): X rows are n / 32 BlockQ8Act (Kernels::quantize_q8_act).
// X rows are x_row_bytes apart (a multiple of 4). Integer block sums are exact on every ISA; only the
// order of the float accumulation differs from the scalar reference.
//
// The scalar namespace is the reference. An ISA without a kernel of its own for a type forwards to the
// scalar one (simd/README.md lists which kernels are native per ISA). The avx2/avx2vnni/avx512 functions exist
// in x86-64 builds only, neon in AArch64 builds only; call an ISA's function only when
// isa_available(that ISA).
#pragma once

#include <cstddef>

#include "formats/blocks.h"
#include "simd/kernels.h"

#define LMRT_QUANT_KERNELS_DECLARE                                                                                 \
  /* n % 256 == 0; ggml's quantize_row_q8_K: d = max / -127 with max the signed value of the first  */             \
  /* largest |x|, q = nearest(x * -127 / max) (ties to even) clamped to 127, bsums of each 16 q; an */             \
  /* all-zero block is d = 0, q = 0. Bit-identical on every ISA. */                                                \
  void quantize_q8_k(const float* x, BlockQ8_K* y, size_t n);                                                      \
  void matmul_q2_k(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,   \
                   size_t r0, size_t r1, float* y, size_t ldy);                                                    \
  void matmul_q3_k(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,   \
                   size_t r0, size_t r1, float* y, size_t ldy);                                                    \
  void matmul_q4_k(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,   \
                   size_t r0, size_t r1, float* y, size_t ldy);                                                    \
  void matmul_q5_k(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,   \
                   size_t r0, size_t r1, float* y, size_t ldy);                                                    \
  void matmul_q6_k(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,   \
                   size_t r0, size_t r1, float* y, size_t ldy);                                                    \
  void matmul_iq4_xs(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok, \
                     size_t r0, size_t r1, float* y, size_t ldy);                                                  \
  void matmul_q4_1(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,   \
                   size_t r0, size_t r1, float* y, size_t ldy);                                                    \
  void matmul_q5_0(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,   \
                   size_t r0, size_t r1, float* y, size_t ldy);                                                    \
  void matmul_q5_1(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,   \
                   size_t r0, size_t r1, float* y, size_t ldy);                                                    \
  void matmul_iq4_nl(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok, \
                     size_t r0, size_t r1, float* y, size_t ldy);

namespace lmrt::simd {

// Q4_Kx8 / Q6_Kx8 (formats/k_quants_x8.h; simd/kernels.h's MatmulTable says what r0, r1 and w_row_bytes
// are): the scalar reference, bit-identical to the Q4_K / Q6_K reference on the un-interleaved rows, and the
// AVX-512 and AVX2 kernels.
#define LMRT_KX8_KERNELS_DECLARE                                                                                   \
  void matmul_q4_kx8(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok, \
                     size_t r0, size_t r1, float* y, size_t ldy);                                                  \
  void matmul_q6_kx8(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok, \
                     size_t r0, size_t r1, float* y, size_t ldy);

namespace scalar {
LMRT_QUANT_KERNELS_DECLARE
LMRT_KX8_KERNELS_DECLARE
}  // namespace scalar

// matmul_q6_kx8 with its stream prefetched into L2 instead of L1 (the Zen 4 tables, simd::CpuTuning): the same bits.
#define LMRT_Q6_KX8_PREFETCH_L2_DECLARE                                                                          \
  void matmul_q6_kx8_prefetch_l2(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, \
                                 size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy);

// The resume kernels are as avx512's below.
#define LMRT_AVX2_KERNELS_DECLARE                                                                         \
  LMRT_QUANT_KERNELS_DECLARE                                                                              \
  LMRT_KX8_KERNELS_DECLARE                                                                                \
  LMRT_Q6_KX8_PREFETCH_L2_DECLARE                                                                         \
  void matmul_q4_k_resume(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, \
                          size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy);                      \
  void matmul_q6_k_resume(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, \
                          size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy);

namespace avx2 {
LMRT_AVX2_KERNELS_DECLARE
}  // namespace avx2

// The same sources built with AVX-VNNI (simd/avx2_variant.h): the same bits.
namespace avx2vnni {
LMRT_AVX2_KERNELS_DECLARE
}  // namespace avx2vnni

namespace avx512 {
LMRT_QUANT_KERNELS_DECLARE
LMRT_KX8_KERNELS_DECLARE
LMRT_Q6_KX8_PREFETCH_L2_DECLARE
// matmul_q4_k / matmul_q6_k for n_tok >= 4 that carry each (row, token)'s sum on from the value in Y instead of
// starting at zero (kx8_via_standard.h feeds them a row's super-blocks a slab at a time).
void matmul_q4_k_resume(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                        size_t r0, size_t r1, float* y, size_t ldy);
void matmul_q6_k_resume(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                        size_t r0, size_t r1, float* y, size_t ldy);
}  // namespace avx512

namespace neon {
LMRT_QUANT_KERNELS_DECLARE
}  // namespace neon

}  // namespace lmrt::simd

#undef LMRT_QUANT_KERNELS_DECLARE
#undef LMRT_AVX2_KERNELS_DECLARE
#undef LMRT_KX8_KERNELS_DECLARE
#undef LMRT_Q6_KX8_PREFETCH_L2_DECLARE
