// The choice between the super-block register tiles (quant_kernels_x86.h's SuperTiles) and the prefill GEMM
// (quant_gemm_avx2.h / quant_gemm_avx512.h) by the batch's token count, with each ISA's tile shape. Both give
// a (row, token) the same bits, so the threshold is a matter of speed only.
//
// Include only inside the anonymous namespace of quant_kernels_avx2.cpp / quant_kernels_avx512.cpp, after the
// GEMM header.
#pragma once

// kDecodeRows rows per tile for one token, kRows x kToks for a few; kGemmFrom tokens or more take the GEMM
// (unsigned weight codes only: its byte multiply needs them).
template <class W, size_t kDecodeRows, size_t kRows, size_t kToks, size_t kGemmFrom = gemm::kMinToks>
void matmul_tiles_or_gemm(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                          size_t r0, size_t r1, float* y, size_t ldy) {
  if constexpr (!W::kSigned) {
    if (n_tok >= kGemmFrom) return gemm::matmul<W>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
  }
  matmul_super<W, kDecodeRows, kRows, kToks>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}
