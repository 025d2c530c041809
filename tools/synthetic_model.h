// Deterministic synthetic llama models of real shapes (random weights, a real vocabulary), written
// as GGUF v3 files that lmrt and llama.cpp both load. Used by `lmrt bench --synthetic` and tests, so
// benchmarks can run on the shape of a real model without shipping its weights.
#pragma once

#include <cstdint>
#include <string>

#include "formats/tensor_type.h"
#include "runtime/util/status.h"

namespace lmrt {

struct SyntheticShape {
  uint32_t dim = 0;
  uint32_t layers = 0;
  uint32_t heads = 0;
  uint32_t kv_heads = 0;
  uint32_t ffn = 0;
  uint32_t vocab = 32000;
  uint32_t ctx = 2048;
};

struct SyntheticOptions {
  TensorType weight_type = TensorType::q4_0;  // every 2-D weight, embeddings and output included
  uint64_t seed = 1234;
  float std = 0.02f;  // weights ~ N(0, std^2) (approximately: a sum of four uniforms)
  // llama2.c-format tokenizer.bin whose pieces become the vocabulary (the first `vocab` pieces; padded
  // with unused tokens when vocab is larger).
  std::string tokenizer_path;
};

// Named shapes: "tinyllama-1.1b" (2048/22/32/4/5632) and "110m" (768/12/12/12/2048), vocab 32000.
// Errors: invalid_argument for another name.
Status synthetic_shape(const std::string& name, SyntheticShape* out);

// Checks the shape: dim % heads == 0, heads % kv_heads == 0, dim and ffn multiples of 32, head size
// even, 259 <= vocab (unk, BOS, EOS and 256 byte tokens). Errors: invalid_argument.
Status check_synthetic_shape(const SyntheticShape& shape);

// Writes the model to `path`. Same shape and options give byte-identical files.
// Errors: invalid_argument, io, bad_format (unreadable tokenizer), out_of_memory.
Status write_synthetic_model(const std::string& path, const SyntheticShape& shape, const SyntheticOptions& options);

}  // namespace lmrt
