#include "runtime/generate/prefix_state_cache.h"

#include <algorithm>

#include "runtime/cache/byte_codec.h"
#include "runtime/cache/sha256.h"
#include "runtime/generate/context_state.h"

namespace lmrt {

namespace {

// Tokens the context holds that begin the prompt.
uint32_t shared_prefix(const Context& ctx, const std::vector<int32_t>& prompt) {
  const std::vector<int32_t>& held = ctx.tokens();
  uint32_t n = 0;
  while (n < held.size() && n < prompt.size() && held[n] == prompt[n]) ++n;
  return n;
}

}  // namespace

CacheKey prefix_state_scope(const Context& ctx, const PrefixStateUse& use) {
  const ModelConfig& hp = ctx.model().hparams();
  cache_codec::ByteWriter w;
  w.raw("lmrt.prefix-scope.v1", 20);
  w.raw(use.model.data(), use.model.size());
  w.u32(use.version);
  for (uint32_t v : {ctx.kv().type() == KvType::f32 ? 1u : 0u, hp.n_layer, hp.n_head_kv, hp.head_dim, hp.n_vocab})
    w.u32(v);
  return Sha256::hash(w.str());
}

CacheKey prefix_state_key(const CacheKey& scope, const int32_t* tokens, uint32_t n) {
  Sha256 h;
  h.update("lmrt.prefix-state.v1", 20);
  h.update(scope.data(), scope.size());
  cache_codec::ByteWriter w;
  w.u32(n);
  for (uint32_t i = 0; i < n; ++i) w.i32(tokens[i]);
  h.update(w.str());
  return h.finish();
}

Status load_prompt_prefix(Context& ctx, const PrefixStateUse& use, const std::vector<int32_t>& prompt,
                          uint32_t* loaded) {
  *loaded = 0;
  if (!use.on() || prompt.size() < 2) return Status::Ok();
  const uint32_t held = shared_prefix(ctx, prompt);
  // A proper prefix: the prompt's last token is always evaluated, for its logits.
  const uint32_t most = static_cast<uint32_t>(std::min<size_t>(prompt.size() - 1, ctx.n_ctx()));
  if (held >= most) return Status::Ok();
  const CacheKey scope = prefix_state_scope(ctx, use);
  std::vector<uint32_t> lengths;
  LMRT_RETURN_IF_ERROR(use.cache->prefix_lengths(scope, most, &lengths));
  for (uint32_t n : lengths) {
    if (n <= held) break;  // longest first: nothing longer than what the context holds is left
    bool hit = false;
    Status s = use.cache->lookup_value(
        prefix_state_key(scope, prompt.data(), n),
        [&](const uint8_t* data, size_t size) -> Status {
          LMRT_RETURN_IF_ERROR(load_context_state(ctx, use.model, data, size));
          // The key covers the tokens; a hash collision would still be caught here.
          if (shared_prefix(ctx, prompt) < n) {
            ctx.truncate(0);
            return Error(Code::bad_format, "a stored prefix state holds other tokens than its key");
          }
          return Status::Ok();
        },
        &hit, /*mark_used=*/false);  // states are evicted in the order they were stored
    LMRT_RETURN_IF_ERROR(s);
    if (hit) {
      *loaded = n;
      return Status::Ok();
    }
  }
  return Status::Ok();
}

Status store_prompt_prefix(const Context& ctx, const PrefixStateUse& use, const std::vector<int32_t>& prompt) {
  if (!use.on() || use.cache->is_read_only() || prompt.size() < 2) return Status::Ok();
  const uint32_t n = static_cast<uint32_t>(prompt.size() - 1);
  if (n < use.cache->prefix_min_tokens() || shared_prefix(ctx, prompt) < n) return Status::Ok();
  const CacheKey scope = prefix_state_scope(ctx, use);
  std::vector<uint32_t> lengths;
  LMRT_RETURN_IF_ERROR(use.cache->prefix_lengths(scope, n, &lengths));
  const CacheKey key = prefix_state_key(scope, prompt.data(), n);
  if (!lengths.empty() && lengths.front() == n) {
    // This length is recorded: is it this prompt's prefix (not another prompt of the same length)?
    bool stored = false;
    LMRT_RETURN_IF_ERROR(use.cache->contains(key, &stored));
    if (stored) return Status::Ok();
  }
  std::string state;
  LMRT_RETURN_IF_ERROR(save_context_prefix_state(ctx, use.model, n, &state));
  return use.cache->store_prefix(scope, n, key, state);
}

}  // namespace lmrt
