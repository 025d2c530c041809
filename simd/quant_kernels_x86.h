// The x86 quant matmuls (K-quants and IQ4_XS against Q8_K activations; Q4_1, Q5_0, Q5_1 and IQ4_NL against
// BlockQ8Act, in their own section below) and Q8_K quantization, shared by
// quant_kernels_avx2.cpp and quant_kernels_avx512.cpp: each includes it inside its own anonymous namespace, so
// every function here is compiled for that file's ISA and has internal linkage (simd/README.md).
//
// Every super-block type is unpacked the same way: 8 registers of 32 weights as unsigned bytes (IQ4_XS:
// signed table values), a signed 16-bit scale per 16 weights, and per 16 weights a 16-bit "bias"
// coefficient that multiplies the activations' bsums (Q4_K/Q5_K/Q2_K: the mins, scaled by -dmin; Q6_K and
// Q3_K: -32 * scale and -4 * scale, the offsets of their unsigned codes, scaled by d). One core then does
// maddubs (unsigned weight x signed activation byte pairs; at most 2 * 63 * 127 fits in 16 bits) and a
// 16-bit multiply-add with the scales (VNNI's vpdpwssd where the file is built with it), so a block's
// integer sum is exact; each (row, token) then chains acc = fma(sum, d * xd, acc) (and fma(bias sum, -dmin * xd,
// acc)) over the blocks in order, as the GEMMs do (SuperTiles). Small batches run R rows x T tokens per tile,
// unpacking each row's block once for all T tokens.
//
// Include only inside an anonymous namespace of an x86 ISA file, after <immintrin.h>, <cstring>,
// "simd/matmul_tiling.h", "simd/prefetch_x86.h" and "simd/quant_kernels.h".
#pragma once

#include "simd/vnni256_x86.h"

using tiling::MatmulArgs;

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// A super-block unpacked for the integer core.
struct Unpacked {
  __m256i q[8];   // chunk c: weights 32c..32c+31 (unsigned codes; signed values when kSigned)
  __m256i sc[2];  // 16-bit scales of groups 0-7 (sc[0]) and 8-15 (sc[1]) of 16 weights, in both lanes
  __m256i bias;   // 16-bit bias coefficient of each group of 16 (zero when the type has none)
  float d;        // multiplies the scaled integer sum (and the bias, unless kBiasOwnScale)
  float dbias;    // multiplies the bias when kBiasOwnScale
};

// 16 signed 8-bit per-16-weight values widened to two registers of 8 16-bit values, each in both lanes.
[[gnu::always_inline]] inline void set_scales16(Unpacked& u, __m128i s8) {
  const __m256i s16 = _mm256_cvtepi8_epi16(s8);
  u.sc[0] = _mm256_permute2x128_si256(s16, s16, 0x00);
  u.sc[1] = _mm256_permute2x128_si256(s16, s16, 0x11);
}

// The scales of chunk c: group 2c in the low lane, 2c + 1 in the high lane.
[[gnu::always_inline]] inline __m256i chunk_scales(const Unpacked& u, int c) {
  const int k = c % 4;
  const __m256i mask = _mm256_setr_epi8(
      4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k, 4 * k + 1, 4 * k,
      4 * k + 1, 4 * k, 4 * k + 1, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2,
      4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3, 4 * k + 2, 4 * k + 3);
  return _mm256_shuffle_epi8(u.sc[c / 4], mask);
}

// Q4_K / Q5_K: 8 scales then 8 mins (6 bits each) from the 12 packed bytes (ggml's get_scale_min_k4).
// The register is built from general-purpose registers: storing the words and loading them back as one
// vector would stall on store forwarding once per block.
[[gnu::always_inline]] inline __m128i k4_scales_mins(const uint8_t* packed) {
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  const uint32_t mins_high = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);
  const uint32_t mins_low = u[1] & kLow6;
  const uint32_t scales_high = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);
  const uint32_t scales_low = u[0] & kLow6;
  return _mm_set_epi32(static_cast<int>(mins_high), static_cast<int>(mins_low), static_cast<int>(scales_high),
                       static_cast<int>(scales_low));
}

// Scales and mins of 8 groups of 32 as per-16 values (each twice).
[[gnu::always_inline]] inline void set_k4_scales(Unpacked& u, const uint8_t* packed) {
  const __m128i v = k4_scales_mins(packed);
  set_scales16(u, _mm_unpacklo_epi8(v, v));
  u.bias = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(v, v));
}

struct Q4K {
  static constexpr int kMaxCode = 15;     // largest |code|
  static constexpr int kScaleGroups = 8;  // distinct scales per super-block
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_K);
  static constexpr bool kSigned = false, kBiasOwnScale = true;
  [[gnu::always_inline]] static Unpacked load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ4_K*>(p);
    Unpacked u;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * j));
      u.q[2 * j] = _mm256_and_si256(q, low4);
      u.q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
    }
    set_k4_scales(u, b->scales);
    u.d = _cvtsh_ss(b->d);
    u.dbias = -_cvtsh_ss(b->dmin);
    return u;
  }
};

struct Q5K {
  static constexpr int kMaxCode = 31;     // largest |code|
  static constexpr int kScaleGroups = 8;  // distinct scales per super-block
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_K);
  static constexpr bool kSigned = false, kBiasOwnScale = true;
  [[gnu::always_inline]] static Unpacked load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ5_K*>(p);
    Unpacked u;
    const __m256i low4 = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh));
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * j));
      // Bit g of qh[l] is the fifth bit of chunk g: moved to bit 4 of each byte.
      const __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j), 4), bit4);
      const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * j + 1), 4), bit4);
      u.q[2 * j] = _mm256_or_si256(_mm256_and_si256(q, low4), h0);
      u.q[2 * j + 1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), low4), h1);
    }
    set_k4_scales(u, b->scales);
    u.d = _cvtsh_ss(b->d);
    u.dbias = -_cvtsh_ss(b->dmin);
    return u;
  }
};

struct Q6K {
  static constexpr int kMaxCode = 63;      // largest |code|
  static constexpr int kScaleGroups = 16;  // distinct scales per super-block
  static constexpr size_t kBlockBytes = sizeof(BlockQ6_K);
  static constexpr bool kSigned = false, kBiasOwnScale = false;
  [[gnu::always_inline]] static Unpacked load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(p);
    Unpacked u;
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * half));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * half + 32));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * half));
      // Chunk k of the half: 2 bits at 2k of qh, moved to bits 4-5.
      u.q[4 * half + 0] =
          _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(h, 4), bits45));
      u.q[4 * half + 1] =
          _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(h, 2), bits45));
      u.q[4 * half + 2] =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(h, bits45));
      u.q[4 * half + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                                          _mm256_and_si256(_mm256_srli_epi16(h, 2), bits45));
    }
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales));
    set_scales16(u, s8);
    // The codes are q + 32: -32 * scale per group removes the offset through the bsums.
    u.bias = _mm256_slli_epi16(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_cvtepi8_epi16(s8)), 5);
    u.d = _cvtsh_ss(b->d);
    u.dbias = 0.0f;
    return u;
  }
};

struct Q3K {
  static constexpr int kMaxCode = 7;       // largest |code|
  static constexpr int kScaleGroups = 16;  // distinct scales per super-block
  static constexpr size_t kBlockBytes = sizeof(BlockQ3_K);
  static constexpr bool kSigned = false, kBiasOwnScale = false;
  [[gnu::always_inline]] static Unpacked load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ3_K*>(p);
    Unpacked u;
    const __m256i three = _mm256_set1_epi8(3), bit2 = _mm256_set1_epi8(4);
    const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->hmask));
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * half));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const int c = 4 * half + j;  // hmask bit c is the third bit of chunk c, moved to bit 2
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three);
        const __m256i high = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(hm, c), 2), bit2);
        u.q[c] = _mm256_or_si256(low, high);
      }
    }
    // 16 6-bit scales (low 4 bits in bytes 0-7, high 2 bits in bytes 8-11), minus 32.
    uint32_t a[3];
    std::memcpy(a, b->scales, 12);
    constexpr uint32_t kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
    const __m128i packed = _mm_set_epi32(static_cast<int>(((a[1] >> 4) & kLow4) | (((a[2] >> 6) & kLow2) << 4)),
                                         static_cast<int>(((a[0] >> 4) & kLow4) | (((a[2] >> 4) & kLow2) << 4)),
                                         static_cast<int>((a[1] & kLow4) | (((a[2] >> 2) & kLow2) << 4)),
                                         static_cast<int>((a[0] & kLow4) | ((a[2] & kLow2) << 4)));
    const __m128i s8 = _mm_sub_epi8(packed, _mm_set1_epi8(32));
    set_scales16(u, s8);
    // The codes are q + 4: -4 * scale per group removes the offset through the bsums.
    u.bias = _mm256_slli_epi16(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_cvtepi8_epi16(s8)), 2);
    u.d = _cvtsh_ss(b->d);
    u.dbias = 0.0f;
    return u;
  }
};

struct Q2K {
  static constexpr int kMaxCode = 3;       // largest |code|
  static constexpr int kScaleGroups = 16;  // distinct scales per super-block
  static constexpr size_t kBlockBytes = sizeof(BlockQ2_K);
  static constexpr bool kSigned = false, kBiasOwnScale = true;
  [[gnu::always_inline]] static Unpacked load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ2_K*>(p);
    Unpacked u;
    const __m256i three = _mm256_set1_epi8(3);
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * half));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) u.q[4 * half + j] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three);
    }
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->scales));
    set_scales16(u, _mm_and_si128(s, _mm_set1_epi8(0x0F)));
    u.bias = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(0x0F)));
    u.d = _cvtsh_ss(b->d);
    u.dbias = -_cvtsh_ss(b->dmin);
    return u;
  }
};

struct IQ4XS {
  static constexpr int kMaxCode = 127;    // largest |code|
  static constexpr int kScaleGroups = 8;  // distinct scales per super-block
  static constexpr size_t kBlockBytes = sizeof(BlockIQ4_XS);
  static constexpr bool kSigned = true, kBiasOwnScale = false;
  [[gnu::always_inline]] static Unpacked load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(p);
    Unpacked u;
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
    const __m256i low4 = _mm256_set1_epi8(0x0F), shifts = _mm256_set_epi64x(4, 4, 0, 0);
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) {
      // Low nibbles (weights 0-15) in the low lane, high nibbles (16-31) in the high lane.
      const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs + 16 * g)));
      u.q[g] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srlv_epi64(v, shifts), low4));
    }
    uint64_t ls = 0;  // byte g: the 6-bit scale of group g (built in a register; see k4_scales_mins)
    uint32_t low;
    std::memcpy(&low, b->scales_l, 4);
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g)
      ls |= static_cast<uint64_t>(((low >> (4 * g)) & 15) | (((b->scales_h >> (2 * g)) & 3) << 4)) << (8 * g);
    const __m128i v = _mm_sub_epi8(_mm_cvtsi64_si128(static_cast<long long>(ls)), _mm_set1_epi8(32));
    set_scales16(u, _mm_unpacklo_epi8(v, v));
    u.bias = _mm256_setzero_si256();
    u.d = _cvtsh_ss(b->d);
    u.dbias = 0.0f;
    return u;
  }
};

// The block's exact integer sums with one Q8_K activation block, in 8 lanes each: s, the scaled products
// (plus the bias against the bsums unless the type scales its bias on its own), and m, that bias.
template <class W>
[[gnu::always_inline]] inline void block_sums(const Unpacked& u, const BlockQ8_K* x, __m256i& s, __m256i& m) {
  __m256i sum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 8
  for (int c = 0; c < 8; ++c) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x->qs + 32 * c));
    __m256i prod;
    if constexpr (W::kSigned)
      prod = _mm256_maddubs_epi16(_mm256_sign_epi8(u.q[c], u.q[c]), _mm256_sign_epi8(xq, u.q[c]));
    else
      prod = _mm256_maddubs_epi16(u.q[c], xq);
#if defined(LMRT_VNNI256)
    sum[c & 1] = dpwssd256(sum[c & 1], prod, chunk_scales(u, c));
#else
    sum[c & 1] = _mm256_add_epi32(sum[c & 1], _mm256_madd_epi16(prod, chunk_scales(u, c)));
#endif
  }
  s = _mm256_add_epi32(sum[0], sum[1]);
  m = _mm256_madd_epi16(u.bias, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x->bsums)));
  if constexpr (!W::kBiasOwnScale) s = _mm256_add_epi32(s, m);
}

// Whether a scale group's integer sum (its weights x kMaxCode x 127 at most) fits in 16 bits (Q2_K, Q3_K): the
// VNNI GEMMs' scale multiply is then one vpdpwssd (the sum's sign-extension word meets a zero word), not vpmulld
// + add.
template <class W>
constexpr bool kShortGroups = kQK / W::kScaleGroups* W::kMaxCode * 127 <= 32767;

// Lane k: the sum of the 8 lanes of v_k (integers: exact in any order).
[[gnu::always_inline]] inline __m128i hsums4_epi32(__m256i v0, __m256i v1, __m256i v2, __m256i v3) {
  // The 4 lane sums of v0..v3's low halves, then of their high halves.
  const __m256i u = _mm256_hadd_epi32(_mm256_hadd_epi32(v0, v1), _mm256_hadd_epi32(v2, v3));
  return _mm_add_epi32(_mm256_castsi256_si128(u), _mm256_extracti128_si256(u, 1));
}

// R rows x T tokens of a super-block type W (batches of fewer than the GEMM's kMinToks tokens, and every
// batch of the signed IQ4_XS): each row's block is unpacked once for all T tokens. Every (row, token) is one
// float chain over the super-blocks in order, acc = fma(s, d * xd, acc) then, for types with their own bias
// scale, acc = fma(m, dbias * xd, acc), with s and m the block's exact integer sums: the arithmetic of the
// GEMMs (quant_gemm_avx2.h, quant_gemm_avx512.h), so a token gets the same bits alone and in any batch
// (issue 17 point 7). The (row, token) pairs run 4 to a register for the horizontal sums and the FMAs. The tile
// prefetches as QuantTiles does.
template <class W, size_t kDecodeRows_, size_t kRows_, size_t kToks_>
struct SuperTiles {
  static constexpr size_t kDecodeRows = kDecodeRows_;
  static constexpr size_t kRows = kRows_;
  static constexpr size_t kToks = kToks_;

  template <int R, int T, bool kPrefetch>
  static void tile(const MatmulArgs& a, size_t r, size_t t) {
    constexpr int P = R * T, C = (P + 3) / 4;  // pair p = i * T + j; C registers of 4 pairs
    const size_t nb = a.n / kQK;
    const uint8_t* w[R];
    const BlockQ8_K* x[T];
    __m128 acc[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) acc[c] = _mm_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i * a.row_stride) * a.w_row_bytes;
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) x[j] = reinterpret_cast<const BlockQ8_K*>(a.x + (t + j) * a.x_row_bytes);
    const uint8_t* pf = a.w + (r + R) * a.w_row_bytes;
    const bool streams = a.row_stride != 1;
    for (size_t b = 0; b < nb; ++b) {
      if constexpr (kPrefetch) {
        for (int i = 0; i < R; ++i) {
          const uint8_t* ahead =
              (streams ? w[i] + tiling::kStreamAheadRows * a.w_row_bytes : pf + i * a.w_row_bytes) + b * W::kBlockBytes;
          prefetch_lines(ahead, W::kBlockBytes);
        }
      }
      __m256i s[4 * C], m[4 * C];
      float d[4 * C], dbias[4 * C], xd[4 * C];
#pragma GCC unroll 8
      for (int p = P; p < 4 * C; ++p) {
        s[p] = m[p] = _mm256_setzero_si256();
        d[p] = dbias[p] = xd[p] = 0.0f;
      }
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const Unpacked u = W::load(w[i] + b * W::kBlockBytes);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          block_sums<W>(u, x[j] + b, s[i * T + j], m[i * T + j]);
          d[i * T + j] = u.d;
          dbias[i * T + j] = u.dbias;
          xd[i * T + j] = x[j][b].d;
        }
      }
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) {
        const int p = 4 * c;
        const __m128 xv = _mm_setr_ps(xd[p], xd[p + 1], xd[p + 2], xd[p + 3]);
        const __m128 dv = _mm_setr_ps(d[p], d[p + 1], d[p + 2], d[p + 3]);
        const __m128i sv = hsums4_epi32(s[p], s[p + 1], s[p + 2], s[p + 3]);
        acc[c] = _mm_fmadd_ps(_mm_cvtepi32_ps(sv), _mm_mul_ps(dv, xv), acc[c]);
        if constexpr (W::kBiasOwnScale) {
          const __m128 bv = _mm_setr_ps(dbias[p], dbias[p + 1], dbias[p + 2], dbias[p + 3]);
          const __m128i mv = hsums4_epi32(m[p], m[p + 1], m[p + 2], m[p + 3]);
          acc[c] = _mm_fmadd_ps(_mm_cvtepi32_ps(mv), _mm_mul_ps(bv, xv), acc[c]);
        }
      }
    }
    alignas(16) float out[4 * C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) _mm_store_ps(out + 4 * c, acc[c]);
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) a.y[(t + j) * a.ldy + r + i * a.row_stride] = out[i * T + j];
  }
};

// R rows x T tokens of any quant format F (Block32Format): each row's block is loaded
// (unpacked) once for all T tokens; the tile prefetches, at the pace it reads, either each stream a couple
// of rows ahead (decode's distant streams) or the next tile's rows.
template <class F, size_t kDecodeRows_, size_t kRows_, size_t kToks_>
struct QuantTiles {
  static constexpr size_t kDecodeRows = kDecodeRows_;
  static constexpr size_t kRows = kRows_;
  static constexpr size_t kToks = kToks_;

  template <int R, int T, bool kPrefetch>
  static void tile(const MatmulArgs& a, size_t r, size_t t) {
    const size_t nb = a.n / F::kElems;
    const uint8_t* w[R];
    const typename F::Act* x[T];
    __m256 acc[R][T];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      w[i] = a.w + (r + i * a.row_stride) * a.w_row_bytes;
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) acc[i][j] = _mm256_setzero_ps();
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) x[j] = reinterpret_cast<const typename F::Act*>(a.x + (t + j) * a.x_row_bytes);
    const uint8_t* pf = a.w + (r + R) * a.w_row_bytes;
    const bool streams = a.row_stride != 1;
    for (size_t b = 0; b < nb; ++b) {
      if constexpr (kPrefetch) {
        if (b % F::kPrefetchBlocks == 0)
          for (int i = 0; i < R; ++i) {
            const uint8_t* ahead =
                (streams ? w[i] + tiling::kStreamAheadRows * a.w_row_bytes : pf + i * a.w_row_bytes) +
                b * F::kBlockBytes;
            prefetch_lines(ahead, F::kPrefetchBlocks * F::kBlockBytes);
          }
      }
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const auto wb = F::load(w[i] + b * F::kBlockBytes);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) acc[i][j] = F::dot(wb, x[j] + b, acc[i][j]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) a.y[(t + j) * a.ldy + r + i * a.row_stride] = hsum(acc[i][j]);
  }
};

template <class F, size_t kDecodeRows, size_t kRows, size_t kToks>
void matmul_quant(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                  size_t r0, size_t r1, float* y, size_t ldy) {
  tiling::run_tiled<QuantTiles<F, kDecodeRows, kRows, kToks>>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

template <class W, size_t kDecodeRows, size_t kRows, size_t kToks>
void matmul_super(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                  size_t r0, size_t r1, float* y, size_t ldy) {
  tiling::run_tiled<SuperTiles<W, kDecodeRows, kRows, kToks>>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

// ---- 32-weight blocks (Q4_1, Q5_0, Q5_1, IQ4_NL) against BlockQ8Act ----
//
// One block per register: weights 0-15 in the low lane, 16-31 in the high lane, the order of the
// activation block's bytes. Q4_1 and Q5_1 codes are unsigned and their min m adds m * xd * sum(x), with
// sum(x) = -minus8_sum / 8 (exact); Q5_0's codes are q + 16, removed exactly by adding 2 * minus8_sum to
// the integer sum; IQ4_NL's signed table values multiply as |w| times x with w's sign (at most 2 * 127 *
// 127 per 16-bit pair).

struct Block32 {
  __m256i q;
  float d, m;
};

// The 16 bytes at p as nibbles: low nibbles in the low lane, high nibbles in the high lane.
[[gnu::always_inline]] inline __m256i nibbles32(const uint8_t* p) {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_and_si256(_mm256_srlv_epi64(v, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
}

// Bit j of the little-endian 32 bits at p as 0x10 in byte j.
[[gnu::always_inline]] inline __m256i fifth_bits32(const uint8_t* p) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  // Byte j takes byte j / 8 of the bits; OR-ing every bit but j % 8 leaves all ones exactly when it is set.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000));
  const __m256i set =
      _mm256_cmpeq_epi8(_mm256_or_si256(spread, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)), _mm256_set1_epi64x(-1));
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

struct Q4_1W {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_1);
  static constexpr bool kSigned = false, kMin = true, kOffset16 = false;
  [[gnu::always_inline]] static Block32 load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ4_1*>(p);
    return {nibbles32(b->qs), _cvtsh_ss(b->d), _cvtsh_ss(b->m)};
  }
};

struct Q5_0W {
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_0);
  static constexpr bool kSigned = false, kMin = false, kOffset16 = true;
  [[gnu::always_inline]] static Block32 load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ5_0*>(p);
    return {_mm256_or_si256(nibbles32(b->qs), fifth_bits32(b->qh)), _cvtsh_ss(b->d), 0.0f};
  }
};

struct Q5_1W {
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_1);
  static constexpr bool kSigned = false, kMin = true, kOffset16 = false;
  [[gnu::always_inline]] static Block32 load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ5_1*>(p);
    return {_mm256_or_si256(nibbles32(b->qs), fifth_bits32(b->qh)), _cvtsh_ss(b->d), _cvtsh_ss(b->m)};
  }
};

struct IQ4_NLW {
  static constexpr size_t kBlockBytes = sizeof(BlockIQ4_NL);
  static constexpr bool kSigned = true, kMin = false, kOffset16 = false;
  [[gnu::always_inline]] static Block32 load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockIQ4_NL*>(p);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4nlValues)));
    return {_mm256_shuffle_epi8(table, nibbles32(b->qs)), _cvtsh_ss(b->d), 0.0f};
  }
};

template <class W>
[[gnu::always_inline]] inline __m256 block32_dot(const Block32& w, const BlockQ8Act* x, __m256 acc) {
  const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x->qs));
  __m256i sumi;
  if constexpr (W::kSigned) {
    sumi = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w.q, w.q), _mm256_sign_epi8(xq, w.q)),
                             _mm256_set1_epi16(1));
  } else {
#if defined(LMRT_VNNI256)
    sumi = dpbusd256(_mm256_setzero_si256(), w.q, xq);
#else
    sumi = _mm256_madd_epi16(_mm256_maddubs_epi16(w.q, xq), _mm256_set1_epi16(1));
#endif
  }
  // minus8_sum in lane 0 only, so the 8 lanes sum to it once.
  const __m256i m8 = _mm256_zextsi128_si256(_mm_cvtsi32_si128(x->minus8_sum));
  if constexpr (W::kOffset16) sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(m8, m8));
  const __m256 xd = _mm256_broadcast_ss(&x->d);
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_mul_ps(_mm256_set1_ps(w.d), xd), acc);
  if constexpr (W::kMin)  // m * xd * sum(x) = (-m / 8) * xd * minus8_sum
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(m8), _mm256_mul_ps(_mm256_set1_ps(w.m * -0.125f), xd), acc);
  return acc;
}

template <class W>
struct Block32Format : W {
  using Act = BlockQ8Act;
  static constexpr size_t kElems = 32, kPrefetchBlocks = 4;  // at most 96 bytes: two lines
  [[gnu::always_inline]] static __m256 dot(const Block32& w, const Act* x, __m256 acc) {
    return block32_dot<W>(w, x, acc);
  }
};

template <class W, size_t kDecodeRows, size_t kRows, size_t kToks>
void matmul_block32(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                    size_t r0, size_t r1, float* y, size_t ldy) {
  matmul_quant<Block32Format<W>, kDecodeRows, kRows, kToks>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

// ggml's quantize_row_q8_K with the scalar reference's operations, so blocks are bit-identical.
void quantize_q8_k_x86(const float* x, BlockQ8_K* y, size_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < kQK; k += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    const float amax = _mm_cvtss_f32(s);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    // The signed value of the first element with the largest magnitude, as the reference picks it.
    const __m256 vamax = _mm256_set1_ps(amax);
    int first = 0;
    for (int k = 0; k < kQK; k += 8) {
      const int hit =
          _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)), vamax, _CMP_EQ_OQ));
      if (hit != 0) {
        first = k + __builtin_ctz(static_cast<unsigned>(hit));
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const __m256 vscale = _mm256_set1_ps(iscale);
    const __m256i max127 = _mm256_set1_epi32(127);
    for (int k = 0; k < kQK; k += 32) {
      __m256i q[4];
      // cvtps rounds to nearest even under the default MXCSR, as nearbyint does.
      for (int j = 0; j < 4; ++j)
        q[j] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8 * j), vscale)), max127);
      const __m256i q16 = _mm256_packs_epi32(q[0], q[1]), q16b = _mm256_packs_epi32(q[2], q[3]);
      const __m256i q8 =
          _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16, q16b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs + k), q8);
    }
    for (int g = 0; g < 16; ++g) {
      const __m256i v = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y[b].qs + 16 * g)));
      const __m256i s32 = _mm256_madd_epi16(v, _mm256_set1_epi16(1));
      __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
      t = _mm_hadd_epi32(t, t);
      t = _mm_hadd_epi32(t, t);
      y[b].bsums[g] = static_cast<int16_t>(_mm_cvtsi128_si32(t));
    }
    y[b].d = 1.0f / iscale;
  }
}
