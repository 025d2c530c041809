#include "runtime/generate/context_state.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/util/file_replacer.h"
#include "runtime/util/regular_file.h"

namespace lmrt {

namespace {

StateGeometry geometry_of(const Context& ctx) {
  const ModelConfig& hp = ctx.model().hparams();
  StateGeometry g;
  g.kv_type = ctx.kv().type() == KvType::f32 ? 1u : 0u;
  g.n_layer = hp.n_layer;
  g.n_head_kv = hp.n_head_kv;
  g.head_dim = hp.head_dim;
  g.n_vocab = hp.n_vocab;
  return g;
}

// Whether a file starts with the blob's magic (the only files a save may replace).
bool holds_state(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  uint8_t magic[8];
  return f && std::fread(magic, 1, sizeof magic, f.get()) == sizeof magic && looks_like_state_blob(magic, sizeof magic);
}

}  // namespace

size_t context_state_size(const Context& ctx) { return state_blob_size(geometry_of(ctx), ctx.n_past()); }

size_t context_prefix_state_size(const Context& ctx, uint32_t n_tokens) {
  return state_blob_size(geometry_of(ctx), n_tokens);
}

namespace {

// Writes the blob of the first n held tokens into buf (state_blob_size bytes).
void write_state(const Context& ctx, const ModelFingerprint& model, uint32_t n, uint8_t* buf) {
  const StateGeometry g = geometry_of(ctx);
  uint8_t* p = write_state_head(buf, model, g, ctx.n_ctx(), ctx.tokens().data(), n);
  const KvArena& kv = ctx.kv();
  const size_t run = g.head_run_bytes(n);
  for (uint32_t l = 0; l < g.n_layer; ++l)
    for (uint32_t which = 0; which < 2; ++which)
      for (uint32_t h = 0; h < g.n_head_kv; ++h) {
        if (run != 0) std::memcpy(p, which == 0 ? kv.key(l, h, 0) : kv.value(l, h, 0), run);
        p += run;
      }
  seal_state_blob(buf, state_blob_size(g, n));
}

}  // namespace

Status save_context_state(const Context& ctx, const ModelFingerprint& model, uint8_t* buf, size_t capacity,
                          size_t* written) {
  const size_t size = context_state_size(ctx);
  *written = size;
  if (capacity < size || buf == nullptr)
    return Error(Code::buffer_too_small,
                 "the state takes " + std::to_string(size) + " bytes; the buffer holds " + std::to_string(capacity));
  write_state(ctx, model, ctx.n_past(), buf);
  return Status::Ok();
}

Status save_context_prefix_state(const Context& ctx, const ModelFingerprint& model, uint32_t n_tokens,
                                 std::string* out) {
  if (n_tokens > ctx.n_past())
    return Error(Code::invalid_argument, "cannot save " + std::to_string(n_tokens) + " tokens of a context holding " +
                                             std::to_string(ctx.n_past()));
  out->assign(context_prefix_state_size(ctx, n_tokens), '\0');
  write_state(ctx, model, n_tokens, reinterpret_cast<uint8_t*>(out->data()));
  return Status::Ok();
}

Status load_context_state(Context& ctx, const ModelFingerprint& model, const uint8_t* data, size_t size) {
  if (data == nullptr && size != 0) return Error(Code::invalid_argument, "the state buffer is NULL");
  const StateGeometry g = geometry_of(ctx);
  StateBlobView v;
  LMRT_RETURN_IF_ERROR(read_state_blob(data, size, model, g, ctx.n_ctx(), &v));
  std::vector<int32_t> tokens(v.n_tokens);
  for (uint32_t i = 0; i < v.n_tokens; ++i) tokens[i] = v.token(i);
  KvArena& kv = ctx.restore_kv();
  const size_t run = g.head_run_bytes(v.n_tokens);
  const uint8_t* p = v.kv;
  for (uint32_t l = 0; l < g.n_layer; ++l)
    for (uint32_t which = 0; which < 2; ++which)
      for (uint32_t h = 0; h < g.n_head_kv; ++h) {
        if (run != 0) std::memcpy(which == 0 ? kv.key(l, h, 0) : kv.value(l, h, 0), p, run);
        p += run;
      }
  ctx.set_restored_tokens(tokens.data(), v.n_tokens);
  return Status::Ok();
}

Status save_context_state_file(const Context& ctx, const ModelFingerprint& model, const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 &&
      (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_size > 0 && !holds_state(path))))
    return Error(Code::invalid_argument,
                 "'" + path + "' exists and is not an lmrt context state; it is never replaced");
  std::vector<uint8_t> blob(context_state_size(ctx));
  size_t written = 0;
  LMRT_RETURN_IF_ERROR(save_context_state(ctx, model, blob.data(), blob.size(), &written));
  return replace_file(path, blob.data(), written);
}

Status load_context_state_file(Context& ctx, const ModelFingerprint& model, const std::string& path) {
  // No larger blob fits this context: refused before anything is allocated for a huge foreign file.
  const size_t most = state_blob_size(geometry_of(ctx), ctx.n_ctx());
  std::string blob;
  LMRT_RETURN_IF_ERROR(
      read_regular_file(path, most, "any state of this context (" + std::to_string(most) + ")", &blob));
  return load_context_state(ctx, model, reinterpret_cast<const uint8_t*>(blob.data()), blob.size());
}

}  // namespace lmrt
