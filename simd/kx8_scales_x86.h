// The 6-bit scales and mins of 8 Q4_K rows at once (the Q4_Kx8 kernels of each x86 ISA): ggml's
// get_scale_min_k4 on 4 bytes at a time, as k4_scales_mins in quant_kernels_x86.h does for one row.
//
// Included by each ISA's kernel file; the anonymous namespace gives every file its own copy, so code
// compiled for different ISAs is never merged at link time.
#pragma once

#include <immintrin.h>

namespace lmrt::simd {
namespace {

// Dword j of u0, u1, u2 holds row j's packed words; dword j of the results holds row j's scales 0-3, scales 4-7,
// mins 0-3 and mins 4-7, one per byte.
struct Q4KScalesMins8 {
  __m256i scales_low, scales_high, mins_low, mins_high;
};

[[gnu::always_inline]] inline Q4KScalesMins8 q4_k_scales_mins8(__m256i u0, __m256i u1, __m256i u2) {
  const __m256i low6 = _mm256_set1_epi8(0x3f), low4 = _mm256_set1_epi8(0x0f), low2 = _mm256_set1_epi8(0x03);
  return {_mm256_and_si256(u0, low6),
          _mm256_or_si256(_mm256_and_si256(u2, low4),
                          _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u0, 6), low2), 4)),
          _mm256_and_si256(u1, low6),
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), low4),
                          _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u1, 6), low2), 4))};
}

}  // namespace
}  // namespace lmrt::simd
