// Q4_0x16: lmrt's interleaved Q4_0 layout, for files written by `lmrt quantize --interleave`.
//
// A matrix of Q4_0 rows (n_rows a multiple of 16, n_cols a multiple of 32) is stored as groups of 16
// consecutive rows; each group holds its rows' blocks column by column, one 288-byte unit per block
// index b:
//   bytes [0, 32)        the 16 rows' fp16 scales d (row j at 2j)
//   bytes [32 + 64c, 32 + 64c + 64), c = 0..3: for row j, the 4 bytes qs[4c .. 4c + 3] of its standard
//                        Q4_0 block at 4j (low nibbles: elements 4c..4c+3, high: 16+4c..16+4c+3)
// so one 64-byte load gives a 32-bit lane per row, the layout a 16-lane int8 dot product wants, and a
// whole matrix is read as one sequential stream. Values and bytes are exactly those of the standard
// blocks (same size on disk), only their order differs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lmrt {

inline constexpr uint32_t kQ4_0x16Rows = 16;      // rows per group
inline constexpr size_t kQ4_0x16UnitBytes = 288;  // one block index of a group (16 x 18 bytes)

// Rewrites n_rows standard Q4_0 rows of n_cols elements at src into Q4_0x16 at dst (same size).
void interleave_q4_0(const uint8_t* src, uint64_t n_rows, uint64_t n_cols, uint8_t* dst);
// interleave_q4_0 where the rows are (a group at a time through a copy of it): the repacking at load.
void interleave_q4_0_in_place(uint8_t* data, uint64_t n_rows, uint64_t n_cols);
// The inverse: Q4_0x16 at src back to standard Q4_0 rows at dst.
void deinterleave_q4_0x16(const uint8_t* src, uint64_t n_rows, uint64_t n_cols, uint8_t* dst);
// Blocks [b0, b0 + n_blocks) of the 16 rows of one group (its units start at `group`) as standard Q4_0
// rows of n_blocks blocks each, row j at dst + j * n_blocks * 18 (a slice of deinterleave_q4_0x16).
void deinterleave_q4_0x16_group(const uint8_t* group, size_t b0, size_t n_blocks, uint8_t* dst);

}  // namespace lmrt
