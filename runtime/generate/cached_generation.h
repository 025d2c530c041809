// The request path with the response cache in front (DESIGN.md, step 2): a deterministic request
// (greedy, or seeded with a deterministic chain) is looked up first; a hit is replayed through the
// same sink, a miss runs generate() and is stored. The cache never makes a request fail: its
// errors become warnings.
#pragma once

#include <array>
#include <cstdint>
#include <string>

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

}  // namespace lmrt
