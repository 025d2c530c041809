// Quantizers of the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0): one scale (and a minimum
// for the _1 types) per block from the block's extremes, no search.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "formats/blocks.h"
#include "formats/quantize.h"
#include "formats/quantize_rounding.h"
#include "runtime/util/fp16.h"

namespace lmrt {

namespace {

constexpr int kBlock = 32;

void min_max(const float* x, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < kBlock; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

// Packs 32 five-bit codes: low nibbles as Q4_0 (element j and j + 16 share qs[j]), fifth bits in qh.
void pack5(const uint8_t* q, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kBlock / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + 16] & 0x0F) << 4));
    qh |= static_cast<uint32_t>(q[j] >> 4) << j;
    qh |= static_cast<uint32_t>(q[j + 16] >> 4) << (j + 16);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

}  // namespace

void quantize_row_q4_0(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ4_0*>(out);
  for (size_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    float amax;
    const float d = quant::signed_absmax(x, kBlock, &amax) / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    for (int j = 0; j < kBlock / 2; ++j) {
      // Truncation after +8.5 rounds (x * id lies in [-8, 8]); only +8 itself needs the clamp.
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
      y[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_row_q4_1(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ4_1*>(out);
  for (size_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    float min, max;
    min_max(x, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    y[b].m = f32_to_fp16(min);
    for (int j = 0; j < kBlock / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>((x[j] - min) * id + 0.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<int8_t>((x[j + 16] - min) * id + 0.5f)));
      y[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_row_q5_0(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ5_0*>(out);
  for (size_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    float amax;
    const float d = quant::signed_absmax(x, kBlock, &amax) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    uint8_t q[kBlock];
    for (int j = 0; j < kBlock; ++j)
      q[j] = static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f))));
    pack5(q, y[b].qs, y[b].qh);
  }
}

void quantize_row_q5_1(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ5_1*>(out);
  for (size_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    float min, max;
    min_max(x, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    y[b].m = f32_to_fp16(min);
    uint8_t q[kBlock];
    for (int j = 0; j < kBlock; ++j) q[j] = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
    pack5(q, y[b].qs, y[b].qh);
  }
}

void quantize_row_q8_0(const float* x, void* out, size_t n) {
  auto* y = static_cast<BlockQ8_0*>(out);
  for (size_t b = 0; b < n / kBlock; ++b, x += kBlock) {
    float amax = 0.0f;
    for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_fp16(d);
    for (int j = 0; j < kBlock; ++j) y[b].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

}  // namespace lmrt
