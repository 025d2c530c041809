// Converts rows of any supported tensor type to float32 (embedding look-ups, tests, tools).
#pragma once

#include <cstddef>
#include <cstdint>

#include "formats/tensor_type.h"

namespace lmrt {

// Writes n floats from `row` (n elements of `type`; n a multiple of the block size).
void dequantize_row(TensorType type, const uint8_t* row, float* out, size_t n);

}  // namespace lmrt
