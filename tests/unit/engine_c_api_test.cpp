// The batch engine through lmrt.h: several requests with their own sampler chains, stop strings,
// logprobs and callbacks, stepped together on one context, each get exactly what lmrt_generate
// gives them alone on a fresh context; cancelling one (from its callback or by id) leaves the others
// as they were; bad input is refused with a status and a message. Runs under ThreadSanitizer (CApi.*).
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "c_api_fixture.h"

namespace {

using lmrt::test::ContextPtr;
using lmrt::test::ModelPtr;

struct EngineFreer {
  void operator()(lmrt_engine* e) const { lmrt_engine_free(e); }
};
using EnginePtr = std::unique_ptr<lmrt_engine, EngineFreer>;

// What a callback saw and what the result says.
struct Outcome {
  std::string streamed;
  std::vector<int32_t> streamed_tokens;
  std::vector<float> logprobs;  // the chosen tokens' logprobs, when asked for
  std::string text;
  std::vector<int32_t> tokens;
  lmrt_finish_reason finish = LMRT_FINISH_NONE;
  int cancel_after = -1;  // the callback cancels once this many pieces arrived (-1: never)
  int pieces = 0;
};

int collect(void* user, const lmrt_token_event* ev) {
  auto* o = static_cast<Outcome*>(user);
  o->streamed.append(ev->text, ev->text_len);
  o->streamed_tokens.insert(o->streamed_tokens.end(), ev->tokens, ev->tokens + ev->n_tokens);
  if (ev->logprobs != nullptr)
    for (uint32_t i = 0; i < ev->n_tokens; ++i) o->logprobs.push_back(ev->logprobs[i].chosen.logprob);
  return ++o->pieces == o->cancel_after ? 1 : 0;
}

void take_result(const lmrt_generate_result& r, Outcome* o) {
  o->text.assign(r.text, r.text_len);
  o->tokens.assign(r.tokens, r.tokens + r.completion_tokens);
  o->finish = r.finish_reason;
}

// Three requests of different kinds: greedy with a stop string, a seeded sampler chain with
// logprobs, and sampling from the request's fields.
struct Case {
  const char* prompt;
  int32_t max_tokens;
  const char* samplers;  // or nullptr
  float temperature;
  const char* stop;  // or nullptr
  int32_t logprobs;
};
const Case kCases[] = {
    {"Once upon a time", 48, nullptr, 0.0f, ".", -1},
    {"Lily wanted", 40, "top_k(20) temperature(0.8) dist", 0.0f, nullptr, 3},
    {"The sun", 30, nullptr, 0.7f, nullptr, -1},
};

lmrt_generate_request request_for(const Case& c, const char** stop) {
  lmrt_generate_request r = lmrt::test::greedy_request(c.prompt, c.max_tokens);
  r.samplers = c.samplers;
  r.temperature = c.temperature;
  r.seed = 1234;
  if (c.stop != nullptr) {
    *stop = c.stop;
    r.stop = stop;
    r.n_stop = 1;
  }
  r.logprobs = c.logprobs;
  return r;
}

Outcome alone(lmrt_model* m, const Case& c) {
  ContextPtr ctx = lmrt::test::make_context(m, 256);
  const char* stop = nullptr;
  const lmrt_generate_request r = request_for(c, &stop);
  Outcome o;
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  EXPECT_EQ(lmrt_generate(ctx.get(), &r, collect, &o, &res), LMRT_OK) << lmrt_context_last_error(ctx.get());
  take_result(res, &o);
  return o;
}

EnginePtr make_engine(lmrt_context* ctx, uint32_t max_sequences) {
  lmrt_engine_params p;
  lmrt_engine_params_init(&p);
  p.max_sequences = max_sequences;
  p.prefill_chunk = 3;
  lmrt_engine* e = nullptr;
  char err[256] = {0};
  EXPECT_EQ(lmrt_engine_create(ctx, &p, &e, err, sizeof err), LMRT_OK) << err;
  return EnginePtr(e);
}

TEST(CApi, EngineRequestsMatchGenerateAlone) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  std::vector<Outcome> expected;
  for (const Case& c : kCases) expected.push_back(alone(m.get(), c));
  ContextPtr ctx = lmrt::test::make_context(m.get(), 256);
  EnginePtr engine = make_engine(ctx.get(), 2);  // the third request waits for a sequence
  std::vector<Outcome> got(std::size(kCases));
  std::vector<uint64_t> ids;
  const char* stops[std::size(kCases)] = {};
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const lmrt_generate_request r = request_for(kCases[i], &stops[i]);
    uint64_t id = 0;
    ASSERT_EQ(lmrt_engine_submit(engine.get(), &r, collect, &got[i], &id), LMRT_OK)
        << lmrt_engine_last_error(engine.get());
    EXPECT_NE(id, 0u);
    ids.push_back(id);
  }
  uint32_t unfinished = 0;
  ASSERT_EQ(lmrt_engine_step(engine.get(), &unfinished), LMRT_OK);
  EXPECT_EQ(unfinished, 3u);
  ASSERT_EQ(lmrt_engine_run(engine.get()), LMRT_OK) << lmrt_engine_last_error(engine.get());
  for (size_t i = 0; i < ids.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    lmrt_generate_result res{};
    res.struct_size = sizeof res;
    ASSERT_EQ(lmrt_engine_result(engine.get(), ids[i], &res), LMRT_OK);
    take_result(res, &got[i]);
    EXPECT_EQ(got[i].tokens, expected[i].tokens);
    EXPECT_EQ(got[i].text, expected[i].text);
    EXPECT_EQ(got[i].finish, expected[i].finish);
    EXPECT_EQ(got[i].streamed, expected[i].streamed);
    EXPECT_EQ(got[i].streamed_tokens, expected[i].streamed_tokens);
    // The same tokens from other float sums (a batch's matrix products): logprobs agree closely.
    ASSERT_EQ(got[i].logprobs.size(), expected[i].logprobs.size());
    for (size_t k = 0; k < got[i].logprobs.size(); ++k) EXPECT_NEAR(got[i].logprobs[k], expected[i].logprobs[k], 1e-4);
    EXPECT_GT(res.ttft_ms, 0.0);
    EXPECT_EQ(lmrt_engine_release(engine.get(), ids[i]), LMRT_OK);
  }
  EXPECT_EQ(expected[0].finish, LMRT_FINISH_STOP);  // the stop string did end the first
  EXPECT_EQ(expected[1].logprobs.size(), expected[1].tokens.size());
}

// Cancels request `victim` through lmrt_engine_cancel from its own callback.
struct CancelById {
  Outcome out;
  lmrt_engine* engine = nullptr;
  uint64_t victim = 0;
};

int cancel_by_id(void* user, const lmrt_token_event* ev) {
  auto* c = static_cast<CancelById*>(user);
  (void)collect(&c->out, ev);
  if (c->out.pieces == 2) EXPECT_EQ(lmrt_engine_cancel(c->engine, c->victim), LMRT_OK);
  return 0;
}

TEST(CApi, EngineCancellingOneLeavesTheOthers) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  const Outcome a = alone(m.get(), kCases[1]), b = alone(m.get(), kCases[2]);
  ContextPtr ctx = lmrt::test::make_context(m.get(), 256);
  EnginePtr engine = make_engine(ctx.get(), 4);
  const char* stop = nullptr;
  Outcome got_a, by_callback;
  by_callback.cancel_after = 3;
  CancelById by_id;
  by_id.engine = engine.get();
  uint64_t ia = 0, ib = 0, ic = 0, id = 0;
  const lmrt_generate_request ra = request_for(kCases[1], &stop), rb = request_for(kCases[2], &stop);
  ASSERT_EQ(lmrt_engine_submit(engine.get(), &ra, collect, &got_a, &ia), LMRT_OK);
  ASSERT_EQ(lmrt_engine_submit(engine.get(), &rb, collect, &by_callback, &ib), LMRT_OK);
  ASSERT_EQ(lmrt_engine_submit(engine.get(), &rb, cancel_by_id, &by_id, &ic), LMRT_OK);
  by_id.victim = ic;
  const lmrt_generate_request rd = request_for(kCases[0], &stop);
  ASSERT_EQ(lmrt_engine_submit(engine.get(), &rd, nullptr, nullptr, &id), LMRT_OK);
  ASSERT_EQ(lmrt_engine_cancel(engine.get(), id), LMRT_OK);  // before it ever runs
  ASSERT_EQ(lmrt_engine_run(engine.get()), LMRT_OK);
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  ASSERT_EQ(lmrt_engine_result(engine.get(), ia, &res), LMRT_OK);
  take_result(res, &got_a);
  EXPECT_EQ(got_a.tokens, a.tokens);
  EXPECT_EQ(got_a.finish, a.finish);
  for (const auto& [rid, pieces] : {std::pair{ib, 3}, std::pair{ic, 2}}) {
    ASSERT_EQ(lmrt_engine_result(engine.get(), rid, &res), LMRT_OK);
    EXPECT_EQ(res.finish_reason, LMRT_FINISH_CANCELLED);
    ASSERT_LT(res.completion_tokens, b.tokens.size());
    EXPECT_TRUE(std::equal(res.tokens, res.tokens + res.completion_tokens, b.tokens.begin()));
    EXPECT_GE(res.completion_tokens, static_cast<uint32_t>(pieces));
  }
  ASSERT_EQ(lmrt_engine_result(engine.get(), id, &res), LMRT_OK);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_CANCELLED);
  EXPECT_EQ(res.completion_tokens, 0u);
}

TEST(CApi, EngineRefusesBadInput) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  ContextPtr ctx = lmrt::test::make_context(m.get(), 32);
  lmrt_engine_params p;
  lmrt_engine_params_init(&p);
  EXPECT_EQ(p.max_sequences, 4u);
  EXPECT_EQ(p.prefill_chunk, 64u);
  p.max_sequences = 17;
  lmrt_engine* raw = nullptr;
  char err[256] = {0};
  EXPECT_EQ(lmrt_engine_create(ctx.get(), &p, &raw, err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(raw, nullptr);
  EXPECT_NE(std::string(err).find("max_sequences"), std::string::npos) << err;
  EXPECT_EQ(lmrt_engine_create(nullptr, nullptr, &raw, nullptr, 0), LMRT_ERR_INVALID_ARGUMENT);
  EnginePtr engine = make_engine(ctx.get(), 2);
  uint64_t id = 0;
  lmrt_generate_request r = lmrt::test::greedy_request("Once", 8);
  r.n_beams = 2;
  EXPECT_EQ(lmrt_engine_submit(engine.get(), &r, nullptr, nullptr, &id), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_engine_last_error(engine.get())), "");
  r = lmrt::test::greedy_request("Once", 0);
  EXPECT_EQ(lmrt_engine_submit(engine.get(), &r, nullptr, nullptr, &id), LMRT_ERR_INVALID_ARGUMENT);
  std::vector<int32_t> long_prompt(33, 1);
  r = lmrt::test::greedy_request(nullptr, 8);
  r.prompt_tokens = long_prompt.data();
  r.n_prompt_tokens = long_prompt.size();
  EXPECT_EQ(lmrt_engine_submit(engine.get(), &r, nullptr, nullptr, &id), LMRT_ERR_CONTEXT_FULL);
  EXPECT_EQ(lmrt_engine_cancel(engine.get(), 99), LMRT_ERR_INVALID_ARGUMENT);
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  EXPECT_EQ(lmrt_engine_result(engine.get(), 99, &res), LMRT_ERR_INVALID_ARGUMENT);
  r = lmrt::test::greedy_request("Once", 8);
  ASSERT_EQ(lmrt_engine_submit(engine.get(), &r, nullptr, nullptr, &id), LMRT_OK);
  EXPECT_EQ(lmrt_engine_release(engine.get(), id), LMRT_ERR_INVALID_ARGUMENT);  // not finished
  ASSERT_EQ(lmrt_engine_result(engine.get(), id, &res), LMRT_OK);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_NONE);
  EXPECT_EQ(lmrt_engine_step(nullptr, nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_engine_free(nullptr), LMRT_OK);
}

}  // namespace
