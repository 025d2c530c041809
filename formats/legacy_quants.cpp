#include "formats/legacy_quants.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "formats/blocks.h"
#include "runtime/util/fp16.h"

namespace lmrt {

namespace {

// Block b of a row, copied out: rows inside a GGUF file carry no alignment guarantee for the fp16 fields.
template <typename Block>
Block load_block(const void* row, size_t b) {
  Block blk;
  std::memcpy(&blk, static_cast<const uint8_t*>(row) + b * sizeof(Block), sizeof blk);
  return blk;
}

// The fifth bits of a Q5 block, qh read as a little-endian uint32.
uint32_t high_bits(const uint8_t qh[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 | static_cast<uint32_t>(qh[2]) << 16 |
         static_cast<uint32_t>(qh[3]) << 24;
}

}  // namespace

void dequantize_row_q4_0(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / 32; ++b, y += 32) {
    const auto blk = load_block<BlockQ4_0>(x, b);
    const float d = fp16_to_f32(blk.d);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>((blk.qs[j] & 0x0F) - 8) * d;
      y[j + 16] = static_cast<float>((blk.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / 32; ++b, y += 32) {
    const auto blk = load_block<BlockQ4_1>(x, b);
    const float d = fp16_to_f32(blk.d), m = fp16_to_f32(blk.m);
    for (int j = 0; j < 16; ++j) {
      y[j] = static_cast<float>(blk.qs[j] & 0x0F) * d + m;
      y[j + 16] = static_cast<float>(blk.qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / 32; ++b, y += 32) {
    const auto blk = load_block<BlockQ5_0>(x, b);
    const float d = fp16_to_f32(blk.d);
    const uint32_t qh = high_bits(blk.qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (blk.qs[j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
      const int hi = (blk.qs[j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
      y[j] = static_cast<float>(lo - 16) * d;
      y[j + 16] = static_cast<float>(hi - 16) * d;
    }
  }
}

void dequantize_row_q5_1(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / 32; ++b, y += 32) {
    const auto blk = load_block<BlockQ5_1>(x, b);
    const float d = fp16_to_f32(blk.d), m = fp16_to_f32(blk.m);
    const uint32_t qh = high_bits(blk.qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (blk.qs[j] & 0x0F) | static_cast<int>(((qh >> j) << 4) & 0x10);
      const int hi = (blk.qs[j] >> 4) | static_cast<int>((qh >> (j + 12)) & 0x10);
      y[j] = static_cast<float>(lo) * d + m;
      y[j + 16] = static_cast<float>(hi) * d + m;
    }
  }
}

void dequantize_row_q8_0(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / 32; ++b, y += 32) {
    const auto blk = load_block<BlockQ8_0>(x, b);
    const float d = fp16_to_f32(blk.d);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(blk.qs[j]) * d;
  }
}

}  // namespace lmrt
