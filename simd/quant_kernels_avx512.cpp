// AVX-512 (F/BW/VL/DQ + VNNI) kernels for the K-quants, IQ4_XS, Q4_1, Q5_0, Q5_1 and IQ4_NL
// (simd/quant_kernels.h): the shared x86 code of quant_kernels_x86.h (its comments explain the method)
// compiled for AVX-512, which gives it 32 vector registers (larger prefill tiles) and VNNI (vpdpwssd for
// the K-quants' scale multiply-add, vpdpbusd for the unsigned 32-weight blocks). Its registers stay 256 bits wide: on
// Zen 4, 512-bit integer operations run as two 256-bit halves, so wider registers would add shuffles without adding
// throughput.
//
// Everything but the namespace's entry points has internal linkage (see simd/README.md).
// GCC 12 warns about the deliberately undefined registers inside its own AVX-512 intrinsics (GCC bug
// 105593); the pragmas must precede the header to cover it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd/matmul_tiling.h"
#include "simd/prefetch_x86.h"
#include "simd/quant_kernels.h"
#include "simd/slab_gemm.h"

namespace lmrt::simd::avx512 {
namespace {

// The GEMM needs the unpacking of quant_kernels_x86.h.
// clang-format off
#include "simd/quant_kernels_x86.h"
#include "simd/quant_gemm_avx512.h"
#include "simd/quant_dispatch_x86.h"
// clang-format on

// kDecodeRows rows (streams) per decode tile; batches take 2 rows x 6 tokens or the GEMM.
template <class W, size_t kDecodeRows = 4>
void matmul_super(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                  size_t r0, size_t r1, float* y, size_t ldy) {
  matmul_tiles_or_gemm<W, kDecodeRows, 2, 6>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

}  // namespace

void quantize_q8_k(const float* x, BlockQ8_K* y, size_t n) { quantize_q8_k_x86(x, y, n); }

void matmul_q2_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_super<Q2K>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q3_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_super<Q3K>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q4_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_super<Q4K>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_super<Q5K>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
// Q6_K rows of 8 or more super-blocks decode 2 rows (streams) per tile, the other types 4: with 4, Q6_K read
// 2-12 % slower on Zen 4, while the 768-wide rows of the 110m shape's output matrix read faster with 4
// (BENCHMARKS.md, "AVX-512 Q6_K decode tiles of 2 rows"; on Zen 5 Q6_K is repacked into Q6_Kx8). Only decode
// differs, and every row's chain is its own, so the bits are the same either way.
void matmul_q6_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  if (n / kQK >= 8) return matmul_super<Q6K, 2>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
  matmul_super<Q6K>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q4_k_resume(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                        float* y, size_t ldy) {
  slab_gemm::run<slab_gemm::ForType<gemm::Ops, Q4K>>(w, wrb, x, xrb, n / kQK, nt, r0, r1, y, ldy, /*resume=*/true);
}
void matmul_q6_k_resume(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                        float* y, size_t ldy) {
  slab_gemm::run<slab_gemm::ForType<gemm::Ops, Q6K>>(w, wrb, x, xrb, n / kQK, nt, r0, r1, y, ldy, /*resume=*/true);
}
void matmul_iq4_xs(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_super<IQ4XS>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

void matmul_q4_1(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_block32<Q4_1W, 4, 4, 6>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_0(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_block32<Q5_0W, 4, 4, 6>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_1(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_block32<Q5_1W, 4, 4, 6>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_iq4_nl(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_block32<IQ4_NLW, 4, 4, 6>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

}  // namespace lmrt::simd::avx512
