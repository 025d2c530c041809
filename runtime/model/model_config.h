// One description of a decoder-only transformer: every field the forward pass branches on. A
// per-architecture table (arch_table.h) says which GGUF keys and tensors fill it in; the graph reads only
// this, never the architecture's name.
#pragma once

#include <cstdint>
#include <string>

namespace lmrt {

enum class Arch { llama, qwen2, qwen3, phi3, gemma2, gemma3 };

// How RoPE pairs a head's dimensions: (x[2i], x[2i+1]) as GGUF llama files store Q and K, or
// (x[i], x[i + rope_dim/2]) as GPT-NeoX and the models converted from Hugging Face without permuting.
enum class RopeStyle { adjacent_pairs, neox_halves };

// The gated feed-forward activation: silu(gate) * up, or gelu(gate) * up (tanh approximation).
enum class Activation { swiglu, gelu_tanh };

struct ModelConfig {
  Arch arch = Arch::llama;
  std::string arch_name = "llama";

  uint32_t n_vocab = 0;
  uint32_t n_embd = 0;
  uint32_t n_ff = 0;
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;  // {arch}.attention.key_length, else n_embd / n_head
  uint32_t n_ctx_train = 0;
  float rms_eps = 1e-5f;

  // RoPE: the leading rope_dim dimensions of each head turn by pos * freq_scale * base^(-2i / rope_dim) /
  // factor[i] (factors from rope_freqs.weight or LongRoPE's short/long factors, when the file has them).
  uint32_t rope_dim = 0;
  RopeStyle rope_style = RopeStyle::adjacent_pairs;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;       // 1 / {arch}.rope.scaling.factor for linear scaling
  float rope_freq_base_local = 0.0f;  // windowed layers' own base (gemma3), 0: rope_freq_base
  float rope_attn_factor = 1.0f;      // multiplies cos and sin (LongRoPE's {arch}.rope.scaling.attn_factor)
  uint32_t rope_orig_ctx = 0;         // LongRoPE: long factors beyond this context (0: n_ctx_train)

  // Block structure. Every norm is RMSNorm with its weight as stored (the converters store Gemma's 1 + w).
  bool post_attn_norm = false;  // RMSNorm of the attention output before the residual add (gemma2/3)
  bool post_ffn_norm = false;   // RMSNorm of the FFN output before the residual add (gemma2/3)
  bool qk_norm = false;         // per-head RMSNorm of Q and K before RoPE (qwen3, gemma3)
  bool fused_qkv = false;       // one attn_qkv tensor holds Q, K and V rows (phi3)
  bool fused_gate_up = false;   // ffn_up holds gate rows then up rows (phi3)
  Activation activation = Activation::swiglu;

  float embd_scale = 1.0f;     // the token embedding is multiplied by this (gemma: sqrt(n_embd))
  float attn_scale = 0.0f;     // q . k is multiplied by this (1 / sqrt(head_dim), or gemma's own)
  float attn_softcap = 0.0f;   // scores -> c tanh(scores / c) before softmax; 0: none (gemma2)
  float final_softcap = 0.0f;  // logits -> c tanh(logits / c); 0: none (gemma2)

  // Sliding-window attention: a windowed layer's token sees only the last `sliding_window` positions,
  // its own included. Layer l is windowed when swa_pattern > 0 and l % swa_pattern < swa_pattern - 1
  // (llama.cpp's rule: gemma2 every other layer from the first, gemma3 five of every six).
  uint32_t sliding_window = 0;
  uint32_t swa_pattern = 0;

  bool tied_output = false;  // no output.weight: the classifier is token_embd

  uint32_t q_dim() const { return n_head * head_dim; }
  uint32_t kv_dim() const { return n_head_kv * head_dim; }
  bool layer_windowed(uint32_t layer) const {
    return sliding_window > 0 && swa_pattern > 0 && layer % swa_pattern < swa_pattern - 1;
  }
  // The window of `layer`, or 0 when it attends to every position.
  uint32_t window_of(uint32_t layer) const { return layer_windowed(layer) ? sliding_window : 0; }
  // Whether `layer` turns with the local base (windowed layers of a model that has one).
  bool local_rope(uint32_t layer) const { return rope_freq_base_local > 0.0f && layer_windowed(layer); }
};

const char* rope_style_name(RopeStyle s);
const char* activation_name(Activation a);

}  // namespace lmrt
