// A llama-architecture model: hyper-parameters from llama.* metadata and views of its weights,
// which point straight into the GGUF mapping. Immutable after load; shared by any number of
// contexts and threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model/gguf_file.h"
#include "runtime/util/status.h"

namespace lmrt {

struct LlamaHparams {
  uint32_t n_vocab = 0;
  uint32_t n_embd = 0;
  uint32_t n_ff = 0;
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;  // n_embd / n_head
  uint32_t n_ctx_train = 0;
  uint32_t rope_dim = 0;  // leading dimensions of each head that RoPE rotates
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;

  uint32_t kv_dim() const { return n_head_kv * head_dim; }
};

// A 2-D weight: n_rows rows of n_cols elements, rows row_bytes apart.
struct WeightView {
  TensorType type = TensorType::f32;
  const uint8_t* data = nullptr;
  uint64_t n_cols = 0;
  uint64_t n_rows = 0;
  uint64_t row_bytes = 0;
};

struct LayerWeights {
  const float* attn_norm = nullptr;
  WeightView wq, wk, wv, wo;
  const float* ffn_norm = nullptr;
  WeightView w_gate, w_up, w_down;
};

class LlamaModel {
 public:
  // Builds the model over a parsed GGUF file (taking ownership). Checks the architecture, every
  // hyper-parameter and every tensor's presence, shape and type. Errors: unsupported (another
  // architecture), bad_format (missing or mis-shaped tensors, inconsistent hyper-parameters).
  static Status load(std::unique_ptr<GgufFile> gguf, std::unique_ptr<LlamaModel>* out);

  const LlamaHparams& hparams() const { return hp_; }
  const GgufFile& gguf() const { return *gguf_; }
  const WeightView& token_embd() const { return tok_embd_; }
  const float* output_norm() const { return output_norm_; }
  const WeightView& output() const { return output_; }  // token_embd when tied
  bool tied_output() const { return tied_output_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  uint64_t n_params() const { return n_params_; }

  // Writes the embedding row of `token` as floats (n_embd of them).
  void embed(int32_t token, float* out) const;

 private:
  LlamaModel() = default;
  Status init();
  Status weight(const std::string& name, uint64_t n_cols, uint64_t n_rows, WeightView* out) const;
  Status norm(const std::string& name, const float** out);

  std::unique_ptr<GgufFile> gguf_;
  LlamaHparams hp_;
  WeightView tok_embd_;
  WeightView output_;
  bool tied_output_ = false;
  const float* output_norm_ = nullptr;
  std::vector<LayerWeights> layers_;
  uint64_t n_params_ = 0;
  // Norm vectors stored as F16/BF16 in the file, converted once (they are tiny).
  std::vector<std::vector<float>> converted_norms_;
};

}  // namespace lmrt
