// `lmrt quantize --interleave`: rewrites a GGUF model so that its Q4_0 weight matrices are stored as
// lmrt's interleaved Q4_0x16 (formats/q4_0x16.h), which the decode kernels stream straight from
// the mapping. Only lmrt reads the result: Q4_0x16 has a GGUF type id outside ggml's range.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/util/status.h"

namespace lmrt {

// Metadata key set to true (bool) in every file interleave_model_file writes.
inline constexpr const char* kInterleavedKey = "lmrt.interleaved";

struct InterleaveReport {
  uint64_t tensors_converted = 0;  // Q4_0 matrices rewritten as Q4_0x16
  uint64_t tensors_copied = 0;     // every other tensor, byte for byte
  uint64_t bytes_converted = 0;    // tensor data bytes of the converted tensors (unchanged in size)
  uint64_t bytes_copied = 0;       // tensor data bytes of the copied tensors
  uint64_t output_bytes = 0;       // size of the written file
};

// Copies the GGUF model at in_path to out_path (GGUF v3) with every metadata key and value as it was
// (plus kInterleavedKey), the same alignment and every tensor in the same order, name and shape. A
// tensor becomes Q4_0x16 when it is Q4_0, 2-D, its row count ne[1] is a multiple of 16 and it is not
// token_embd.weight (embeddings are read one row at a time); all other tensors are copied unchanged.
// The file is written through out_path.tmp and renamed, so out_path is either the whole new model or
// untouched. `report` may be null.
// Errors: io, bad_format, unsupported (the input cannot be opened or parsed: GgufFile::open's errors);
// invalid_argument (out_path is the input file, the input already holds Q4_0x16 tensors, or it has no
// Q4_0 matrix to convert: writing a copy that is not faster would only hide a mistake); io (out_path
// cannot be written); out_of_memory.
Status interleave_model_file(const std::string& in_path, const std::string& out_path, InterleaveReport* report);

}  // namespace lmrt
