// Prompt-prefix states in the response cache's file (opt-in: ResponseCacheParams::prefix_min_tokens):
// a generation stores the context state of its prompt but the last token, and a later request (in
// any process sharing the file) whose prompt starts with a stored prefix loads it instead of
// evaluating those tokens. A state is found through its token count, recorded per scope (model,
// lmrt version, KV type and geometry), and keyed by the scope and the tokens themselves.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cache/cache_key.h"
#include "runtime/cache/response_cache.h"
#include "runtime/generate/context.h"
#include "runtime/generate/state_blob.h"

namespace lmrt {

struct PrefixStateUse {
  ResponseCache* cache = nullptr;  // nullptr, or prefix_min_tokens() == 0: off
  ModelFingerprint model{};
  uint32_t version = 0;  // lmrt's numeric version: another version's KV is never loaded

  bool on() const { return cache != nullptr && cache->prefix_min_tokens() > 0; }
};

// Before prefill: loads the longest stored state of a proper prefix of `prompt` that is longer than
// what the context already shares with the prompt. *loaded receives its token count (0: none).
// Cache errors are returned for logging; the context is then as it was (or holds a loaded prefix).
Status load_prompt_prefix(Context& ctx, const PrefixStateUse& use, const std::vector<int32_t>& prompt,
                          uint32_t* loaded);

// After a generation: stores the state of prompt[0, n - 1) when n - 1 >= prefix_min_tokens, the
// context still holds those tokens (no context shift moved them) and the cache has no such state.
Status store_prompt_prefix(const Context& ctx, const PrefixStateUse& use, const std::vector<int32_t>& prompt);

// The cache's key of a prefix state and the scope its length is recorded under.
CacheKey prefix_state_scope(const Context& ctx, const PrefixStateUse& use);
CacheKey prefix_state_key(const CacheKey& scope, const int32_t* tokens, uint32_t n);

}  // namespace lmrt
