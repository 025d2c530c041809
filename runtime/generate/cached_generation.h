// The request path with the response cache in front (DESIGN.md, step 2): a deterministic request
// (greedy, or seeded with a deterministic chain) is looked up first; a hit is replayed through the
// same sink, a miss runs generate() and is stored. The cache never makes a request fail: its
// errors become warnings.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cache/cache_key.h"
#include "runtime/cache/cached_response.h"
#include "runtime/cache/response_cache.h"
#include "runtime/generate/generator.h"

namespace lmrt {

struct CacheUse {
  ResponseCache* cache = nullptr;         // nullptr: no cache
  std::array<uint8_t, 32> fingerprint{};  // the model's (model_fingerprint())
  bool seeded = false;                    // the request fixed its seed
  uint32_t version = 0;                   // lmrt's numeric version (LMRT_VERSION_NUMBER), part of the key
  std::string extra_key;                  // more that changes the output: stop criteria, plugin versions
};

struct CacheOutcome {
  bool consulted = false;  // the request was deterministic and a cache was given
  bool hit = false;
  double lookup_ms = 0;  // looking up (and, on a hit, replaying)
  std::string warning;   // a cache error that was ignored
};

Status generate_cached(Context& ctx, const Tokenizer& tok, const GenerateRequest& req, const CacheUse& use,
                       TokenSink sink, GenerateResult* result, CacheOutcome* outcome);

// The pieces of generate_cached for other request paths (the batch engine), so that they answer
// with the same keys and rules.
// True when the request's output is fixed by its fields (greedy, or a deterministic chain whose
// randomness is seeded): only then is it looked up or stored.
bool cacheable(const GenerateRequest& req, const CacheUse& use);
// The key of a request with these prompt tokens on an arena of n_ctx cells holding kv_type entries.
Status request_cache_key(const GenerateRequest& req, const CacheUse& use, std::vector<int32_t> prompt, uint32_t n_ctx,
                         const char* kv_type, CacheKey* key);
// What is stored of a finished result.
CachedResponse to_cached(const GenerateResult& r);
// Rebuilds the result from a cache entry and streams its pieces as they were generated; false
// when the sink cancelled (the result then finishes cancelled).
bool replay_cached(const CachedResponse& c, TokenSink sink, GenerateResult* out);

}  // namespace lmrt
