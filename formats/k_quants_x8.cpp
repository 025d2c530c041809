#include "formats/k_quants_x8.h"

#include <cstring>
#include <vector>

#include "formats/blocks.h"

namespace lmrt {

namespace {

// One unit <-> the 8 rows' standard blocks: kToUnit copies blocks into the unit, otherwise the unit back
// into the blocks. blk(j) is row j's block.
template <bool kToUnit, class BlockAt>
void move_q4_k_unit(uint8_t* unit, BlockAt blk) {
  for (size_t j = 0; j < kKx8Rows; ++j) {
    auto* b = reinterpret_cast<BlockQ4_K*>(blk(j));
    uint8_t* d = unit + 2 * j;
    uint8_t* dmin = unit + 16 + 2 * j;
    uint8_t* scales = unit + kQ4_Kx8ScalesOffset + 12 * j;
    if constexpr (kToUnit) {
      std::memcpy(d, &b->d, 2);
      std::memcpy(dmin, &b->dmin, 2);
      std::memcpy(scales, b->scales, 12);
    } else {
      std::memcpy(&b->d, d, 2);
      std::memcpy(&b->dmin, dmin, 2);
      std::memcpy(b->scales, scales, 12);
    }
    for (size_t u = 0; u < 16; ++u) {  // u = 4c + g holds qs[32c + 8g, +8) = qs[8u, 8u + 8)
      uint8_t* lane = unit + kQ4_Kx8QsOffset + 64 * u + 8 * j;
      if constexpr (kToUnit)
        std::memcpy(lane, b->qs + 8 * u, 8);
      else
        std::memcpy(b->qs + 8 * u, lane, 8);
    }
  }
}

template <bool kToUnit, class BlockAt>
void move_q6_k_unit(uint8_t* unit, BlockAt blk) {
  for (size_t j = 0; j < kKx8Rows; ++j) {
    auto* b = reinterpret_cast<BlockQ6_K*>(blk(j));
    if constexpr (kToUnit) {
      std::memcpy(unit + 2 * j, &b->d, 2);
      for (size_t s = 0; s < 16; ++s) unit[kQ6_Kx8ScalesOffset + 8 * s + j] = static_cast<uint8_t>(b->scales[s]);
      for (size_t u = 0; u < 16; ++u) std::memcpy(unit + kQ6_Kx8QlOffset + 64 * u + 8 * j, b->ql + 8 * u, 8);
      for (size_t u = 0; u < 8; ++u) std::memcpy(unit + kQ6_Kx8QhOffset + 64 * u + 8 * j, b->qh + 8 * u, 8);
    } else {
      std::memcpy(&b->d, unit + 2 * j, 2);
      for (size_t s = 0; s < 16; ++s) b->scales[s] = static_cast<int8_t>(unit[kQ6_Kx8ScalesOffset + 8 * s + j]);
      for (size_t u = 0; u < 16; ++u) std::memcpy(b->ql + 8 * u, unit + kQ6_Kx8QlOffset + 64 * u + 8 * j, 8);
      for (size_t u = 0; u < 8; ++u) std::memcpy(b->qh + 8 * u, unit + kQ6_Kx8QhOffset + 64 * u + 8 * j, 8);
    }
  }
}

template <bool kToUnit, class BlockAt>
void move_unit(TensorType standard, uint8_t* unit, BlockAt blk) {
  if (standard == TensorType::q4_k)
    move_q4_k_unit<kToUnit>(unit, blk);
  else
    move_q6_k_unit<kToUnit>(unit, blk);
}

size_t block_bytes(TensorType standard) { return standard == TensorType::q4_k ? sizeof(BlockQ4_K) : sizeof(BlockQ6_K); }

}  // namespace

bool kx8_type_of(TensorType standard, TensorType* interleaved) {
  if (standard == TensorType::q4_k)
    *interleaved = TensorType::q4_kx8;
  else if (standard == TensorType::q6_k)
    *interleaved = TensorType::q6_kx8;
  else
    return false;
  return true;
}

bool kx8_standard_type(TensorType interleaved, TensorType* standard) {
  if (interleaved == TensorType::q4_kx8)
    *standard = TensorType::q4_k;
  else if (interleaved == TensorType::q6_kx8)
    *standard = TensorType::q6_k;
  else
    return false;
  return true;
}

void interleave_kx8(TensorType standard, const uint8_t* src, uint64_t n_rows, uint64_t n_cols, uint8_t* dst) {
  const size_t bb = block_bytes(standard), nb = n_cols / kQK, row_bytes = nb * bb;
  for (uint64_t g = 0; g < n_rows / kKx8Rows; ++g) {
    const uint8_t* rows = src + g * kKx8Rows * row_bytes;
    for (size_t b = 0; b < nb; ++b)
      move_unit<true>(standard, dst + (g * nb + b) * kKx8Rows * bb,
                      [&](size_t j) { return const_cast<uint8_t*>(rows + j * row_bytes + b * bb); });
  }
}

void interleave_kx8_in_place(TensorType standard, uint8_t* data, uint64_t n_rows, uint64_t n_cols) {
  const size_t group_bytes = kKx8Rows * (n_cols / kQK) * block_bytes(standard);
  std::vector<uint8_t> copy(group_bytes);
  for (uint64_t g = 0; g < n_rows / kKx8Rows; ++g) {
    uint8_t* group = data + g * group_bytes;
    std::memcpy(copy.data(), group, group_bytes);
    interleave_kx8(standard, copy.data(), kKx8Rows, n_cols, group);
  }
}

void deinterleave_kx8_group(TensorType standard, const uint8_t* group, size_t b0, size_t n_blocks, uint8_t* dst) {
  const size_t bb = block_bytes(standard);
  for (size_t b = 0; b < n_blocks; ++b)
    move_unit<false>(standard, const_cast<uint8_t*>(group + (b0 + b) * kKx8Rows * bb),
                     [&](size_t j) { return dst + (j * n_blocks + b) * bb; });
}

void deinterleave_kx8(TensorType standard, const uint8_t* src, uint64_t n_rows, uint64_t n_cols, uint8_t* dst) {
  const size_t nb = n_cols / kQK, group_bytes = kKx8Rows * nb * block_bytes(standard);
  for (uint64_t g = 0; g < n_rows / kKx8Rows; ++g)
    deinterleave_kx8_group(standard, src + g * group_bytes, 0, nb, dst + g * group_bytes);
}

}  // namespace lmrt
