#include "formats/iq4.h"

#include <cstdint>
#include <cstring>

#include "formats/blocks.h"
#include "runtime/util/fp16.h"

namespace lmrt {

namespace {

template <typename Block>
Block load_block(const void* row, size_t b) {
  Block blk;
  std::memcpy(&blk, static_cast<const uint8_t*>(row) + b * sizeof(Block), sizeof blk);
  return blk;
}

// 32 values of one group: low nibbles are elements 0-15, high nibbles 16-31, as in Q4_0.
void decode_group(const uint8_t* qs, float d, float* y) {
  for (int j = 0; j < 16; ++j) {
    y[j] = d * static_cast<float>(kIq4nlValues[qs[j] & 0x0F]);
    y[j + 16] = d * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
  }
}

}  // namespace

void dequantize_row_iq4_nl(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / 32; ++b, y += 32) {
    const auto blk = load_block<BlockIQ4_NL>(x, b);
    decode_group(blk.qs, fp16_to_f32(blk.d), y);
  }
}

void dequantize_row_iq4_xs(const void* x, float* y, size_t n) {
  for (size_t b = 0; b < n / kQK; ++b) {
    const auto blk = load_block<BlockIQ4_XS>(x, b);
    const float d = fp16_to_f32(blk.d);
    for (int g = 0; g < 8; ++g, y += 32) {
      const int ls = ((blk.scales_l[g / 2] >> (4 * (g % 2))) & 0x0F) | (((blk.scales_h >> (2 * g)) & 3) << 4);
      decode_group(blk.qs + 16 * g, d * static_cast<float>(ls - 32), y);
    }
  }
}

}  // namespace lmrt
