// The super-block prefill GEMM of quant_kernels_avx512.cpp (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K against Q8_K): the
// Q4_0 GEMM's scheme (kernels_avx512.cpp) for super-blocks, over the mapped GGUF rows (no copy of the file).
//
// For 16 rows and a slab of kSlabSupers super-blocks, each row's block is unpacked once (quant_kernels_x86.h's
// Unpacked: unsigned codes, scales and bias coefficients) and transposed so that 32-bit lane r of a register
// holds 4 consecutive codes of row r. A token then costs, per super-block, 64 vpdpbusd against its activation
// dwords broadcast from memory (one integer sum per scale group), one vpmulld per group with the rows' scales (a
// vpdpwssd where the sum fits in 16 bits),
// 8 vpdpwssd of the bias pairs against the activation's bsums, and one or two converts and FMAs, for 16 rows at
// once. The block's sums are exact integers and each (row, token) is one FMA chain over the super-blocks in
// order (slabs carry on from what the earlier ones stored): the arithmetic of SuperTiles, so a token gets the
// same bits alone and in any batch. The slab (11 KiB) stays in L1 while token tiles pass over it.
//
// Include only inside the anonymous namespace of quant_kernels_avx512.cpp, after quant_kernels_x86.h.
#pragma once

namespace gemm {

constexpr size_t kRows = 16;
constexpr size_t kSlabSupers = 2;
constexpr size_t kToks = 8;
// Fewer tokens than this take QuantTiles: the transposition would cost more than it saves (BENCHMARKS.md,
// "K-quant small batches on AVX-512").
constexpr size_t kMinToks = 5;

struct Slab {
  __m512i q[kSlabSupers][64];    // register k: codes 4k..4k+3 of the 16 rows
  __m512i sc[kSlabSupers][16];   // the scale of each group of 16 weights (per-32 types: even entries)
  __m512i bias[kSlabSupers][8];  // bias coefficients of groups 2k, 2k + 1 as 16-bit pairs
  __m512 d[kSlabSupers];         // the rows' d
  __m512 dbias[kSlabSupers];     // the bias's own float scale (-dmin) where the type has one
};

using AliasedI32 = int32_t __attribute__((may_alias));

// sum + vpdpbusd(w, the dword at p broadcast) / vpdpwssd: the broadcast folded into the instruction
// ({1to16}); GCC 12 emits a separate vpbroadcastd otherwise.
[[gnu::always_inline]] inline __m512i dpbusd_bcast(__m512i sum, __m512i w, const AliasedI32* p) {
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(sum) : "v"(w), "m"(*p));
  return sum;
}
[[gnu::always_inline]] inline __m512i dpwssd_bcast(__m512i sum, __m512i w, const AliasedI32* p) {
  __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(sum) : "v"(w), "m"(*p));
  return sum;
}

// out[j], dword r: dword j of the 16 bytes at base + r * stride + off, for rows r < 16.
[[gnu::always_inline]] inline void transpose_dwords(const uint8_t* base, size_t stride, size_t off, __m512i* out) {
  auto load16 = [&](size_t r) { return _mm_load_si128(reinterpret_cast<const __m128i*>(base + r * stride + off)); };
  __m512i z[4];  // z[i], 128-bit lane L: row 4L + i
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    __m512i v = _mm512_castsi128_si512(load16(i));
    v = _mm512_inserti32x4(v, load16(4 + i), 1);
    v = _mm512_inserti32x4(v, load16(8 + i), 2);
    z[i] = _mm512_inserti32x4(v, load16(12 + i), 3);
  }
  const __m512i t01lo = _mm512_unpacklo_epi32(z[0], z[1]), t01hi = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i t23lo = _mm512_unpacklo_epi32(z[2], z[3]), t23hi = _mm512_unpackhi_epi32(z[2], z[3]);
  out[0] = _mm512_unpacklo_epi64(t01lo, t23lo);
  out[1] = _mm512_unpackhi_epi64(t01lo, t23lo);
  out[2] = _mm512_unpacklo_epi64(t01hi, t23hi);
  out[3] = _mm512_unpackhi_epi64(t01hi, t23hi);
}

// slab_gemm::ForType's G.
struct Ops {
  static constexpr size_t kRows = gemm::kRows, kSlabBlocks = kSlabSupers, kToks = gemm::kToks;
  static constexpr size_t kActBytes = sizeof(BlockQ8_K);
  using Slab = gemm::Slab;

  // Unpacks and transposes super-blocks [b0, b0 + nbs) of the 16 rows into s.
  template <class W>
  static void repack(const uint8_t* const (&rows)[kRows], size_t b0, size_t nbs, Slab& s) {
    alignas(64) uint8_t codes[kRows][kQK];
    alignas(64) int16_t scales[kRows][16], bias[kRows][16];
    alignas(64) float d[kRows], dbias[kRows];
    for (size_t b = 0; b < nbs; ++b) {
#pragma GCC unroll 2
      for (size_t r = 0; r < kRows; ++r) {
        const Unpacked u = W::load(rows[r] + (b0 + b) * W::kBlockBytes);
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) _mm256_store_si256(reinterpret_cast<__m256i*>(codes[r] + 32 * c), u.q[c]);
        _mm_store_si128(reinterpret_cast<__m128i*>(scales[r]), _mm256_castsi256_si128(u.sc[0]));
        _mm_store_si128(reinterpret_cast<__m128i*>(scales[r] + 8), _mm256_castsi256_si128(u.sc[1]));
        _mm256_store_si256(reinterpret_cast<__m256i*>(bias[r]), u.bias);
        d[r] = u.d;
        dbias[r] = u.dbias;
      }
      for (size_t o = 0; o < kQK; o += 16) transpose_dwords(codes[0], kQK, o, &s.q[b][o / 4]);
      __m512i pairs[8];  // dword r of pairs[k]: scales 2k, 2k + 1 of row r
      transpose_dwords(reinterpret_cast<const uint8_t*>(scales), 32, 0, pairs);
      transpose_dwords(reinterpret_cast<const uint8_t*>(scales), 32, 16, pairs + 4);
      transpose_dwords(reinterpret_cast<const uint8_t*>(bias), 32, 0, s.bias[b]);
      transpose_dwords(reinterpret_cast<const uint8_t*>(bias), 32, 16, s.bias[b] + 4);
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        if constexpr (kShortGroups<W>) {  // the low 16 bits only: vpdpwssd's high pair then adds nothing
          s.sc[b][2 * k] = _mm512_and_si512(pairs[k], _mm512_set1_epi32(0xFFFF));
          s.sc[b][2 * k + 1] = _mm512_srli_epi32(pairs[k], 16);
        } else {
          s.sc[b][2 * k] = _mm512_srai_epi32(_mm512_slli_epi32(pairs[k], 16), 16);
          s.sc[b][2 * k + 1] = _mm512_srai_epi32(pairs[k], 16);
        }
      }
      s.d[b] = _mm512_load_ps(d);
      s.dbias[b] = _mm512_load_ps(dbias);
    }
  }

  // Y[t * ldy + r'] for the slab's first n_rows rows and T tokens whose Q8_K rows start at x (advanced to the
  // slab's first super-block), `x_row_bytes` apart. The first slab starts each sum at zero, later ones carry on
  // from what the earlier ones stored. G: scale groups per super-block (8 for scales per 32 weights, 16 for
  // per 16).
  template <class W, int T>
  static void tile(const Slab& s, size_t nbs, const uint8_t* x, size_t x_row_bytes, bool first, float* y, size_t ldy,
                   int n_rows) {
    constexpr int G = W::kScaleGroups, kDwords = 64 / G, kScaleStep = 16 / G;
    const BlockQ8_K* xt[T];
    __m512 acc[T];
    slab_gemm::resume_rows<T>(acc, first, y, ldy, n_rows);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) xt[t] = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes);
    for (size_t b = 0; b < nbs; ++b) {
      __m512i tot[T], sum[T];
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
#pragma GCC unroll 16
      for (int g = 0; g < G; ++g) {
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) sum[t] = _mm512_setzero_si512();
          // Weight register outermost, tokens innermost: the T sums are independent chains.
#pragma GCC unroll 8
        for (int k = 0; k < kDwords; ++k) {
          const __m512i w = _mm512_load_si512(&s.q[b][g * kDwords + k]);
#pragma GCC unroll 16
          for (int t = 0; t < T; ++t)
            sum[t] = dpbusd_bcast(sum[t], w, reinterpret_cast<const AliasedI32*>(xt[t][b].qs) + g * kDwords + k);
        }
        const __m512i sc = _mm512_load_si512(&s.sc[b][g * kScaleStep]);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          tot[t] = kShortGroups<W> ? _mm512_dpwssd_epi32(tot[t], sum[t], sc)
                                   : _mm512_add_epi32(tot[t], _mm512_mullo_epi32(sum[t], sc));
          keep_chain(tot[t]);  // reassociated into a tree, the pending products spilled (vnni256_x86.h)
        }
      }
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) sum[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const __m512i bias = _mm512_load_si512(&s.bias[b][k]);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t)
          sum[t] = dpwssd_bcast(sum[t], bias, reinterpret_cast<const AliasedI32*>(xt[t][b].bsums) + k);
      }
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const __m512 xd = _mm512_set1_ps(xt[t][b].d);
        if constexpr (!W::kBiasOwnScale) tot[t] = _mm512_add_epi32(tot[t], sum[t]);
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(tot[t]), _mm512_mul_ps(s.d[b], xd), acc[t]);
        if constexpr (W::kBiasOwnScale)
          acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[t]), _mm512_mul_ps(s.dbias[b], xd), acc[t]);
      }
    }
    slab_gemm::put_rows<T>(acc, y, ldy, n_rows);
  }
};

// The MatmulFn contract (simd/kernels.h) for n_tok >= 2.
template <class W>
void matmul(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok, size_t r0,
            size_t r1, float* y, size_t ldy) {
  static_assert(!W::kSigned, "vpdpbusd multiplies unsigned weight codes");
  slab_gemm::run<slab_gemm::ForType<Ops, W>>(w, w_row_bytes, x, x_row_bytes, n / kQK, n_tok, r0, r1, y, ldy);
}

}  // namespace gemm
