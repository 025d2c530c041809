// The architectures lmrt runs, one row each: what the architecture's GGUF files hold beyond Llama 2's
// layout (which tensors, which keys) and the fixed choices llama.cpp makes for it. read_model_config()
// turns a row and a file's `{arch}.*` keys into a ModelConfig.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/model/gguf_file.h"
#include "runtime/model/model_config.h"
#include "runtime/util/status.h"

namespace lmrt {

struct ArchTable {
  const char* name;  // general.architecture, also the prefix of its keys
  Arch arch;
  RopeStyle rope_style;
  Activation activation;
  bool post_norms;       // post_attention_norm and post_ffw_norm tensors
  bool qk_norm;          // attn_q_norm and attn_k_norm tensors [head_dim]
  bool fused_qkv;        // attn_qkv instead of attn_q, attn_k, attn_v
  bool fused_gate_up;    // ffn_up [2 n_ff rows] instead of ffn_gate and ffn_up
  bool embd_scale_sqrt;  // embeddings times sqrt(n_embd)
  bool softcaps;         // reads {arch}.attn_logit_softcapping and {arch}.final_logit_softcapping
  uint32_t swa_pattern;  // see ModelConfig::swa_pattern; 0: no windowed layers
  uint32_t big_n_layer;  // gemma: at this block count (27B) q is scaled by 1/sqrt(n_embd / n_head) as llama.cpp does
};

// The row for a general.architecture value, or nullptr.
const ArchTable* find_arch(std::string_view name);
// "llama, qwen2, ..." for error messages.
std::string supported_arch_names();

// Reads general.architecture and the `{arch}.*` keys into *out (everything but n_vocab and tied_output,
// which come from the tensors). Errors: unsupported (another architecture, named), bad_format (missing or
// inconsistent keys).
Status read_model_config(const GgufFile& g, ModelConfig* out);

}  // namespace lmrt
