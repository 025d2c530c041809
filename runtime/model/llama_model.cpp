#include "runtime/model/llama_model.h"

#include <algorithm>

#include "formats/dequantize.h"

namespace lmrt {

namespace {

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

}  // namespace

Status LlamaModel::load(std::unique_ptr<GgufFile> gguf, std::unique_ptr<LlamaModel>* out) {
  std::unique_ptr<LlamaModel> m(new LlamaModel());
  m->gguf_ = std::move(gguf);
  LMRT_RETURN_IF_ERROR(m->init());
  *out = std::move(m);
  return Status::Ok();
}

Status LlamaModel::weight(const std::string& name, uint64_t n_cols, uint64_t n_rows, WeightView* out) const {
  const GgufTensorInfo* t = gguf_->find_tensor(name);
  if (t == nullptr) return Error(Code::bad_format, "model lacks tensor '" + name + "'");
  if (t->n_dims > 2 || t->ne[0] != n_cols || t->ne[1] != n_rows) {
    // Every dimension the file gives, so a 3-D [128, 64, 1] is not shown as the [128, 64] it should be.
    std::string shape;
    for (uint32_t d = 0; d < std::max<uint32_t>(t->n_dims, 2); ++d) shape += (d ? ", " : "") + std::to_string(t->ne[d]);
    return Error(Code::bad_format, "tensor '" + name + "' has shape [" + shape + "] (" + std::to_string(t->n_dims) +
                                       " dimensions), expected [" + std::to_string(n_cols) + ", " +
                                       std::to_string(n_rows) + "]");
  }
  out->type = t->type;
  out->data = t->data;
  out->n_cols = n_cols;
  out->n_rows = n_rows;
  out->row_bytes = t->n_bytes / n_rows;
  return Status::Ok();
}

Status LlamaModel::norm(const std::string& name, const float** out) {
  WeightView w;
  LMRT_RETURN_IF_ERROR(weight(name, hp_.n_embd, 1, &w));
  if (w.type == TensorType::f32 && reinterpret_cast<uintptr_t>(w.data) % alignof(float) == 0) {
    *out = reinterpret_cast<const float*>(w.data);
    return Status::Ok();
  }
  std::vector<float>& v = converted_norms_.emplace_back(hp_.n_embd);
  dequantize_row(w.type, w.data, v.data(), hp_.n_embd);
  *out = v.data();
  return Status::Ok();
}

Status LlamaModel::init() {
  const GgufFile& g = *gguf_;
  auto arch = g.get_string("general.architecture");
  if (!arch) {
    const GgufValue* v = g.find("general.architecture");
    return Error(Code::bad_format, v == nullptr ? std::string("model metadata lacks 'general.architecture'")
                                                : std::string("model metadata 'general.architecture' has type ") +
                                                      gguf_value_type_name(v->type) + "; it must be a string");
  }
  if (*arch != "llama")
    return Error(Code::unsupported, "architecture '" + std::string(*arch) + "' is not supported (only 'llama')");

  LMRT_RETURN_IF_ERROR(read_u32(g, "llama.embedding_length", true, 0, &hp_.n_embd));
  LMRT_RETURN_IF_ERROR(read_u32(g, "llama.feed_forward_length", true, 0, &hp_.n_ff));
  LMRT_RETURN_IF_ERROR(read_u32(g, "llama.block_count", true, 0, &hp_.n_layer));
  LMRT_RETURN_IF_ERROR(read_u32(g, "llama.attention.head_count", true, 0, &hp_.n_head));
  LMRT_RETURN_IF_ERROR(read_u32(g, "llama.attention.head_count_kv", false, hp_.n_head, &hp_.n_head_kv));
  LMRT_RETURN_IF_ERROR(read_u32(g, "llama.context_length", false, 2048, &hp_.n_ctx_train));
  if (hp_.n_embd % hp_.n_head != 0)
    return Error(Code::bad_format, "embedding length " + std::to_string(hp_.n_embd) +
                                       " is not a multiple of the head count " + std::to_string(hp_.n_head));
  if (hp_.n_head % hp_.n_head_kv != 0)
    return Error(Code::bad_format, "head count " + std::to_string(hp_.n_head) +
                                       " is not a multiple of the KV head count " + std::to_string(hp_.n_head_kv));
  hp_.head_dim = hp_.n_embd / hp_.n_head;
  LMRT_RETURN_IF_ERROR(read_u32(g, "llama.rope.dimension_count", false, hp_.head_dim, &hp_.rope_dim));
  if (hp_.rope_dim > hp_.head_dim || hp_.rope_dim % 2 != 0)
    return Error(Code::bad_format, "llama.rope.dimension_count " + std::to_string(hp_.rope_dim) +
                                       " must be even and at most the head size " + std::to_string(hp_.head_dim));
  if (auto base = g.get_float("llama.rope.freq_base")) {
    if (!(*base > 0.0)) return Error(Code::bad_format, "llama.rope.freq_base must be positive");
    hp_.rope_freq_base = static_cast<float>(*base);
  }
  if (auto eps = g.get_float("llama.attention.layer_norm_rms_epsilon")) {
    if (!(*eps > 0.0 && *eps < 1.0))
      return Error(Code::bad_format, "llama.attention.layer_norm_rms_epsilon is out of range");
    hp_.rms_eps = static_cast<float>(*eps);
  }

  const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
  if (emb == nullptr) return Error(Code::bad_format, "model lacks tensor 'token_embd.weight'");
  if (emb->ne[1] == 0 || emb->ne[1] > (1u << 24))
    return Error(Code::bad_format, "token_embd.weight has a bad vocabulary size");
  hp_.n_vocab = static_cast<uint32_t>(emb->ne[1]);
  if (auto vs = g.get_int("llama.vocab_size"); vs && *vs != hp_.n_vocab)
    return Error(Code::bad_format, "llama.vocab_size " + std::to_string(*vs) + " differs from token_embd.weight's " +
                                       std::to_string(hp_.n_vocab) + " rows");
  LMRT_RETURN_IF_ERROR(weight("token_embd.weight", hp_.n_embd, hp_.n_vocab, &tok_embd_));
  if (tok_embd_.type == TensorType::q4_0x16)  // embeddings are looked up one row at a time
    return Error(Code::bad_format, "token_embd.weight is Q4_0x16, but embeddings must be row-addressable");
  LMRT_RETURN_IF_ERROR(norm("output_norm.weight", &output_norm_));
  if (g.find_tensor("output.weight") != nullptr) {
    LMRT_RETURN_IF_ERROR(weight("output.weight", hp_.n_embd, hp_.n_vocab, &output_));
  } else {
    output_ = tok_embd_;
    tied_output_ = true;
  }

  const uint32_t kv_dim = hp_.kv_dim();
  layers_.resize(hp_.n_layer);
  for (uint32_t l = 0; l < hp_.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = layers_[l];
    LMRT_RETURN_IF_ERROR(norm(p + "attn_norm.weight", &L.attn_norm));
    LMRT_RETURN_IF_ERROR(weight(p + "attn_q.weight", hp_.n_embd, hp_.n_embd, &L.wq));
    LMRT_RETURN_IF_ERROR(weight(p + "attn_k.weight", hp_.n_embd, kv_dim, &L.wk));
    LMRT_RETURN_IF_ERROR(weight(p + "attn_v.weight", hp_.n_embd, kv_dim, &L.wv));
    LMRT_RETURN_IF_ERROR(weight(p + "attn_output.weight", hp_.n_embd, hp_.n_embd, &L.wo));
    LMRT_RETURN_IF_ERROR(norm(p + "ffn_norm.weight", &L.ffn_norm));
    LMRT_RETURN_IF_ERROR(weight(p + "ffn_gate.weight", hp_.n_embd, hp_.n_ff, &L.w_gate));
    LMRT_RETURN_IF_ERROR(weight(p + "ffn_up.weight", hp_.n_embd, hp_.n_ff, &L.w_up));
    LMRT_RETURN_IF_ERROR(weight(p + "ffn_down.weight", hp_.n_ff, hp_.n_embd, &L.w_down));
  }
  for (const GgufTensorInfo& t : g.tensors()) n_params_ += t.n_elements;
  return Status::Ok();
}

void LlamaModel::embed(int32_t token, float* out) const {
  dequantize_row(tok_embd_.type, tok_embd_.data + static_cast<uint64_t>(token) * tok_embd_.row_bytes, out, hp_.n_embd);
}

}  // namespace lmrt
