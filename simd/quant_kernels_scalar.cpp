// Scalar reference of the K-quant, IQ4 and 32-element quant matmuls (simd/quant_kernels.h): each block's
// weights are unpacked to small integers with their sub-block scales, as ggml's dequantize_row_* defines
// them, and multiplied with the int8 activations in exact integer sums per sub-block (ggml's generic
// vec_dot_*_q8_K / *_q8_0 code); only the block's total is scaled to float. Every SIMD kernel is tested
// against these.
#include <cmath>
#include <cstring>

#include "formats/k_quants_x8.h"
#include "runtime/util/fp16.h"
#include "simd/quant_kernels.h"

namespace lmrt::simd::scalar {
namespace {

// One super-block of 256 weights as integers: value = d * scale[e / G] * q[e] - dmin * min[e / G] for
// the groups of G elements (min is 0 for the types without mins).
struct Unpacked256 {
  int8_t q[kQK];
  int32_t scale[16];
  int32_t min[16];
  float d, dmin;
};

// The integer dot with the Q8_K activations and the block's float value: groups of `group` elements.
float dot_unpacked(const Unpacked256& u, const BlockQ8_K& x, int group) {
  int32_t sumi = 0, summ = 0;
  for (int g = 0; g < kQK / group; ++g) {
    int32_t s = 0;
    for (int l = 0; l < group; ++l) s += u.q[g * group + l] * x.qs[g * group + l];
    sumi += u.scale[g] * s;
    int32_t bsum = 0;  // the group's activation sum, from the 16-element sums
    for (int k = g * group / 16; k < (g + 1) * group / 16; ++k) bsum += x.bsums[k];
    summ += u.min[g] * bsum;
  }
  return x.d * (u.d * static_cast<float>(sumi) - u.dmin * static_cast<float>(summ));
}

void scale_min_k4(const uint8_t* s, int j, int32_t* sc, int32_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

float dot_q4_k(const BlockQ4_K& w, const BlockQ8_K& x) {
  Unpacked256 u{};
  for (int g = 0; g < 8; ++g) {
    scale_min_k4(w.scales, g, &u.scale[g], &u.min[g]);
    for (int l = 0; l < 32; ++l) u.q[32 * g + l] = static_cast<int8_t>((w.qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 15);
  }
  u.d = fp16_to_f32(w.d);
  u.dmin = fp16_to_f32(w.dmin);
  return dot_unpacked(u, x, 32);
}

float dot_q5_k(const BlockQ5_K& w, const BlockQ8_K& x) {
  Unpacked256 u{};
  for (int g = 0; g < 8; ++g) {
    scale_min_k4(w.scales, g, &u.scale[g], &u.min[g]);
    for (int l = 0; l < 32; ++l)
      u.q[32 * g + l] =
          static_cast<int8_t>(((w.qs[32 * (g / 2) + l] >> (4 * (g % 2))) & 15) | (((w.qh[l] >> g) & 1) << 4));
  }
  u.d = fp16_to_f32(w.d);
  u.dmin = fp16_to_f32(w.dmin);
  return dot_unpacked(u, x, 32);
}

float dot_q6_k(const BlockQ6_K& w, const BlockQ8_K& x) {
  Unpacked256 u{};
  for (int e = 0; e < kQK; ++e) {
    const int half = e / 128, k = (e % 128) / 32, l = e % 32;
    const int lo = (w.ql[64 * half + 32 * (k & 1) + l] >> (4 * (k / 2))) & 15;
    const int hi = (w.qh[32 * half + l] >> (2 * k)) & 3;
    u.q[e] = static_cast<int8_t>((lo | (hi << 4)) - 32);
  }
  for (int g = 0; g < 16; ++g) u.scale[g] = w.scales[g];
  u.d = fp16_to_f32(w.d);
  return dot_unpacked(u, x, 16);
}

float dot_q3_k(const BlockQ3_K& w, const BlockQ8_K& x) {
  Unpacked256 u{};
  // 16 6-bit scales: low 4 bits in bytes 0-7 (scale g < 8 low nibble of byte g, g >= 8 high nibble of
  // byte g - 8), high 2 bits in bytes 8-11 (byte 8 + g % 4, bits 2 * (g / 4)).
  for (int g = 0; g < 16; ++g) {
    const int low = (w.scales[g % 8] >> (4 * (g / 8))) & 15;
    const int high = (w.scales[8 + g % 4] >> (2 * (g / 4))) & 3;
    u.scale[g] = (low | (high << 4)) - 32;
  }
  for (int e = 0; e < kQK; ++e) {
    const int half = e / 128, j = (e % 128) / 32, l = e % 32;
    const int q = (w.qs[32 * half + l] >> (2 * j)) & 3;
    const bool high_bit = (w.hmask[l] >> (4 * half + j)) & 1;
    u.q[e] = static_cast<int8_t>(q - (high_bit ? 0 : 4));
  }
  u.d = fp16_to_f32(w.d);
  return dot_unpacked(u, x, 16);
}

float dot_q2_k(const BlockQ2_K& w, const BlockQ8_K& x) {
  Unpacked256 u{};
  for (int g = 0; g < 16; ++g) {
    u.scale[g] = w.scales[g] & 15;
    u.min[g] = w.scales[g] >> 4;
  }
  for (int e = 0; e < kQK; ++e) {
    const int half = e / 128, j = (e % 128) / 32, l = e % 32;
    u.q[e] = static_cast<int8_t>((w.qs[32 * half + l] >> (2 * j)) & 3);
  }
  u.d = fp16_to_f32(w.d);
  u.dmin = fp16_to_f32(w.dmin);
  return dot_unpacked(u, x, 16);
}

float dot_iq4_xs(const BlockIQ4_XS& w, const BlockQ8_K& x) {
  Unpacked256 u{};
  for (int g = 0; g < 8; ++g) {
    const int low = (w.scales_l[g / 2] >> (4 * (g % 2))) & 15;
    const int high = (w.scales_h >> (2 * g)) & 3;
    u.scale[g] = (low | (high << 4)) - 32;
    for (int l = 0; l < 32; ++l) u.q[32 * g + l] = kIq4nlValues[(w.qs[16 * g + l % 16] >> (4 * (l / 16))) & 15];
  }
  u.d = fp16_to_f32(w.d);
  return dot_unpacked(u, x, 32);
}

// 32-element blocks against BlockQ8Act (reads qs and d only; minus8_sum is a shortcut for SIMD code).
// value = d * q[e] + m; the block's sum is d * xd * sum(q x) + m * xd * sum(x).
float dot_32(const int8_t (&q)[32], float d, float m, const BlockQ8Act& x) {
  int32_t sumi = 0, sumx = 0;
  for (int e = 0; e < 32; ++e) {
    sumi += q[e] * x.qs[e];
    sumx += x.qs[e];
  }
  return x.d * (d * static_cast<float>(sumi) + m * static_cast<float>(sumx));
}

// Q5_0 / Q5_1 weights 0..31: nibble e % 16 of qs (low for e < 16) and bit e of qh.
void unpack_q5(const uint8_t (&qs)[16], const uint8_t (&qh_bytes)[4], int offset, int8_t (&q)[32]) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int e = 0; e < 32; ++e)
    q[e] = static_cast<int8_t>((((qs[e % 16] >> (4 * (e / 16))) & 15) | (((qh >> e) & 1) << 4)) - offset);
}

float dot_q4_1(const BlockQ4_1& w, const BlockQ8Act& x) {
  int8_t q[32];
  for (int e = 0; e < 32; ++e) q[e] = static_cast<int8_t>((w.qs[e % 16] >> (4 * (e / 16))) & 15);
  return dot_32(q, fp16_to_f32(w.d), fp16_to_f32(w.m), x);
}

float dot_q5_0(const BlockQ5_0& w, const BlockQ8Act& x) {
  int8_t q[32];
  unpack_q5(w.qs, w.qh, 16, q);
  return dot_32(q, fp16_to_f32(w.d), 0.0f, x);
}

float dot_q5_1(const BlockQ5_1& w, const BlockQ8Act& x) {
  int8_t q[32];
  unpack_q5(w.qs, w.qh, 0, q);
  return dot_32(q, fp16_to_f32(w.d), fp16_to_f32(w.m), x);
}

float dot_iq4_nl(const BlockIQ4_NL& w, const BlockQ8Act& x) {
  int8_t q[32];
  for (int e = 0; e < 32; ++e) q[e] = kIq4nlValues[(w.qs[e % 16] >> (4 * (e / 16))) & 15];
  return dot_32(q, fp16_to_f32(w.d), 0.0f, x);
}

template <class W, class X, float (*Dot)(const W&, const X&), size_t kElems>
void matmul_blocks(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                   size_t r0, size_t r1, float* y, size_t ldy) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x);
  for (size_t t = 0; t < n_tok; ++t) {
    const X* xt = reinterpret_cast<const X*>(xb + t * x_row_bytes);
    for (size_t r = r0; r < r1; ++r) {
      const W* wr = reinterpret_cast<const W*>(wb + r * w_row_bytes);
      float s = 0.0f;
      for (size_t b = 0; b < n / kElems; ++b) s += Dot(wr[b], xt[b]);
      y[t * ldy + r] = s;
    }
  }
}

// The x8 layouts (formats/k_quants_x8.h): each block index of a group is turned back into the 8 rows'
// standard blocks and dotted as matmul_blocks does, in the same order, so the result is bit-identical to
// the standard kernel on the un-interleaved matrix.
template <class W, TensorType kStandard, float (*Dot)(const W&, const BlockQ8_K&)>
void matmul_kx8_blocks(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                       size_t r0, size_t r1, float* y, size_t ldy) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x);
  W blocks[kKx8Rows];
  for (size_t t = 0; t < n_tok; ++t) {
    const auto* xt = reinterpret_cast<const BlockQ8_K*>(xb + t * x_row_bytes);
    for (size_t g = r0 / kKx8Rows; g < r1 / kKx8Rows; ++g) {
      float s[kKx8Rows] = {};
      for (size_t b = 0; b < n / kQK; ++b) {
        deinterleave_kx8_group(kStandard, wb + g * kKx8Rows * w_row_bytes, b, 1, reinterpret_cast<uint8_t*>(blocks));
        for (size_t j = 0; j < kKx8Rows; ++j) s[j] += Dot(blocks[j], xt[b]);
      }
      for (size_t j = 0; j < kKx8Rows; ++j) y[t * ldy + g * kKx8Rows + j] = s[j];
    }
  }
}

}  // namespace

void matmul_q4_kx8(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                   size_t r0, size_t r1, float* y, size_t ldy) {
  matmul_kx8_blocks<BlockQ4_K, TensorType::q4_k, dot_q4_k>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}
void matmul_q6_kx8(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                   size_t r0, size_t r1, float* y, size_t ldy) {
  matmul_kx8_blocks<BlockQ6_K, TensorType::q6_k, dot_q6_k>(w, w_row_bytes, x, x_row_bytes, n, n_tok, r0, r1, y, ldy);
}

void quantize_q8_k(const float* x, BlockQ8_K* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK; ++j) {
      const float v = std::nearbyint(iscale * x[j]);
      y[b].qs[j] = static_cast<int8_t>(v > 127.0f ? 127.0f : v);
    }
    for (int g = 0; g < 16; ++g) {
      int32_t sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[b].qs[16 * g + j];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1.0f / iscale;
  }
}

void matmul_q2_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_blocks<BlockQ2_K, BlockQ8_K, dot_q2_k, kQK>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q3_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_blocks<BlockQ3_K, BlockQ8_K, dot_q3_k, kQK>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q4_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_blocks<BlockQ4_K, BlockQ8_K, dot_q4_k, kQK>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_blocks<BlockQ5_K, BlockQ8_K, dot_q5_k, kQK>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q6_k(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_blocks<BlockQ6_K, BlockQ8_K, dot_q6_k, kQK>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_iq4_xs(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_blocks<BlockIQ4_XS, BlockQ8_K, dot_iq4_xs, kQK>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q4_1(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_blocks<BlockQ4_1, BlockQ8Act, dot_q4_1, 32>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_0(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_blocks<BlockQ5_0, BlockQ8Act, dot_q5_0, 32>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_q5_1(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                 float* y, size_t ldy) {
  matmul_blocks<BlockQ5_1, BlockQ8Act, dot_q5_1, 32>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}
void matmul_iq4_nl(const void* w, size_t wrb, const void* x, size_t xrb, size_t n, size_t nt, size_t r0, size_t r1,
                   float* y, size_t ldy) {
  matmul_blocks<BlockIQ4_NL, BlockQ8Act, dot_iq4_nl, 32>(w, wrb, x, xrb, n, nt, r0, r1, y, ldy);
}

}  // namespace lmrt::simd::scalar
