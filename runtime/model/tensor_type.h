// The tensor element types lmrt reads, with their GGUF ids and block geometry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace lmrt {

enum class TensorType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q8_0 = 8,
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

// Q4_0: 32 weights as 4-bit unsigned nibbles with an fp16 scale; value = (q - 8) * d.
// qs[j] low nibble is element j, high nibble element j + 16.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q8_0: 32 int8 weights with an fp16 scale; value = q * d.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
static_assert(sizeof(BlockQ8_0) == 34);

}  // namespace lmrt
