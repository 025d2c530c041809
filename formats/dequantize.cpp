#include "formats/dequantize.h"

#include <cstring>

#include "runtime/util/fp16.h"

namespace lmrt {

void dequantize_row(TensorType type, const uint8_t* row, float* out, size_t n) {
  switch (type) {
    case TensorType::f32:
      std::memcpy(out, row, n * sizeof(float));
      return;
    case TensorType::f16:
    case TensorType::bf16: {
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        out[i] = type == TensorType::f16 ? fp16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    }
    case TensorType::q8_0: {
      for (size_t b = 0; b < n / 32; ++b) {
        BlockQ8_0 blk;
        std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
        const float d = fp16_to_f32(blk.d);
        for (int j = 0; j < 32; ++j) out[b * 32 + j] = d * blk.qs[j];
      }
      return;
    }
    case TensorType::q4_0x16:  // rows are interleaved in groups of 16: never row-addressable (the loader
      break;                   // refuses it where a row is read alone: embeddings, norms)
    case TensorType::q4_0: {
      for (size_t b = 0; b < n / 32; ++b) {
        BlockQ4_0 blk;
        std::memcpy(&blk, row + b * sizeof blk, sizeof blk);
        const float d = fp16_to_f32(blk.d);
        for (int j = 0; j < 16; ++j) {
          out[b * 32 + j] = d * (static_cast<int>(blk.qs[j] & 0x0F) - 8);
          out[b * 32 + j + 16] = d * (static_cast<int>(blk.qs[j] >> 4) - 8);
        }
      }
      return;
    }
  }
}

}  // namespace lmrt
