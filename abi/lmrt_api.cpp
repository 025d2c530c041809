// The extern "C" layer: checks arguments, calls the C++ runtime, turns every outcome (Status,
// std::bad_alloc, any other exception) into an lmrt_status plus a message. Nothing thrown here
// or below ever crosses into the caller.
#include <chrono>
#include <cstring>
#include <new>

#include "abi/handles.h"
#include "lmrt/lmrt.h"

using lmrt::Code;
using lmrt::Status;

static_assert(LMRT_OK == static_cast<int>(Code::ok));
static_assert(LMRT_ERR_INVALID_ARGUMENT == static_cast<int>(Code::invalid_argument));
static_assert(LMRT_ERR_IO == static_cast<int>(Code::io));
static_assert(LMRT_ERR_BAD_FORMAT == static_cast<int>(Code::bad_format));
static_assert(LMRT_ERR_UNSUPPORTED == static_cast<int>(Code::unsupported));
static_assert(LMRT_ERR_OUT_OF_MEMORY == static_cast<int>(Code::out_of_memory));
static_assert(LMRT_ERR_CONTEXT_FULL == static_cast<int>(Code::context_full));
static_assert(LMRT_ERR_CANCELLED == static_cast<int>(Code::cancelled));
static_assert(LMRT_ERR_BAD_UTF8 == static_cast<int>(Code::bad_utf8));
static_assert(LMRT_ERR_PLUGIN == static_cast<int>(Code::plugin));
static_assert(LMRT_ERR_CACHE == static_cast<int>(Code::cache));
static_assert(LMRT_ERR_INTERNAL == static_cast<int>(Code::internal));
static_assert(LMRT_ERR_BUFFER_TOO_SMALL == static_cast<int>(Code::buffer_too_small));

// Public struct layouts are part of the ABI: any change here is deliberate.
static_assert(sizeof(lmrt_model_params) == 8);
static_assert(sizeof(lmrt_context_params) == 24 && offsetof(lmrt_context_params, logits_all) == 20);
static_assert(offsetof(lmrt_model_info, n_params) == 168 && offsetof(lmrt_model_info, n_tensors_f32) == 220 &&
              offsetof(lmrt_model_info, bytes_f32) == 240 && sizeof(lmrt_model_info) == 280);
static_assert(sizeof(lmrt_token_event) == 32 && offsetof(lmrt_token_event, text) == 8 &&
              offsetof(lmrt_token_event, index) == 24);
static_assert(sizeof(lmrt_generate_request) == 32 && offsetof(lmrt_generate_request, prompt) == 8 &&
              offsetof(lmrt_generate_request, parse_special) == 28);
static_assert(sizeof(lmrt_generate_result) == 96 && offsetof(lmrt_generate_result, text) == 24 &&
              offsetof(lmrt_generate_result, decode_tokens_per_s) == 88);

namespace {

lmrt_status to_c(Code c) { return static_cast<lmrt_status>(static_cast<int>(c)); }

void copy_message(const std::string& msg, char* err, size_t err_size) {
  if (err == nullptr || err_size == 0) return;
  const size_t n = std::min(msg.size(), err_size - 1);
  std::memcpy(err, msg.data(), n);
  err[n] = '\0';
}

// Runs body() and converts anything it throws; `report` receives the message of a failure.
template <typename Body, typename Report>
lmrt_status guarded(Body&& body, Report&& report) {
  try {
    Status s = body();
    if (!s.ok()) report(s.message());
    return to_c(s.code());
  } catch (const std::bad_alloc&) {
    try {
      report("out of memory");
    } catch (...) {
    }
    return LMRT_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    try {
      report(std::string("internal error: ") + e.what());
    } catch (...) {
    }
    return LMRT_ERR_INTERNAL;
  } catch (...) {
    return LMRT_ERR_INTERNAL;
  }
}

// Copies min(struct_size, sizeof(T)) bytes of `full` into `out`: older callers get a prefix.
template <typename T>
void write_prefix(const T& full, T* out) {
  const size_t n = std::min<size_t>(out->struct_size, sizeof(T));
  const uint32_t caller_size = out->struct_size;
  std::memcpy(out, &full, n);
  out->struct_size = caller_size;
}

// Reads a caller's params struct: its first struct_size bytes over our defaults.
template <typename T>
Status read_params(const T* in, T* out) {
  if (in == nullptr) return Status::Ok();
  if (in->struct_size < sizeof(uint32_t) * 2 || in->struct_size > (1u << 16))
    return lmrt::Error(Code::invalid_argument, "struct_size " + std::to_string(in->struct_size) +
                                                   " is not a valid size (call the _init function first)");
  std::memcpy(out, in, std::min<size_t>(in->struct_size, sizeof(T)));
  out->struct_size = sizeof(T);
  return Status::Ok();
}

void copy_cstr(std::string_view s, char* dst, size_t cap) {
  const size_t n = std::min(s.size(), cap - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

}  // namespace

extern "C" {

uint32_t lmrt_abi_version(void) { return LMRT_ABI_VERSION; }
uint32_t lmrt_version_number(void) { return LMRT_VERSION_NUMBER; }
const char* lmrt_version_string(void) { return LMRT_VERSION_STRING; }

const char* lmrt_status_str(lmrt_status status) {
  switch (status) {
    case LMRT_OK:
      return "ok";
    case LMRT_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case LMRT_ERR_IO:
      return "I/O error";
    case LMRT_ERR_BAD_FORMAT:
      return "bad or damaged model file";
    case LMRT_ERR_UNSUPPORTED:
      return "unsupported model feature";
    case LMRT_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case LMRT_ERR_CONTEXT_FULL:
      return "context full";
    case LMRT_ERR_CANCELLED:
      return "cancelled";
    case LMRT_ERR_BAD_UTF8:
      return "invalid UTF-8";
    case LMRT_ERR_PLUGIN:
      return "plugin error";
    case LMRT_ERR_CACHE:
      return "cache error";
    case LMRT_ERR_INTERNAL:
      return "internal error";
    case LMRT_ERR_BUFFER_TOO_SMALL:
      return "buffer too small";
  }
  return "unknown status";
}

const char* lmrt_finish_reason_str(lmrt_finish_reason reason) {
  return lmrt::finish_reason_name(static_cast<lmrt::FinishReason>(
      reason >= LMRT_FINISH_NONE && reason <= LMRT_FINISH_ERROR ? reason : LMRT_FINISH_NONE));
}

lmrt_status lmrt_model_params_init(lmrt_model_params* params) {
  if (params == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  *params = lmrt_model_params{sizeof(lmrt_model_params), 1};
  return LMRT_OK;
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
        lmrt::Vocab vocab;
        LMRT_RETURN_IF_ERROR(lmrt::Vocab::from_gguf(*gguf, &vocab));
        auto m = std::make_unique<lmrt_model>();
        LMRT_RETURN_IF_ERROR(lmrt::LlamaModel::load(std::move(gguf), &m->llama));
        if (vocab.size() != static_cast<int32_t>(m->llama->hparams().n_vocab))
          return lmrt::Error(Code::bad_format, "the vocabulary has " + std::to_string(vocab.size()) +
                                                   " tokens but the model's embedding has " +
                                                   std::to_string(m->llama->hparams().n_vocab) + " rows");
        LMRT_RETURN_IF_ERROR(lmrt::SpmTokenizer::create(std::move(vocab), &m->tokenizer));
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
  return guarded(
      [&]() -> Status {
        lmrt_model_info full{};
        full.struct_size = sizeof full;
        const lmrt::GgufFile& g = model->llama->gguf();
        const lmrt::LlamaHparams& hp = model->llama->hparams();
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
              ++full.n_tensors_q4_0;
              full.bytes_q4_0 += t.n_bytes;
              break;
          }
        }
        write_prefix(full, info);
        return Status::Ok();
      },
      [&](const std::string& m) { model->set_error(m); });
}

lmrt_status lmrt_tokenize(const lmrt_model* model, const char* text, size_t text_len, uint32_t flags, int32_t* tokens,
                          size_t capacity, size_t* n_tokens) {
  if (model == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  return guarded(
      [&]() -> Status {
        if ((text == nullptr && text_len != 0) || n_tokens == nullptr || (tokens == nullptr && capacity != 0))
          return lmrt::Error(Code::invalid_argument, "text, tokens or n_tokens is NULL");
        std::vector<int32_t> out;
        LMRT_RETURN_IF_ERROR(model->tokenizer->tokenize(std::string_view(text != nullptr ? text : "", text_len),
                                                        (flags & LMRT_TOKENIZE_ADD_BOS) != 0,
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
  return guarded(
      [&]() -> Status {
        if (len == nullptr || (buf == nullptr && capacity != 0))
          return lmrt::Error(Code::invalid_argument, "buf or len is NULL");
        std::string piece;
        LMRT_RETURN_IF_ERROR(model->tokenizer->token_to_piece(token, &piece));
        *len = piece.size();
        if (piece.size() > capacity)
          return lmrt::Error(Code::buffer_too_small, "the piece has " + std::to_string(piece.size()) + " bytes");
        std::memcpy(buf, piece.data(), piece.size());
        return Status::Ok();
      },
      [&](const std::string& m) { model->set_error(m); });
}

lmrt_status lmrt_context_params_init(lmrt_context_params* params) {
  if (params == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  *params = lmrt_context_params{sizeof(lmrt_context_params), 0, 0, 0, LMRT_KV_F16, 0};
  return LMRT_OK;
}

lmrt_status lmrt_context_create(lmrt_model* model, const lmrt_context_params* params, lmrt_context** out_ctx, char* err,
                                size_t err_size) {
  if (out_ctx != nullptr) *out_ctx = nullptr;
  return guarded(
      [&]() -> Status {
        if (model == nullptr || out_ctx == nullptr)
          return lmrt::Error(Code::invalid_argument, "model and out_ctx must not be NULL");
        lmrt_context_params p;
        lmrt_context_params_init(&p);
        LMRT_RETURN_IF_ERROR(read_params(params, &p));
        if (p.kv_type != LMRT_KV_F16 && p.kv_type != LMRT_KV_F32)
          return lmrt::Error(Code::invalid_argument,
                             "kv_type " + std::to_string(p.kv_type) + " is neither LMRT_KV_F16 nor LMRT_KV_F32");
        lmrt::ContextParams cp;
        cp.n_ctx = p.n_ctx;
        cp.n_batch = p.n_batch;
        cp.n_threads = p.n_threads;
        cp.kv_type = p.kv_type == LMRT_KV_F32 ? lmrt::KvType::f32 : lmrt::KvType::f16;
        cp.logits_all = p.logits_all != 0;
        auto c = std::make_unique<lmrt_context>();
        c->model = model;
        LMRT_RETURN_IF_ERROR(lmrt::Context::create(*model->llama, cp, &c->ctx));
        *out_ctx = c.release();
        return Status::Ok();
      },
      [&](const std::string& m) { copy_message(m, err, err_size); });
}

lmrt_status lmrt_context_free(lmrt_context* ctx) {
  delete ctx;
  return LMRT_OK;
}

const char* lmrt_context_last_error(const lmrt_context* ctx) { return ctx == nullptr ? "" : ctx->last_error.c_str(); }

lmrt_status lmrt_context_get_params(const lmrt_context* ctx, lmrt_context_params* out) {
  if (ctx == nullptr || out == nullptr || out->struct_size < sizeof(uint32_t)) return LMRT_ERR_INVALID_ARGUMENT;
  const lmrt::ContextParams& p = ctx->ctx->params();
  lmrt_context_params full{sizeof(lmrt_context_params),
                           p.n_ctx,
                           p.n_batch,
                           p.n_threads,
                           p.kv_type == lmrt::KvType::f32 ? LMRT_KV_F32 : LMRT_KV_F16,
                           p.logits_all ? 1u : 0u};
  write_prefix(full, out);
  return LMRT_OK;
}

lmrt_status lmrt_context_reset(lmrt_context* ctx) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->ctx->truncate(0);
  return LMRT_OK;
}

lmrt_status lmrt_context_n_past(const lmrt_context* ctx, uint32_t* n_past) {
  if (ctx == nullptr || n_past == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  *n_past = ctx->ctx->n_past();
  return LMRT_OK;
}

lmrt_status lmrt_eval(lmrt_context* ctx, const int32_t* tokens, size_t n_tokens) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->last_error.clear();
  return guarded([&]() -> Status { return ctx->ctx->eval(tokens, n_tokens); },
                 [&](const std::string& m) { ctx->last_error = m; });
}

lmrt_status lmrt_get_logits(lmrt_context* ctx, size_t i, const float** logits, size_t* n_vocab) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->last_error.clear();
  return guarded(
      [&]() -> Status {
        if (logits == nullptr) return lmrt::Error(Code::invalid_argument, "logits is NULL");
        const float* l = ctx->ctx->logits(i);
        if (l == nullptr)
          return lmrt::Error(Code::invalid_argument,
                             "no logits kept for index " + std::to_string(i) + " of the last evaluation (" +
                                 std::to_string(ctx->ctx->last_eval_count()) + " tokens; logits_all " +
                                 (ctx->ctx->params().logits_all ? "on" : "off") + ")");
        *logits = l;
        if (n_vocab != nullptr) *n_vocab = ctx->ctx->model().hparams().n_vocab;
        return Status::Ok();
      },
      [&](const std::string& m) { ctx->last_error = m; });
}

lmrt_status lmrt_generate_request_init(lmrt_generate_request* request) {
  if (request == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  *request = lmrt_generate_request{};
  request->struct_size = sizeof(lmrt_generate_request);
  request->max_tokens = 256;
  request->add_bos = 1;
  request->parse_special = 0;
  return LMRT_OK;
}

lmrt_status lmrt_generate(lmrt_context* ctx, const lmrt_generate_request* request, lmrt_token_callback on_token,
                          void* user_data, lmrt_generate_result* result) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->last_error.clear();
  return guarded(
      [&]() -> Status {
        if (request == nullptr) return lmrt::Error(Code::invalid_argument, "request is NULL");
        if (result != nullptr && result->struct_size < sizeof(uint32_t))
          return lmrt::Error(Code::invalid_argument, "result->struct_size is not set");
        lmrt_generate_request req;
        lmrt_generate_request_init(&req);
        LMRT_RETURN_IF_ERROR(read_params(request, &req));
        lmrt::GenerateRequest r;
        if (req.prompt != nullptr)
          r.prompt = req.prompt_len == static_cast<size_t>(-1) ? std::string_view(req.prompt)
                                                               : std::string_view(req.prompt, req.prompt_len);
        r.max_tokens = req.max_tokens;
        r.add_bos = req.add_bos != 0;
        r.parse_special = req.parse_special != 0;

        struct Bridge {
          lmrt_token_callback fn;
          void* user;
        } bridge{on_token, user_data};
        lmrt::TokenSink sink;
        if (on_token != nullptr) {
          sink.user = &bridge;
          sink.fn = [](void* u, std::string_view text, int32_t token, uint32_t index) -> int {
            const auto* b = static_cast<Bridge*>(u);
            lmrt_token_event ev{sizeof(lmrt_token_event), token, text.data(), text.size(), index};
            return b->fn(b->user, &ev);
          };
        }
        LMRT_RETURN_IF_ERROR(lmrt::generate(*ctx->ctx, *ctx->model->tokenizer, r, sink, &ctx->last_result));
        if (result != nullptr) {
          const lmrt::GenerateResult& g = ctx->last_result;
          lmrt_generate_result full{};
          full.struct_size = sizeof full;
          full.finish_reason = static_cast<lmrt_finish_reason>(g.finish_reason);
          full.prompt_tokens = g.prompt_tokens;
          full.completion_tokens = g.completion_tokens;
          full.reused_tokens = g.reused_tokens;
          full.n_past = ctx->ctx->n_past();
          full.text = g.text.c_str();
          full.text_len = g.text.size();
          full.tokens = g.tokens.data();
          full.load_ms = ctx->model->load_ms;
          full.prefill_ms = g.timings.prefill_ms;
          full.decode_ms = g.timings.decode_ms;
          full.ttft_ms = g.timings.ttft_ms;
          full.prefill_tokens_per_s = g.timings.prefill_tokens_per_s;
          full.decode_tokens_per_s = g.timings.decode_tokens_per_s;
          write_prefix(full, result);
        }
        return Status::Ok();
      },
      [&](const std::string& m) { ctx->last_error = m; });
}

}  // extern "C"
