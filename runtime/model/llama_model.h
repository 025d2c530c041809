// A decoder-only model of any architecture in arch_table.h: its ModelConfig and views of its weights,
// which point straight into the GGUF mapping (fused tensors as row views, never copies). Immutable after load; shared
// by any number of contexts and threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model/gguf_file.h"
#include "runtime/model/model_config.h"
#include "runtime/util/huge_page_buffer.h"
#include "runtime/util/status.h"

namespace lmrt {

// A 2-D weight: n_rows rows of n_cols elements, rows row_bytes apart.
struct WeightView {
  TensorType type = TensorType::f32;
  const uint8_t* data = nullptr;
  uint64_t n_cols = 0;
  uint64_t n_rows = 0;
  uint64_t row_bytes = 0;
};

// Optional parts are nullptr when the architecture or the file has none.
struct LayerWeights {
  const float* attn_norm = nullptr;
  WeightView wq, wk, wv, wo;                                               // row views of attn_qkv when fused
  const float *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;  // biases
  const float *q_norm = nullptr, *k_norm = nullptr;                        // per-head RMSNorm weights [head_dim]
  const float* post_attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  WeightView w_gate, w_up, w_down;  // gate and up are row views of ffn_up when fused
  const float* post_ffn_norm = nullptr;
};

class LlamaModel {
 public:
  // Builds the model over a parsed GGUF file (taking ownership). Checks the architecture, every
  // hyper-parameter and every tensor's presence, shape and type. Errors: unsupported (another
  // architecture), bad_format (missing or mis-shaped tensors, inconsistent hyper-parameters).
  // repack: rewrite the Q4_0 / Q4_K / Q6_K matrices into the interleaved layouts, kept in a buffer of the
  // model's own for a mapped file (runtime/model/weight_repack.h); by default when the best kernel table has kernels
  // for them and LMRT_REPACK is not 0. The views of a rewritten matrix then carry the interleaved type; gguf() keeps
  // the file's.
  static Status load(std::unique_ptr<GgufFile> gguf, std::unique_ptr<LlamaModel>* out);
  static Status load(std::unique_ptr<GgufFile> gguf, bool repack, std::unique_ptr<LlamaModel>* out);

  const ModelConfig& hparams() const { return hp_; }
  const ModelConfig& config() const { return hp_; }
  const GgufFile& gguf() const { return *gguf_; }
  const WeightView& token_embd() const { return tok_embd_; }
  const float* output_norm() const { return output_norm_; }
  const WeightView& output() const { return output_; }  // token_embd when tied
  bool tied_output() const { return tied_output_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  // RoPE frequency factors [rope_dim / 2] (each angle is divided by its factor), or nullptr: Llama 3's
  // rope_freqs.weight, else LongRoPE's long factors for contexts beyond rope_orig_ctx and short ones below.
  const float* rope_factors(uint32_t n_ctx) const;
  uint64_t n_params() const { return n_params_; }
  // How many matrices (and bytes) load rewrote into the x8 layouts, and how long it took.
  uint32_t repacked_tensors() const { return repacked_tensors_; }
  uint64_t repacked_bytes() const { return repacked_bytes_; }
  double repack_seconds() const { return repack_seconds_; }

  // Writes the embedding row of `token` as floats (n_embd of them).
  void embed(int32_t token, float* out) const;

 private:
  LlamaModel() = default;
  Status init();
  Status weight(const std::string& name, uint64_t n_cols, uint64_t n_rows, WeightView* out) const;
  Status norm(const std::string& name, const float** out) { return vector(name, hp_.n_embd, out); }
  // A 1-D F32 (or converted) tensor of n floats; `optional`: absent gives nullptr.
  Status vector(const std::string& name, uint32_t n, const float** out, bool optional = false);
  // Rows [r0, r0 + n) of `w` as a view of its own (fused Q/K/V, gate/up).
  Status row_view(const WeightView& w, const std::string& name, uint64_t r0, uint64_t n, WeightView* out) const;

  std::unique_ptr<GgufFile> gguf_;
  ModelConfig hp_;
  WeightView tok_embd_;
  WeightView output_;
  bool tied_output_ = false;
  const float* output_norm_ = nullptr;
  std::vector<LayerWeights> layers_;
  HugePageBuffer repacked_weights_;  // the interleaved matrices of a mapped file, which the views point into
  uint32_t repacked_tensors_ = 0;
  uint64_t repacked_bytes_ = 0;
  double repack_seconds_ = 0.0;
  uint64_t n_params_ = 0;
  const float *rope_freqs_ = nullptr, *rope_short_ = nullptr, *rope_long_ = nullptr;
  // The norm and bias vectors, as F32 copies of the file's (they are tiny).
  std::vector<std::vector<float>> converted_norms_;
};

}  // namespace lmrt
