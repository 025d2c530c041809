#include "formats/k_quants.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/util/fp16.h"

namespace lmrt {

namespace {

template <typename Block>
Block load_block(const void* row, size_t b) {
  Block blk;
  std::memcpy(&blk, static_cast<const uint8_t*>(row) + b * sizeof(Block), sizeof blk);
  return blk;
}

// Scale and min of group j (0..7) of a Q4_K/Q5_K block, 6 bits each: groups 0-3 keep them in the low 6
// bits of bytes j and j + 4; groups 4-7 in the nibbles of byte j + 4 with their top 2 bits in the spare
// high bits of bytes j - 4 and j.
void scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// The 6-bit scale of group g (0..15) of a Q3_K block, before its -32 offset: low 4 bits are nibbles of
// bytes 0-7 (groups 0-7 low nibbles, 8-15 high nibbles), high 2 bits are the 2-bit fields of bytes 8-11.
int q3_k_scale(const uint8_t* s, int g) {
  const int low = g < 8 ? s[g] & 0x0F : s[g - 8] >> 4;
  const int high = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
  return low | (high << 4);
}

}  // namespace

void dequantize_row_q2_k(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const auto blk = load_block<BlockQ2_K>(x, b);
    const float d = fp16_to_f32(blk.d), dmin = fp16_to_f32(blk.dmin);
    const uint8_t* q = blk.qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {  // two groups of 16 per shift: q[0..16) and q[16..32)
          const uint8_t sc = blk.scales[is++];
          const float dl = d * static_cast<float>(sc & 0x0F), ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l)
            *y++ = dl * static_cast<float>(static_cast<int8_t>((q[16 * part + l] >> shift) & 3)) - ml;
        }
      }
    }
  }
}

void dequantize_row_q3_k(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const auto blk = load_block<BlockQ3_K>(x, b);
    const float d_all = fp16_to_f32(blk.d);
    const uint8_t* q = blk.qs;
    uint8_t m = 1;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d_all * static_cast<float>(q3_k_scale(blk.scales, is++) - 32);
          for (int l = 16 * part; l < 16 * part + 16; ++l) {
            const int v = static_cast<int8_t>((q[l] >> shift) & 3) - ((blk.hmask[l] & m) ? 0 : 4);
            *y++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void dequantize_row_q4_k(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const auto blk = load_block<BlockQ4_K>(x, b);
    const float d = fp16_to_f32(blk.d), dmin = fp16_to_f32(blk.dmin);
    const uint8_t* q = blk.qs;
    for (int is = 0; is < 8; is += 2, q += 32) {
      uint8_t sc, m;
      scale_min_k4(is, blk.scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      scale_min_k4(is + 1, blk.scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void dequantize_row_q5_k(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const auto blk = load_block<BlockQ5_K>(x, b);
    const float d = fp16_to_f32(blk.d), dmin = fp16_to_f32(blk.dmin);
    const uint8_t* ql = blk.qs;
    uint8_t u1 = 1, u2 = 2;
    for (int is = 0; is < 8; is += 2, ql += 32) {
      uint8_t sc, m;
      scale_min_k4(is, blk.scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      scale_min_k4(is + 1, blk.scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + (blk.qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((ql[l] >> 4) + (blk.qh[l] & u2 ? 16 : 0)) - m2;
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

void dequantize_row_q6_k(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const auto blk = load_block<BlockQ6_K>(x, b);
    const float d = fp16_to_f32(blk.d);
    const uint8_t* ql = blk.ql;
    const uint8_t* qh = blk.qh;
    const int8_t* sc = blk.scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = static_cast<int8_t>((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = static_cast<int8_t>((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = static_cast<int8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void quantize_row_q8_k(const float* x, BlockQ8_K* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0.0f, mx = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) {
        amax = ax;
        mx = x[j];
      }
    }
    BlockQ8_K& out = y[b];
    if (amax == 0.0f) {
      out.d = 0.0f;
      std::memset(out.qs, 0, sizeof out.qs);
      std::memset(out.bsums, 0, sizeof out.bsums);
      continue;
    }
    const float iscale = -127.0f / mx;
    for (int j = 0; j < kQK; ++j)
      out.qs[j] = static_cast<int8_t>(std::min(127, static_cast<int>(std::nearbyint(iscale * x[j]))));
    for (int g = 0; g < kQK / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += out.qs[16 * g + i];
      out.bsums[g] = static_cast<int16_t>(sum);
    }
    out.d = 1.0f / iscale;
  }
}

}  // namespace lmrt
