// NEON kernel table for AArch64. The file is compiled for plain ARMv8-A, whose Advanced SIMD every
// AArch64 CPU has; only the Q4_0 and Q4_0x16 kernels of the dot-product table are compiled for
// ARMv8.2-A + dotprod (a target attribute), and neon_kernels() hands out that table only when the CPU
// reports ASIMDDP.
//
// Q4_0 x Q8_0: a block's 16 weight bytes become two signed int8 vectors (low nibbles = elements 0..15,
// high nibbles = 16..31, each minus 8), which is the order of the activation block's two 16-byte halves.
// With dotprod, two SDOTs give four int32 lanes; without it, SMULL/SMLAL pairs sum products in int16
// (four products of |w| <= 8 and |x| <= 128 stay below 2^15) and a pairwise add widens to int32. Integer
// sums are exact either way; only the float accumulation order differs from the scalar reference.
//
// Q4_0x16 reads the interleaved units directly (SDOT by lane, or SMLAL without dotprod; see its section), one
// token or a batch.
//
// Float matmuls (F32, F16, BF16, and Q8_0 weights against float activations, see kernels_scalar.cpp)
// walk 8 elements a step. F16 widens with FCVTL, which is base ARMv8-A and exact for every finite half.
//
// Everything except the getter has internal linkage, so no inline code built for ARMv8.2-A can be
// picked by the linker for another translation unit.
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "formats/k_quants.h"
#include "formats/q4_0x16.h"
#include "runtime/util/fp16.h"
#include "simd/float_ops.h"
#include "simd/kernels.h"
#include "simd/matmul_tiling.h"
#include "simd/quant_kernels.h"

// For the functions that use SDOT; callers must check HWCAP_ASIMDDP first.
#define LMRT_TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))

namespace lmrt::simd {
namespace {

using Ops = FloatOps<xsimd::neon64>;  // RMSNorm, softmax, SiLU-mul, add, RoPE (float_ops.h)

using tiling::MatmulArgs;

constexpr size_t kBlock = 32;
constexpr size_t kQ4Bytes = sizeof(BlockQ4_0);  // 18
constexpr size_t kLine = 64;
constexpr size_t kStep = 8;  // floats per step of the float matmuls

template <size_t kBytes>
void prefetch_span(const uint8_t* p) {
  for (size_t o = 0; o <= kBytes; o += kLine) __builtin_prefetch(p + o);
}

// The fp16 value at p (any alignment), widened, in all 4 lanes.
float32x4_t broadcast_fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h)));
}

// ---- Activation blocks (BlockQ8Act): the only code that knows their layout. ----
constexpr size_t kActBytes = sizeof(BlockQ8Act);

// One activation block for one token: elements 0..15 and 16..31, and its scale in all lanes.
struct ActBlock {
  int8x16_t lo, hi;
  float32x4_t d;
};

ActBlock load_act(const uint8_t* p) {
  // The signed Q4_0 path (nibble - 8) needs no precomputed offset, only the scale.
  const auto* q = reinterpret_cast<const int8_t*>(p + offsetof(BlockQ8Act, qs));
  float d;
  std::memcpy(&d, p + offsetof(BlockQ8Act, d), sizeof d);
  return {vld1q_s8(q), vld1q_s8(q + 16), vdupq_n_f32(d)};
}

// The block's -8 * sum(qs), for kernels that use Q4_0 nibbles unsigned (Q4_0x16 decode).
int32_t load_minus8_sum(const uint8_t* p) {
  int32_t s;
  std::memcpy(&s, p + offsetof(BlockQ8Act, minus8_sum), sizeof s);
  return s;
}

// ---- Q4_0 weights. ----
// A block as signed values in [-8, 7]: elements 0..15 (low nibbles) and 16..31 (high nibbles).
struct Q4Block {
  int8x16_t lo, hi;
  float32x4_t d;
};

Q4Block load_q4(const uint8_t* p) {
  const uint8x16_t q = vld1q_u8(p + offsetof(BlockQ4_0, qs));
  const int8x16_t eight = vdupq_n_s8(8);
  return {vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(0x0F))), eight),
          vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight), broadcast_fp16(p + offsetof(BlockQ4_0, d))};
}

// Four int32 lanes summing to a block's integer dot product, with and without the dotprod extension.
struct SdotBlockDot {
  LMRT_TARGET_DOTPROD static int32x4_t dot(const Q4Block& w, const ActBlock& x) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w.lo, x.lo), w.hi, x.hi);
  }
};

struct WideningBlockDot {
  static int32x4_t dot(const Q4Block& w, const ActBlock& x) {
    int16x8_t p = vmull_s8(vget_low_s8(w.lo), vget_low_s8(x.lo));
    p = vmlal_high_s8(p, w.lo, x.lo);
    p = vmlal_s8(p, vget_low_s8(w.hi), vget_low_s8(x.hi));
    p = vmlal_high_s8(p, w.hi, x.hi);
    return vpaddlq_s16(p);
  }
};

// The Q4_0 tile, written once; each table's tile() inlines it under its own target.
template <class Dot, int R, int T, bool kPrefetch>
[[gnu::always_inline]] inline void q4_0_tile(const MatmulArgs& a, size_t r, size_t t) {
  const size_t nb = a.n / kBlock;
  const uint8_t* w[R];
  const uint8_t* x[T];
  float32x4_t acc[R][T];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
    w[i] = a.w + (r + i * a.row_stride) * a.w_row_bytes;
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  }
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j) x[j] = a.x + (t + j) * a.x_row_bytes;
  // The next tile's rows, in address order, at the pace this tile reads its own (2 blocks a step).
  const uint8_t* pf = a.w + (r + R) * a.w_row_bytes;
  constexpr size_t kPfStep = R * 2 * kQ4Bytes;
  for (size_t b = 0; b < nb; ++b) {
    if constexpr (kPrefetch) {
      if ((b & 1) == 0) {
        prefetch_span<kPfStep>(pf);
        pf += kPfStep;
      }
    }
    Q4Block wb[R];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) wb[i] = load_q4(w[i] + b * kQ4Bytes);
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) {
      const ActBlock xb = load_act(x[j] + b * kActBytes);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        acc[i][j] = vfmaq_f32(acc[i][j], vcvtq_f32_s32(Dot::dot(wb[i], xb)), vmulq_f32(wb[i].d, xb.d));
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < T; ++j)
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) a.y[(t + j) * a.ldy + r + i * a.row_stride] = vaddvq_f32(acc[i][j]);
}

struct Q4_0TileShape {
  static constexpr size_t kDecodeRows = 4;
  static constexpr size_t kRows = 2;
  static constexpr size_t kToks = 4;
};

struct Q4_0SdotTiles : Q4_0TileShape {
  template <int R, int T, bool kPrefetch>
  LMRT_TARGET_DOTPROD static void tile(const MatmulArgs& a, size_t r, size_t t) {
    q4_0_tile<SdotBlockDot, R, T, kPrefetch>(a, r, t);
  }
};

struct Q4_0WideningTiles : Q4_0TileShape {
  template <int R, int T, bool kPrefetch>
  static void tile(const MatmulArgs& a, size_t r, size_t t) {
    q4_0_tile<WideningBlockDot, R, T, kPrefetch>(a, r, t);
  }
};

// ---- Q4_0x16 decode (formats/q4_0x16.h) ----
//
// A unit's 64-byte line c is four 16-byte registers of 4 rows each, one row's 4 nibble bytes per 32-bit
// lane: its low nibbles pair with activation bytes 4c..4c+3 and its high nibbles with 16+4c..16+4c+3,
// the same 4 bytes for every row. The nibbles are used unsigned (0..15) and each row's integer sum starts
// at the block's minus8_sum, which adds the -8 offset of all 32 weights at once. The 16 fp16 scales
// widen to four float32x4, one per register of rows, so no horizontal sums are needed. A batch takes the same
// arithmetic a group and up to 4 tokens at a time.

constexpr size_t kX16UnitsAhead = 4;  // prefetch distance, in units of each stream

// The integer dot products of rows 4k..4k+3 of one unit with one activation block, starting from
// `init`; q points at the unit's line 0 plus 16k (line c is 64c further). With dotprod, SDOT by lane
// multiplies each row's 4 bytes by the lane-th activation dword.
struct SdotX16Rows {
  template <int kLine>
  LMRT_TARGET_DOTPROD static void line(int32x4_t& lo, int32x4_t& hi, const uint8_t* q, const ActBlock& x) {
    const uint8x16_t v = vld1q_u8(q + kLine * 64);
    lo = vdotq_laneq_s32(lo, vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F))), x.lo, kLine);
    hi = vdotq_laneq_s32(hi, vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), x.hi, kLine);
  }
  LMRT_TARGET_DOTPROD static int32x4_t rows4(const uint8_t* q, const ActBlock& x, int32x4_t init) {
    int32x4_t lo = init, hi = vdupq_n_s32(0);  // two chains, so the SDOTs do not wait on each other
    line<0>(lo, hi, q, x);
    line<1>(lo, hi, q, x);
    line<2>(lo, hi, q, x);
    line<3>(lo, hi, q, x);
    return vaddq_s32(lo, hi);
  }
};

// Without dotprod: SMLAL sums products in int16 lanes, rows 0-1 in one register and rows 2-3 in the
// other; all 8 products of a lane (4 lines, low and high nibbles) fit, 8 x 15 x 128 = 15360 < 2^15.
// Pairwise adds then reduce each row's 4 lanes to one int32.
struct WideningX16Rows {
  template <int kLine>
  static void line(int16x8_t& r01, int16x8_t& r23, const uint8_t* q, const ActBlock& x) {
    const uint8x16_t v = vld1q_u8(q + kLine * 64);
    const int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0F)));
    const int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    const int8x16_t xl = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x.lo), kLine));
    const int8x16_t xh = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(x.hi), kLine));
    r01 = vmlal_s8(r01, vget_low_s8(lo), vget_low_s8(xl));
    r01 = vmlal_s8(r01, vget_low_s8(hi), vget_low_s8(xh));
    r23 = vmlal_high_s8(r23, lo, xl);
    r23 = vmlal_high_s8(r23, hi, xh);
  }
  static int32x4_t rows4(const uint8_t* q, const ActBlock& x, int32x4_t init) {
    int16x8_t r01 = vdupq_n_s16(0), r23 = r01;
    line<0>(r01, r23, q, x);
    line<1>(r01, r23, q, x);
    line<2>(r01, r23, q, x);
    line<3>(r01, r23, q, x);
    return vaddq_s32(init, vpaddq_s32(vpaddlq_s16(r01), vpaddlq_s16(r23)));
  }
};

// The 16 scales of a unit, as four float32x4 (rows 4k..4k+3).
[[gnu::always_inline]] inline void unit_scales(const uint8_t* unit, float32x4_t (&dw)[4]) {
  const float16x8_t d0 = vreinterpretq_f16_u8(vld1q_u8(unit)), d1 = vreinterpretq_f16_u8(vld1q_u8(unit + 16));
  dw[0] = vcvt_f32_f16(vget_low_f16(d0));
  dw[1] = vcvt_high_f32_f16(d0);
  dw[2] = vcvt_f32_f16(vget_low_f16(d1));
  dw[3] = vcvt_high_f32_f16(d1);
}

// One unit against one activation block (at xb): the next step of the 16 rows' chains, acc[k] for rows 4k..4k+3.
template <class Rows>
[[gnu::always_inline]] inline void unit_step(const uint8_t* unit, const float32x4_t (&dw)[4], const uint8_t* xb,
                                             float32x4_t (&acc)[4]) {
  const ActBlock xa = load_act(xb);
  const int32x4_t m8 = vdupq_n_s32(load_minus8_sum(xb));
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k)
    acc[k] = vfmaq_f32(acc[k], vcvtq_f32_s32(Rows::rows4(unit + 32 + 16 * k, xa, m8)), vmulq_f32(dw[k], xa.d));
}

// The 16 outputs of each of S groups (tiling::run_x16_decode), written once; each table's groups()
// inlines it under its own target.
template <class Rows, int S>
[[gnu::always_inline]] inline void q4_0x16_decode_groups(const uint8_t* const (&p)[S], size_t nb, const uint8_t* x,
                                                         float* const (&y)[S]) {
  float32x4_t acc[S][4];
#pragma GCC unroll 8
  for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) acc[s][k] = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < nb; ++b) {
#pragma GCC unroll 8
    for (int s = 0; s < S; ++s) {
      const uint8_t* unit = p[s] + b * kQ4_0x16UnitBytes;
      prefetch_span<kQ4_0x16UnitBytes>(unit + kX16UnitsAhead * kQ4_0x16UnitBytes);
      float32x4_t dw[4];
      unit_scales(unit, dw);
      unit_step<Rows>(unit, dw, x + b * kActBytes, acc[s]);
    }
  }
#pragma GCC unroll 8
  for (int s = 0; s < S; ++s)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) vst1q_f32(y[s] + 4 * k, acc[s][k]);
}

// T tokens (T <= 4) of one group, the decode arithmetic per token: each (row, token) sums exactly as
// q4_0x16_decode_groups sums it, so a token gets the same bits alone and in any batch (issue 17 point 7).
template <class Rows, int T>
[[gnu::always_inline]] inline void q4_0x16_token_tile(const uint8_t* group, size_t nb, const uint8_t* x,
                                                      size_t x_row_bytes, float* y, size_t ldy) {
  float32x4_t acc[T][4];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) acc[t][k] = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < nb; ++b) {
    const uint8_t* unit = group + b * kQ4_0x16UnitBytes;
    float32x4_t dw[4];
    unit_scales(unit, dw);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) unit_step<Rows>(unit, dw, x + t * x_row_bytes + b * kActBytes, acc[t]);
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) vst1q_f32(y + t * ldy + 4 * k, acc[t][k]);
}

// A batch: each group's units for tiles of up to 4 tokens (the group, at most tens of KiB, stays in cache
// between its tiles).
template <class Rows>
[[gnu::always_inline]] inline void q4_0x16_batch(const uint8_t* w, size_t w_row_bytes, const uint8_t* x,
                                                 size_t x_row_bytes, size_t n, size_t n_tok, size_t r0, size_t r1,
                                                 float* y, size_t ldy) {
  const size_t nb = n / kBlock;
  for (size_t g = r0 / kQ4_0x16Rows; g < r1 / kQ4_0x16Rows; ++g) {
    const uint8_t* group = w + g * kQ4_0x16Rows * w_row_bytes;
    float* yg = y + g * kQ4_0x16Rows;
    size_t t = 0;
    for (; t + 4 <= n_tok; t += 4)
      q4_0x16_token_tile<Rows, 4>(group, nb, x + t * x_row_bytes, x_row_bytes, yg + t * ldy, ldy);
    const uint8_t* xt = x + t * x_row_bytes;
    switch (n_tok - t) {
      case 3:
        q4_0x16_token_tile<Rows, 3>(group, nb, xt, x_row_bytes, yg + t * ldy, ldy);
        break;
      case 2:
        q4_0x16_token_tile<Rows, 2>(group, nb, xt, x_row_bytes, yg + t * ldy, ldy);
        break;
      case 1:
        q4_0x16_token_tile<Rows, 1>(group, nb, xt, x_row_bytes, yg + t * ldy, ldy);
        break;
      default:
        break;
    }
  }
}

// 4 streams: 16 float accumulators, half the 32 registers (GCC 12 keeps some on the stack; those L1
// loads and stores are cheap next to the weight stream).
struct Q4_0x16SdotDecode {
  static constexpr int kStreams = 4;
  template <int S>
  LMRT_TARGET_DOTPROD static void groups(const uint8_t* const (&p)[S], size_t nb, const void* x, float* const (&y)[S]) {
    q4_0x16_decode_groups<SdotX16Rows, S>(p, nb, static_cast<const uint8_t*>(x), y);
  }
  LMRT_TARGET_DOTPROD static void batch(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes,
                                        size_t n, size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy) {
    q4_0x16_batch<SdotX16Rows>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
  }
};

struct Q4_0x16WideningDecode {
  static constexpr int kStreams = 4;
  template <int S>
  static void groups(const uint8_t* const (&p)[S], size_t nb, const void* x, float* const (&y)[S]) {
    q4_0x16_decode_groups<WideningX16Rows, S>(p, nb, static_cast<const uint8_t*>(x), y);
  }
  static void batch(const uint8_t* w, size_t w_row_bytes, const uint8_t* x, size_t x_row_bytes, size_t n, size_t n_tok,
                    size_t r0, size_t r1, float* y, size_t ldy) {
    q4_0x16_batch<WideningX16Rows>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
  }
};

// Decode reads the interleaved units with S streams; a batch reads them a group at a time for all its tokens.
template <class Decode>
void matmul_q4_0x16(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                    size_t r0, size_t r1, float* y, size_t ldy) {
  if (n_tok != 1) {
    Decode::batch(static_cast<const uint8_t*>(w), w_row_bytes, static_cast<const uint8_t*>(x), x_row_bytes, n, n_tok,
                  r0, r1, y, ldy);
    return;
  }
  tiling::run_x16_decode<Decode>(w, w_row_bytes, x, n, r0, r1, y);
}

// ---- Float matmuls. ----
// 8 floats.
struct F8 {
  float32x4_t lo, hi;
};

F8 load_f8(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }

// The first n (< 8) floats at p, zero-padded.
F8 load_f8_part(const float* p, size_t n) {
  float buf[kStep] = {};
  std::memcpy(buf, p, n * sizeof(float));
  return load_f8(buf);
}

// The first n (< 8) 16-bit values at p, zero-padded.
uint16x8_t load_u16_part(const uint8_t* p, size_t n) {
  uint16_t buf[kStep] = {};
  std::memcpy(buf, p, n * sizeof(uint16_t));
  return vld1q_u16(buf);
}

// Each loader gives 8 weights of a row starting at element k (load_part: the first n of them).
struct F32Weights {
  static constexpr size_t kStepBytes = kStep * 4;
  static F8 load(const uint8_t* row, size_t k) { return load_f8(reinterpret_cast<const float*>(row) + k); }
  static F8 load_part(const uint8_t* row, size_t k, size_t n) {
    return load_f8_part(reinterpret_cast<const float*>(row) + k, n);
  }
};

struct F16Weights {
  static constexpr size_t kStepBytes = kStep * 2;
  static F8 widen(uint16x8_t v) {
    const float16x8_t h = vreinterpretq_f16_u16(v);
    return {vcvt_f32_f16(vget_low_f16(h)), vcvt_high_f32_f16(h)};
  }
  static F8 load(const uint8_t* row, size_t k) { return widen(vld1q_u16(reinterpret_cast<const uint16_t*>(row) + k)); }
  static F8 load_part(const uint8_t* row, size_t k, size_t n) { return widen(load_u16_part(row + 2 * k, n)); }
};

struct BF16Weights {
  static constexpr size_t kStepBytes = kStep * 2;
  static F8 widen(uint16x8_t v) {
    return {vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16)), vreinterpretq_f32_u32(vshll_high_n_u16(v, 16))};
  }
  static F8 load(const uint8_t* row, size_t k) { return widen(vld1q_u16(reinterpret_cast<const uint16_t*>(row) + k)); }
  static F8 load_part(const uint8_t* row, size_t k, size_t n) { return widen(load_u16_part(row + 2 * k, n)); }
};

// Q8_0 weights against float activations: a quarter block, scaled.
struct Q8_0FloatWeights {
  static constexpr size_t kStepBytes = 9;  // about a quarter of a 34-byte block
  static F8 load(const uint8_t* row, size_t k) {
    const uint8_t* blk = row + (k / kBlock) * sizeof(BlockQ8_0);
    const int16x8_t q = vmovl_s8(vld1_s8(reinterpret_cast<const int8_t*>(blk + offsetof(BlockQ8_0, qs)) + k % kBlock));
    const float32x4_t d = broadcast_fp16(blk + offsetof(BlockQ8_0, d));
    return {vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), d), vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(q)), d)};
  }
  // Rows of Q8_0 are whole blocks, so a tail shorter than 8 never happens; zeroed for completeness.
  static F8 load_part(const uint8_t* row, size_t k, size_t n) {
    const F8 v = load(row, k);
    float buf[kStep];
    vst1q_f32(buf, v.lo);
    vst1q_f32(buf + 4, v.hi);
    return load_f8_part(buf, n);
  }
};

template <class W>
struct FloatTiles {
  static constexpr size_t kDecodeRows = 4;
  static constexpr size_t kRows = 4;
  static constexpr size_t kToks = 2;

  template <int R, int T>
  static void accumulate(float32x4_t (&acc)[R][T], const F8 (&wv)[R], const F8 (&xv)[T]) {
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        acc[i][j] = vfmaq_f32(acc[i][j], wv[i].lo, xv[j].lo);
        acc[i][j] = vfmaq_f32(acc[i][j], wv[i].hi, xv[j].hi);
      }
  }

  template <int R, int T, bool kPrefetch>
  static void tile(const MatmulArgs& a, size_t r, size_t t) {
    const uint8_t* w[R];
    const float* x[T];
    float32x4_t acc[R][T];
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      w[i] = a.w + (r + i * a.row_stride) * a.w_row_bytes;
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) acc[i][j] = vdupq_n_f32(0.0f);
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) x[j] = reinterpret_cast<const float*>(a.x + (t + j) * a.x_row_bytes);
    const uint8_t* pf = a.w + (r + R) * a.w_row_bytes;
    constexpr size_t kPfStep = R * W::kStepBytes;
    size_t k = 0;
    for (; k + kStep <= a.n; k += kStep) {
      if constexpr (kPrefetch) {
        prefetch_span<kPfStep>(pf);
        pf += kPfStep;
      }
      F8 wv[R], xv[T];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) wv[i] = W::load(w[i], k);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) xv[j] = load_f8(x[j] + k);
      accumulate<R, T>(acc, wv, xv);
    }
    if (k < a.n) {
      F8 wv[R], xv[T];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) wv[i] = W::load_part(w[i], k, a.n - k);
#pragma GCC unroll 8
      for (int j = 0; j < T; ++j) xv[j] = load_f8_part(x[j] + k, a.n - k);
      accumulate<R, T>(acc, wv, xv);
    }
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j)
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) a.y[(t + j) * a.ldy + r + i * a.row_stride] = vaddvq_f32(acc[i][j]);
  }
};

// Not inlined: every caller goes through the table anyway, and inlined with a constant row range GCC 12 warns
// about a loop it cannot prove finite.
template <class K>
[[gnu::noinline]] void matmul(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n,
                              size_t n_tok, size_t r0, size_t r1, float* y, size_t ldy) {
  tiling::run_tiled<K>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

// ---- Element-wise kernels, 4 lanes a step; the last partial step loaded through a padded buffer. ----
float32x4_t load_part(const float* p, size_t n, float fill) {
  float buf[4] = {fill, fill, fill, fill};
  std::memcpy(buf, p, n * sizeof(float));
  return vld1q_f32(buf);
}

void quantize_q8_act(const float* x, BlockQ8Act* y, size_t n) {
  for (size_t b = 0; b < n / kBlock; ++b) {
    const float* xb = x + b * kBlock;
    float32x4_t v[8];
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int k = 0; k < 8; ++k) {
      v[k] = vld1q_f32(xb + 4 * k);
      m = vmaxnmq_f32(m, vabsq_f32(v[k]));  // maxnm ignores NaN like std::fmax
    }
    // Same operations as the scalar reference, so blocks are bit-identical.
    const float amax = vmaxnmvq_f32(m);
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = d;
    const float32x4_t vid = vdupq_n_f32(id);
    int16x8_t h[4];
    // FCVTNS rounds to nearest with ties to even, as nearbyint does in the default rounding mode.
    for (int k = 0; k < 4; ++k)
      h[k] = vcombine_s16(vqmovn_s32(vcvtnq_s32_f32(vmulq_f32(v[2 * k], vid))),
                          vqmovn_s32(vcvtnq_s32_f32(vmulq_f32(v[2 * k + 1], vid))));
    const int8x16_t lo = vcombine_s8(vqmovn_s16(h[0]), vqmovn_s16(h[1]));
    const int8x16_t hi = vcombine_s8(vqmovn_s16(h[2]), vqmovn_s16(h[3]));
    vst1q_s8(y[b].qs, lo);
    vst1q_s8(y[b].qs + 16, hi);
    y[b].minus8_sum = -8 * (vaddlvq_s8(lo) + vaddlvq_s8(hi));
  }
}

float dot_f32(const float* a, const float* b, size_t n) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
    s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
  if (i < n) s1 = vfmaq_f32(s1, load_part(a + i, n - i, 0.0f), load_part(b + i, n - i, 0.0f));
  return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

void axpy(float* y, float a, const float* x, size_t n) {
  const float32x4_t va = vdupq_n_f32(a);
  size_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), va, vld1q_f32(x + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

float dot_f16(const float* a, const uint16_t* b, size_t n) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const F8 h = F16Weights::widen(vld1q_u16(b + i));
    s0 = vfmaq_f32(s0, vld1q_f32(a + i), h.lo);
    s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), h.hi);
  }
  float s = vaddvq_f32(vaddq_f32(s0, s1));
  for (; i < n; ++i) s += a[i] * fp16_to_f32(b[i]);
  return s;
}

void axpy_f16(float* y, float a, const uint16_t* x, size_t n) {
  const float32x4_t va = vdupq_n_f32(a);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const F8 h = F16Weights::widen(vld1q_u16(x + i));
    vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), va, h.lo));
    vst1q_f32(y + i + 4, vfmaq_f32(vld1q_f32(y + i + 4), va, h.hi));
  }
  for (; i < n; ++i) y[i] += a * fp16_to_f32(x[i]);
}

void scores_f16(const float* q, const uint16_t* k, size_t stride, size_t n_keys, size_t dim, float scale, float* out) {
  for (size_t p = 0; p < n_keys; ++p) out[p] = dot_f16(q, k + p * stride, dim) * scale;
}

void weighted_sum_f16(float* out, const float* w, const uint16_t* v, size_t stride, size_t n_rows, size_t dim) {
  std::memset(out, 0, dim * sizeof(float));
  for (size_t p = 0; p < n_rows; ++p) axpy_f16(out, w[p], v + p * stride, dim);
}

// The two tables differ only in the Q4_0 and Q4_0x16 matmuls.
template <MatmulFn kQ4_0, MatmulFn kQ4_0x16>
constexpr Kernels make_table() {
  return {
      .isa = Isa::neon,
      .matmul =
          {
              .f32 = {matmul<FloatTiles<F32Weights>>, ActivationFormat::f32},
              .f16 = {matmul<FloatTiles<F16Weights>>, ActivationFormat::f32},
              .q4_0 = {kQ4_0, ActivationFormat::q8_32},
              .q4_1 = {neon::matmul_q4_1, ActivationFormat::q8_32},
              .q5_0 = {neon::matmul_q5_0, ActivationFormat::q8_32},
              .q5_1 = {neon::matmul_q5_1, ActivationFormat::q8_32},
              .q8_0 = {matmul<FloatTiles<Q8_0FloatWeights>>, ActivationFormat::f32},
              .q2_k = {neon::matmul_q2_k, ActivationFormat::q8_k},
              .q3_k = {neon::matmul_q3_k, ActivationFormat::q8_k},
              .q4_k = {neon::matmul_q4_k, ActivationFormat::q8_k},
              .q5_k = {neon::matmul_q5_k, ActivationFormat::q8_k},
              .q6_k = {neon::matmul_q6_k, ActivationFormat::q8_k},
              .iq4_nl = {neon::matmul_iq4_nl, ActivationFormat::q8_32},
              .iq4_xs = {neon::matmul_iq4_xs, ActivationFormat::q8_k},
              .bf16 = {matmul<FloatTiles<BF16Weights>>, ActivationFormat::f32},
              .q4_0x16 = {kQ4_0x16, ActivationFormat::q8_32},
              .q4_kx8 = kServedByScalar,
              .q6_kx8 = kServedByScalar,
          },
      .quantize_q8_act = quantize_q8_act,
      .quantize_q8_k = neon::quantize_q8_k,
      .rmsnorm = Ops::rmsnorm,
      .softmax = Ops::softmax,
      .silu_mul = Ops::silu_mul,
      .add = Ops::add,
      .dot_f32 = dot_f32,
      .axpy = axpy,
      .dot_f16 = dot_f16,
      .axpy_f16 = axpy_f16,
      .scores_f16 = scores_f16,
      .weighted_sum_f16 = weighted_sum_f16,
      .to_f16 = nullptr,      // the graph converts through KvArena::store
      .attend_f16 = nullptr,  // the graph attends token by token
      .attend_heads_f16 = nullptr,
      .rope = Ops::rope,
      .gelu_mul = Ops::gelu_mul,
      .softcap = Ops::softcap,
      .scale = Ops::scale,
      .rope_neox = Ops::rope_neox,
  };
}

const Kernels kNeon = make_table<matmul<Q4_0WideningTiles>, matmul_q4_0x16<Q4_0x16WideningDecode>>();
const Kernels kNeonDotprod = make_table<matmul<Q4_0SdotTiles>, matmul_q4_0x16<Q4_0x16SdotDecode>>();

}  // namespace

const Kernels* neon_kernels() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0 ? &kNeonDotprod : &kNeon; }

}  // namespace lmrt::simd
