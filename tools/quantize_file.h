// `lmrt quantize -m IN -o OUT TYPE`: rewrites an F32/F16/BF16 (or Q8_0) GGUF model with its matrices
// quantized to one of llama.cpp's file types, tensor by tensor as llama.cpp's quantizer does it (the
// per-tensor type rules of quantize_rules.h, the quantizers of formats/quantize.h), so that the result
// has llama.cpp's type mix and bytes and loads in llama.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "runtime/util/status.h"
#include "tools/quantize_rules.h"

namespace lmrt {

struct QuantizeFileOptions {
  QuantFileType file_type = QuantFileType::q4_k_m;
  size_t n_threads = 1;  // threads quantizing the rows of each tensor (the caller counts as one)
  // Called on the calling thread with the input tensor bytes done so far and in all: after each tensor
  // and, within a tensor being quantized, after each chunk of rows the calling thread quantizes.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct QuantizeFileReport {
  uint64_t tensors_quantized = 0;               // tensors written in another type than they had
  uint64_t tensors_copied = 0;                  // tensors copied byte for byte
  uint64_t input_bytes = 0;                     // tensor data bytes read
  uint64_t output_bytes = 0;                    // size of the written file
  std::map<std::string, uint32_t> type_counts;  // tensors per type name in the output ("Q4_K": 25)
};

// Writes out_path: every metadata key of in_path (general.file_type set to the file type and
// general.quantization_version to 2, as llama.cpp does; split keys dropped), the same alignment, the
// tensors in llama.cpp's order (llama_tensor_order) with the types plan_tensor_types chooses. The file
// is written through out_path.tmp and renamed when complete, so out_path is either the whole new model
// or untouched. `report` may be null.
// Errors: GgufFile::open's (io, bad_format, unsupported); invalid_argument (out_path is the input, or
// exists and is not a regular file; n_threads is 0); unsupported (a tensor to quantize is neither F32,
// F16, BF16 nor Q8_0: quantizing already-quantized weights again compounds the error); bad_format (a
// tensor to quantize holds a NaN or an infinity, or the model has no architecture or block count); io;
// out_of_memory.
Status quantize_model_file(const std::string& in_path, const std::string& out_path, const QuantizeFileOptions& options,
                           QuantizeFileReport* report);

}  // namespace lmrt
