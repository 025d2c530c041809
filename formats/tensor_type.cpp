#include "formats/tensor_type.h"

#include "formats/float_types.h"
#include "formats/iq4.h"
#include "formats/k_quants.h"
#include "formats/legacy_quants.h"
#include "formats/quantize.h"

namespace lmrt {

namespace {

using A = ActivationFormat;
using T = TensorType;

constexpr TensorTypeTraits kTypes[] = {
    {T::f32, "F32", 0, 1, 4, A::f32, dequantize_row_f32, quantize_row_f32},
    {T::f16, "F16", 1, 1, 2, A::f32, dequantize_row_f16, quantize_row_f16},
    {T::q4_0, "Q4_0", 2, 32, 18, A::q8_32, dequantize_row_q4_0, quantize_row_q4_0},
    {T::q4_1, "Q4_1", 3, 32, 20, A::q8_32, dequantize_row_q4_1, quantize_row_q4_1},
    {T::q5_0, "Q5_0", 6, 32, 22, A::q8_32, dequantize_row_q5_0, quantize_row_q5_0},
    {T::q5_1, "Q5_1", 7, 32, 24, A::q8_32, dequantize_row_q5_1, quantize_row_q5_1},
    {T::q8_0, "Q8_0", 8, 32, 34, A::f32, dequantize_row_q8_0, quantize_row_q8_0},
    {T::q2_k, "Q2_K", 10, kQK, 84, A::q8_k, dequantize_row_q2_k, quantize_row_q2_k},
    {T::q3_k, "Q3_K", 11, kQK, 110, A::q8_k, dequantize_row_q3_k, quantize_row_q3_k},
    {T::q4_k, "Q4_K", 12, kQK, 144, A::q8_k, dequantize_row_q4_k, quantize_row_q4_k},
    {T::q5_k, "Q5_K", 13, kQK, 176, A::q8_k, dequantize_row_q5_k, quantize_row_q5_k},
    {T::q6_k, "Q6_K", 14, kQK, 210, A::q8_k, dequantize_row_q6_k, quantize_row_q6_k},
    {T::iq4_nl, "IQ4_NL", 20, 32, 18, A::q8_32, dequantize_row_iq4_nl, quantize_row_iq4_nl},
    {T::iq4_xs, "IQ4_XS", 23, kQK, 136, A::q8_k, dequantize_row_iq4_xs, quantize_row_iq4_xs},
    {T::bf16, "BF16", 30, 1, 2, A::f32, dequantize_row_bf16, nullptr},
    {T::q4_0x16, "Q4_0x16", 4098, 32, 18, A::q8_32, nullptr, nullptr},
    // Sizes per row-equivalent block: a group of 8 rows spans 8 standard rows' bytes.
    {T::q4_kx8, "Q4_Kx8", 4099, kQK, 144, A::q8_k, nullptr, nullptr},
    {T::q6_kx8, "Q6_Kx8", 4100, kQK, 210, A::q8_k, nullptr, nullptr},
};

// Every row matches its enum value, and the block sizes match the block structs.
constexpr bool table_is_consistent() {
  for (const TensorTypeTraits& t : kTypes)
    if (static_cast<uint32_t>(t.type) != t.ggml_id) return false;
  return true;
}
static_assert(table_is_consistent());
static_assert(sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 &&
              sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockIQ4_XS) == 136);

}  // namespace

std::span<const TensorTypeTraits> all_tensor_types() { return kTypes; }

bool tensor_type_from_id(uint32_t id, TensorType* out) {
  // The repacked K-quants exist only in memory: a file naming them is refused like an unknown type.
  if (id == static_cast<uint32_t>(T::q4_kx8) || id == static_cast<uint32_t>(T::q6_kx8)) return false;
  for (const TensorTypeTraits& t : kTypes)
    if (t.ggml_id == id) {
      *out = t.type;
      return true;
    }
  return false;
}

const TensorTypeTraits& tensor_type_traits(TensorType type) {
  for (const TensorTypeTraits& t : kTypes)
    if (t.type == type) return t;
  return kTypes[0];  // unreachable for a TensorType made by tensor_type_from_id
}

std::string ggml_type_name(uint32_t id) {
  // ggml's type ids, so that an unsupported file is named precisely in errors.
  static const char* const kNames[] = {
      "F32",   "F16",    "Q4_0", "Q4_1", "Q4_2", "Q4_3",    "Q5_0",   "Q5_1",    "Q8_0",  "Q8_1",   "Q2_K",
      "Q3_K",  "Q4_K",   "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",
      "IQ2_S", "IQ4_XS", "I8",   "I16",  "I32",  "I64",     "F64",    "IQ1_M",   "BF16",
  };
  if (id < sizeof(kNames) / sizeof(kNames[0])) return kNames[id];
  return "type " + std::to_string(id);
}

std::string supported_tensor_type_names() {
  std::string s;
  for (const TensorTypeTraits& t : kTypes) {
    if (!s.empty()) s += ", ";
    s += t.name;
  }
  return s;
}

}  // namespace lmrt
