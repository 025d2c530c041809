// Converts rows of any row-addressable tensor type to float32 (embedding look-ups, norms, tests, tools):
// the type's dequantize_row from the traits table.
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/tensor_type.h"

namespace lmrt {

// Writes n floats from `row` (n elements of `type`; n a multiple of the block size). Writes nothing for a
// type whose rows are not addressable alone (Q4_0x16: the loader refuses it where a row is read alone).
void dequantize_row(TensorType type, const uint8_t* row, float* out, size_t n);

}  // namespace lmrt
