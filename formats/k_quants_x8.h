// Q4_Kx8 and Q6_Kx8: lmrt's interleaved K-quants, made at load time from standard Q4_K / Q6_K matrices
// (n_rows a multiple of 8, n_cols a multiple of 256) so that a decode kernel reads one sequential stream
// per group of 8 rows and gets a lane per row from every load. Each group of 8 consecutive rows holds its
// rows' super-blocks column by column, one unit per block index b, exactly the size of the 8 standard
// blocks (a matrix is rewritten in place). The layout is fixed (other ISAs' kernels are written against it):
//
// Q4_Kx8 unit, 1152 bytes:
//   [0, 16)      d of rows 0..7 (fp16, row j at 2j)
//   [16, 32)     dmin of rows 0..7
//   [32, 128)    the 8 rows' 12-byte packed scale/min fields, in row order
//   [128, 1152)  16 sub-units of 64 bytes; sub-unit u = 4c + g (c = 64-element chunk 0..3, g = 0..3)
//                holds at 8j row j's 8 bytes qs[32c + 8g, 32c + 8g + 8) (low nibbles: elements
//                64c + 8g .. +7, high nibbles: 64c + 32 + 8g .. +7)
// Q6_Kx8 unit, 1680 bytes:
//   [0, 16)      d of rows 0..7 (fp16)
//   [16, 144)    int8 scales, sub-block major: scale s of row j at 8s + j
//   [144, 1168)  ql as 16 sub-units of 64 bytes: sub-unit u holds at 8j row j's ql[8u, 8u + 8)
//   [1168, 1680) qh as 8 such sub-units: sub-unit u holds at 8j row j's qh[8u, 8u + 8)
// Values and bytes are exactly those of the standard blocks; only their order differs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/tensor_type.h"

namespace lmrt {

inline constexpr uint32_t kKx8Rows = 8;            // rows per group
inline constexpr size_t kQ4_Kx8UnitBytes = 1152;   // 8 x sizeof(BlockQ4_K)
inline constexpr size_t kQ6_Kx8UnitBytes = 1680;   // 8 x sizeof(BlockQ6_K)
inline constexpr size_t kQ4_Kx8ScalesOffset = 32;  // byte offsets inside a Q4_Kx8 unit
inline constexpr size_t kQ4_Kx8QsOffset = 128;
inline constexpr size_t kQ6_Kx8ScalesOffset = 16;  // byte offsets inside a Q6_Kx8 unit
inline constexpr size_t kQ6_Kx8QlOffset = 144;
inline constexpr size_t kQ6_Kx8QhOffset = 1168;

// The interleaved type of a standard K-quant (q4_k -> q4_kx8, q6_k -> q6_kx8) and back; false for any
// other type.
bool kx8_type_of(TensorType standard, TensorType* interleaved);
bool kx8_standard_type(TensorType interleaved, TensorType* standard);

// Rewrites n_rows standard rows (Q4_K or Q6_K, n_cols elements) at src as the x8 layout at dst (same
// size). src and dst must not overlap; interleave_kx8_in_place rewrites a matrix where it is, one group
// at a time through a buffer of one group.
void interleave_kx8(TensorType standard, const uint8_t* src, uint64_t n_rows, uint64_t n_cols, uint8_t* dst);
void interleave_kx8_in_place(TensorType standard, uint8_t* data, uint64_t n_rows, uint64_t n_cols);
// The inverse: the x8 layout at src back to standard rows at dst.
void deinterleave_kx8(TensorType standard, const uint8_t* src, uint64_t n_rows, uint64_t n_cols, uint8_t* dst);
// Blocks [b0, b0 + n_blocks) of the 8 rows of one group (its units start at `group`) as standard rows of
// n_blocks blocks each, row j at dst + j * n_blocks * block_bytes (a slice of deinterleave_kx8).
void deinterleave_kx8_group(TensorType standard, const uint8_t* group, size_t b0, size_t n_blocks, uint8_t* dst);

}  // namespace lmrt
