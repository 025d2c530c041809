#include "formats/quantize.h"

#include <cstdint>
#include <cstring>

#include "runtime/util/fp16.h"

namespace lmrt {

void quantize_row_f32(const float* x, void* out, size_t n) { std::memcpy(out, x, n * sizeof(float)); }

void quantize_row_f16(const float* x, void* out, size_t n) {
  auto* y = static_cast<uint8_t*>(out);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = f32_to_fp16(x[i]);
    std::memcpy(y + 2 * i, &h, 2);
  }
}

QuantizeRowFn quantize_fn_for(TensorType type) { return tensor_type_traits(type).quantize_row; }

}  // namespace lmrt
