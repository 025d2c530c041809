// Which weight type each tensor of a model gets when it is quantized to one of llama.cpp's file types
// (Q4_K_M, Q5_K_S, IQ4_XS, ...): llama.cpp's llama_tensor_get_type without an importance matrix, so that
// `lmrt quantize` writes the same type mix as `llama-quantize` (Q6_K output, more bits on some attn_v
// and ffn_down layers, the fallbacks where a row length is not a multiple of 256, 1-D tensors untouched).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "formats/tensor_type.h"
#include "runtime/model/gguf_file.h"
#include "runtime/util/status.h"

namespace lmrt {

// llama.cpp's llama_ftype values, as stored in general.file_type.
enum class QuantFileType : uint32_t {
  q4_0 = 2,
  q4_1 = 3,
  q8_0 = 7,
  q5_0 = 8,
  q5_1 = 9,
  q2_k = 10,
  q3_k_s = 11,
  q3_k_m = 12,
  q3_k_l = 13,
  q4_k_s = 14,
  q4_k_m = 15,
  q5_k_s = 16,
  q5_k_m = 17,
  q6_k = 18,
  iq4_nl = 25,
  iq4_xs = 30,
};

// Parses a file type name as llama-quantize spells it ("Q4_K_M", case-insensitive).
bool quant_file_type_from_name(std::string_view name, QuantFileType* out);
const char* quant_file_type_name(QuantFileType type);
// Every supported name, comma-separated (for usage and errors).
std::string quant_file_type_names();
// The type of most matrices of a file type (Q4_K for Q4_K_M).
TensorType quant_file_type_base(QuantFileType type);

// The model facts the rules read.
struct QuantModelShape {
  std::string arch;  // general.architecture
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t n_expert = 0;
};

// Reads the shape from a GGUF's metadata. Errors: bad_format (no architecture or block count).
Status quant_model_shape(const GgufFile& file, QuantModelShape* out);

struct QuantTensor {
  std::string name;
  uint32_t n_dims = 0;
  uint64_t row_length = 0;  // ne[0]
  TensorType type = TensorType::f32;
};

// The order llama.cpp visits (and writes) tensors: by layer number (tensors outside blk.N first), then
// by name. The per-layer rules count attn_v and ffn_down tensors in this order.
std::vector<size_t> llama_tensor_order(const std::vector<QuantTensor>& tensors);

// The target type of every tensor (indexed as `tensors`). A tensor that is not quantized (1-D, a norm,
// not named *weight) keeps its type.
std::vector<TensorType> plan_tensor_types(QuantFileType file_type, const QuantModelShape& shape,
                                          const std::vector<QuantTensor>& tensors);

}  // namespace lmrt
