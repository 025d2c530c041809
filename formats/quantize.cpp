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

QuantizeRowFn quantize_fn_for(TensorType type) {
  switch (type) {
    case TensorType::f32:
      return quantize_row_f32;
    case TensorType::f16:
      return quantize_row_f16;
    case TensorType::q4_0:
      return quantize_row_q4_0;
    case TensorType::q4_1:
      return quantize_row_q4_1;
    case TensorType::q5_0:
      return quantize_row_q5_0;
    case TensorType::q5_1:
      return quantize_row_q5_1;
    case TensorType::q8_0:
      return quantize_row_q8_0;
    case TensorType::q2_k:
      return quantize_row_q2_k;
    case TensorType::q3_k:
      return quantize_row_q3_k;
    case TensorType::q4_k:
      return quantize_row_q4_k;
    case TensorType::q5_k:
      return quantize_row_q5_k;
    case TensorType::q6_k:
      return quantize_row_q6_k;
    case TensorType::iq4_nl:
      return quantize_row_iq4_nl;
    case TensorType::iq4_xs:
      return quantize_row_iq4_xs;
    case TensorType::bf16:     // lmrt writes bf16 only by copying it
    case TensorType::q4_0x16:  // made from Q4_0 rows by interleave_q4_0
      return nullptr;
  }
  return nullptr;
}

}  // namespace lmrt
