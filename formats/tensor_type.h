// The tensor element types lmrt reads, with their GGUF ids and block geometry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/blocks.h"

namespace lmrt {

enum class TensorType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  iq4_nl = 20,
  iq4_xs = 23,
  bf16 = 30,
  // lmrt's own: Q4_0 blocks of 16 rows interleaved (runtime/model/q4_0x16.h), written by
  // `lmrt quantize --interleave`. Outside ggml's id range, so other readers refuse the file.
  q4_0x16 = 4098,
};

struct TensorTypeTraits {
  const char* name;
  uint32_t block_size;   // elements per block
  uint32_t block_bytes;  // bytes per block
};

// Returns false for a GGUF type id lmrt does not support.
bool tensor_type_from_id(uint32_t id, TensorType* out);
TensorTypeTraits tensor_type_traits(TensorType type);
// A readable name for any GGUF/ggml type id, supported or not ("Q4_K", "type 99").
std::string ggml_type_name(uint32_t id);

}  // namespace lmrt
