// AVX2 + FMA + F16C kernels for the K-quants, IQ4_XS, Q4_1, Q5_0, Q5_1 and IQ4_NL (simd/quant_kernels.h):
// the shared x86 code of quant_kernels_x86.h (its comments explain the method) with 2-row decode tiles and
// 2-row x 4-token prefill tiles (16 ymm registers).
//
// Everything but the namespace's entry points has internal linkage (see simd/README.md).
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd/avx2_variant.h"
#include "simd/matmul_tiling.h"
#include "simd/prefetch_x86.h"
#include "simd/quant_kernels.h"
#include "simd/slab_gemm.h"

namespace lmrt::simd::LMRT_AVX2_NS {
namespace {

// Each header needs the one before it.
// clang-format off
#include "simd/quant_kernels_x86.h"
#include "simd/transpose_avx2.h"
#include "simd/quant_gemm_avx2.h"
#include "simd/quant_dispatch_x86.h"
// clang-format on

// Decode reads 2 rows per tile: with 4, the unpacked blocks and sums outgrow the 16 registers and spill
// (BENCHMARKS.md, "AVX2 super-block decode tiles of 2 rows").
template <class W>
void matmul_super(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                  size_t r0, size_t r1, float* y, size_t ldy) {
  matmul_tiles_or_gemm<W, 2, 2, 4>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

}  // namespace

void quantize_q8_k(const float* x, BlockQ8_K* y, size_t n) { quantize_q8_k_x86(x, y, n); }

void matmul_q2_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_super<Q2K>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q3_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  // Q3_K's unpack needs more registers than the others: with 4 decode rows (or 2 prefill rows) AVX2's 16
  // spill (decode 6.5 GB/s against 10.9 with 2 rows, measured with quant_matmul_bench).
  matmul_tiles_or_gemm<Q3K, 2, 1, 4>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q4_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_super<Q4K>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q4_k_resume(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                        float* y, size_t ldy) {
  slab_gemm::run<slab_gemm::ForType<gemm::Ops, Q4K>>(w, wrb, x, xrb, n / kQK, nt, r0, r1, y, ldy, /*resume=*/true);
}
void matmul_q6_k_resume(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                        float* y, size_t ldy) {
  slab_gemm::run<slab_gemm::ForType<gemm::Ops, Q6K>>(w, wrb, x, xrb, n / kQK, nt, r0, r1, y, ldy, /*resume=*/true);
}
void matmul_q5_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_super<Q5K>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q6_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  // Without VNNI, Q6_K's decode (its unpack the longest of the K-quants) still spills with 2 rows and runs
  // compute-bound; 1 row streams faster (BENCHMARKS.md, "AVX2 Q6_K decode tiles of 1 row"). With VNNI's
  // shorter dot steps 2 rows fit.
#if defined(LMRT_AVX2_VNNI)
  matmul_super<Q6K>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
#else
  // Batches of up to 4 tokens take the tiles too: there the GEMM's per-call transposition does not repay
  // Q6_K's longer unpack (BENCHMARKS.md, "AVX2 small batches without spills or round trips").
  matmul_tiles_or_gemm<Q6K, 1, 2, 4, /*kGemmFrom=*/5>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
#endif
}
void matmul_iq4_xs(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_super<IQ4XS>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

void matmul_q4_1(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_block32<Q4_1W, 4, 2, 4>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_0(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_block32<Q5_0W, 4, 2, 4>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_1(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_block32<Q5_1W, 4, 2, 4>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_iq4_nl(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_block32<IQ4_NLW, 4, 2, 4>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

}  // namespace lmrt::simd::LMRT_AVX2_NS
