#include "formats/q4_0x16.h"

#include <cstring>
#include <vector>

namespace lmrt {

namespace {
constexpr size_t kBlockBytes = 18;  // standard Q4_0 block: fp16 d + 16 bytes of nibbles
constexpr size_t kChunk = 4;        // nibble bytes of one row per 64-byte line
}  // namespace

void interleave_q4_0(const uint8_t* src, uint64_t n_rows, uint64_t n_cols, uint8_t* dst) {
  const size_t nb = n_cols / 32, row_bytes = nb * kBlockBytes;
  for (uint64_t g = 0; g < n_rows / kQ4_0x16Rows; ++g)
    for (size_t b = 0; b < nb; ++b) {
      uint8_t* unit = dst + (g * nb + b) * kQ4_0x16UnitBytes;
      for (size_t j = 0; j < kQ4_0x16Rows; ++j) {
        const uint8_t* blk = src + (g * kQ4_0x16Rows + j) * row_bytes + b * kBlockBytes;
        std::memcpy(unit + 2 * j, blk, 2);
        for (size_t c = 0; c < 4; ++c) std::memcpy(unit + 32 + 64 * c + kChunk * j, blk + 2 + kChunk * c, kChunk);
      }
    }
}

void interleave_q4_0_in_place(uint8_t* data, uint64_t n_rows, uint64_t n_cols) {
  const size_t group_bytes = kQ4_0x16Rows * (n_cols / 32) * kBlockBytes;
  std::vector<uint8_t> copy(group_bytes);
  for (uint64_t g = 0; g < n_rows / kQ4_0x16Rows; ++g) {
    uint8_t* group = data + g * group_bytes;
    std::memcpy(copy.data(), group, group_bytes);
    interleave_q4_0(copy.data(), kQ4_0x16Rows, n_cols, group);
  }
}

void deinterleave_q4_0x16_group(const uint8_t* group, size_t b0, size_t n_blocks, uint8_t* dst) {
  for (size_t b = 0; b < n_blocks; ++b) {
    const uint8_t* unit = group + (b0 + b) * kQ4_0x16UnitBytes;
    for (size_t j = 0; j < kQ4_0x16Rows; ++j) {
      uint8_t* blk = dst + (j * n_blocks + b) * kBlockBytes;
      std::memcpy(blk, unit + 2 * j, 2);
      for (size_t c = 0; c < 4; ++c) std::memcpy(blk + 2 + kChunk * c, unit + 32 + 64 * c + kChunk * j, kChunk);
    }
  }
}

void deinterleave_q4_0x16(const uint8_t* src, uint64_t n_rows, uint64_t n_cols, uint8_t* dst) {
  const size_t nb = n_cols / 32, group_bytes = kQ4_0x16Rows * nb * kBlockBytes;
  for (uint64_t g = 0; g < n_rows / kQ4_0x16Rows; ++g)
    deinterleave_q4_0x16_group(src + g * group_bytes, 0, nb, dst + g * group_bytes);
}

}  // namespace lmrt
