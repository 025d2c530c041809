#include "runtime/cache/cache_key.h"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <vector>

namespace lmrt {
namespace {

CacheKeyFields base_fields() {
  CacheKeyFields f;
  for (size_t i = 0; i < f.model_fingerprint.size(); ++i) f.model_fingerprint[i] = static_cast<uint8_t>(i);
  f.lmrt_version = 100;
  f.prompt_tokens = {1, 450, 4996, 29892};
  f.sampler_chain = "top_k(k=40) top_p(p=0.9) temperature(t=0.7) dist";
  f.greedy = false;
  f.seeded = true;
  f.seed = 1234;
  f.chain_deterministic = true;
  f.max_tokens = 128;
  f.stop = {"\n\n", "The end"};
  f.logprobs_n = 0;
  f.kv_type = "f16";
  return f;
}

CacheKey key_of(const CacheKeyFields& f) {
  CacheKey k{};
  Status s = make_cache_key(f, &k);
  EXPECT_TRUE(s.ok()) << s.message();
  return k;
}

TEST(CacheKey, SameFieldsGiveSameKey) { EXPECT_EQ(key_of(base_fields()), key_of(base_fields())); }

TEST(CacheKey, EveryFieldChangesTheKey) {
  const std::vector<std::pair<const char*, std::function<void(CacheKeyFields&)>>> changes = {
      {"fingerprint first byte", [](CacheKeyFields& f) { f.model_fingerprint[0] ^= 1; }},
      {"fingerprint last byte", [](CacheKeyFields& f) { f.model_fingerprint[31] ^= 0x80; }},
      {"lmrt version", [](CacheKeyFields& f) { f.lmrt_version = 101; }},
      {"prompt token value", [](CacheKeyFields& f) { f.prompt_tokens[2] = 4997; }},
      {"prompt token appended", [](CacheKeyFields& f) { f.prompt_tokens.push_back(0); }},
      {"prompt token removed", [](CacheKeyFields& f) { f.prompt_tokens.pop_back(); }},
      {"prompt order", [](CacheKeyFields& f) { std::swap(f.prompt_tokens[1], f.prompt_tokens[2]); }},
      {"prompt empty", [](CacheKeyFields& f) { f.prompt_tokens.clear(); }},
      {"sampler config",
       [](CacheKeyFields& f) { f.sampler_chain = "top_k(k=41) top_p(p=0.9) temperature(t=0.7) dist"; }},
      {"sampler plugin version",
       [](CacheKeyFields& f) { f.sampler_chain = "top_k(k=40) myplugin@1.0.1(a=1) temperature(t=0.7) dist"; }},
      {"seed", [](CacheKeyFields& f) { f.seed = 1235; }},
      {"seed high bits", [](CacheKeyFields& f) { f.seed |= uint64_t{1} << 63; }},
      {"greedy", [](CacheKeyFields& f) { f.greedy = true; }},
      {"max tokens", [](CacheKeyFields& f) { f.max_tokens = 129; }},
      {"stop string text", [](CacheKeyFields& f) { f.stop[1] = "The End"; }},
      {"stop string added", [](CacheKeyFields& f) { f.stop.push_back("x"); }},
      {"stop empty string added", [](CacheKeyFields& f) { f.stop.push_back(""); }},
      {"stop removed", [](CacheKeyFields& f) { f.stop.clear(); }},
      {"logprobs n", [](CacheKeyFields& f) { f.logprobs_n = 5; }},
      {"options", [](CacheKeyFields& f) { f.options = "n_ctx=512"; }},
      {"kv type", [](CacheKeyFields& f) { f.kv_type = "f32"; }},
  };
  std::set<CacheKey> seen = {key_of(base_fields())};
  for (const auto& [name, change] : changes) {
    CacheKeyFields f = base_fields();
    change(f);
    EXPECT_TRUE(seen.insert(key_of(f)).second) << name << " did not give a new key";
  }
}

TEST(CacheKey, FieldBoundariesCannotBeConfused) {
  CacheKeyFields a = base_fields(), b = base_fields();
  a.stop = {"ab", "c"};
  b.stop = {"a", "bc"};
  EXPECT_NE(key_of(a), key_of(b));
  a.stop = {"abc"};
  EXPECT_NE(key_of(a), key_of(b));
  a.stop = {};
  b.stop = {""};
  EXPECT_NE(key_of(a), key_of(b));
  // Moving bytes from one field into the next.
  a = base_fields();
  b = base_fields();
  a.sampler_chain = "dist";
  a.stop = {"x"};
  b.sampler_chain = "distx";
  b.stop = {};
  EXPECT_NE(encode_cache_key_fields(a), encode_cache_key_fields(b));
  EXPECT_NE(key_of(a), key_of(b));
}

TEST(CacheKey, GreedyKeyIgnoresSeedButSeededKeyDoesNot) {
  CacheKeyFields a = base_fields(), b = base_fields();
  a.greedy = b.greedy = true;
  a.seeded = b.seeded = false;
  b.seed = 99;
  EXPECT_EQ(key_of(a), key_of(b));
  a.greedy = b.greedy = false;
  a.seeded = b.seeded = true;
  EXPECT_NE(key_of(a), key_of(b));
}

TEST(CacheKey, NonDeterministicRequestsGetNoKey) {
  CacheKey k{};
  CacheKeyFields f = base_fields();
  f.seeded = false;  // random seed, not greedy
  EXPECT_FALSE(is_cacheable(f));
  Status s = make_cache_key(f, &k);
  EXPECT_EQ(s.code(), Code::unsupported);

  f = base_fields();
  f.chain_deterministic = false;  // e.g. a plugin that reads its own entropy
  EXPECT_FALSE(is_cacheable(f));
  EXPECT_EQ(make_cache_key(f, &k).code(), Code::unsupported);

  f.greedy = true;  // greedy with a non-deterministic plugin is still not cacheable
  EXPECT_FALSE(is_cacheable(f));

  f = base_fields();
  f.seeded = false;
  f.greedy = true;
  EXPECT_TRUE(is_cacheable(f));
  EXPECT_TRUE(make_cache_key(f, &k).ok());
}

TEST(CacheKey, EncodingIsVersionedAndCarriesEveryField) {
  const std::string enc = encode_cache_key_fields(base_fields());
  EXPECT_NE(enc.find("lmrt.response-cache.key"), std::string::npos);
  EXPECT_NE(enc.find(base_fields().sampler_chain), std::string::npos);
  EXPECT_NE(enc.find("The end"), std::string::npos);
}

}  // namespace
}  // namespace lmrt
