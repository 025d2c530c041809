// The tensor element types lmrt reads, described once: GGUF id, block geometry, the activation format
// their matmuls take, and their scalar conversions. The loader, the kernels' dispatch, the C ABI's model
// info and the tests all read this table (ggml-cpu's type_traits idea); a new type is one row here plus
// its format file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
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
  // lmrt's own: Q4_0 blocks of 16 rows interleaved (formats/q4_0x16.h), written by
  // `lmrt quantize --interleave`. Outside ggml's id range, so other readers refuse the file.
  q4_0x16 = 4098,
  // lmrt's in-memory only: Q4_K / Q6_K matrices repacked at load into groups of 8 interleaved rows
  // (formats/k_quants_x8.h). Never read from nor written to a file.
  q4_kx8 = 4099,
  q6_kx8 = 4100,
};

// What a weight type's integer kernels multiply it with (as in llama.cpp's vec_dot_type). The kernel
// table says which input each of its kernels actually takes (simd::Matmul::input); this is the format the
// type's fast kernels are written for.
enum class ActivationFormat : uint8_t {
  f32,    // float rows (F32, F16, BF16, and Q8_0: lmrt keeps float activations for 8-bit weights)
  q8_32,  // simd::BlockQ8Act: 32 int8 with a float scale (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_0x16)
  q8_k,   // BlockQ8_K: 256 int8 with a float scale and 16-element sums (Q2_K..Q6_K, IQ4_XS)
};

// n elements of a row (n a multiple of block_size), from the first block of the row; no alignment needed.
using DequantizeRowFn = void (*)(const void* x, float* y, size_t n);
using QuantizeRowFn = void (*)(const float* x, void* y, size_t n);

struct TensorTypeTraits {
  TensorType type;
  const char* name;      // ggml's spelling: "Q4_K", "IQ4_XS"
  uint32_t ggml_id;      // the GGUF tensor type id
  uint32_t block_size;   // elements per block
  uint32_t block_bytes;  // bytes per block
  ActivationFormat activation;
  DequantizeRowFn dequantize_row;  // nullptr when rows are not addressable alone (Q4_0x16, Q4_Kx8, Q6_Kx8)
  QuantizeRowFn quantize_row;      // nullptr where lmrt has no quantizer for the type yet
};

// Every type lmrt reads, in ggml id order.
std::span<const TensorTypeTraits> all_tensor_types();
// Returns false for a GGUF type id lmrt does not support (and for the in-memory types Q4_Kx8 and Q6_Kx8).
bool tensor_type_from_id(uint32_t id, TensorType* out);
const TensorTypeTraits& tensor_type_traits(TensorType type);
// Bytes of a row of n elements (n a multiple of the block size).
inline size_t tensor_row_bytes(TensorType type, size_t n) {
  const TensorTypeTraits& t = tensor_type_traits(type);
  return n / t.block_size * t.block_bytes;
}
// A readable name for any GGUF/ggml type id, supported or not ("Q4_K", "type 99").
std::string ggml_type_name(uint32_t id);
// The supported types' names, comma-separated (for error messages).
std::string supported_tensor_type_names();

}  // namespace lmrt
