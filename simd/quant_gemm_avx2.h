// The super-block prefill GEMM of quant_kernels_avx2.cpp (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K against Q8_K), over the
// mapped GGUF rows (no copy of the file): quant_gemm_avx512.h's scheme for 8 rows and no VNNI.
//
// For 8 rows and a slab of kSlabSupers super-blocks, each row's block is unpacked once (Unpacked) and
// transposed so that 32-bit lane r of a register holds 4 consecutive codes of row r. A token then costs, per
// 4 codes of 8 rows, one maddubs against its activation dword broadcast and one 16-bit add: the products of
// as many dwords as cannot overflow 16 bits (kMaxCode) are summed before one madd with the rows' 16-bit
// scales, so the super-block's sum stays exact in 32 bits; then the bias pairs against the bsums, one or two
// converts and FMAs with d (and the bias's own scale) times the activation's d. Each (row, token) is one FMA
// chain over the super-blocks in order (slabs carry on from what the earlier ones stored): the arithmetic of
// SuperTiles, so a token gets the same bits alone and in any batch. Built with AVX-VNNI (the avx2vnni table), each
// scale group is one vpdpbusd per dword and one vpmulld (a vpdpwssd for Q2_K/Q3_K) with the rows' scales, as
// quant_gemm_avx512.h: the same integers, so the same bits.
//
// Include only inside the anonymous namespace of quant_kernels_avx2.cpp, after quant_kernels_x86.h (which includes
// vnni256_x86.h) and transpose_avx2.h.
#pragma once

namespace gemm {

constexpr size_t kRows = 8;
constexpr size_t kSlabSupers = 4;
constexpr size_t kToks = 4;
// Fewer tokens than this take QuantTiles: the transposition would cost more than it saves.
constexpr size_t kMinToks = 4;

struct Slab {
  __m256i q[kSlabSupers][64];    // register k: codes 4k..4k+3 of the 8 rows
  __m256i sc[kSlabSupers][16];   // the scale of each group of 16 weights in both 16-bit halves of the lane
                                 // (with VNNI: as 32 bits, or the low 16 of them where kShortGroups)
  __m256i bias[kSlabSupers][8];  // bias coefficients of groups 2k, 2k + 1 as 16-bit pairs
  __m256 d[kSlabSupers], dbias[kSlabSupers];
};

using AliasedI32 = int32_t __attribute__((may_alias));

// slab_gemm::ForType's G.
struct Ops {
  static constexpr size_t kRows = gemm::kRows, kSlabBlocks = kSlabSupers, kToks = gemm::kToks;
  static constexpr size_t kActBytes = sizeof(BlockQ8_K);
  using Slab = gemm::Slab;

  // Unpacks and transposes super-blocks [b0, b0 + nbs) of the 8 rows into s.
  template <class W>
  static void repack(const uint8_t* const (&rows)[kRows], size_t b0, size_t nbs, Slab& s) {
    alignas(32) uint8_t codes[kRows][kQK];
    alignas(32) int16_t scales[kRows][16], bias[kRows][16];
    alignas(32) float d[kRows], dbias[kRows];
    for (size_t b = 0; b < nbs; ++b) {
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
      const uint8_t *cp[kRows], *sp[kRows], *bp[kRows];
      for (size_t r = 0; r < kRows; ++r) {
        cp[r] = codes[r];
        sp[r] = reinterpret_cast<const uint8_t*>(scales[r]);
        bp[r] = reinterpret_cast<const uint8_t*>(bias[r]);
      }
      for (size_t o = 0; o < kQK; o += 16) transpose_dwords8(cp, o, &s.q[b][o / 4]);
      __m256i pairs[8];  // dword r of pairs[k]: scales 2k, 2k + 1 of row r
      transpose_dwords8(sp, 0, pairs);
      transpose_dwords8(sp, 16, pairs + 4);
      transpose_dwords8(bp, 0, s.bias[b]);
      transpose_dwords8(bp, 16, s.bias[b] + 4);
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
#if defined(LMRT_VNNI256)
        if constexpr (kShortGroups<W>) {  // the low 16 bits only: vpdpwssd's high pair then adds nothing
          s.sc[b][2 * k] = _mm256_and_si256(pairs[k], _mm256_set1_epi32(0xFFFF));
          s.sc[b][2 * k + 1] = _mm256_srli_epi32(pairs[k], 16);
        } else {
          s.sc[b][2 * k] = _mm256_srai_epi32(_mm256_slli_epi32(pairs[k], 16), 16);
          s.sc[b][2 * k + 1] = _mm256_srai_epi32(pairs[k], 16);
        }
#else
        const __m256i even = _mm256_and_si256(pairs[k], _mm256_set1_epi32(0xFFFF));
        const __m256i odd = _mm256_srli_epi32(pairs[k], 16);
        s.sc[b][2 * k] = _mm256_or_si256(even, _mm256_slli_epi32(even, 16));
        s.sc[b][2 * k + 1] = _mm256_or_si256(odd, _mm256_slli_epi32(odd, 16));
#endif
      }
      s.d[b] = _mm256_load_ps(d);
      s.dbias[b] = _mm256_load_ps(dbias);
    }
  }

  // Y[t * ldy + r'] for the slab's rows (the first n_rows) and T tokens whose Q8_K rows start at x (advanced to
  // the slab's first super-block), `x_row_bytes` apart. The first slab starts each sum at zero, later ones carry on
  // from what the earlier ones stored.
  template <class W, int T>
  static void tile(const Slab& s, size_t nbs, const uint8_t* x, size_t x_row_bytes, bool first, float* y, size_t ldy,
                   int n_rows) {
    constexpr int G = W::kScaleGroups, kDwords = 64 / G, kScaleStep = 16 / G;
    // Dwords whose maddubs products (each at most 2 * kMaxCode * 127) add up within 16 bits.
    constexpr int kFit = 32767 / (2 * W::kMaxCode * 127), kRun = kFit < kDwords ? kFit : kDwords;
    static_assert(kRun >= 1 && kDwords % kRun == 0);
    const BlockQ8_K* xt[T];
    __m256 acc[T];
    slab_gemm::resume_rows<T>(acc, first, y, ldy, n_rows);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) xt[t] = reinterpret_cast<const BlockQ8_K*>(x + t * x_row_bytes);
    for (size_t b = 0; b < nbs; ++b) {
      __m256i tot[T], s16[T];
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) tot[t] = _mm256_setzero_si256();
#pragma GCC unroll 16
      for (int g = 0; g < G; ++g) {
#if defined(LMRT_VNNI256)
        __m256i sum[T];  // the group's 32-bit sums
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) sum[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int k = 0; k < kDwords; ++k) {
          const __m256i w = _mm256_load_si256(&s.q[b][g * kDwords + k]);
#pragma GCC unroll 8
          for (int t = 0; t < T; ++t)
            sum[t] = dpbusd256(sum[t], w,
                               _mm256_set1_epi32(reinterpret_cast<const AliasedI32*>(xt[t][b].qs)[g * kDwords + k]));
        }
        const __m256i sc = _mm256_load_si256(&s.sc[b][g * kScaleStep]);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t)
          tot[t] = kShortGroups<W> ? dpwssd256(tot[t], sum[t], sc)
                                   : _mm256_add_epi32(tot[t], _mm256_mullo_epi32(sum[t], sc));
#else
#pragma GCC unroll 8
        for (int k0 = 0; k0 < kDwords; k0 += kRun) {
#pragma GCC unroll 8
          for (int k = k0; k < k0 + kRun; ++k) {
            const __m256i w = _mm256_load_si256(&s.q[b][g * kDwords + k]);
#pragma GCC unroll 8
            for (int t = 0; t < T; ++t) {
              const __m256i xv = _mm256_set1_epi32(reinterpret_cast<const AliasedI32*>(xt[t][b].qs)[g * kDwords + k]);
              const __m256i p = _mm256_maddubs_epi16(w, xv);
              s16[t] = k == k0 ? p : _mm256_add_epi16(s16[t], p);
              keep_chain(s16[t]);
            }
          }
          const __m256i sc = _mm256_load_si256(&s.sc[b][g * kScaleStep]);
#pragma GCC unroll 8
          for (int t = 0; t < T; ++t) tot[t] = _mm256_add_epi32(tot[t], _mm256_madd_epi16(s16[t], sc));
        }
#endif
      }
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const __m256i bias = _mm256_load_si256(&s.bias[b][k]);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const __m256i p =
              _mm256_madd_epi16(bias, _mm256_set1_epi32(reinterpret_cast<const AliasedI32*>(xt[t][b].bsums)[k]));
          s16[t] = k == 0 ? p : _mm256_add_epi32(s16[t], p);  // the bias sums, in 32 bits
        }
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const __m256 xd = _mm256_set1_ps(xt[t][b].d);
        if constexpr (!W::kBiasOwnScale) tot[t] = _mm256_add_epi32(tot[t], s16[t]);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(tot[t]), _mm256_mul_ps(s.d[b], xd), acc[t]);
        if constexpr (W::kBiasOwnScale)
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s16[t]), _mm256_mul_ps(s.dbias[b], xd), acc[t]);
      }
    }
    slab_gemm::put_rows<T>(acc, y, ldy, n_rows);
  }
};

// The MatmulFn contract (simd/kernels.h) for n_tok >= 2.
template <class W>
void matmul(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok, size_t r0,
            size_t r1, float* y, size_t ldy) {
  static_assert(!W::kSigned, "maddubs multiplies unsigned weight codes");
  slab_gemm::run<slab_gemm::ForType<Ops, W>>(w, w_row_bytes, x, x_row_bytes, n / kQK, n_tok, r0, r1, y, ldy);
}

}  // namespace gemm
