// The 8-row dword transposition of the AVX2 prefill GEMMs (quant_gemm_avx2.h, q4_0_gemm_avx2.h): it turns 8
// rows of weight bytes into registers whose 32-bit lane r holds 4 bytes of row r.
//
// Include only inside an anonymous namespace of an AVX2 file, after <immintrin.h>.
#pragma once

// out[j], dword r: dword j of the 16 bytes at rows[r] + off, for rows r < 8.
[[gnu::always_inline]] inline void transpose_dwords8(const uint8_t* const* rows, size_t off, __m256i* out) {
  auto load16 = [&](size_t r) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[r] + off)); };
  __m256i z[4];  // z[i]: row i in the low lane, row 4 + i in the high lane
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) z[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(load16(i)), load16(4 + i), 1);
  const __m256i t01lo = _mm256_unpacklo_epi32(z[0], z[1]), t01hi = _mm256_unpackhi_epi32(z[0], z[1]);
  const __m256i t23lo = _mm256_unpacklo_epi32(z[2], z[3]), t23hi = _mm256_unpackhi_epi32(z[2], z[3]);
  out[0] = _mm256_unpacklo_epi64(t01lo, t23lo);
  out[1] = _mm256_unpackhi_epi64(t01lo, t23lo);
  out[2] = _mm256_unpacklo_epi64(t01hi, t23hi);
  out[3] = _mm256_unpackhi_epi64(t01hi, t23hi);
}
