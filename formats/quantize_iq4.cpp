// Quantizers of IQ4_NL and IQ4_XS: 4-bit indices into the non-linear grid kIq4nlValues. Each group of 32
// gets the scale of best x^2-weighted least-squares fit among 15 trials around the one that maps its
// largest magnitude to the grid's end; IQ4_XS then stores the group scales as 6-bit multiples of one
// fp16 super-block scale and re-picks the indices. Without an importance matrix this is what llama.cpp's
// quantize_iq4_nl / quantize_iq4_xs write (quantize_row_iq4_nl_impl, ntry 7).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "formats/blocks.h"
#include "formats/quantize.h"
#include "formats/quantize_rounding.h"
#include "runtime/util/fp16.h"

namespace lmrt {

namespace {

using quant::nearest_grid_index;
using quant::nearest_int;

constexpr int kGroup = 32;
constexpr int kTrials = 7;  // scale trials either side of the first guess
constexpr float kGroupMaxEps = 1e-15f;
const int8_t* const kGrid = kIq4nlValues;

int grid_index(float x) { return nearest_grid_index(16, kGrid, x); }

// The best scale of one group of 32 (0 for an all-zero group); L gets the indices of the first guess.
float group_scale(const float* xb, uint8_t* L) {
  float weight[kGroup];
  for (int j = 0; j < kGroup; ++j) weight[j] = xb[j] * xb[j];
  float amax;
  const float max = quant::signed_absmax(xb, kGroup, &amax);
  if (amax < kGroupMaxEps) return 0;
  float d = -max / kGrid[0];
  float id = 1 / d;
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < kGroup; ++j) {
    const int l = grid_index(id * xb[j]);
    L[j] = static_cast<uint8_t>(l);
    const float q = kGrid[l];
    const float w = weight[j];
    sumqx += w * q * xb[j];
    sumq2 += w * q * q;
  }
  d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int itry = -kTrials; itry <= kTrials; ++itry) {
    id = (itry + kGrid[0]) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < kGroup; ++j) {
      const float q = kGrid[grid_index(id * xb[j])];
      const float w = weight[j];
      sumqx += w * q * xb[j];
      sumq2 += w * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

// Index j of each group of 32 in the low nibble of qs[j], index j + 16 in the high one.
void pack_indices(const uint8_t* L, int n, uint8_t* qs) {
  for (int i = 0; i < n / kGroup; ++i)
    for (int j = 0; j < 16; ++j)
      qs[16 * i + j] = static_cast<uint8_t>(L[kGroup * i + j] | (L[kGroup * i + 16 + j] << 4));
}

}  // namespace

void quantize_row_iq4_nl(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockIQ4_NL*>(out);
  uint8_t L[kGroup];
  for (size_t b = 0; b < n / kGroup; ++b, x += kGroup) {
    const float d = group_scale(x, L);
    y[b].d = f32_to_fp16(d);
    const float id = d != 0 ? 1 / d : 0;
    for (int j = 0; j < kGroup; ++j) L[j] = static_cast<uint8_t>(grid_index(id * x[j]));
    pack_indices(L, kGroup, y[b].qs);
  }
}

void quantize_row_iq4_xs(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockIQ4_XS*>(out);
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    uint8_t L[kQK];
    float scales[kQK / kGroup];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < kQK / kGroup; ++ib) {
      scales[ib] = group_scale(x + ib * kGroup, L + ib * kGroup);
      const float abs_d = std::fabs(scales[ib]);
      if (abs_d > amax_scale) {
        amax_scale = abs_d;
        max_scale = scales[ib];
      }
    }
    // Group scales as 6-bit multiples (offset 32) of d, which maps the largest to -32.
    const float d = -max_scale / 32;
    y[b].d = f32_to_fp16(d);
    const float id = d != 0 ? 1 / d : 0.f;
    uint16_t scales_h = 0;
    std::memset(y[b].scales_l, 0, sizeof y[b].scales_l);
    for (int ib = 0; ib < kQK / kGroup; ++ib) {
      int l = nearest_int(id * scales[ib]);
      l = l < -32 ? -32 : l > 31 ? 31 : l;
      const float dl = d * l;
      const float idl = dl != 0 ? 1 / dl : 0.f;
      for (int j = 0; j < kGroup; ++j) L[ib * kGroup + j] = static_cast<uint8_t>(grid_index(idl * x[ib * kGroup + j]));
      l += 32;
      if (ib % 2 == 0)
        y[b].scales_l[ib / 2] = static_cast<uint8_t>(l & 0xF);
      else
        y[b].scales_l[ib / 2] |= static_cast<uint8_t>((l & 0xF) << 4);
      scales_h |= static_cast<uint16_t>((l >> 4) << (2 * (ib % 8)));
    }
    y[b].scales_h = scales_h;
    pack_indices(L, kQK, y[b].qs);
  }
}

}  // namespace lmrt
