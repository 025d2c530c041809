// The batch engine through lmrt.h: several requests with their own sampler chains, stop strings,
// logprobs and callbacks, stepped together on one context, each get exactly what lmrt_generate
// gives them alone on a fresh context; cancelling one (from its callback or by id) leaves the others
// as they were; bad input is refused with a status and a message. The engine on its own thread:
// requests submitted, waited for and cancelled from many threads get the same tokens, a stopped
// engine keeps its requests, misuse is refused. Runs under ThreadSanitizer (CApi.*).
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "c_api_fixture.h"

namespace {

using lmrt::test::ContextPtr;
using lmrt::test::EnginePtr;
using lmrt::test::ModelPtr;

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
  if (c->out.pieces == 2) {
    EXPECT_EQ(lmrt_engine_cancel(c->engine, c->victim), LMRT_OK);
  }
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
  lmrt_engine_params_init(&p);
  p.reserved0 = 1;
  EXPECT_EQ(lmrt_engine_create(ctx.get(), &p, &raw, err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("reserved0 must be 0"), std::string::npos) << err;
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
  // A token past the vocabulary (512) in a bias or a chain spec is refused at submit, as lmrt_generate does.
  const lmrt_logit_bias past{9999, 1.0f};
  r = lmrt::test::greedy_request("Once", 8);
  r.n_logit_bias = 1;
  r.logit_bias = &past;
  EXPECT_EQ(lmrt_engine_submit(engine.get(), &r, nullptr, nullptr, &id), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_engine_last_error(engine.get())).find("9999"), std::string::npos)
      << lmrt_engine_last_error(engine.get());
  r = lmrt::test::greedy_request("Once", 8);
  r.samplers = "logit_bias(600=1) greedy";
  EXPECT_EQ(lmrt_engine_submit(engine.get(), &r, nullptr, nullptr, &id), LMRT_ERR_INVALID_ARGUMENT);
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

// The result of a finished request, through lmrt_engine_result.
Outcome finished_result(lmrt_engine* e, uint64_t id, Outcome o) {
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  EXPECT_EQ(lmrt_engine_result(e, id, &res), LMRT_OK) << lmrt_engine_last_error(e);
  take_result(res, &o);
  return o;
}

TEST(CApi, EngineThreadServesManySubmittingThreads) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  std::vector<Outcome> expected;
  for (const Case& c : kCases) expected.push_back(alone(m.get(), c));
  ContextPtr ctx = lmrt::test::make_context(m.get(), 512);
  EnginePtr engine = make_engine(ctx.get(), 3);  // fewer sequences than requests: some queue
  ASSERT_EQ(lmrt_engine_start(engine.get()), LMRT_OK);
  constexpr int kThreads = 4, kPerThread = 2;
  std::vector<std::vector<Outcome>> got(kThreads, std::vector<Outcome>(kPerThread));
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t) {
    clients.emplace_back([&, t] {
      std::vector<uint64_t> ids;
      for (int k = 0; k < kPerThread; ++k) {
        const char* stop = nullptr;
        const lmrt_generate_request r = request_for(kCases[(t + k) % std::size(kCases)], &stop);
        uint64_t id = 0;
        EXPECT_EQ(lmrt_engine_submit(engine.get(), &r, collect, &got[t][k], &id), LMRT_OK)
            << lmrt_engine_last_error(engine.get());
        ids.push_back(id);
      }
      for (int k = 0; k < kPerThread; ++k) {
        int finished = 0;
        EXPECT_EQ(lmrt_engine_wait(engine.get(), ids[k], -1, &finished), LMRT_OK);
        EXPECT_EQ(finished, 1);
        got[t][k] = finished_result(engine.get(), ids[k], std::move(got[t][k]));
        EXPECT_EQ(lmrt_engine_release(engine.get(), ids[k]), LMRT_OK);
      }
    });
  }
  for (auto& c : clients) c.join();
  for (int t = 0; t < kThreads; ++t) {
    for (int k = 0; k < kPerThread; ++k) {
      SCOPED_TRACE("thread " + std::to_string(t) + " request " + std::to_string(k));
      const Outcome& want = expected[(t + k) % std::size(kCases)];
      EXPECT_EQ(got[t][k].tokens, want.tokens);
      EXPECT_EQ(got[t][k].text, want.text);
      EXPECT_EQ(got[t][k].streamed, want.streamed);
      EXPECT_EQ(got[t][k].finish, want.finish);
    }
  }
  lmrt_engine_stats st{};
  st.struct_size = sizeof st;
  ASSERT_EQ(lmrt_engine_get_stats(engine.get(), &st), LMRT_OK);
  EXPECT_EQ(st.n_queued + st.n_running, 0u);
  // Finished requests' cells stay only as kept prefixes.
  EXPECT_LE(st.n_cached, 4u);
  EXPECT_EQ(st.n_cells_used == 0, st.n_cached == 0);
  EXPECT_EQ(st.n_cells, 512u);
  EXPECT_EQ(st.max_sequences, 3u);
  EXPECT_EQ(st.started, 1u);
  // Idle, the engine's thread sleeps: the process spends (almost) no CPU time while nothing runs.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::clock_t c0 = std::clock();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(double(std::clock() - c0) / CLOCKS_PER_SEC, 0.1);
  ASSERT_EQ(lmrt_engine_stop(engine.get()), LMRT_OK);
}

// Counts the pieces a request streamed (on the engine's thread) for another thread to watch.
// Its callback takes 2 ms a piece, so that the other thread acts while the request is far from done.
struct Watched {
  Outcome out;
  std::atomic<int> pieces{0};
};

int watch(void* user, const lmrt_token_event* ev) {
  auto* w = static_cast<Watched*>(user);
  (void)collect(&w->out, ev);
  w->pieces.fetch_add(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return 0;
}

void wait_for_pieces(const Watched& w, int n) {
  while (w.pieces.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(CApi, EngineThreadCancelFromAnotherThread) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  Case long_case = kCases[2];
  long_case.max_tokens = 200;
  const Outcome alone_long = alone(m.get(), long_case), alone_short = alone(m.get(), kCases[1]);
  ContextPtr ctx = lmrt::test::make_context(m.get(), 512);
  EnginePtr engine = make_engine(ctx.get(), 2);
  ASSERT_EQ(lmrt_engine_start(engine.get()), LMRT_OK);
  const char* stop = nullptr;
  const lmrt_generate_request rl = request_for(long_case, &stop), rs = request_for(kCases[1], &stop);
  Watched victim, other;
  uint64_t iv = 0, io = 0;
  ASSERT_EQ(lmrt_engine_submit(engine.get(), &rl, watch, &victim, &iv), LMRT_OK);
  ASSERT_EQ(lmrt_engine_submit(engine.get(), &rs, watch, &other, &io), LMRT_OK);
  std::thread canceller([&] {
    wait_for_pieces(victim, 3);
    EXPECT_EQ(lmrt_engine_cancel(engine.get(), iv), LMRT_OK);
  });
  int finished = 0;
  ASSERT_EQ(lmrt_engine_wait(engine.get(), iv, -1, &finished), LMRT_OK);
  EXPECT_EQ(finished, 1);
  canceller.join();
  ASSERT_EQ(lmrt_engine_wait(engine.get(), io, -1, &finished), LMRT_OK);
  EXPECT_EQ(finished, 1);
  const Outcome v = finished_result(engine.get(), iv, Outcome{}), o = finished_result(engine.get(), io, Outcome{});
  EXPECT_EQ(v.finish, LMRT_FINISH_CANCELLED);
  EXPECT_GE(v.tokens.size(), 3u);
  ASSERT_LT(v.tokens.size(), alone_long.tokens.size());
  EXPECT_TRUE(std::equal(v.tokens.begin(), v.tokens.end(), alone_long.tokens.begin()));
  EXPECT_EQ(o.tokens, alone_short.tokens);  // the other request did not notice
  ASSERT_EQ(lmrt_engine_stop(engine.get()), LMRT_OK);
}

// A callback that tries what callbacks must not do and records the answers.
struct Misbehaving {
  Outcome out;
  lmrt_engine* engine = nullptr;
  lmrt_status result_status = LMRT_OK, stop_status = LMRT_OK;
  std::string message;
};

int misbehave(void* user, const lmrt_token_event* ev) {
  auto* m = static_cast<Misbehaving*>(user);
  (void)collect(&m->out, ev);
  if (m->out.pieces == 1) {
    lmrt_generate_result res{};
    res.struct_size = sizeof res;
    m->result_status = lmrt_engine_result(m->engine, 1, &res);
    m->message = lmrt_engine_last_error(m->engine);
    m->stop_status = lmrt_engine_stop(m->engine);
  }
  return 0;
}

TEST(CApi, EngineThreadStopKeepsRequestsAndRefusesMisuse) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  std::vector<Outcome> expected;
  for (const Case& c : kCases) expected.push_back(alone(m.get(), c));
  ContextPtr ctx = lmrt::test::make_context(m.get(), 512);
  lmrt_engine* e = nullptr;
  {
    EnginePtr owned = make_engine(ctx.get(), 2);
    e = owned.release();
  }
  int finished = 0;
  EXPECT_EQ(lmrt_engine_wait(e, 42, 0, &finished), LMRT_ERR_INVALID_ARGUMENT);  // unknown id
  ASSERT_EQ(lmrt_engine_start(e), LMRT_OK);
  EXPECT_EQ(lmrt_engine_start(e), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_engine_last_error(e)).find("already started"), std::string::npos);
  EXPECT_EQ(lmrt_engine_step(e, nullptr), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_engine_last_error(e)).find("stop it first"), std::string::npos);
  EXPECT_EQ(lmrt_engine_run(e), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(lmrt_engine_wait(e, 1, 0, nullptr), LMRT_ERR_INVALID_ARGUMENT);

  Misbehaving first;
  first.engine = e;
  std::vector<Watched> rest(std::size(kCases) - 1);
  std::vector<uint64_t> ids;
  const char* stops[std::size(kCases)] = {};
  for (size_t i = 0; i < std::size(kCases); ++i) {
    const lmrt_generate_request r = request_for(kCases[i], &stops[i]);
    uint64_t id = 0;
    ASSERT_EQ(i == 0 ? lmrt_engine_submit(e, &r, misbehave, &first, &id)
                     : lmrt_engine_submit(e, &r, watch, &rest[i - 1], &id),
              LMRT_OK);
    ids.push_back(id);
  }
  ASSERT_EQ(ids[0], 1u);
  wait_for_pieces(rest[0], 2);  // requests in flight
  ASSERT_EQ(lmrt_engine_stop(e), LMRT_OK);
  EXPECT_EQ(lmrt_engine_stop(e), LMRT_OK);  // stopping a stopped engine does nothing
  lmrt_engine_stats st{};
  st.struct_size = sizeof st;
  ASSERT_EQ(lmrt_engine_get_stats(e, &st), LMRT_OK);
  EXPECT_EQ(st.started, 0u);
  EXPECT_GT(st.n_queued + st.n_running, 0u);  // the third cannot have finished yet: it had no sequence
  EXPECT_LE(st.n_running, 2u);
  EXPECT_EQ(lmrt_engine_wait(e, ids[2], -1, &finished), LMRT_OK);  // stopped: at once
  EXPECT_EQ(finished, 0);
  // The callback's misuse was refused with a message, and did not stop the engine from inside.
  EXPECT_EQ(first.result_status, LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(first.stop_status, LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(first.message.find("callback"), std::string::npos) << first.message;
  // The caller's thread goes on where the engine's stopped: the same tokens as alone.
  ASSERT_EQ(lmrt_engine_run(e), LMRT_OK) << lmrt_engine_last_error(e);
  for (size_t i = 0; i < ids.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const Outcome got = finished_result(e, ids[i], Outcome{});
    EXPECT_EQ(got.tokens, expected[i].tokens);
    EXPECT_EQ(got.finish, expected[i].finish);
    EXPECT_EQ(i == 0 ? first.out.streamed : rest[i - 1].out.streamed, expected[i].streamed);
  }
  // Started again with work left over, then freed with it in flight: free stops the thread first.
  const char* stop = nullptr;
  Case long_case = kCases[2];
  long_case.max_tokens = 200;
  const lmrt_generate_request r = request_for(long_case, &stop);
  Watched last;
  uint64_t il = 0;
  ASSERT_EQ(lmrt_engine_submit(e, &r, watch, &last, &il), LMRT_OK);
  ASSERT_EQ(lmrt_engine_start(e), LMRT_OK);
  wait_for_pieces(last, 1);
  EXPECT_EQ(lmrt_engine_free(e), LMRT_OK);
}

// Threads that stop and start one engine while requests come and go: a start() that came in
// between a stop()'s join and its end used to leave the new thread marked stopped, and the next
// start() then joined that thread under the engine's lock while it waited for the lock (deadlock).
TEST(CApi, EngineThreadStartAndStopFromManyThreads) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  ContextPtr ctx = lmrt::test::make_context(m.get(), 128, 1);
  EnginePtr e = make_engine(ctx.get(), 4);
  ASSERT_NE(e, nullptr);
  std::atomic<int> refused{0};
  auto churn = [&] {
    for (int i = 0; i < 1000; ++i) {
      const lmrt_generate_request r = lmrt::test::greedy_request("Once", 4);
      uint64_t id = 0;
      if (lmrt_engine_submit(e.get(), &r, nullptr, nullptr, &id) != LMRT_OK) ++refused;
      if (lmrt_engine_stop(e.get()) != LMRT_OK) ++refused;
      lmrt_engine_start(e.get());  // INVALID_ARGUMENT when another thread started it first
    }
  };
  auto work = std::async(std::launch::async, [&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) threads.emplace_back(churn);
    for (std::thread& t : threads) t.join();
    // Whatever interleaving came, the engine is started and stops and starts as it should.
    lmrt_engine_stats st{};
    st.struct_size = sizeof st;
    EXPECT_EQ(lmrt_engine_get_stats(e.get(), &st), LMRT_OK);
    EXPECT_EQ(st.started, 1u);
    EXPECT_EQ(lmrt_engine_stop(e.get()), LMRT_OK);
    EXPECT_EQ(lmrt_engine_start(e.get()), LMRT_OK);
    EXPECT_EQ(lmrt_engine_stop(e.get()), LMRT_OK);
  });
  if (work.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    ADD_FAILURE() << "start/stop from several threads deadlocked";
    std::fflush(nullptr);
    std::_Exit(1);  // the deadlocked threads cannot be joined
  }
  EXPECT_EQ(refused.load(), 0);
  ASSERT_EQ(lmrt_engine_run(e.get()), LMRT_OK) << lmrt_engine_last_error(e.get());
  lmrt_engine_stats st{};
  st.struct_size = sizeof st;
  ASSERT_EQ(lmrt_engine_get_stats(e.get(), &st), LMRT_OK);
  EXPECT_EQ(st.n_queued + st.n_running, 0u);
}

// The context is the engine's while the engine lives: lmrt_eval, lmrt_generate, lmrt_get_logits,
// lmrt_context_reset, the state functions and a second engine used to run on it unchecked, writing
// the arena cells and logits that the engine's sequences use (and racing the engine's thread).
// They are refused with a message; the engine's requests get what they get alone; once the engine
// is freed the context is the caller's again.
TEST(CApi, EngineOwnsItsContextUntilFreed) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  const Outcome expected = alone(m.get(), kCases[0]);
  ContextPtr ctx = lmrt::test::make_context(m.get(), 256);
  lmrt_context* c = ctx.get();
  EnginePtr e = make_engine(c, 2);
  ASSERT_NE(e, nullptr);
  const char* stop = nullptr;
  const lmrt_generate_request r = request_for(kCases[0], &stop);
  uint64_t id = 0;
  ASSERT_EQ(lmrt_engine_submit(e.get(), &r, nullptr, nullptr, &id), LMRT_OK);
  ASSERT_EQ(lmrt_engine_step(e.get(), nullptr), LMRT_OK);  // the prompt's first cells are written

  auto refused = [&](lmrt_status s, const char* what) {
    EXPECT_EQ(s, LMRT_ERR_INVALID_ARGUMENT) << what;
    EXPECT_NE(std::string(lmrt_context_last_error(c)).find("engine"), std::string::npos) << what;
  };
  const int32_t tokens[4] = {1, 5, 9, 13};
  refused(lmrt_eval(c, tokens, 4), "lmrt_eval");
  const lmrt_generate_request other = lmrt::test::greedy_request("A big dog", 8);
  refused(lmrt_generate(c, &other, nullptr, nullptr, nullptr), "lmrt_generate");
  const float* logits = nullptr;
  refused(lmrt_get_logits(c, 0, &logits, nullptr), "lmrt_get_logits");
  refused(lmrt_context_reset(c), "lmrt_context_reset");
  size_t size = 0, written = 0;
  EXPECT_EQ(lmrt_context_state_size(c, &size), LMRT_ERR_INVALID_ARGUMENT);
  std::vector<uint8_t> buf(1 << 16);
  refused(lmrt_context_state_save(c, buf.data(), buf.size(), &written), "lmrt_context_state_save");
  refused(lmrt_context_state_load(c, buf.data(), buf.size()), "lmrt_context_state_load");
  lmrt_engine* second = nullptr;
  char err[256] = {0};
  EXPECT_EQ(lmrt_engine_create(c, nullptr, &second, err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(second, nullptr);
  EXPECT_NE(std::string(err).find("engine"), std::string::npos) << err;

  ASSERT_EQ(lmrt_engine_run(e.get()), LMRT_OK) << lmrt_engine_last_error(e.get());
  const Outcome got = finished_result(e.get(), id, Outcome{});
  EXPECT_EQ(got.tokens, expected.tokens);

  e.reset();  // the context is the caller's again
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  ASSERT_EQ(lmrt_generate(c, &r, nullptr, nullptr, &res), LMRT_OK) << lmrt_context_last_error(c);
  EXPECT_EQ(std::vector<int32_t>(res.tokens, res.tokens + res.completion_tokens), expected.tokens);
  EXPECT_EQ(lmrt_context_state_size(c, &size), LMRT_OK);
  EnginePtr again = make_engine(c, 2);
  EXPECT_NE(again, nullptr);
}

// Two threads wait for one request; the first to wake releases it. The other used to sleep
// forever: a released request is neither live nor done in the finish table, and its waiter only
// woke for done ones. It now wakes and reports the request finished.
int slow_piece(void*, const lmrt_token_event*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return 0;
}

TEST(CApi, EngineThreadWaiterWakesWhenAnotherThreadReleases) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  ContextPtr ctx = lmrt::test::make_context(m.get(), 128, 1);
  EnginePtr e = make_engine(ctx.get(), 4);
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(lmrt_engine_start(e.get()), LMRT_OK);
  for (int i = 0; i < 50; ++i) {
    const lmrt_generate_request r = lmrt::test::greedy_request("Once", 1);
    uint64_t id = 0;
    // The piece comes slowly, so that the other thread is asleep in wait by the time it finishes.
    ASSERT_EQ(lmrt_engine_submit(e.get(), &r, slow_piece, nullptr, &id), LMRT_OK);
    auto other = std::async(std::launch::async, [&] {
      int finished = 0;
      const lmrt_status s = lmrt_engine_wait(e.get(), id, -1, &finished);
      return s == LMRT_ERR_INVALID_ARGUMENT ? 1 : finished;  // came after the release: unknown id
    });
    int finished = 0;
    ASSERT_EQ(lmrt_engine_wait(e.get(), id, -1, &finished), LMRT_OK);
    ASSERT_EQ(finished, 1);
    ASSERT_EQ(lmrt_engine_release(e.get(), id), LMRT_OK);
    if (other.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      ADD_FAILURE() << "a waiter slept on after another thread released request " << id;
      std::fflush(nullptr);
      std::_Exit(1);  // the sleeping thread cannot be joined
    }
    EXPECT_EQ(other.get(), 1);
  }
}

}  // namespace

namespace {

// lmrt_context_free while an engine still runs on the context deleted it under the engine: the next step
// read freed memory (ASan's heap-use-after-free). The free now waits for lmrt_engine_free, as
// sqlite3_close_v2 waits for a connection's statements: the engine finishes its requests with the tokens
// they get alone, and freeing it frees the context (LeakSanitizer would report it otherwise).
TEST(CApi, EngineOutlivesAContextFreedUnderIt) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  const Outcome expected = alone(m.get(), kCases[0]);
  for (bool started : {false, true}) {
    SCOPED_TRACE(started ? "on its own thread" : "stepped by the caller");
    ContextPtr ctx = lmrt::test::make_context(m.get(), 256);
    EnginePtr e = make_engine(ctx.get(), 2);
    ASSERT_NE(e, nullptr);
    const char* stop = nullptr;
    const lmrt_generate_request r = request_for(kCases[0], &stop);
    uint64_t id = 0;
    ASSERT_EQ(lmrt_engine_submit(e.get(), &r, nullptr, nullptr, &id), LMRT_OK);
    ASSERT_EQ(lmrt_engine_step(e.get(), nullptr), LMRT_OK);
    EXPECT_EQ(lmrt_context_free(ctx.release()), LMRT_OK);
    if (started) {
      ASSERT_EQ(lmrt_engine_start(e.get()), LMRT_OK);
      int finished = 0;
      ASSERT_EQ(lmrt_engine_wait(e.get(), id, -1, &finished), LMRT_OK);
      EXPECT_EQ(finished, 1);
    } else {
      ASSERT_EQ(lmrt_engine_run(e.get()), LMRT_OK) << lmrt_engine_last_error(e.get());
    }
    EXPECT_EQ(finished_result(e.get(), id, Outcome{}).tokens, expected.tokens);
    uint64_t later = 0;  // and it takes new requests
    ASSERT_EQ(lmrt_engine_submit(e.get(), &r, nullptr, nullptr, &later), LMRT_OK);
    if (!started) {
      ASSERT_EQ(lmrt_engine_run(e.get()), LMRT_OK);
    }
    int finished = 0;
    ASSERT_EQ(lmrt_engine_wait(e.get(), later, -1, &finished), LMRT_OK);
    EXPECT_EQ(finished_result(e.get(), later, Outcome{}).tokens, expected.tokens);
    EXPECT_EQ(lmrt_engine_free(e.release()), LMRT_OK);  // frees the context too
  }
}

// lmrt_engine_start from another thread while lmrt_engine_run stepped the engine succeeded, and the run then
// failed part way ("runs on its own thread") with its requests moved to the engine's thread; and a cancel from
// another thread waited for the whole run (the run's steps took the lock back before any other caller). Now the
// start is refused with a message, the cancel lands within a step, and a start after the run returns succeeds.
std::atomic<int> g_run_pieces{0};
int counted_slow_piece(void*, const lmrt_token_event*) {
  g_run_pieces.fetch_add(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return 0;
}

TEST(CApi, EngineStartIsRefusedWhileARunSteps) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  ContextPtr ctx = lmrt::test::make_context(m.get(), 256, 1);
  EnginePtr e = make_engine(ctx.get(), 2);
  ASSERT_NE(e, nullptr);
  lmrt_generate_request r = lmrt::test::greedy_request("Once upon a time", 60);
  // The end of text banned, so that all 60 pieces come, slowly: the run lasts at least 120 ms.
  lmrt_tokenizer_info ti;
  ti.struct_size = sizeof ti;
  ASSERT_EQ(lmrt_model_get_tokenizer_info(m.get(), &ti), LMRT_OK);
  std::vector<lmrt_logit_bias> ban;
  for (uint32_t i = 0; i < ti.n_eog_tokens && i < 16; ++i) ban.push_back({ti.eog_tokens[i], -INFINITY});
  r.logit_bias = ban.data();
  r.n_logit_bias = static_cast<uint32_t>(ban.size());
  uint64_t id = 0;
  g_run_pieces.store(0);
  ASSERT_EQ(lmrt_engine_submit(e.get(), &r, counted_slow_piece, nullptr, &id), LMRT_OK);
  auto run = std::async(std::launch::async, [&] { return lmrt_engine_run(e.get()); });
  while (g_run_pieces.load() < 2) std::this_thread::yield();
  EXPECT_EQ(lmrt_engine_start(e.get()), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(lmrt_engine_last_error(e.get())).find("lmrt_engine_run"), std::string::npos)
      << lmrt_engine_last_error(e.get());
  ASSERT_EQ(lmrt_engine_cancel(e.get(), id), LMRT_OK);
  ASSERT_EQ(run.get(), LMRT_OK) << lmrt_engine_last_error(e.get());
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  ASSERT_EQ(lmrt_engine_result(e.get(), id, &res), LMRT_OK);
  EXPECT_EQ(res.finish_reason, LMRT_FINISH_CANCELLED);
  EXPECT_LT(res.completion_tokens, 30u) << "the cancel waited for the run";
  EXPECT_EQ(lmrt_engine_start(e.get()), LMRT_OK) << lmrt_engine_last_error(e.get());
  EXPECT_EQ(lmrt_engine_stop(e.get()), LMRT_OK);
}

// A successful cancel left the message of an earlier failed call in lmrt_engine_last_error.
TEST(CApi, EngineCancelClearsTheLastError) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  ContextPtr ctx = lmrt::test::make_context(m.get(), 128, 1);
  EnginePtr e = make_engine(ctx.get(), 2);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(lmrt_engine_release(e.get(), 12345), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_STRNE(lmrt_engine_last_error(e.get()), "");
  const lmrt_generate_request r = lmrt::test::greedy_request("Once", 8);
  uint64_t id = 0;
  ASSERT_EQ(lmrt_engine_submit(e.get(), &r, nullptr, nullptr, &id), LMRT_OK);
  EXPECT_EQ(lmrt_engine_release(e.get(), 12345), LMRT_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(lmrt_engine_cancel(e.get(), id), LMRT_OK);
  EXPECT_STREQ(lmrt_engine_last_error(e.get()), "");
}

}  // namespace
