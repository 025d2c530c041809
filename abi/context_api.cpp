// Contexts: creation, parameters, evaluation and logits.
#include "abi/api_support.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

extern "C" {

lmrt_status lmrt_context_params_init_sized(lmrt_context_params* params, size_t struct_size) {
  lmrt_context_params d = lmrt_context_params{sizeof(lmrt_context_params), 0, 0, 0, LMRT_KV_F16, 0};
  return init_sized(params, struct_size, d);
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
  if (ctx == nullptr) return LMRT_OK;
  // While an engine runs on it, the engine's lmrt_engine_free frees it (the engine keeps working until then).
  if ((ctx->ownership.fetch_or(lmrt_context::kFreed) & lmrt_context::kEngine) == 0) delete ctx;
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
  ctx->last_error.clear();
  if (Status s = engine_owned(ctx, "lmrt_context_reset"); !s.ok()) {
    ctx->last_error = s.message();
    return LMRT_ERR_INVALID_ARGUMENT;
  }
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
  return guarded(
      [&]() -> Status {
        LMRT_RETURN_IF_ERROR(engine_owned(ctx, "lmrt_eval"));
        return ctx->ctx->eval(tokens, n_tokens);
      },
      [&](const std::string& m) { ctx->last_error = m; });
}

lmrt_status lmrt_get_logits(lmrt_context* ctx, size_t i, const float** logits, size_t* n_vocab) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->last_error.clear();
  return guarded(
      [&]() -> Status {
        if (logits == nullptr) return lmrt::Error(Code::invalid_argument, "logits is NULL");
        LMRT_RETURN_IF_ERROR(engine_owned(ctx, "lmrt_get_logits"));
        const float* l = ctx->ctx->logits(i);
        if (l == nullptr)
          return lmrt::Error(Code::invalid_argument,
                             "no logits kept for index " + std::to_string(i) + " of the last evaluation (" +
                                 std::to_string(ctx->ctx->last_eval_count()) + " tokens; logits_all " +
                                 (ctx->ctx->params().logits_all ? "on: it keeps the last batch's, up to n_batch " +
                                                                      std::to_string(ctx->ctx->params().n_batch) + ")"
                                                                : "off)"));
        *logits = l;
        if (n_vocab != nullptr) *n_vocab = ctx->ctx->model().hparams().n_vocab;
        return Status::Ok();
      },
      [&](const std::string& m) { ctx->last_error = m; });
}

}  // extern "C"
