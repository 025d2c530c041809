#include "formats/float_types.h"

#include <cstdint>
#include <cstring>

#include "runtime/util/fp16.h"

namespace lmrt {

void dequantize_row_f32(const void* x, float* y, size_t n) { std::memcpy(y, x, n * sizeof(float)); }

void dequantize_row_f16(const void* x, float* y, size_t n) {
  const auto* b = static_cast<const uint8_t*>(x);  // rows inside a GGUF file need not be 2-byte aligned
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, b + 2 * i, 2);
    y[i] = fp16_to_f32(h);
  }
}

void dequantize_row_bf16(const void* x, float* y, size_t n) {
  const auto* b = static_cast<const uint8_t*>(x);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, b + 2 * i, 2);
    y[i] = bf16_to_f32(h);
  }
}

}  // namespace lmrt
