// Prompt-prefix states in the SQLite cache (lmrt_cache_params.prefix_min_tokens): a second process
// answers a known prompt with reused_tokens == the stored prefix and the same tokens; states follow the
// cache's rules (threshold, scope by KV type, read-only, schema migration from version 1).
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>
#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "c_api_fixture.h"
#include "cli_runner.h"
#include "test_support.h"

namespace {

using lmrt::test::CliRun;
using lmrt::test::ContextPtr;
using lmrt::test::ModelPtr;
using lmrt::test::quoted_model;
using lmrt::test::run_cli;

constexpr const char* kSystemPrompt =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
    "friends. One day, she saw a big red ball under a tree.";

std::string fresh_path(const std::string& name) {
  const std::string path = lmrt::test::write_temp_file(name, "");
  ::unlink(path.c_str());
  return path;
}

// An unsigned integer field of the CLI's --json output; -1 when absent.
long json_uint(const std::string& json, const std::string& name) {
  const size_t at = json.find("\"" + name + "\":");
  if (at == std::string::npos) return -1;
  return std::stol(json.substr(at + name.size() + 3));
}

std::vector<int> json_tokens(const std::string& json) {
  std::vector<int> ids;
  const size_t at = json.find("\"tokens\":[");
  if (at == std::string::npos) return ids;
  std::istringstream in(json.substr(at + 10, json.find(']', at) - at - 10));
  for (std::string item; std::getline(in, item, ',');) ids.push_back(std::stoi(item));
  return ids;
}

TEST(PrefixStateCache, SecondProcessLoadsTheStoredPromptInsteadOfPrefillingIt) {
  const std::string cache = fresh_path("prefix-cli.sqlite");
  const std::string run = "run -m " + quoted_model("stories260K.gguf") + " -p '" + kSystemPrompt + "' -t 2 --json";
  const CliRun plain = run_cli(run + " -n 16");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const long n_prompt = json_uint(plain.out, "prompt_tokens");
  ASSERT_GT(n_prompt, 20);

  const CliRun first = run_cli(run + " -n 16 --cache " + cache + " --prefix-cache 8");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(json_uint(first.out, "reused_tokens"), 0);
  EXPECT_EQ(json_tokens(first.out), json_tokens(plain.out));

  // Another process, another request (12 tokens: the response cache has no answer for it).
  const CliRun second = run_cli(run + " -n 12 --cache " + cache + " --prefix-cache 8");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("\"cache_hit\":false"), std::string::npos);
  EXPECT_EQ(json_uint(second.out, "reused_tokens"), n_prompt - 1);
  std::vector<int> want = json_tokens(plain.out);
  want.resize(12);
  EXPECT_EQ(json_tokens(second.out), want);
  EXPECT_TRUE(second.err.empty()) << second.err;

  // Without --prefix-cache the stored state is not used.
  const CliRun off = run_cli(run + " -n 10 --cache " + cache);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_EQ(json_uint(off.out, "reused_tokens"), 0);
  EXPECT_EQ(run_cli(run + " -n 10 --prefix-cache 8").exit_code, 2);  // needs --cache
  ::unlink(cache.c_str());
}

struct CacheCloser {
  void operator()(lmrt_cache* c) const { lmrt_cache_close(c); }
};
using CachePtr = std::unique_ptr<lmrt_cache, CacheCloser>;

CachePtr open_cache(const std::string& path, uint32_t prefix_min_tokens, bool read_only = false) {
  lmrt_cache_params p;
  lmrt_cache_params_init(&p);
  p.prefix_min_tokens = prefix_min_tokens;
  p.read_only = read_only ? 1 : 0;
  lmrt_cache* c = nullptr;
  char err[512] = {0};
  EXPECT_EQ(lmrt_cache_open(path.c_str(), &p, &c, err, sizeof err), LMRT_OK) << err;
  return CachePtr(c);
}

ContextPtr cached_context(lmrt_model* m, lmrt_cache* cache, uint32_t kv_type = LMRT_KV_F16) {
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.n_ctx = 256;
  p.n_threads = 2;
  p.kv_type = kv_type;
  lmrt_context* c = nullptr;
  char err[256] = {0};
  EXPECT_EQ(lmrt_context_create(m, &p, &c, err, sizeof err), LMRT_OK) << err;
  if (c != nullptr && cache != nullptr) {
    EXPECT_EQ(lmrt_context_set_cache(c, cache), LMRT_OK);
  }
  return ContextPtr(c);
}

struct Outcome {
  std::vector<int32_t> tokens;
  uint32_t prompt_tokens = 0, reused = 0, cache_hit = 0;
};

// A seeded sampled request for n tokens. The first k tokens do not depend on n, and each call below
// asks for another n, so that the response cache never answers and prefix states alone matter.
Outcome sampled(lmrt_context* c, const char* prompt, int32_t n) {
  lmrt_generate_request r = lmrt::test::greedy_request(prompt, n);
  r.samplers = "top_k(40) temperature(0.8) dist";
  r.seed = 11;
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  EXPECT_EQ(lmrt_generate(c, &r, nullptr, nullptr, &res), LMRT_OK) << lmrt_context_last_error(c);
  return {std::vector<int32_t>(res.tokens, res.tokens + res.completion_tokens), res.prompt_tokens, res.reused_tokens,
          res.cache_hit};
}

std::vector<int32_t> first(const std::vector<int32_t>& v, size_t n) {
  return std::vector<int32_t>(v.begin(), v.begin() + std::min(n, v.size()));
}

using lmrt::test::sqlite_query;

std::string stored_prefixes(const std::string& path) {
  return sqlite_query(path, "SELECT count(*) FROM prefix_lengths");
}

TEST(PrefixStateCache, StatesFollowTheThresholdScopeAndReadOnlyRules) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  const std::string path = fresh_path("prefix-rules.sqlite");
  const Outcome alone = sampled(cached_context(m.get(), nullptr).get(), kSystemPrompt, 24);
  ASSERT_EQ(alone.tokens.size(), 24u);
  {
    CachePtr cache = open_cache(path, 1000);  // the prompt is shorter: nothing stored
    sampled(cached_context(m.get(), cache.get()).get(), kSystemPrompt, 9);
    EXPECT_EQ(stored_prefixes(path), "0");
  }
  {
    CachePtr cache = open_cache(path, 8);
    const Outcome one = sampled(cached_context(m.get(), cache.get()).get(), kSystemPrompt, 10);
    EXPECT_EQ(one.reused, 0u);
    EXPECT_EQ(one.tokens, first(alone.tokens, 10));
    EXPECT_EQ(stored_prefixes(path), "1");
    // The same prompt in a fresh context: loaded, the same sampled tokens, nothing stored again.
    const Outcome again = sampled(cached_context(m.get(), cache.get()).get(), kSystemPrompt, 11);
    EXPECT_EQ(again.cache_hit, 0u);
    EXPECT_EQ(again.reused, again.prompt_tokens - 1);
    EXPECT_EQ(again.tokens, first(alone.tokens, 11));
    EXPECT_EQ(stored_prefixes(path), "1");
    // A longer prompt that starts with it loads the stored prefix and stores its own.
    const std::string longer = std::string(kSystemPrompt) + " She ran to get it.";
    const Outcome more = sampled(cached_context(m.get(), cache.get()).get(), longer.c_str(), 12);
    EXPECT_EQ(more.reused, one.prompt_tokens - 1);
    EXPECT_EQ(more.tokens, sampled(cached_context(m.get(), nullptr).get(), longer.c_str(), 12).tokens);
    EXPECT_EQ(stored_prefixes(path), "2");
    // F32 KV entries are another scope: the F16 states are not loaded.
    const Outcome f32 = sampled(cached_context(m.get(), cache.get(), LMRT_KV_F32).get(), kSystemPrompt, 13);
    EXPECT_EQ(f32.reused, 0u);
    EXPECT_EQ(stored_prefixes(path), "3");
  }
  {
    CachePtr cache = open_cache(path, 8, /*read_only=*/true);  // loads, never stores
    const std::string other = std::string(kSystemPrompt) + " The end.";
    const Outcome o = sampled(cached_context(m.get(), cache.get()).get(), other.c_str(), 14);
    EXPECT_EQ(o.reused, alone.prompt_tokens - 1);
    EXPECT_EQ(stored_prefixes(path), "3");
  }
  {
    CachePtr cache = open_cache(path, 8);  // lmrt_cache_clear forgets the states too
    ASSERT_EQ(lmrt_cache_clear(cache.get()), LMRT_OK);
    EXPECT_EQ(stored_prefixes(path), "0");
    EXPECT_EQ(sampled(cached_context(m.get(), cache.get()).get(), kSystemPrompt, 15).reused, 0u);
  }
  ::unlink(path.c_str());
}

// Responses of a cache older than version 3 were keyed without the KV type, so none can be found
// again: migration drops them (prefix states stay, see the next test) and answers come anew.
TEST(PrefixStateCache, AVersionOneCacheIsMigratedDroppingItsResponses) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  const std::string path = fresh_path("prefix-migrate.sqlite");
  {
    CachePtr cache = open_cache(path, 0);
    ContextPtr c = cached_context(m.get(), cache.get());
    lmrt_generate_request r = lmrt::test::greedy_request(kSystemPrompt, 4);
    ASSERT_EQ(lmrt_generate(c.get(), &r, nullptr, nullptr, nullptr), LMRT_OK);
  }
  // What lmrt wrote before prefix states existed: schema version 1, no prefix_lengths table.
  sqlite_query(path, "DROP TABLE prefix_lengths; PRAGMA user_version = 1;");
  ASSERT_EQ(sqlite_query(path, "PRAGMA user_version"), "1");
  CachePtr cache = open_cache(path, 8);
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(sqlite_query(path, "PRAGMA user_version"), "3");
  EXPECT_EQ(sqlite_query(path, "SELECT count(*) FROM entries"), "0");
  ContextPtr c = cached_context(m.get(), cache.get());
  lmrt_generate_request r = lmrt::test::greedy_request(kSystemPrompt, 4);
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  ASSERT_EQ(lmrt_generate(c.get(), &r, nullptr, nullptr, &res), LMRT_OK);
  EXPECT_EQ(res.cache_hit, 0u);
  ASSERT_EQ(lmrt_generate(c.get(), &r, nullptr, nullptr, &res), LMRT_OK);
  EXPECT_EQ(res.cache_hit, 1u);  // stored again under the new key
  const Outcome o = sampled(c.get(), kSystemPrompt, 5);
  EXPECT_EQ(stored_prefixes(path), "1");
  const Outcome again = sampled(cached_context(m.get(), cache.get()).get(), kSystemPrompt, 6);
  EXPECT_EQ(again.reused, o.prompt_tokens - 1);
  ::unlink(path.c_str());
}

// A response depends on the KV type (attention reads keys and values rounded to it): an F16 and an
// F32 context sharing one cache each get their own answer.
TEST(PrefixStateCache, ResponsesAreKeyedByTheKvType) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  const std::string path = fresh_path("kv-type-key.sqlite");
  CachePtr cache = open_cache(path, 0);
  lmrt_generate_request r = lmrt::test::greedy_request(kSystemPrompt, 6);
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  ContextPtr f16 = cached_context(m.get(), cache.get(), LMRT_KV_F16);
  ContextPtr f32 = cached_context(m.get(), cache.get(), LMRT_KV_F32);
  ASSERT_EQ(lmrt_generate(f16.get(), &r, nullptr, nullptr, &res), LMRT_OK);
  EXPECT_EQ(res.cache_consulted, 1u);
  EXPECT_EQ(res.cache_hit, 0u);
  ASSERT_EQ(lmrt_generate(f32.get(), &r, nullptr, nullptr, &res), LMRT_OK);
  EXPECT_EQ(res.cache_hit, 0u);
  EXPECT_EQ(sqlite_query(path, "SELECT count(*) FROM entries"), "2");
  for (lmrt_context* c : {f16.get(), f32.get()}) {
    ASSERT_EQ(lmrt_generate(c, &r, nullptr, nullptr, &res), LMRT_OK);
    EXPECT_EQ(res.cache_hit, 1u);
  }
  ::unlink(path.c_str());
}

// Migrating a version-2 file drops its responses (stored under keys without the KV type) and
// keeps its prompt-prefix states, which were always scoped by the KV type.
TEST(PrefixStateCache, AVersionTwoCacheKeepsItsPrefixStatesAndDropsItsResponses) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  const std::string path = fresh_path("prefix-migrate-2.sqlite");
  {
    CachePtr cache = open_cache(path, 8);
    lmrt_generate_request r = lmrt::test::greedy_request(kSystemPrompt, 4);
    ASSERT_EQ(lmrt_generate(cached_context(m.get(), cache.get()).get(), &r, nullptr, nullptr, nullptr), LMRT_OK);
  }
  ASSERT_EQ(stored_prefixes(path), "1");
  ASSERT_EQ(sqlite_query(path, "SELECT count(*) FROM entries"), "2");  // the response and the state
  sqlite_query(path, "PRAGMA user_version = 2;");
  CachePtr cache = open_cache(path, 8);
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(sqlite_query(path, "PRAGMA user_version"), "3");
  EXPECT_EQ(sqlite_query(path, "SELECT count(*) FROM entries"), "1");
  EXPECT_EQ(sqlite_query(path, "SELECT count(*) FROM entries WHERE substr(value, 1, 8) = CAST('LMRTSTAT' AS BLOB)"),
            "1");
  const Outcome o = sampled(cached_context(m.get(), cache.get()).get(), kSystemPrompt, 5);
  EXPECT_EQ(o.cache_hit, 0u);
  EXPECT_EQ(o.reused, o.prompt_tokens - 1);  // the state was loaded
  ::unlink(path.c_str());
}

}  // namespace
