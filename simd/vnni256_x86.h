// The 256-bit integer dot steps of the x86 kernels where their file is built with VNNI: AVX-512 VNNI + VL (the
// AVX-512 files) or AVX-VNNI (the *_avx2vnni.cpp copies of the AVX2 files, for Alder Lake and later, Zen 5). A
// vpdpbusd gives the exact 32-bit sum that maddubs + madd (or maddubs, 16-bit adds, madd) give, so a table
// built with it returns the bits of the one built without. Also keep_chain, for the maddubs chains of the files
// built without VNNI.
//
// Include only inside an anonymous namespace of an x86 kernel file, after <immintrin.h>.
#pragma once

// Keeps a running sum of maddubs products a linear chain: without it GCC reassociates the unrolled 16-bit adds
// into trees whose pending products overflow AVX2's 16 ymm registers (about one spill per maddubs in the GEMM
// tiles). The empty asm pins the value in a register at that point.
[[gnu::always_inline]] inline void keep_chain(__m256i& v) { __asm__("" : "+x"(v)); }
#if defined(__AVX512F__)
// The same for a 512-bit running sum (the AVX-512 GEMM tiles' products of group sums and scales).
[[gnu::always_inline]] inline void keep_chain(__m512i& v) { __asm__("" : "+v"(v)); }
#endif

#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
#define LMRT_VNNI256 1

// acc + the 4 products of each dword: unsigned bytes of u8 times signed bytes of s8.
[[gnu::always_inline]] inline __m256i dpbusd256(__m256i acc, __m256i u8, __m256i s8) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, u8, s8);
#else
  return _mm256_dpbusd_avx_epi32(acc, u8, s8);
#endif
}

// acc + the 2 products of each dword's signed 16-bit halves.
[[gnu::always_inline]] inline __m256i dpwssd256(__m256i acc, __m256i a, __m256i b) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_dpwssd_avx_epi32(acc, a, b);
#endif
}
#endif
