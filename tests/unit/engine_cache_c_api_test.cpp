// The batch engine with the SQLite response cache (lmrt_engine_params.cache) through lmrt.h: a
// seeded sampled request and a greedy one are computed and stored the first time, and answered
// from the cache the second (cache_hit, the cache's hit counter, the same tokens, text and pieces,
// and the same as lmrt_generate gives alone); a request whose seed is random is never looked up;
// a hit finishes (with its notice) without taking a sequence while another request decodes.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "c_api_fixture.h"

namespace {

using lmrt::test::ContextPtr;
using lmrt::test::EnginePtr;
using lmrt::test::ModelPtr;

struct CacheCloser {
  void operator()(lmrt_cache* c) const { lmrt_cache_close(c); }
};
using CachePtr = std::unique_ptr<lmrt_cache, CacheCloser>;

struct Streamed {
  std::vector<std::string> pieces;
  int notices = 0;
};

int on_piece(void* user, const lmrt_token_event* ev) {
  static_cast<Streamed*>(user)->pieces.emplace_back(ev->text, ev->text_len);
  return 0;
}

void on_finish(void* user, uint64_t, lmrt_finish_reason) { ++static_cast<Streamed*>(user)->notices; }

struct Answer {
  std::vector<int32_t> tokens;
  std::string text;
  lmrt_finish_reason finish = LMRT_FINISH_NONE;
  uint32_t hit = 0, consulted = 0;
  Streamed streamed;
};

// Submits req and runs the engine until it finished.
Answer run_one(lmrt_engine* e, const lmrt_generate_request& req) {
  Answer a;
  uint64_t id = 0;
  EXPECT_EQ(lmrt_engine_submit(e, &req, on_piece, &a.streamed, &id), LMRT_OK) << lmrt_engine_last_error(e);
  EXPECT_EQ(lmrt_engine_run(e), LMRT_OK) << lmrt_engine_last_error(e);
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  EXPECT_EQ(lmrt_engine_result(e, id, &res), LMRT_OK) << lmrt_engine_last_error(e);
  a.tokens.assign(res.tokens, res.tokens + res.completion_tokens);
  a.text.assign(res.text, res.text_len);
  a.finish = res.finish_reason;
  a.hit = res.cache_hit;
  a.consulted = res.cache_consulted;
  EXPECT_EQ(lmrt_engine_release(e, id), LMRT_OK);
  return a;
}

uint64_t cache_hits(lmrt_cache* c) {
  lmrt_cache_stats st{};
  st.struct_size = sizeof st;
  EXPECT_EQ(lmrt_cache_get_stats(c, &st), LMRT_OK);
  return st.hits;
}

struct CachedEngine {
  ModelPtr model;
  CachePtr cache;
  ContextPtr ctx;
  EnginePtr engine;
};

void set_up(CachedEngine* s, const char* file) {
  s->model = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(s->model, nullptr);
  const std::string path = lmrt::test::write_temp_file(file, "");
  ::unlink(path.c_str());
  lmrt_cache* c = nullptr;
  char err[256] = {0};
  ASSERT_EQ(lmrt_cache_open(path.c_str(), nullptr, &c, err, sizeof err), LMRT_OK) << err;
  s->cache.reset(c);
  s->ctx = lmrt::test::make_context(s->model.get(), 512);
  lmrt_engine_params p;
  lmrt_engine_params_init(&p);
  EXPECT_EQ(p.cache, nullptr);
  p.max_sequences = 2;
  p.cache = c;
  p.on_finish = on_finish;
  lmrt_engine* e = nullptr;
  ASSERT_EQ(lmrt_engine_create(s->ctx.get(), &p, &e, err, sizeof err), LMRT_OK) << err;
  s->engine.reset(e);
}

lmrt_generate_request seeded(const char* prompt, int32_t max_tokens) {
  lmrt_generate_request r = lmrt::test::greedy_request(prompt, max_tokens);
  r.samplers = "top_k(20) temperature(0.8) dist";
  r.seed = 1234;
  return r;
}

TEST(CApi, EngineAnswersARepeatedRequestFromTheCache) {
  CachedEngine s;
  set_up(&s, "engine-cache.sqlite");
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  for (const lmrt_generate_request& req : {seeded("Lily wanted", 40), lmrt::test::greedy_request("Once upon", 30)}) {
    SCOPED_TRACE(req.prompt);
    // What lmrt_generate gives alone, without a cache.
    ContextPtr alone = lmrt::test::make_context(s.model.get(), 512);
    lmrt_generate_result ref{};
    ref.struct_size = sizeof ref;
    ASSERT_EQ(lmrt_generate(alone.get(), &req, nullptr, nullptr, &ref), LMRT_OK);
    const std::vector<int32_t> ref_tokens(ref.tokens, ref.tokens + ref.completion_tokens);

    const uint64_t hits_before = cache_hits(s.cache.get());
    const Answer first = run_one(s.engine.get(), req);
    EXPECT_EQ(first.consulted, 1u);
    EXPECT_EQ(first.hit, 0u);
    EXPECT_EQ(first.tokens, ref_tokens);
    EXPECT_EQ(cache_hits(s.cache.get()), hits_before);

    const Answer second = run_one(s.engine.get(), req);
    EXPECT_EQ(second.consulted, 1u);
    EXPECT_EQ(second.hit, 1u);
    EXPECT_EQ(cache_hits(s.cache.get()), hits_before + 1);
    EXPECT_EQ(second.tokens, first.tokens);
    EXPECT_EQ(second.text, first.text);
    EXPECT_EQ(second.finish, first.finish);
    EXPECT_EQ(second.streamed.pieces, first.streamed.pieces);  // replayed piece by piece
    EXPECT_EQ(first.streamed.notices, 1);
    EXPECT_EQ(second.streamed.notices, 1);
    EXPECT_FALSE(first.tokens.empty());
  }
}

TEST(CApi, EngineNeverCachesARandomSeed) {
  CachedEngine s;
  set_up(&s, "engine-cache-random.sqlite");
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  lmrt_generate_request req = seeded("Lily wanted", 20);
  req.seed = LMRT_SEED_RANDOM;
  for (int i = 0; i < 2; ++i) {
    const Answer a = run_one(s.engine.get(), req);
    EXPECT_EQ(a.consulted, 0u);
    EXPECT_EQ(a.hit, 0u);
  }
  lmrt_cache_stats st{};
  st.struct_size = sizeof st;
  ASSERT_EQ(lmrt_cache_get_stats(s.cache.get(), &st), LMRT_OK);
  EXPECT_EQ(st.stores, 0u);
  EXPECT_EQ(st.hits + st.misses, 0u);
}

TEST(CApi, EngineCacheHitFinishesWithoutASequence) {
  CachedEngine s;
  set_up(&s, "engine-cache-busy.sqlite");
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  const lmrt_generate_request known = lmrt::test::greedy_request("Once upon", 30);
  const Answer stored = run_one(s.engine.get(), known);
  ASSERT_EQ(stored.hit, 0u);
  // Two long requests hold both sequences; the known one is answered at the next step all the same.
  const lmrt_logit_bias no_eos{2, -100.0f};
  lmrt_generate_request busy = lmrt::test::greedy_request("The dog", 200);
  busy.logit_bias = &no_eos;
  busy.n_logit_bias = 1;
  Streamed b1, b2, hit;
  uint64_t i1 = 0, i2 = 0, ih = 0;
  ASSERT_EQ(lmrt_engine_submit(s.engine.get(), &busy, on_piece, &b1, &i1), LMRT_OK);
  ASSERT_EQ(lmrt_engine_submit(s.engine.get(), &busy, on_piece, &b2, &i2), LMRT_OK);
  ASSERT_EQ(lmrt_engine_step(s.engine.get(), nullptr), LMRT_OK);
  ASSERT_EQ(lmrt_engine_submit(s.engine.get(), &known, on_piece, &hit, &ih), LMRT_OK);
  uint32_t left = 0;
  ASSERT_EQ(lmrt_engine_step(s.engine.get(), &left), LMRT_OK);
  EXPECT_EQ(left, 2u);
  EXPECT_EQ(hit.notices, 1);
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  ASSERT_EQ(lmrt_engine_result(s.engine.get(), ih, &res), LMRT_OK);
  EXPECT_EQ(res.cache_hit, 1u);
  EXPECT_EQ(std::vector<int32_t>(res.tokens, res.tokens + res.completion_tokens), stored.tokens);
  EXPECT_EQ(b1.notices + b2.notices, 0);
}

}  // namespace
