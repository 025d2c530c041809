// NEON kernels for the K-quants and IQ4_XS against Q8_K activations (simd/quant_kernels.h), for every
// AArch64 CPU, with SDOT (ARMv8.2-A dotprod, a target attribute) chosen at run time when the CPU reports
// HWCAP_ASIMDDP, as kernels_neon.cpp does.
//
// Every super-block type is unpacked the same way: 16 registers of 16 weights (one per group of 16) as
// small non-negative codes (IQ4_XS: signed table values), a scale per group, and per group a bias
// coefficient multiplied with the activations' bsums (Q4_K/Q5_K/Q2_K: the mins, scaled by -dmin; Q6_K
// and Q3_K: -32 * scale and -4 * scale, the offsets of their codes, scaled by d). Per group, SDOT (or,
// without dotprod, SMULL/SMLAL into 16-bit lanes: two products of at most 127 * 127 fit) gives the
// integer dot, which is multiplied by the group's scale into 32-bit lanes; integer sums are exact and
// only the float accumulation order differs from the scalar reference.
//
// Q4_1, Q5_0, Q5_1 and IQ4_NL: one block as two signed byte vectors, the same group dot, then the block's
// scale (and min) in float; see their section.
//
// Everything but the namespace's entry points has internal linkage, so no inline code built for
// ARMv8.2-A can be picked by the linker for another translation unit.
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simd/matmul_tiling.h"
#include "simd/quant_kernels.h"

// For the functions that use SDOT; callers must check HWCAP_ASIMDDP first.
#define LMRT_TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))

namespace lmrt::simd::neon {
namespace {

using tiling::MatmulArgs;

constexpr size_t kLine = 64;

const bool kHasDotprod = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;

float half_to_f32(uint16_t h) { return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0); }

struct Unpacked {
  int8x16_t q[16];   // group g: weights 16g..16g+15
  int32_t sc[16];    // scale of each group
  int16_t bias[16];  // bias coefficient of each group
  float d, dbias;    // dbias multiplies the bias when kBiasOwnScale
};

// Each byte shifted left by to - from (right when negative), then masked: moves bit `from` (and the
// bits above it that `mask` keeps) to bit `to`.
uint8x16_t move_bits(uint8x16_t v, int from, int to, uint8_t mask) {
  return vandq_u8(vshlq_u8(v, vdupq_n_s8(static_cast<int8_t>(to - from))), vdupq_n_u8(mask));
}

void k4_scales_mins(const uint8_t* packed, Unpacked& u) {
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    if (j < 4) {
      sc = packed[j] & 63;
      m = packed[j + 4] & 63;
    } else {
      sc = (packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4);
      m = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
    }
    u.sc[2 * j] = u.sc[2 * j + 1] = sc;
    u.bias[2 * j] = u.bias[2 * j + 1] = static_cast<int16_t>(m);
  }
}

struct Q4K {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_K);
  static constexpr bool kBiasOwnScale = true;
  [[gnu::always_inline]] static void load(const uint8_t* p, Unpacked& u) {
    const auto* b = reinterpret_cast<const BlockQ4_K*>(p);
    for (int c = 0; c < 8; ++c)
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t q = vld1q_u8(b->qs + 32 * (c / 2) + 16 * h);
        u.q[2 * c + h] = vreinterpretq_s8_u8(c % 2 == 0 ? vandq_u8(q, vdupq_n_u8(0x0F)) : vshrq_n_u8(q, 4));
      }
    k4_scales_mins(b->scales, u);
    u.d = half_to_f32(b->d);
    u.dbias = -half_to_f32(b->dmin);
  }
};

struct Q5K {
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_K);
  static constexpr bool kBiasOwnScale = true;
  [[gnu::always_inline]] static void load(const uint8_t* p, Unpacked& u) {
    const auto* b = reinterpret_cast<const BlockQ5_K*>(p);
    for (int c = 0; c < 8; ++c)
      for (int h = 0; h < 2; ++h) {
        const uint8x16_t q = vld1q_u8(b->qs + 32 * (c / 2) + 16 * h);
        const uint8x16_t low = c % 2 == 0 ? vandq_u8(q, vdupq_n_u8(0x0F)) : vshrq_n_u8(q, 4);
        // Bit c of qh[l] is the fifth bit of chunk c.
        u.q[2 * c + h] = vreinterpretq_s8_u8(vorrq_u8(low, move_bits(vld1q_u8(b->qh + 16 * h), c, 4, 0x10)));
      }
    k4_scales_mins(b->scales, u);
    u.d = half_to_f32(b->d);
    u.dbias = -half_to_f32(b->dmin);
  }
};

struct Q6K {
  static constexpr size_t kBlockBytes = sizeof(BlockQ6_K);
  static constexpr bool kBiasOwnScale = false;
  [[gnu::always_inline]] static void load(const uint8_t* p, Unpacked& u) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(p);
    for (int g = 0; g < 16; ++g) {
      const int half = g / 8, k = (g % 8) / 2, lh = g % 2;
      const uint8x16_t ql = vld1q_u8(b->ql + 64 * half + 32 * (k & 1) + 16 * lh);
      const uint8x16_t qh = vld1q_u8(b->qh + 32 * half + 16 * lh);
      const uint8x16_t low = k < 2 ? vandq_u8(ql, vdupq_n_u8(0x0F)) : vshrq_n_u8(ql, 4);
      u.q[g] = vreinterpretq_s8_u8(vorrq_u8(low, move_bits(qh, 2 * k, 4, 0x30)));
      u.sc[g] = b->scales[g];
      u.bias[g] = static_cast<int16_t>(-32 * b->scales[g]);  // codes are q + 32
    }
    u.d = half_to_f32(b->d);
    u.dbias = 0.0f;
  }
};

struct Q3K {
  static constexpr size_t kBlockBytes = sizeof(BlockQ3_K);
  static constexpr bool kBiasOwnScale = false;
  [[gnu::always_inline]] static void load(const uint8_t* p, Unpacked& u) {
    const auto* b = reinterpret_cast<const BlockQ3_K*>(p);
    for (int g = 0; g < 16; ++g) {
      const int half = g / 8, j = (g % 8) / 2, lh = g % 2;
      const uint8x16_t q = vld1q_u8(b->qs + 32 * half + 16 * lh);
      const uint8x16_t hm = vld1q_u8(b->hmask + 16 * lh);
      u.q[g] = vreinterpretq_s8_u8(vorrq_u8(move_bits(q, 2 * j, 0, 3), move_bits(hm, 4 * half + j, 2, 4)));
      const int low = (b->scales[g % 8] >> (4 * (g / 8))) & 15;
      const int high = (b->scales[8 + g % 4] >> (2 * (g / 4))) & 3;
      u.sc[g] = (low | (high << 4)) - 32;
      u.bias[g] = static_cast<int16_t>(-4 * u.sc[g]);  // codes are q + 4
    }
    u.d = half_to_f32(b->d);
    u.dbias = 0.0f;
  }
};

struct Q2K {
  static constexpr size_t kBlockBytes = sizeof(BlockQ2_K);
  static constexpr bool kBiasOwnScale = true;
  [[gnu::always_inline]] static void load(const uint8_t* p, Unpacked& u) {
    const auto* b = reinterpret_cast<const BlockQ2_K*>(p);
    for (int g = 0; g < 16; ++g) {
      const int half = g / 8, j = (g % 8) / 2, lh = g % 2;
      u.q[g] = vreinterpretq_s8_u8(move_bits(vld1q_u8(b->qs + 32 * half + 16 * lh), 2 * j, 0, 3));
      u.sc[g] = b->scales[g] & 15;
      u.bias[g] = static_cast<int16_t>(b->scales[g] >> 4);
    }
    u.d = half_to_f32(b->d);
    u.dbias = -half_to_f32(b->dmin);
  }
};

struct IQ4XS {
  static constexpr size_t kBlockBytes = sizeof(BlockIQ4_XS);
  static constexpr bool kBiasOwnScale = false;
  [[gnu::always_inline]] static void load(const uint8_t* p, Unpacked& u) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(p);
    const int8x16_t table = vld1q_s8(kIq4nlValues);
    for (int g = 0; g < 8; ++g) {
      const uint8x16_t q = vld1q_u8(b->qs + 16 * g);
      u.q[2 * g] = vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0F)));
      u.q[2 * g + 1] = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
      const int ls = ((b->scales_l[g / 2] >> (4 * (g % 2))) & 15) | (((b->scales_h >> (2 * g)) & 3) << 4);
      u.sc[2 * g] = u.sc[2 * g + 1] = ls - 32;
    }
    std::memset(u.bias, 0, sizeof u.bias);
    u.d = half_to_f32(b->d);
    u.dbias = 0.0f;
  }
};

// The group's integer dot in 4 lanes, with and without dotprod.
struct SdotGroup {
  LMRT_TARGET_DOTPROD static int32x4_t dot(int8x16_t w, int8x16_t x) { return vdotq_s32(vdupq_n_s32(0), w, x); }
};
struct WideningGroup {
  static int32x4_t dot(int8x16_t w, int8x16_t x) {
    return vpaddlq_s16(vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), w, x));
  }
};

// acc plus the block's value: xd * (d * sum_g sc_g * dot_g + dbias * sum_g bias_g * bsum_g).
template <class Dot, class W>
[[gnu::always_inline]] inline float block_dot(const Unpacked& u, const BlockQ8_K* x, float acc) {
  int32x4_t sum = vdupq_n_s32(0);
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) sum = vmlaq_n_s32(sum, Dot::dot(u.q[g], vld1q_s8(x->qs + 16 * g)), u.sc[g]);
  const int16x8_t b0 = vld1q_s16(u.bias), b1 = vld1q_s16(u.bias + 8);
  const int16x8_t s0 = vld1q_s16(x->bsums), s1 = vld1q_s16(x->bsums + 8);
  int32x4_t bias = vmull_s16(vget_low_s16(b0), vget_low_s16(s0));
  bias = vmlal_high_s16(bias, b0, s0);
  bias = vmlal_s16(bias, vget_low_s16(b1), vget_low_s16(s1));
  bias = vmlal_high_s16(bias, b1, s1);
  if constexpr (W::kBiasOwnScale)
    return std::fma(
        x->d, std::fma(u.d, static_cast<float>(vaddvq_s32(sum)), u.dbias * static_cast<float>(vaddvq_s32(bias))), acc);
  else
    return std::fma(x->d * u.d, static_cast<float>(vaddvq_s32(vaddq_s32(sum, bias))), acc);
}

// A weight format for quant_tile: the weight type W with its activation block, elements per block and
// how many blocks a prefetch step covers (about two lines of each row).
template <class W>
struct SuperFormat : W {
  using Act = BlockQ8_K;
  static constexpr size_t kElems = kQK, kPrefetchBlocks = 1;
  [[gnu::always_inline]] static Unpacked load(const uint8_t* p) {
    Unpacked u;
    W::load(p, u);
    return u;
  }
  template <class Dot>
  [[gnu::always_inline]] static float dot(const Unpacked& u, const Act* x, float acc) {
    return block_dot<Dot, W>(u, x, acc);
  }
};

// ---- 32-weight blocks (Q4_1, Q5_0, Q5_1, IQ4_NL) against BlockQ8Act ----
// Weights 0-15 and 16-31 as two signed byte vectors (Q5_0 minus its offset 16, IQ4_NL its table values),
// the order of the activation block's two halves. Q4_1 and Q5_1 add m * xd * sum(x), with sum(x) =
// -minus8_sum / 8 (exact).

struct Block32 {
  int8x16_t lo, hi;
  float d, m;
};

// Bit j of the little-endian 32 bits at p as 0x10 in byte j of (lo: j < 16, hi: j >= 16).
void fifth_bits32(const uint8_t* p, uint8x16_t& lo, uint8x16_t& hi) {
  static constexpr uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bit = vld1q_u8(kBit), five = vdupq_n_u8(0x10);
  lo = vandq_u8(vtstq_u8(vcombine_u8(vdup_n_u8(p[0]), vdup_n_u8(p[1])), bit), five);
  hi = vandq_u8(vtstq_u8(vcombine_u8(vdup_n_u8(p[2]), vdup_n_u8(p[3])), bit), five);
}

struct Q4_1W {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_1);
  static constexpr bool kMin = true;
  [[gnu::always_inline]] static Block32 load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ4_1*>(p);
    const uint8x16_t q = vld1q_u8(b->qs);
    return {vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))), vreinterpretq_s8_u8(vshrq_n_u8(q, 4)),
            half_to_f32(b->d), half_to_f32(b->m)};
  }
};

// Q5_0 / Q5_1 codes 0..31 minus `offset`.
template <class B>
Block32 load_q5(const B* b, int8_t offset) {
  const uint8x16_t q = vld1q_u8(b->qs);
  uint8x16_t h_lo, h_hi;
  fifth_bits32(b->qh, h_lo, h_hi);
  const int8x16_t off = vdupq_n_s8(offset);
  return {vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(q, vdupq_n_u8(0x0F)), h_lo)), off),
          vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(q, 4), h_hi)), off), half_to_f32(b->d), 0.0f};
}

struct Q5_0W {
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_0);
  static constexpr bool kMin = false;
  [[gnu::always_inline]] static Block32 load(const uint8_t* p) {
    return load_q5(reinterpret_cast<const BlockQ5_0*>(p), 16);
  }
};

struct Q5_1W {
  static constexpr size_t kBlockBytes = sizeof(BlockQ5_1);
  static constexpr bool kMin = true;
  [[gnu::always_inline]] static Block32 load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockQ5_1*>(p);
    Block32 w = load_q5(b, 0);
    w.m = half_to_f32(b->m);
    return w;
  }
};

struct IQ4_NLW {
  static constexpr size_t kBlockBytes = sizeof(BlockIQ4_NL);
  static constexpr bool kMin = false;
  [[gnu::always_inline]] static Block32 load(const uint8_t* p) {
    const auto* b = reinterpret_cast<const BlockIQ4_NL*>(p);
    const int8x16_t table = vld1q_s8(kIq4nlValues);
    const uint8x16_t q = vld1q_u8(b->qs);
    return {vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0F))), vqtbl1q_s8(table, vshrq_n_u8(q, 4)), half_to_f32(b->d),
            0.0f};
  }
};

template <class W>
struct Block32Format : W {
  using Act = BlockQ8Act;
  static constexpr size_t kElems = 32, kPrefetchBlocks = 4;  // at most 96 bytes: two lines
  template <class Dot>
  [[gnu::always_inline]] static float dot(const Block32& w, const Act* x, float acc) {
    const int32x4_t d = vaddq_s32(Dot::dot(w.lo, vld1q_s8(x->qs)), Dot::dot(w.hi, vld1q_s8(x->qs + 16)));
    const float s = static_cast<float>(vaddvq_s32(d));
    const float v = W::kMin ? std::fma(w.d, s, w.m * -0.125f * static_cast<float>(x->minus8_sum)) : w.d * s;
    return std::fma(x->d, v, acc);
  }
};

// ---- The tiles: R rows x T tokens of any format F (SuperFormat, Block32Format); each row's block is
// loaded (unpacked) once for all T tokens. F::dot adds to acc with explicit fmas: left to -ffp-contract=fast,
// GCC fuses a different product (or none) where it vectorizes a tile across rows (the 4-row decode tile of
// adjacent rows) than in a tile it does not (the strided one), and a row's bits would depend on the rows'
// split. ----

template <class Dot, class F, int R, int T, bool kPrefetch>
[[gnu::always_inline]] inline void quant_tile(const MatmulArgs& a, size_t r, size_t t) {
  const size_t nb = a.n / F::kElems;
  const uint8_t* w[R];
  const typename F::Act* x[T];
  float acc[R][T] = {};
  for (int i = 0; i < R; ++i) w[i] = a.w + (r + i * a.row_stride) * a.w_row_bytes;
  for (int j = 0; j < T; ++j) x[j] = reinterpret_cast<const typename F::Act*>(a.x + (t + j) * a.x_row_bytes);
  const uint8_t* pf = a.w + (r + R) * a.w_row_bytes;
  const bool streams = a.row_stride != 1;
  for (size_t b = 0; b < nb; ++b) {
    if constexpr (kPrefetch) {
      if (b % F::kPrefetchBlocks == 0)
        for (int i = 0; i < R; ++i) {
          const uint8_t* ahead =
              (streams ? w[i] + tiling::kStreamAheadRows * a.w_row_bytes : pf + i * a.w_row_bytes) + b * F::kBlockBytes;
          for (size_t o = 0; o < F::kPrefetchBlocks * F::kBlockBytes; o += kLine) __builtin_prefetch(ahead + o);
        }
    }
    for (int i = 0; i < R; ++i) {
      const auto wb = F::load(w[i] + b * F::kBlockBytes);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) acc[i][j] = F::template dot<Dot>(wb, x[j] + b, acc[i][j]);
    }
  }
  for (int j = 0; j < T; ++j)
    for (int i = 0; i < R; ++i) a.y[(t + j) * a.ldy + r + i * a.row_stride] = acc[i][j];
}

template <class F>
struct SdotTiles {
  static constexpr size_t kDecodeRows = 4, kRows = 2, kToks = 4;
  template <int R, int T, bool kPrefetch>
  LMRT_TARGET_DOTPROD static void tile(const MatmulArgs& a, size_t r, size_t t) {
    quant_tile<SdotGroup, F, R, T, kPrefetch>(a, r, t);
  }
};

template <class F>
struct WideningTiles {
  static constexpr size_t kDecodeRows = 4, kRows = 2, kToks = 4;
  template <int R, int T, bool kPrefetch>
  static void tile(const MatmulArgs& a, size_t r, size_t t) {
    quant_tile<WideningGroup, F, R, T, kPrefetch>(a, r, t);
  }
};

template <class F>
void matmul_quant(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                  size_t r0, size_t r1, float* y, size_t ldy) {
  if (kHasDotprod)
    tiling::run_tiled<SdotTiles<F>>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
  else
    tiling::run_tiled<WideningTiles<F>>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

}  // namespace

void quantize_q8_k(const float* x, BlockQ8_K* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int k = 0; k < kQK; k += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + k)));
    const float amax = vmaxvq_f32(m);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    int first = 0;  // the first element of the largest magnitude, whose sign the reference keeps
    while (__builtin_fabsf(x[first]) != amax) ++first;
    const float iscale = -127.0f / x[first];
    const int32x4_t max127 = vdupq_n_s32(127);
    for (int k = 0; k < kQK; k += 8) {
      // FCVTNS rounds to nearest even, as nearbyint does.
      const int32x4_t a = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + k), iscale)), max127);
      const int32x4_t c = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + k + 4), iscale)), max127);
      vst1_s8(y[b].qs + k, vqmovn_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(c))));
    }
    for (int g = 0; g < 16; ++g) y[b].bsums[g] = static_cast<int16_t>(vaddlvq_s8(vld1q_s8(y[b].qs + 16 * g)));
    y[b].d = 1.0f / iscale;
  }
}

void matmul_q2_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_quant<SuperFormat<Q2K>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q3_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_quant<SuperFormat<Q3K>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q4_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_quant<SuperFormat<Q4K>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_quant<SuperFormat<Q5K>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q6_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_quant<SuperFormat<Q6K>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_iq4_xs(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_quant<SuperFormat<IQ4XS>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

void matmul_q4_1(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_quant<Block32Format<Q4_1W>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_0(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_quant<Block32Format<Q5_0W>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_1(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_quant<Block32Format<Q5_1W>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_iq4_nl(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_quant<Block32Format<IQ4_NLW>>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

}  // namespace lmrt::simd::neon
