// The response cache as a C handle.
#include "abi/api_support.h"
#include "abi/handles.h"
#include "lmrt/lmrt.h"

using lmrt::Code;
using lmrt::Status;
using namespace lmrt::abi;

extern "C" {

lmrt_status lmrt_cache_params_init_sized(lmrt_cache_params* params, size_t struct_size) {
  const lmrt::ResponseCacheParams r;
  lmrt_cache_params d = lmrt_cache_params{};
  d.struct_size = sizeof(lmrt_cache_params);
  d.max_bytes = r.max_bytes;
  d.max_entries = r.max_entries;
  d.ttl_seconds = r.ttl_seconds;
  d.busy_timeout_ms = static_cast<uint32_t>(r.busy_timeout_ms);
  d.check_on_open = r.check_on_open ? 1 : 0;
  return init_sized(params, struct_size, d);
}

lmrt_status lmrt_cache_open(const char* path, const lmrt_cache_params* params, lmrt_cache** out_cache, char* err,
                            size_t err_size) {
  if (out_cache != nullptr) *out_cache = nullptr;
  return guarded(
      [&]() -> Status {
        if (path == nullptr || out_cache == nullptr)
          return lmrt::Error(Code::invalid_argument, "path and out_cache must not be NULL");
        lmrt_cache_params p;
        lmrt_cache_params_init(&p);
        LMRT_RETURN_IF_ERROR(read_params(params, &p));
        if (p.busy_timeout_ms > 600000)
          return lmrt::Error(Code::invalid_argument, "busy_timeout_ms is above 10 minutes");
        auto c = std::make_unique<lmrt_cache>();
        lmrt::ResponseCacheParams rp;
        rp.read_only = p.read_only != 0;
        rp.max_bytes = p.max_bytes;
        rp.max_entries = p.max_entries;
        rp.ttl_seconds = p.ttl_seconds;
        rp.busy_timeout_ms = static_cast<int>(p.busy_timeout_ms);
        rp.check_on_open = p.check_on_open != 0;
        rp.prefix_min_tokens = p.prefix_min_tokens;
        lmrt_cache* handle = c.get();
        rp.on_warning = [handle, cb = p.on_warning, user = p.warning_user_data](const std::string& m) {
          handle->errors.set(m);
          if (cb != nullptr) cb(user, m.c_str());
        };
        Status s = lmrt::ResponseCache::open(path, rp, &c->cache);
        if (!s.ok()) return lmrt::Error(Code::cache, s.message());
        *out_cache = c.release();
        return Status::Ok();
      },
      [&](const std::string& m) { copy_message(m, err, err_size); });
}

lmrt_status lmrt_cache_close(lmrt_cache* cache) {
  delete cache;
  return LMRT_OK;
}

const char* lmrt_cache_last_error(const lmrt_cache* cache) {
  if (cache == nullptr) return "";
  try {
    return cache->errors.get();
  } catch (...) {
    return "";
  }
}

lmrt_status lmrt_cache_get_stats(lmrt_cache* cache, lmrt_cache_stats* stats) {
  if (cache == nullptr || stats == nullptr || stats->struct_size < sizeof(uint32_t)) return LMRT_ERR_INVALID_ARGUMENT;
  cache->errors.clear();
  return guarded(
      [&]() -> Status {
        lmrt::ResponseCacheStats s;
        Status st = cache->cache->stats(&s);
        if (!st.ok()) return lmrt::Error(Code::cache, st.message());
        lmrt_cache_stats full{sizeof(lmrt_cache_stats),
                              cache->cache->is_read_only() ? 1u : 0u,
                              s.hits,
                              s.misses,
                              s.stores,
                              s.evictions,
                              s.expirations,
                              s.entries,
                              s.bytes};
        write_prefix(full, stats);
        return Status::Ok();
      },
      [&](const std::string& m) { cache->errors.set(m); });
}

lmrt_status lmrt_cache_clear(lmrt_cache* cache) {
  if (cache == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  cache->errors.clear();
  return guarded(
      [&]() -> Status {
        Status s = cache->cache->clear();
        return s.ok() ? s : lmrt::Error(Code::cache, s.message());
      },
      [&](const std::string& m) { cache->errors.set(m); });
}

lmrt_status lmrt_cache_vacuum(lmrt_cache* cache) {
  if (cache == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  cache->errors.clear();
  return guarded(
      [&]() -> Status {
        Status s = cache->cache->vacuum();
        return s.ok() ? s : lmrt::Error(Code::cache, s.message());
      },
      [&](const std::string& m) { cache->errors.set(m); });
}

lmrt_status lmrt_context_set_cache(lmrt_context* ctx, lmrt_cache* cache) {
  if (ctx == nullptr) return LMRT_ERR_INVALID_ARGUMENT;
  ctx->cache = cache;
  return LMRT_OK;
}

}  // extern "C"
