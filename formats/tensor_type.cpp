#include "formats/tensor_type.h"

namespace lmrt {

bool tensor_type_from_id(uint32_t id, TensorType* out) {
  switch (id) {
    case 0:
    case 1:
    case 2:
    case 8:
    case 30:
    case 4098:
      *out = static_cast<TensorType>(id);
      return true;
    default:
      return false;
  }
}

TensorTypeTraits tensor_type_traits(TensorType type) {
  switch (type) {
    case TensorType::f32:
      return {"F32", 1, 4};
    case TensorType::f16:
      return {"F16", 1, 2};
    case TensorType::bf16:
      return {"BF16", 1, 2};
    case TensorType::q4_0:
      return {"Q4_0", 32, 18};
    case TensorType::q4_1:
      return {"Q4_1", 32, 20};
    case TensorType::q5_0:
      return {"Q5_0", 32, 22};
    case TensorType::q5_1:
      return {"Q5_1", 32, 24};
    case TensorType::q8_0:
      return {"Q8_0", 32, 34};
    case TensorType::q2_k:
      return {"Q2_K", 256, 84};
    case TensorType::q3_k:
      return {"Q3_K", 256, 110};
    case TensorType::q4_k:
      return {"Q4_K", 256, 144};
    case TensorType::q5_k:
      return {"Q5_K", 256, 176};
    case TensorType::q6_k:
      return {"Q6_K", 256, 210};
    case TensorType::iq4_nl:
      return {"IQ4_NL", 32, 18};
    case TensorType::iq4_xs:
      return {"IQ4_XS", 256, 136};
    case TensorType::q4_0x16:
      return {"Q4_0x16", 32, 18};
  }
  return {"?", 1, 1};
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

}  // namespace lmrt
