// The response-cache key: SHA-256 over a canonical, versioned, length-prefixed binary encoding of
// everything that decides a deterministic completion. Each field is a tag plus a 64-bit length plus
// its bytes, so field boundaries cannot be confused (stop ["ab","c"] and ["a","bc"] encode
// differently) and a field added later cannot collide with an old encoding.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cache/sha256.h"
#include "runtime/util/status.h"

namespace lmrt {

using CacheKey = std::array<uint8_t, 32>;

struct CacheKeyFields {
  std::array<uint8_t, 32> model_fingerprint{};  // model_fingerprint(const GgufFile&)
  uint32_t lmrt_version = 0;                    // lmrt's numeric version, e.g. major*10000+minor*100+patch
  std::vector<int32_t> prompt_tokens;
  // The sampler chain in its canonical text form, including plugin names, plugin versions and every
  // configuration value, e.g. "top_k(k=40) myplugin@1.2.0(alpha=0.5) dist".
  std::string sampler_chain;
  // Greedy (argmax) decoding consumes no randomness, so the seed is left out of a greedy key.
  bool greedy = false;
  // The request fixed its seed (a seed drawn at random by lmrt does not count).
  bool seeded = false;
  uint64_t seed = 0;
  // Every sampler in the chain, built-in or plugin, gives the same output for the same input and seed.
  bool chain_deterministic = false;
  int32_t max_tokens = 0;
  std::vector<std::string> stop;  // in the order the request gave them
  int32_t logprobs_n = 0;         // top-n alternatives asked for per token (0 = none)
  // The element type of the context's KV cache ("f16", "f32"): attention reads keys and values
  // rounded to it, so two types can give different tokens for the same request.
  std::string kv_type;
  // Anything else that changes the output, in canonical text: context size, context shift, beams.
  std::string options;
};

// A request may be cached only when its output is a function of the key: its chain is
// deterministic and it is either greedy or seeded.
bool is_cacheable(const CacheKeyFields& fields);

// The canonical encoding the key hashes (exposed for tests and debugging).
std::string encode_cache_key_fields(const CacheKeyFields& fields);

// Computes the key. Errors: unsupported when the request is not cacheable (so a non-deterministic
// request cannot even produce a key to store under).
Status make_cache_key(const CacheKeyFields& fields, CacheKey* out);

}  // namespace lmrt
