// Opening models, describing them, and their tokenizer.
#include <chrono>

#include "abi/api_support.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"
#include "runtime/cache/model_fingerprint.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

extern "C" {

lmrt_status lmrt_model_params_init_sized(lmrt_model_params* params, size_t struct_size) {
  lmrt_model_params d = lmrt_model_params{sizeof(lmrt_model_params), 1};
  return init_sized(params, struct_size, d);
}

lmrt_status lmrt_model_open(const char* path, const lmrt_model_params* params, lmrt_model** out_model, char* err,
                            size_t err_size) {
  auto report = [&](const std::string& m) { copy_message(m, err, err_size); };
  if (out_model != nullptr) *out_model = nullptr;
  return guarded(
      [&]() -> Status {
        if (path == nullptr || out_model == nullptr)
          return lmrt::Error(Code::invalid_argument, "path and out_model must not be NULL");
        lmrt_model_params p;
        lmrt_model_params_init(&p);
        LMRT_RETURN_IF_ERROR(read_params(params, &p));
        const auto t0 = std::chrono::steady_clock::now();
        std::unique_ptr<lmrt::GgufFile> gguf;
        LMRT_RETURN_IF_ERROR(lmrt::GgufFile::open(path, p.use_mmap != 0, &gguf));
        auto m = std::make_unique<lmrt_model>();
        LMRT_RETURN_IF_ERROR(lmrt::Tokenizer::from_gguf(*gguf, &m->tokenizer));
        // Before the load: the windows it reads are then among the mapped pages that repacking gives back.
        m->fingerprint = lmrt::model_fingerprint(*gguf);
        LMRT_RETURN_IF_ERROR(lmrt::LlamaModel::load(std::move(gguf), &m->llama));
        if (m->tokenizer->n_vocab() != static_cast<int32_t>(m->llama->hparams().n_vocab))
          return lmrt::Error(Code::bad_format, "the vocabulary has " + std::to_string(m->tokenizer->n_vocab()) +
                                                   " tokens but the model's embedding has " +
                                                   std::to_string(m->llama->hparams().n_vocab) + " rows");
        m->text_source = std::make_unique<lmrt::TokenizerTextSource>(*m->tokenizer);
        m->load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        *out_model = m.release();
        return Status::Ok();
      },
      report);
}

lmrt_status lmrt_model_close(lmrt_model* model) {
  delete model;
  return LMRT_OK;
}

const char* lmrt_model_last_error(const lmrt_model* model) {
  if (model == nullptr) return "";
  try {
    return model->last_error();
  } catch (...) {
    return "";
  }
}

lmrt_status lmrt_model_get_info(const lmrt_model* model, lmrt_model_info* info) {
  if (model == nullptr || info == nullptr || info->struct_size < sizeof(uint32_t)) return LMRT_ERR_INVALID_ARGUMENT;
  model->errors.clear();
  return guarded(
      [&]() -> Status {
        lmrt_model_info full{};
        full.struct_size = sizeof full;
        const lmrt::GgufFile& g = model->llama->gguf();
        const lmrt::ModelConfig& hp = model->llama->hparams();
        copy_cstr(g.get_string("general.architecture").value_or(""), full.architecture, sizeof full.architecture);
        copy_cstr(g.get_string("general.name").value_or(""), full.name, sizeof full.name);
        full.n_params = model->llama->n_params();
        full.file_bytes = g.file().size();
        full.n_ctx_train = hp.n_ctx_train;
        full.n_vocab = hp.n_vocab;
        full.n_embd = hp.n_embd;
        full.n_layer = hp.n_layer;
        full.n_head = hp.n_head;
        full.n_head_kv = hp.n_head_kv;
        full.n_ff = hp.n_ff;
        full.n_tensors = static_cast<uint32_t>(g.tensors().size());
        full.bos_token = model->tokenizer->bos();
        full.eos_token = model->tokenizer->eos();
        for (const lmrt::GgufTensorInfo& t : g.tensors()) {
          switch (t.type) {
            case lmrt::TensorType::f32:
              ++full.n_tensors_f32;
              full.bytes_f32 += t.n_bytes;
              break;
            case lmrt::TensorType::f16:
              ++full.n_tensors_f16;
              full.bytes_f16 += t.n_bytes;
              break;
            case lmrt::TensorType::bf16:
              ++full.n_tensors_bf16;
              full.bytes_bf16 += t.n_bytes;
              break;
            case lmrt::TensorType::q8_0:
              ++full.n_tensors_q8_0;
              full.bytes_q8_0 += t.n_bytes;
              break;
            case lmrt::TensorType::q4_0:
            case lmrt::TensorType::q4_0x16:  // the same blocks, interleaved
              ++full.n_tensors_q4_0;
              full.bytes_q4_0 += t.n_bytes;
              break;
            default:  // types without a field of their own: lmrt_model_tensor_type() enumerates every type
              break;
          }
        }
        write_prefix(full, info);
        return Status::Ok();
      },
      [&](const std::string& m) { model->set_error(m); });
}

lmrt_status lmrt_model_tensor_types(const lmrt_model* model, uint32_t index, lmrt_tensor_type_info* info,
                                    uint32_t* n_types) {
  if (model == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  model->errors.clear();
  return guarded(
      [&]() -> Status {
        if (info != nullptr && info->struct_size < sizeof(uint32_t))
          return lmrt::Error(Code::invalid_argument, "info->struct_size is too small");
        // The types present, walked in the traits table's (ggml id) order.
        uint32_t n = 0;
        lmrt_tensor_type_info full{};
        for (const lmrt::TensorTypeTraits& tr : lmrt::all_tensor_types()) {
          lmrt_tensor_type_info cur{};
          for (const lmrt::GgufTensorInfo& t : model->llama->gguf().tensors()) {
            if (t.type != tr.type) continue;
            ++cur.n_tensors;
            cur.n_elements += t.n_elements;
            cur.n_bytes += t.n_bytes;
          }
          if (cur.n_tensors == 0) continue;
          if (n == index) {
            full = cur;
            full.struct_size = sizeof full;
            copy_cstr(tr.name, full.name, sizeof full.name);
            full.ggml_type = tr.ggml_id;
          }
          ++n;
        }
        if (n_types != nullptr) *n_types = n;
        if (info == nullptr) return Status::Ok();
        if (index >= n)
          return lmrt::Error(Code::invalid_argument, "tensor type index " + std::to_string(index) +
                                                         " is out of range (the model has " + std::to_string(n) +
                                                         " tensor types)");
        write_prefix(full, info);
        return Status::Ok();
      },
      [&](const std::string& m) { model->set_error(m); });
}

lmrt_status lmrt_model_get_arch(const lmrt_model* model, lmrt_model_arch* arch) {
  if (model == nullptr || arch == nullptr || arch->struct_size < sizeof(uint32_t)) return LMRT_ERR_INVALID_ARGUMENT;
  model->errors.clear();
  return guarded(
      [&]() -> Status {
        const lmrt::ModelConfig& c = model->llama->config();
        lmrt_model_arch full{};
        full.struct_size = sizeof full;
        full.head_dim = c.head_dim;
        full.rope_dim = c.rope_dim;
        full.rope_style = c.rope_style == lmrt::RopeStyle::neox_halves ? LMRT_ROPE_NEOX : LMRT_ROPE_ADJACENT;
        full.rope_freq_base = c.rope_freq_base;
        full.rope_freq_base_local = c.rope_freq_base_local;
        full.rope_freq_scale = c.rope_freq_scale;
        full.activation =
            c.activation == lmrt::Activation::gelu_tanh ? LMRT_ACTIVATION_GELU_TANH : LMRT_ACTIVATION_SWIGLU;
        const lmrt::LayerWeights& l0 = model->llama->layers()[0];
        full.flags = (c.post_attn_norm ? LMRT_ARCH_POST_ATTN_NORM : 0u) |
                     (c.post_ffn_norm ? LMRT_ARCH_POST_FFN_NORM : 0u) | (c.qk_norm ? LMRT_ARCH_QK_NORM : 0u) |
                     (l0.bq != nullptr ? LMRT_ARCH_QKV_BIAS : 0u) | (l0.bo != nullptr ? LMRT_ARCH_OUTPUT_BIAS : 0u) |
                     (c.fused_qkv ? LMRT_ARCH_FUSED_QKV : 0u) | (c.fused_gate_up ? LMRT_ARCH_FUSED_GATE_UP : 0u) |
                     (c.tied_output ? LMRT_ARCH_TIED_OUTPUT : 0u) |
                     (model->llama->rope_factors(c.n_ctx_train) != nullptr ? LMRT_ARCH_ROPE_FACTORS : 0u);
        full.sliding_window = c.sliding_window;
        for (uint32_t l = 0; l < c.n_layer; ++l) full.n_windowed_layers += c.layer_windowed(l) ? 1 : 0;
        full.rms_eps = c.rms_eps;
        full.embd_scale = c.embd_scale;
        full.attn_scale = c.attn_scale;
        full.attn_softcap = c.attn_softcap;
        full.final_softcap = c.final_softcap;
        write_prefix(full, arch);
        return Status::Ok();
      },
      [&](const std::string& m) { model->set_error(m); });
}

lmrt_status lmrt_tokenize(const lmrt_model* model, const char* text, size_t text_len, uint32_t flags, int32_t* tokens,
                          size_t capacity, size_t* n_tokens) {
  if (model == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  model->errors.clear();
  return guarded(
      [&]() -> Status {
        if ((text == nullptr && text_len != 0) || n_tokens == nullptr || (tokens == nullptr && capacity != 0))
          return lmrt::Error(Code::invalid_argument, "text, tokens or n_tokens is NULL");
        std::vector<int32_t> out;
        // (size_t)-1: NUL-terminated, as for lmrt_generate_request.prompt_len.
        const std::string_view view = text == nullptr                       ? std::string_view()
                                      : text_len == static_cast<size_t>(-1) ? std::string_view(text)
                                                                            : std::string_view(text, text_len);
        LMRT_RETURN_IF_ERROR(model->tokenizer->encode(view, (flags & LMRT_TOKENIZE_ADD_BOS) != 0,
                                                      (flags & LMRT_TOKENIZE_PARSE_SPECIAL) != 0, &out));
        *n_tokens = out.size();
        if (out.size() > capacity)
          return lmrt::Error(Code::buffer_too_small, "the text has " + std::to_string(out.size()) +
                                                         " tokens but the buffer holds " + std::to_string(capacity));
        std::copy(out.begin(), out.end(), tokens);
        return Status::Ok();
      },
      [&](const std::string& m) { model->set_error(m); });
}

lmrt_status lmrt_token_to_piece(const lmrt_model* model, int32_t token, char* buf, size_t capacity, size_t* len) {
  if (model == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  model->errors.clear();
  return guarded(
      [&]() -> Status {
        if (len == nullptr || (buf == nullptr && capacity != 0))
          return lmrt::Error(Code::invalid_argument, "buf or len is NULL");
        std::string piece;
        LMRT_RETURN_IF_ERROR(model->tokenizer->token_to_bytes(token, &piece));
        *len = piece.size();
        if (piece.size() > capacity)
          return lmrt::Error(Code::buffer_too_small, "the piece has " + std::to_string(piece.size()) + " bytes");
        if (!piece.empty()) std::memcpy(buf, piece.data(), piece.size());  // buf may be NULL for an empty piece
        return Status::Ok();
      },
      [&](const std::string& m) { model->set_error(m); });
}

lmrt_status lmrt_model_get_tokenizer_info(const lmrt_model* model, lmrt_tokenizer_info* info) {
  if (model == nullptr || info == nullptr || info->struct_size < sizeof(uint32_t)) return LMRT_ERR_INVALID_ARGUMENT;
  model->errors.clear();
  return guarded(
      [&]() -> Status {
        const lmrt::Tokenizer& tok = *model->tokenizer;
        lmrt_tokenizer_info full{};
        full.struct_size = sizeof full;
        copy_cstr(lmrt::tokenizer_kind_name(tok.kind()), full.model, sizeof full.model);
        copy_cstr(tok.vocab().pre, full.pre, sizeof full.pre);
        full.bos_token = tok.bos();
        full.eos_token = tok.eos();
        full.eot_token = tok.eot();
        full.eom_token = tok.eom();
        full.unk_token = tok.vocab().unk_id;
        full.add_bos = tok.add_bos() ? 1 : 0;
        full.add_eos = tok.add_eos() ? 1 : 0;
        const std::vector<int32_t>& eog = tok.eog_ids();
        full.n_eog_tokens = static_cast<uint32_t>(eog.size());
        const size_t n = std::min<size_t>(eog.size(), sizeof full.eog_tokens / sizeof full.eog_tokens[0]);
        std::copy(eog.begin(), eog.begin() + static_cast<std::ptrdiff_t>(n), full.eog_tokens);
        write_prefix(full, info);
        return Status::Ok();
      },
      [&](const std::string& m) { model->set_error(m); });
}

lmrt_status lmrt_token_is_eog(const lmrt_model* model, int32_t token, int* is_eog) {
  if (model == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  model->errors.clear();
  return guarded(
      [&]() -> Status {
        if (is_eog == nullptr) return lmrt::Error(Code::invalid_argument, "is_eog is NULL");
        if (token < 0 || token >= model->tokenizer->n_vocab())
          return lmrt::Error(Code::invalid_argument, "token id " + std::to_string(token) +
                                                         " is out of range (vocabulary has " +
                                                         std::to_string(model->tokenizer->n_vocab()) + " tokens)");
        *is_eog = model->tokenizer->is_eog(token) ? 1 : 0;
        return Status::Ok();
      },
      [&](const std::string& m) { model->set_error(m); });
}

}  // extern "C"
