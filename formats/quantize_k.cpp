// Quantizers of the K-quants (Q2_K..Q6_K): super-blocks of 256 split into groups of 16 or 32, each
// group's scale (and minimum) found by a small search, then the group scales themselves quantized to
// 4, 6 or 8 bits against one fp16 super-block scale, and the weights re-rounded with the scales as
// stored. Written from llama.cpp's reference quantizers (make_qx_quants, make_q3_quants,
// make_qkx2_quants in ggml-quants.c), with the same arithmetic in the same order so that the bytes match.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "formats/blocks.h"
#include "formats/quantize.h"
#include "formats/quantize_rounding.h"
#include "runtime/util/fp16.h"

namespace lmrt {

namespace {

using quant::nearest_int;
using quant::signed_absmax;

// Groups whose largest magnitude is below this are all zero.
constexpr float kGroupMaxEps = 1e-15f;

// Symmetric codes l in [-nmax, nmax) with x ~ scale * l, weighted by x^2 (what Q6_K uses): starts from
// the scale that maps the largest magnitude to -nmax, then tries 18 nearby scales and keeps the one with
// the best weighted least-squares fit. L gets l + nmax; returns the scale.
float symmetric_scale_search(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(x, n, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i)
        L[i] = static_cast<int8_t>(nmax + std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i]))));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Q3_K's group search: symmetric codes in [-nmax, nmax) weighted by x^2, refined by moving one code
// at a time to its best value given the others (up to 5 passes). L gets l + nmax; returns the scale.
float symmetric_codes_refined(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(x, n, &amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, nearest_int(iscale * x[i])));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int pass = 0; pass < 5; ++pass) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx > 0) {
        float sl2 = suml2 - w * L[i] * L[i];
        const int new_l = std::max(-nmax, std::min(nmax - 1, nearest_int(x[i] * sl2 / slx)));
        if (new_l != L[i]) {
          slx += w * x[i] * new_l;
          sl2 += w * new_l * new_l;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Asymmetric codes in [0, nmax] with x ~ scale * l - min (min >= 0 returned in *the_min), minimising the
// weighted squared (or, with use_mad, absolute) error: the min/max guess, then nstep + 1 trial scales
// (nmax + rmin + rdelta * is over the range), each with the least-squares scale and min for its codes.
float scale_min_search(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min)))));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        std::memcpy(L, Laux, static_cast<size_t>(n));
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Q4_K/Q5_K: scale j and min j (6 bits each) of 8, packed in 12 bytes.
void pack_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* scales) {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
    scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
    scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
  }
}

void unpack_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Q4_K and Q5_K share everything but the code range (nmax 15 or 31) and the search's trial scales.
// Fills d, dmin, scales and the codes L (0..nmax) of one super-block.
void scale_min_superblock(const float* x, int nmax, float rmin, int nstep, uint16_t* d_out, uint16_t* dmin_out,
                          uint8_t* packed_scales, uint8_t* L) {
  float mins[kQK / 32], scales[kQK / 32], weights[32];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < kQK / 32; ++j) {
    // Weights favour large values, plus the group's RMS so that small ones still count.
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = scale_min_search(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < kQK / 32; ++j) {
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    pack_scale_min_k4(j, ls, lm, packed_scales);
  }
  *d_out = f32_to_fp16(max_scale / 63.f);
  *dmin_out = f32_to_fp16(max_min / 63.f);
  // Re-round every weight against the scales as stored.
  for (int j = 0; j < kQK / 32; ++j) {
    uint8_t sc, m;
    unpack_scale_min_k4(j, packed_scales, &sc, &m);
    const float d = fp16_to_f32(*d_out) * sc;
    if (d == 0) continue;
    const float dm = fp16_to_f32(*dmin_out) * m;
    for (int ii = 0; ii < 32; ++ii)
      L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + ii] + dm) / d))));
  }
}

// Four 2-bit codes per byte: byte l of each 32-byte run holds codes l, l + 32, l + 64, l + 96 of 128.
template <typename Code>
void pack_2bit(const Code* L, uint8_t* qs) {
  for (int j = 0; j < kQK; j += 128)
    for (int l = 0; l < 32; ++l)
      qs[j / 4 + l] =
          static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

}  // namespace

void quantize_row_q2_k(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ2_K*>(out);
  constexpr float q4scale = 15.f;
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    uint8_t L[kQK], Laux[16];
    float weights[16], mins[kQK / 16], scales[kQK / 16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < kQK / 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = scale_min_search(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = q4scale / max_scale;
      for (int j = 0; j < kQK / 16; ++j) y[b].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      y[b].d = f32_to_fp16(max_scale / q4scale);
    } else {
      for (int j = 0; j < kQK / 16; ++j) y[b].scales[j] = 0;
      y[b].d = f32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = q4scale / max_min;
      for (int j = 0; j < kQK / 16; ++j) y[b].scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
      y[b].dmin = f32_to_fp16(max_min / q4scale);
    } else {
      y[b].dmin = f32_to_fp16(0.f);
    }
    for (int j = 0; j < kQK / 16; ++j) {
      const float d = fp16_to_f32(y[b].d) * (y[b].scales[j] & 0xF);
      if (d == 0) continue;
      const float dm = fp16_to_f32(y[b].dmin) * (y[b].scales[j] >> 4);
      for (int ii = 0; ii < 16; ++ii)
        L[16 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(3, nearest_int((x[16 * j + ii] + dm) / d))));
    }
    pack_2bit(L, y[b].qs);
  }
}

void quantize_row_q3_k(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ3_K*>(out);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    int8_t L[kQK];
    float scales[kQK / 16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < kQK / 16; ++j) {
      scales[j] = symmetric_codes_refined(16, 4, x + 16 * j, L + 16 * j);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    // 16 six-bit scales, offset by 32: low nibbles in bytes 0..7, high 2 bits in bytes 8..11.
    std::memset(y[b].scales, 0, 12);
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < kQK / 16; ++j) {
        int8_t l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        l = static_cast<int8_t>(std::max<int>(-32, std::min<int>(31, l)) + 32);
        if (j < 8)
          y[b].scales[j] = static_cast<uint8_t>(l & 0xF);
        else
          y[b].scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
        l = static_cast<int8_t>(l >> 4);
        y[b].scales[j % 4 + 8] |= static_cast<uint8_t>(l << (2 * (j / 4)));
      }
      y[b].d = f32_to_fp16(1 / iscale);
    } else {
      y[b].d = f32_to_fp16(0.f);
    }
    for (int j = 0; j < kQK / 16; ++j) {
      const int low = j < 8 ? y[b].scales[j] & 0xF : y[b].scales[j - 8] >> 4;
      const int sc = (low | (((y[b].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
      const float d = fp16_to_f32(y[b].d) * sc;
      if (d == 0) continue;
      for (int ii = 0; ii < 16; ++ii)
        L[16 * j + ii] = static_cast<int8_t>(std::max(-4, std::min(3, nearest_int(x[16 * j + ii] / d))) + 4);
    }
    // The third bit of code j goes to bit j / 32 of hmask[j % 32]; the low two bits to qs.
    std::memset(y[b].hmask, 0, kQK / 8);
    for (int j = 0; j < kQK; ++j) {
      if (L[j] > 3) {
        y[b].hmask[j % 32] |= static_cast<uint8_t>(1u << (j / 32));
        L[j] = static_cast<int8_t>(L[j] - 4);
      }
    }
    pack_2bit(L, y[b].qs);
  }
}

void quantize_row_q4_k(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ4_K*>(out);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    uint8_t L[kQK];
    scale_min_superblock(x, 15, -1.f, 20, &y[b].d, &y[b].dmin, y[b].scales, L);
    // Byte l of each 32-byte run: code l (low nibble) and code l + 32 (high) of 64.
    uint8_t* q = y[b].qs;
    for (int j = 0; j < kQK; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
  }
}

void quantize_row_q5_k(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ5_K*>(out);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    uint8_t L[kQK];
    scale_min_superblock(x, 31, -0.5f, 15, &y[b].d, &y[b].dmin, y[b].scales, L);
    // Low nibbles as Q4_K; the fifth bit of codes l and l + 32 of the k-th 64 go to bits 2k, 2k + 1 of qh[l].
    std::memset(y[b].qh, 0, kQK / 8);
    uint8_t* ql = y[b].qs;
    uint8_t m1 = 1, m2 = 2;
    for (int n64 = 0; n64 < kQK; n64 += 64, ql += 32) {
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n64 + j], l2 = L[n64 + j + 32];
        if (l1 > 15) {
          l1 -= 16;
          y[b].qh[j] |= m1;
        }
        if (l2 > 15) {
          l2 -= 16;
          y[b].qh[j] |= m2;
        }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
    }
  }
}

void quantize_row_q6_k(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ6_K*>(out);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    int8_t L[kQK];
    float scales[kQK / 16];
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < kQK / 16; ++ib) {
      scales[ib] = symmetric_scale_search(16, 32, x + 16 * ib, L + 16 * ib);
      const float abs_scale = std::fabs(scales[ib]);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scales[ib];
      }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[b], 0, sizeof y[b]);
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[b].d = f32_to_fp16(1 / iscale);
    for (int ib = 0; ib < kQK / 16; ++ib)
      y[b].scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
    for (int j = 0; j < kQK / 16; ++j) {
      const float d = fp16_to_f32(y[b].d) * y[b].scales[j];
      if (d == 0) continue;
      for (int ii = 0; ii < 16; ++ii)
        L[16 * j + ii] = static_cast<int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + ii] / d))) + 32);
    }
    // Per 128: low nibbles of codes l and l + 64 in ql[l], of l + 32 and l + 96 in ql[l + 32]; the top two
    // bits of codes l, l + 32, l + 64, l + 96 in qh[l].
    uint8_t* ql = y[b].ql;
    uint8_t* qh = y[b].qh;
    for (int j = 0; j < kQK; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
        ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
        ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
        qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                     ((L[j + l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace lmrt
