#include "formats/dequantize.h"

namespace lmrt {

void dequantize_row(TensorType type, const uint8_t* row, float* out, size_t n) {
  if (const DequantizeRowFn f = tensor_type_traits(type).dequantize_row) f(row, out, n);
}

}  // namespace lmrt
