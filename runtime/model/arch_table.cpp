#include "runtime/model/arch_table.h"

#include <cmath>

namespace lmrt {

namespace {

// Llama 2/3, Mistral, SmolLM2 and TinyLlama all use `llama`. NeoX-style RoPE for every other row, as
// llama.cpp's llama_model_rope_type() says.
constexpr ArchTable kArchs[] = {
    // name, arch, rope, activation, post_norms, qk_norm, fused_qkv, fused_gate_up, embd_sqrt, softcaps, swa,
    // big_n_layer
    {"llama", Arch::llama, RopeStyle::adjacent_pairs, Activation::swiglu, false, false, false, false, false, false, 0,
     0},
    {"qwen2", Arch::qwen2, RopeStyle::neox_halves, Activation::swiglu, false, false, false, false, false, false, 0, 0},
    {"qwen3", Arch::qwen3, RopeStyle::neox_halves, Activation::swiglu, false, true, false, false, false, false, 0, 0},
    {"phi3", Arch::phi3, RopeStyle::neox_halves, Activation::swiglu, false, false, true, true, false, false, 0, 0},
    {"gemma2", Arch::gemma2, RopeStyle::neox_halves, Activation::gelu_tanh, true, false, false, false, true, true, 2,
     46},
    {"gemma3", Arch::gemma3, RopeStyle::neox_halves, Activation::gelu_tanh, true, true, false, false, true, false, 6,
     62},
};

constexpr uint32_t kMaxDim = 1u << 20;  // sanity bound on any hyper-parameter read from a file

Status read_u32(const GgufFile& g, const std::string& key, bool required, uint32_t fallback, uint32_t* out) {
  const GgufValue* v = g.find(key);
  if (v == nullptr) {
    if (required) return Error(Code::bad_format, "model metadata lacks '" + key + "'");
    *out = fallback;
    return Status::Ok();
  }
  auto x = v->as_int();
  if (!x || *x <= 0 || *x > kMaxDim)
    return Error(Code::bad_format,
                 "model metadata '" + key + "' is not a positive integer up to " + std::to_string(kMaxDim));
  *out = static_cast<uint32_t>(*x);
  return Status::Ok();
}

// A positive float key below `max`, or `fallback` when absent.
Status read_positive(const GgufFile& g, const std::string& key, double max, float fallback, float* out) {
  *out = fallback;
  if (g.find(key) == nullptr) return Status::Ok();
  auto v = g.get_float(key);
  if (!v || !(*v > 0.0 && *v < max))
    return Error(Code::bad_format, "model metadata '" + key + "' must be a number in (0, " + std::to_string(max) + ")");
  *out = static_cast<float>(*v);
  return Status::Ok();
}

}  // namespace

const char* rope_style_name(RopeStyle s) { return s == RopeStyle::neox_halves ? "neox" : "adjacent"; }
const char* activation_name(Activation a) { return a == Activation::gelu_tanh ? "gelu-tanh" : "swiglu"; }

const ArchTable* find_arch(std::string_view name) {
  for (const ArchTable& a : kArchs)
    if (name == a.name) return &a;
  return nullptr;
}

std::string supported_arch_names() {
  std::string s;
  for (const ArchTable& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

Status read_model_config(const GgufFile& g, ModelConfig* out) {
  auto arch_name = g.get_string("general.architecture");
  if (!arch_name) {
    const GgufValue* v = g.find("general.architecture");
    return Error(Code::bad_format, v == nullptr ? std::string("model metadata lacks 'general.architecture'")
                                                : std::string("model metadata 'general.architecture' has type ") +
                                                      gguf_value_type_name(v->type) + "; it must be a string");
  }
  const ArchTable* a = find_arch(*arch_name);
  if (a == nullptr)
    return Error(Code::unsupported, "architecture '" + std::string(*arch_name) +
                                        "' is not supported (supported: " + supported_arch_names() + ")");
  ModelConfig c;
  c.arch = a->arch;
  c.arch_name = a->name;
  const std::string p = std::string(a->name) + ".";
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "embedding_length", true, 0, &c.n_embd));
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "feed_forward_length", true, 0, &c.n_ff));
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "block_count", true, 0, &c.n_layer));
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "attention.head_count", true, 0, &c.n_head));
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "attention.head_count_kv", false, c.n_head, &c.n_head_kv));
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "context_length", false, 2048, &c.n_ctx_train));
  if (c.n_head % c.n_head_kv != 0)
    return Error(Code::bad_format, "head count " + std::to_string(c.n_head) +
                                       " is not a multiple of the KV head count " + std::to_string(c.n_head_kv));
  if (g.find(p + "attention.key_length") == nullptr && c.n_embd % c.n_head != 0)
    return Error(Code::bad_format, "embedding length " + std::to_string(c.n_embd) +
                                       " is not a multiple of the head count " + std::to_string(c.n_head) +
                                       " and the file has no " + p + "attention.key_length");
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "attention.key_length", false, c.n_embd / c.n_head, &c.head_dim));
  uint32_t value_dim = 0;
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "attention.value_length", false, c.head_dim, &value_dim));
  if (value_dim != c.head_dim)
    return Error(Code::unsupported, "value head size " + std::to_string(value_dim) + " differs from key head size " +
                                        std::to_string(c.head_dim));
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "rope.dimension_count", false, c.head_dim, &c.rope_dim));
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    return Error(Code::bad_format, p + "rope.dimension_count " + std::to_string(c.rope_dim) +
                                       " must be even and at most the head size " + std::to_string(c.head_dim));
  LMRT_RETURN_IF_ERROR(read_positive(g, p + "rope.freq_base", 1e30, 10000.0f, &c.rope_freq_base));
  LMRT_RETURN_IF_ERROR(read_positive(g, p + "attention.layer_norm_rms_epsilon", 1.0, 1e-5f, &c.rms_eps));
  if (auto type = g.get_string(p + "rope.scaling.type"); type && *type == "linear") {
    float factor = 1.0f;
    LMRT_RETURN_IF_ERROR(read_positive(g, p + "rope.scaling.factor", 1e6, 1.0f, &factor));
    c.rope_freq_scale = 1.0f / factor;
  }
  LMRT_RETURN_IF_ERROR(read_positive(g, p + "rope.scaling.attn_factor", 1e3, 1.0f, &c.rope_attn_factor));
  LMRT_RETURN_IF_ERROR(read_u32(g, p + "rope.scaling.original_context_length", false, 0, &c.rope_orig_ctx));
  c.rope_style = a->rope_style;
  c.activation = a->activation;
  c.post_attn_norm = c.post_ffn_norm = a->post_norms;
  c.qk_norm = a->qk_norm;
  c.fused_qkv = a->fused_qkv;
  c.fused_gate_up = a->fused_gate_up;
  if (a->embd_scale_sqrt) c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (a->big_n_layer != 0 && c.n_layer == a->big_n_layer)  // Gemma 27B: query_pre_attn_scalar = n_embd / n_head
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.n_embd / c.n_head));
  if (a->softcaps) {
    LMRT_RETURN_IF_ERROR(read_positive(g, p + "attn_logit_softcapping", 1e6, 0.0f, &c.attn_softcap));
    LMRT_RETURN_IF_ERROR(read_positive(g, p + "final_logit_softcapping", 1e6, 0.0f, &c.final_softcap));
  }
  if (a->swa_pattern != 0) {
    c.swa_pattern = a->swa_pattern;
    LMRT_RETURN_IF_ERROR(read_u32(g, p + "attention.sliding_window", false, 0, &c.sliding_window));
    // gemma3's windowed layers turn with their own base (llama.cpp: 1e4 when the file does not say).
    if (a->arch == Arch::gemma3)
      LMRT_RETURN_IF_ERROR(read_positive(g, p + "rope.freq_base_swa", 1e30, 10000.0f, &c.rope_freq_base_local));
  }
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace lmrt
