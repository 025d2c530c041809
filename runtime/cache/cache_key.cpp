#include "runtime/cache/cache_key.h"

#include "runtime/cache/byte_codec.h"

namespace lmrt {

namespace {

// Bump when the encoding changes; old keys then simply stop matching. 2: the KV type.
constexpr uint32_t kKeyEncodingVersion = 2;
constexpr char kKeyMagic[] = "lmrt.response-cache.key";

// Field tags. Never reuse a number; add new fields with new tags.
enum class Tag : uint8_t {
  model_fingerprint = 1,
  lmrt_version = 2,
  prompt_tokens = 3,
  sampler_chain = 4,
  mode = 5,  // 0 greedy, 1 seeded
  seed = 6,  // only in seeded keys
  max_tokens = 7,
  stop = 8,
  logprobs_n = 9,
  options = 10,
  kv_type = 11,
};

void put_field(cache_codec::ByteWriter* w, Tag tag, const std::string& payload) {
  w->u8(static_cast<uint8_t>(tag));
  w->bytes64(payload);
}

}  // namespace

bool is_cacheable(const CacheKeyFields& fields) {
  return fields.chain_deterministic && (fields.greedy || fields.seeded);
}

std::string encode_cache_key_fields(const CacheKeyFields& f) {
  cache_codec::ByteWriter w;
  w.reserve(128 + 4 * f.prompt_tokens.size() + f.sampler_chain.size());
  w.bytes64(kKeyMagic);
  w.u32(kKeyEncodingVersion);

  put_field(&w, Tag::model_fingerprint,
            std::string(reinterpret_cast<const char*>(f.model_fingerprint.data()), f.model_fingerprint.size()));

  cache_codec::ByteWriter v;
  v.u32(f.lmrt_version);
  put_field(&w, Tag::lmrt_version, v.str());

  cache_codec::ByteWriter tokens;
  tokens.reserve(4 * f.prompt_tokens.size());
  for (int32_t t : f.prompt_tokens) tokens.i32(t);
  put_field(&w, Tag::prompt_tokens, tokens.str());

  put_field(&w, Tag::sampler_chain, f.sampler_chain);

  cache_codec::ByteWriter mode;
  mode.u8(f.greedy ? 0 : 1);
  put_field(&w, Tag::mode, mode.str());
  if (!f.greedy) {
    cache_codec::ByteWriter seed;
    seed.u64(f.seed);
    put_field(&w, Tag::seed, seed.str());
  }

  cache_codec::ByteWriter max_tokens;
  max_tokens.i32(f.max_tokens);
  put_field(&w, Tag::max_tokens, max_tokens.str());

  // The list: a count, then each string with its own length.
  cache_codec::ByteWriter stop;
  stop.u64(f.stop.size());
  for (const std::string& s : f.stop) stop.bytes64(s);
  put_field(&w, Tag::stop, stop.str());

  cache_codec::ByteWriter logprobs;
  logprobs.i32(f.logprobs_n);
  put_field(&w, Tag::logprobs_n, logprobs.str());
  put_field(&w, Tag::options, f.options);
  put_field(&w, Tag::kv_type, f.kv_type);
  return std::move(w.str());
}

Status make_cache_key(const CacheKeyFields& fields, CacheKey* out) {
  if (!is_cacheable(fields)) {
    return Error(Code::unsupported,
                 "request is not deterministic (neither greedy nor seeded with a deterministic sampler chain); "
                 "it is not cached");
  }
  *out = Sha256::hash(encode_cache_key_fields(fields));
  return Status::Ok();
}

}  // namespace lmrt
