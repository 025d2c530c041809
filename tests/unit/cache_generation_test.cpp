// The response cache in the request path, through the C API.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "c_api_fixture.h"
#include "test_support.h"

namespace {

struct Env {
  lmrt_model* model = nullptr;
  lmrt_context* ctx = nullptr;
  lmrt_cache* cache = nullptr;
  std::vector<std::string> warnings;
  ~Env() {
    lmrt_context_free(ctx);
    lmrt_cache_close(cache);
    lmrt_model_close(model);
  }
};

void on_warning(void* user, const char* message) { static_cast<Env*>(user)->warnings.push_back(message); }

std::string fresh_path(const std::string& name) {
  const std::string path = lmrt::test::write_temp_file(name, "");
  ::unlink(path.c_str());
  return path;
}

void setup(Env* e, const std::string& cache_path) {
  e->model = lmrt::test::open_shared_model("stories260K.gguf").release();
  ASSERT_NE(e->model, nullptr);
  e->ctx = lmrt::test::make_context(e->model, 512).release();
  ASSERT_NE(e->ctx, nullptr);
  char err[512] = {0};
  lmrt_cache_params p;
  lmrt_cache_params_init(&p);
  p.on_warning = on_warning;
  p.warning_user_data = e;
  ASSERT_EQ(lmrt_cache_open(cache_path.c_str(), &p, &e->cache, err, sizeof err), LMRT_OK) << err;
  ASSERT_EQ(lmrt_context_set_cache(e->ctx, e->cache), LMRT_OK);
}

struct Pieces {
  std::vector<std::string> text;
  std::vector<std::vector<int32_t>> tokens;
  int cancel_after = -1;
};

int collect(void* user, const lmrt_token_event* ev) {
  auto* p = static_cast<Pieces*>(user);
  p->text.emplace_back(ev->text, ev->text_len);
  p->tokens.emplace_back(ev->tokens, ev->tokens + ev->n_tokens);
  return p->cancel_after >= 0 && static_cast<int>(p->text.size()) >= p->cancel_after;
}

lmrt_generate_result generate(Env& e, lmrt_generate_request req, Pieces* pieces = nullptr) {
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  EXPECT_EQ(lmrt_generate(e.ctx, &req, pieces ? collect : nullptr, pieces, &res), LMRT_OK)
      << lmrt_context_last_error(e.ctx);
  return res;
}

lmrt_generate_request greedy(const char* prompt, int32_t n) {
  lmrt_generate_request r;
  lmrt_generate_request_init(&r);
  r.prompt = prompt;
  r.prompt_len = static_cast<size_t>(-1);
  r.max_tokens = n;
  return r;
}

uint64_t entries(Env& e) {
  lmrt_cache_stats s;
  s.struct_size = sizeof s;
  EXPECT_EQ(lmrt_cache_get_stats(e.cache, &s), LMRT_OK);
  return s.entries;
}

TEST(CacheGeneration, AHitReplaysTheSameStream) {
  Env e;
  setup(&e, fresh_path("hit.sqlite"));
  lmrt_generate_request req = greedy("Once upon a time", 64);
  req.logprobs = 3;
  Pieces first, second;
  lmrt_generate_result a = generate(e, req, &first);
  EXPECT_EQ(a.cache_consulted, 1u);
  EXPECT_EQ(a.cache_hit, 0u);
  const std::string text_a(a.text, a.text_len);
  const std::vector<int32_t> toks_a(a.tokens, a.tokens + a.completion_tokens);
  std::vector<lmrt_token_logprobs> lp_a(a.logprobs, a.logprobs + a.completion_tokens);
  EXPECT_EQ(entries(e), 1u);

  lmrt_generate_result b = generate(e, req, &second);
  EXPECT_EQ(b.cache_hit, 1u);
  EXPECT_EQ(std::string(b.text, b.text_len), text_a);
  EXPECT_EQ(std::vector<int32_t>(b.tokens, b.tokens + b.completion_tokens), toks_a);
  EXPECT_EQ(b.finish_reason, a.finish_reason);
  EXPECT_EQ(b.prompt_tokens, a.prompt_tokens);
  EXPECT_EQ(first.text, second.text);
  EXPECT_EQ(first.tokens, second.tokens);
  ASSERT_NE(b.logprobs, nullptr);
  for (size_t i = 0; i < lp_a.size(); ++i) {
    EXPECT_EQ(b.logprobs[i].chosen.token, lp_a[i].chosen.token);
    EXPECT_FLOAT_EQ(b.logprobs[i].chosen.logprob, lp_a[i].chosen.logprob);
    ASSERT_EQ(b.logprobs[i].n_top, 3u);
    EXPECT_EQ(b.logprobs[i].top[2].token, lp_a[i].top[2].token);
  }
  // Another max_tokens is another key.
  req.max_tokens = 63;
  EXPECT_EQ(generate(e, req).cache_hit, 0u);
  EXPECT_EQ(entries(e), 2u);
}

TEST(CacheGeneration, OnlyDeterministicRequestsAreCached) {
  Env e;
  setup(&e, fresh_path("det.sqlite"));
  lmrt_generate_request req = greedy("Once", 20);
  req.temperature = 0.8f;  // random seed: never cached
  lmrt_generate_result r = generate(e, req);
  EXPECT_EQ(r.cache_consulted, 0u);
  EXPECT_EQ(entries(e), 0u);
  req.seed = 42;  // seeded: cached
  lmrt_generate_result s1 = generate(e, req);
  EXPECT_EQ(s1.cache_consulted, 1u);
  const std::string t1(s1.text, s1.text_len);
  lmrt_generate_result s2 = generate(e, req);
  EXPECT_EQ(s2.cache_hit, 1u);
  EXPECT_EQ(std::string(s2.text, s2.text_len), t1);
  req.seed = 43;
  EXPECT_EQ(generate(e, req).cache_hit, 0u);
  EXPECT_EQ(entries(e), 2u);
}

TEST(CacheGeneration, CancelledGenerationsAreNotStored) {
  Env e;
  setup(&e, fresh_path("cancel.sqlite"));
  Pieces p;
  p.cancel_after = 3;
  lmrt_generate_result r = generate(e, greedy("Once", 40), &p);
  EXPECT_EQ(r.finish_reason, LMRT_FINISH_CANCELLED);
  EXPECT_EQ(entries(e), 0u);
}

TEST(CacheGeneration, PersistsAcrossHandlesAndDamageNeverBreaksGeneration) {
  const std::string path = fresh_path("persist.sqlite");
  std::string text;
  {
    Env e;
    setup(&e, path);
    lmrt_generate_result r = generate(e, greedy("The cat", 30));
    text.assign(r.text, r.text_len);
  }
  {
    Env e;
    setup(&e, path);
    lmrt_generate_result r = generate(e, greedy("The cat", 30));
    EXPECT_EQ(r.cache_hit, 1u);
    EXPECT_EQ(std::string(r.text, r.text_len), text);
  }
  {  // Garbage over all but SQLite's header (lmrt's application id): set aside with a warning;
     // generation runs and is stored afresh.
    std::string bytes = lmrt::test::read_file(path);
    ASSERT_GT(bytes.size(), 100u);
    bytes.replace(100, std::string::npos, std::string(5000, '\x5a'));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    ::unlink((path + "-wal").c_str());
    ::unlink((path + "-shm").c_str());
    Env e;
    setup(&e, path);
    EXPECT_FALSE(e.warnings.empty());
    lmrt_generate_result r = generate(e, greedy("The cat", 30));
    EXPECT_EQ(r.cache_hit, 0u);
    EXPECT_EQ(std::string(r.text, r.text_len), text);
    EXPECT_EQ(entries(e), 1u);
  }
}

TEST(CacheGeneration, StatsClearAndErrors) {
  Env e;
  setup(&e, fresh_path("stats.sqlite"));
  generate(e, greedy("A", 10));
  generate(e, greedy("A", 10));
  lmrt_cache_stats s;
  s.struct_size = sizeof s;
  ASSERT_EQ(lmrt_cache_get_stats(e.cache, &s), LMRT_OK);
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_GT(s.bytes, 0u);
  EXPECT_EQ(lmrt_cache_clear(e.cache), LMRT_OK);
  EXPECT_EQ(entries(e), 0u);
  EXPECT_EQ(lmrt_cache_vacuum(e.cache), LMRT_OK);
  lmrt_cache* c = nullptr;
  char err[256] = {0};
  EXPECT_EQ(lmrt_cache_open("/nonexistent-dir/x/cache.sqlite", nullptr, &c, err, sizeof err), LMRT_ERR_CACHE);
  EXPECT_EQ(c, nullptr);
  EXPECT_STRNE(err, "");
}

}  // namespace
