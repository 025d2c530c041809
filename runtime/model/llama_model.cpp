#include "runtime/model/llama_model.h"

#include <algorithm>
#include <charconv>

#include "formats/dequantize.h"
#include "formats/q4_0x16.h"
#include "runtime/model/arch_table.h"
#include "runtime/model/weight_repack.h"

namespace lmrt {

Status LlamaModel::load(std::unique_ptr<GgufFile> gguf, std::unique_ptr<LlamaModel>* out) {
  return load(std::move(gguf), repack_weights_by_default(), out);
}

Status LlamaModel::load(std::unique_ptr<GgufFile> gguf, bool repack, std::unique_ptr<LlamaModel>* out) {
  std::unique_ptr<LlamaModel> m(new LlamaModel());
  m->gguf_ = std::move(gguf);
  LMRT_RETURN_IF_ERROR(m->init());
  // The embedding table is read a row per token (unless it is also the output matrix): only those rows need
  // to be resident.
  if (!m->tied_output_) m->gguf_->advise_sparse_reads(*m->gguf_->find_tensor("token_embd.weight"));
  if (repack) {
    std::vector<WeightView*> matmuls;
    for (LayerWeights& L : m->layers_)
      for (WeightView* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) matmuls.push_back(v);
    if (!m->tied_output_) matmuls.push_back(&m->output_);
    const WeightView* lookups[] = {&m->tok_embd_};
    RepackReport r;
    repack_weights(*m->gguf_, matmuls, lookups, &m->repacked_weights_, &r);
    m->repacked_tensors_ = r.tensors;
    m->repacked_bytes_ = r.bytes;
    m->repack_seconds_ = r.seconds;
  }
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

Status LlamaModel::vector(const std::string& name, uint32_t n, const float** out, bool optional) {
  *out = nullptr;
  if (optional && gguf_->find_tensor(name) == nullptr) return Status::Ok();
  WeightView w;
  LMRT_RETURN_IF_ERROR(weight(name, n, 1, &w));
  // Copied even when F32: these are tiny and read at every token, and reading one out of the mapping maps
  // the file's whole large folio around it, pages of the neighbouring matrices that repacking gave back.
  std::vector<float>& v = converted_norms_.emplace_back(n);
  dequantize_row(w.type, w.data, v.data(), n);
  *out = v.data();
  return Status::Ok();
}

Status LlamaModel::row_view(const WeightView& w, const std::string& name, uint64_t r0, uint64_t n,
                            WeightView* out) const {
  // Q4_0x16 interleaves groups of 16 rows: a view must start and end on a group.
  if (w.type == TensorType::q4_0x16 && (r0 % kQ4_0x16Rows != 0 || n % kQ4_0x16Rows != 0))
    return Error(Code::bad_format, "tensor '" + name + "' is Q4_0x16 but its parts are not whole 16-row groups");
  *out = w;
  out->data = w.data + r0 * w.row_bytes;
  out->n_rows = n;
  return Status::Ok();
}

const float* LlamaModel::rope_factors(uint32_t n_ctx) const {
  if (rope_freqs_ != nullptr) return rope_freqs_;
  // As llama.cpp: the original context is rope.scaling.original_context_length, else the training one.
  const uint32_t orig = hp_.rope_orig_ctx != 0 ? hp_.rope_orig_ctx : hp_.n_ctx_train;
  if (rope_long_ != nullptr && n_ctx > orig) return rope_long_;
  return rope_short_;
}

Status LlamaModel::init() {
  const GgufFile& g = *gguf_;
  LMRT_RETURN_IF_ERROR(read_model_config(g, &hp_));
  const std::string& arch = hp_.arch_name;

  const GgufTensorInfo* emb = g.find_tensor("token_embd.weight");
  if (emb == nullptr) return Error(Code::bad_format, "model lacks tensor 'token_embd.weight'");
  if (emb->ne[1] == 0 || emb->ne[1] > (1u << 24))
    return Error(Code::bad_format, "token_embd.weight has a bad vocabulary size");
  hp_.n_vocab = static_cast<uint32_t>(emb->ne[1]);
  if (auto vs = g.get_int(arch + ".vocab_size"); vs && *vs != hp_.n_vocab)
    return Error(Code::bad_format, arch + ".vocab_size " + std::to_string(*vs) + " differs from token_embd.weight's " +
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
  hp_.tied_output = tied_output_;
  // RoPE frequency factors, one per rotated pair: Llama 3's, or LongRoPE's (phi3).
  const uint32_t n_pairs = hp_.rope_dim / 2;
  LMRT_RETURN_IF_ERROR(vector("rope_freqs.weight", n_pairs, &rope_freqs_, true));
  LMRT_RETURN_IF_ERROR(vector("rope_factors_short.weight", n_pairs, &rope_short_, true));
  LMRT_RETURN_IF_ERROR(vector("rope_factors_long.weight", n_pairs, &rope_long_, true));

  const uint32_t q_dim = hp_.q_dim(), kv_dim = hp_.kv_dim(), hd = hp_.head_dim;
  layers_.resize(hp_.n_layer);
  for (uint32_t l = 0; l < hp_.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights& L = layers_[l];
    LMRT_RETURN_IF_ERROR(norm(p + "attn_norm.weight", &L.attn_norm));
    if (hp_.fused_qkv) {
      WeightView qkv;
      LMRT_RETURN_IF_ERROR(weight(p + "attn_qkv.weight", hp_.n_embd, q_dim + 2 * kv_dim, &qkv));
      LMRT_RETURN_IF_ERROR(row_view(qkv, p + "attn_qkv.weight", 0, q_dim, &L.wq));
      LMRT_RETURN_IF_ERROR(row_view(qkv, p + "attn_qkv.weight", q_dim, kv_dim, &L.wk));
      LMRT_RETURN_IF_ERROR(row_view(qkv, p + "attn_qkv.weight", q_dim + kv_dim, kv_dim, &L.wv));
    } else {
      LMRT_RETURN_IF_ERROR(weight(p + "attn_q.weight", hp_.n_embd, q_dim, &L.wq));
      LMRT_RETURN_IF_ERROR(weight(p + "attn_k.weight", hp_.n_embd, kv_dim, &L.wk));
      LMRT_RETURN_IF_ERROR(weight(p + "attn_v.weight", hp_.n_embd, kv_dim, &L.wv));
    }
    LMRT_RETURN_IF_ERROR(vector(p + "attn_q.bias", q_dim, &L.bq, true));
    LMRT_RETURN_IF_ERROR(vector(p + "attn_k.bias", kv_dim, &L.bk, true));
    LMRT_RETURN_IF_ERROR(vector(p + "attn_v.bias", kv_dim, &L.bv, true));
    if (hp_.qk_norm) {
      LMRT_RETURN_IF_ERROR(vector(p + "attn_q_norm.weight", hd, &L.q_norm));
      LMRT_RETURN_IF_ERROR(vector(p + "attn_k_norm.weight", hd, &L.k_norm));
    }
    LMRT_RETURN_IF_ERROR(weight(p + "attn_output.weight", q_dim, hp_.n_embd, &L.wo));
    LMRT_RETURN_IF_ERROR(vector(p + "attn_output.bias", hp_.n_embd, &L.bo, true));
    if (hp_.post_attn_norm) LMRT_RETURN_IF_ERROR(norm(p + "post_attention_norm.weight", &L.post_attn_norm));
    LMRT_RETURN_IF_ERROR(norm(p + "ffn_norm.weight", &L.ffn_norm));
    if (hp_.fused_gate_up) {
      WeightView gate_up;
      LMRT_RETURN_IF_ERROR(weight(p + "ffn_up.weight", hp_.n_embd, 2ull * hp_.n_ff, &gate_up));
      LMRT_RETURN_IF_ERROR(row_view(gate_up, p + "ffn_up.weight", 0, hp_.n_ff, &L.w_gate));
      LMRT_RETURN_IF_ERROR(row_view(gate_up, p + "ffn_up.weight", hp_.n_ff, hp_.n_ff, &L.w_up));
    } else {
      LMRT_RETURN_IF_ERROR(weight(p + "ffn_gate.weight", hp_.n_embd, hp_.n_ff, &L.w_gate));
      LMRT_RETURN_IF_ERROR(weight(p + "ffn_up.weight", hp_.n_embd, hp_.n_ff, &L.w_up));
    }
    LMRT_RETURN_IF_ERROR(weight(p + "ffn_down.weight", hp_.n_ff, hp_.n_embd, &L.w_down));
    if (hp_.post_ffn_norm) LMRT_RETURN_IF_ERROR(norm(p + "post_ffw_norm.weight", &L.post_ffn_norm));
  }
  for (const GgufTensorInfo& t : g.tensors()) {
    n_params_ += t.n_elements;
    // A layer past block_count would be silently left out: the file is damaged or was converted wrongly.
    uint32_t l = 0;
    const std::string_view name = t.name;
    if (name.substr(0, 4) == "blk." &&
        std::from_chars(name.data() + 4, name.data() + name.size(), l).ec == std::errc() && l >= hp_.n_layer)
      return Error(Code::bad_format, "tensor '" + std::string(name) + "' is of layer " + std::to_string(l) + ", but " +
                                         arch + ".block_count is " + std::to_string(hp_.n_layer));
  }
  return Status::Ok();
}

void LlamaModel::embed(int32_t token, float* out) const {
  dequantize_row(tok_embd_.type, tok_embd_.data + static_cast<uint64_t>(token) * tok_embd_.row_bytes, out, hp_.n_embd);
}

}  // namespace lmrt
