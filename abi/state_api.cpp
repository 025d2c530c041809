// Saved context state: a context's tokens and KV entries to a buffer or file and back.
#include "abi/api_support.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"
#include "runtime/generate/context_state.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

extern "C" {

lmrt_status lmrt_context_state_size(const lmrt_context* ctx, size_t* size) {
  if (ctx == nullptr || size == nullptr || ctx->has_engine()) return LMRT_ERR_INVALID_ARGUMENT;
  *size = lmrt::context_state_size(*ctx->ctx);
  return LMRT_OK;
}

lmrt_status lmrt_context_state_save(lmrt_context* ctx, void* buf, size_t capacity, size_t* written) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->last_error.clear();
  return guarded(
      [&]() -> Status {
        LMRT_RETURN_IF_ERROR(engine_owned(ctx, "lmrt_context_state_save"));
        if (written == nullptr) return lmrt::Error(Code::invalid_argument, "written is NULL");
        if (buf == nullptr && capacity != 0) return lmrt::Error(Code::invalid_argument, "buf is NULL");
        return lmrt::save_context_state(*ctx->ctx, ctx->model->fingerprint, static_cast<uint8_t*>(buf), capacity,
                                        written);
      },
      [&](const std::string& m) { ctx->last_error = m; });
}

lmrt_status lmrt_context_state_load(lmrt_context* ctx, const void* buf, size_t len) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->last_error.clear();
  return guarded(
      [&]() -> Status {
        LMRT_RETURN_IF_ERROR(engine_owned(ctx, "lmrt_context_state_load"));
        if (buf == nullptr) return lmrt::Error(Code::invalid_argument, "buf is NULL");
        return lmrt::load_context_state(*ctx->ctx, ctx->model->fingerprint, static_cast<const uint8_t*>(buf), len);
      },
      [&](const std::string& m) { ctx->last_error = m; });
}

lmrt_status lmrt_context_state_save_file(lmrt_context* ctx, const char* path) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->last_error.clear();
  return guarded(
      [&]() -> Status {
        LMRT_RETURN_IF_ERROR(engine_owned(ctx, "lmrt_context_state_save_file"));
        if (path == nullptr || *path == '\0') return lmrt::Error(Code::invalid_argument, "path is NULL or empty");
        return lmrt::save_context_state_file(*ctx->ctx, ctx->model->fingerprint, path);
      },
      [&](const std::string& m) { ctx->last_error = m; });
}

lmrt_status lmrt_context_state_load_file(lmrt_context* ctx, const char* path) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->last_error.clear();
  return guarded(
      [&]() -> Status {
        LMRT_RETURN_IF_ERROR(engine_owned(ctx, "lmrt_context_state_load_file"));
        if (path == nullptr || *path == '\0') return lmrt::Error(Code::invalid_argument, "path is NULL or empty");
        return lmrt::load_context_state_file(*ctx->ctx, ctx->model->fingerprint, path);
      },
      [&](const std::string& m) { ctx->last_error = m; });
}

}  // extern "C"
