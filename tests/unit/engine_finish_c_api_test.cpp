// The batch engine's finish notification (lmrt_engine_params.on_finish) through lmrt.h: every
// request the engine accepted is reported exactly once, whether it ended by a stop string, its
// length, a cancel from its callback, a cancel by id before it ever ran, or a plugin sampler's
// failure; the notice names the request and the reason its result gives, comes after the request's
// last piece and on the thread that steps (the engine's own, or the caller's in lmrt_engine_run).
// A waiting thread sleeps on a condition variable until the last notice: no polling. Runs under
// ThreadSanitizer (CApi.*).
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "c_api_fixture.h"

namespace {

using lmrt::test::ContextPtr;
using lmrt::test::EnginePtr;
using lmrt::test::ModelPtr;

struct HostFreer {
  void operator()(lmrt_plugin_host* h) const { lmrt_plugin_host_free(h); }
};
using HostPtr = std::unique_ptr<lmrt_plugin_host, HostFreer>;

// The notices of all requests, as the waiting thread sees them.
struct Board {
  std::mutex mu;
  std::condition_variable changed;
  int notices = 0;
};

// One request's view: its pieces and its notices.
struct Watch {
  Board* board = nullptr;
  int cancel_after = -1;  // the callback cancels once this many pieces came (-1: never)
  int pieces = 0;
  std::thread::id piece_thread;
  // Written under board->mu by the notice.
  int notices = 0;
  uint64_t noticed_id = 0;
  lmrt_finish_reason noticed_reason = LMRT_FINISH_NONE;
  int pieces_at_notice = -1;
  std::thread::id notice_thread;
};

int on_piece(void* user, const lmrt_token_event*) {
  auto* w = static_cast<Watch*>(user);
  w->piece_thread = std::this_thread::get_id();
  return ++w->pieces == w->cancel_after ? 1 : 0;
}

void on_finish(void* user, uint64_t request_id, lmrt_finish_reason reason) {
  auto* w = static_cast<Watch*>(user);
  {
    std::lock_guard<std::mutex> lock(w->board->mu);
    ++w->notices;
    ++w->board->notices;
    w->noticed_id = request_id;
    w->noticed_reason = reason;
    w->pieces_at_notice = w->pieces;
    w->notice_thread = std::this_thread::get_id();
  }
  w->board->changed.notify_all();
}

// Five requests that end in five ways, on an engine of two sequences (so some wait in the queue).
struct FiveRequests {
  ModelPtr model;
  HostPtr host;
  ContextPtr ctx;
  Board board;
  std::vector<Watch> watches = std::vector<Watch>(5);
  std::vector<uint64_t> ids = std::vector<uint64_t>(5, 0);
  std::vector<lmrt_finish_reason> expected{LMRT_FINISH_STOP, LMRT_FINISH_CANCELLED, LMRT_FINISH_ERROR,
                                           LMRT_FINISH_CANCELLED, LMRT_FINISH_LENGTH};
  EnginePtr engine;  // last: freed first, before what its callbacks see
};

void submit_all(FiveRequests* run) {
  run->model = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(run->model, nullptr);
  lmrt_plugin_host_params hp;
  lmrt_plugin_host_params_init(&hp);
  hp.allow_loading = 1;
  lmrt_plugin_host* host = nullptr;
  ASSERT_EQ(lmrt_plugin_host_create(&hp, &host, nullptr, 0), LMRT_OK);
  run->host.reset(host);
  ASSERT_EQ(lmrt_plugin_load(host, LMRT_TEST_FIXTURE_BAD_TOKEN), LMRT_OK) << lmrt_plugin_host_last_error(host);
  run->ctx = lmrt::test::make_context(run->model.get(), 512);
  lmrt_engine_params p;
  lmrt_engine_params_init(&p);
  EXPECT_EQ(p.on_finish, nullptr);
  p.max_sequences = 2;
  p.prefill_chunk = 4;
  p.on_finish = on_finish;
  lmrt_engine* e = nullptr;
  char err[256] = {0};
  ASSERT_EQ(lmrt_engine_create(run->ctx.get(), &p, &e, err, sizeof err), LMRT_OK) << err;
  run->engine.reset(e);
  for (Watch& w : run->watches) w.board = &run->board;
  run->watches[1].cancel_after = 3;

  const char* stop[] = {"."};
  const lmrt_logit_bias no_eos{2, -100.0f};  // the stories models' </s>: runs to max_tokens
  std::vector<lmrt_generate_request> reqs(5);
  reqs[0] = lmrt::test::greedy_request("Once upon a time", 48);
  reqs[0].stop = stop;
  reqs[0].n_stop = 1;
  reqs[1] = lmrt::test::greedy_request("Lily wanted", 200);
  reqs[2] = lmrt::test::greedy_request("The sun", 20);
  reqs[2].samplers = "bad_token greedy";
  reqs[2].plugins = host;
  reqs[3] = lmrt::test::greedy_request("The dog", 20);
  reqs[4] = lmrt::test::greedy_request("Tom", 6);
  reqs[4].logit_bias = &no_eos;
  reqs[4].n_logit_bias = 1;
  for (size_t i = 0; i < reqs.size(); ++i)
    ASSERT_EQ(lmrt_engine_submit(e, &reqs[i], on_piece, &run->watches[i], &run->ids[i]), LMRT_OK)
        << i << ": " << lmrt_engine_last_error(e);
  ASSERT_EQ(lmrt_engine_cancel(e, run->ids[3]), LMRT_OK);  // queued: it never runs
}

// Each request was noticed once, with its id and the reason its result gives, after its last piece
// and on `stepper`.
void check_notices(FiveRequests& run, std::thread::id stepper) {
  {
    // The board's lock is taken inside on_finish, under the engine's lock: never call the engine while
    // holding it (the lock order would invert).
    std::lock_guard<std::mutex> lock(run.board.mu);
    EXPECT_EQ(run.board.notices, 5);
    for (size_t i = 0; i < run.watches.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(i));
      const Watch& w = run.watches[i];
      EXPECT_EQ(w.notices, 1);
      EXPECT_EQ(w.noticed_id, run.ids[i]);
      EXPECT_EQ(w.noticed_reason, run.expected[i]);
      EXPECT_EQ(w.notice_thread, stepper);
      EXPECT_EQ(w.pieces_at_notice, w.pieces);  // nothing streamed after the notice
      if (w.pieces > 0) {
        EXPECT_EQ(w.piece_thread, stepper);
      }
    }
  }
  for (size_t i = 0; i < run.watches.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    lmrt_generate_result res{};
    res.struct_size = sizeof res;
    const lmrt_status st = lmrt_engine_result(run.engine.get(), run.ids[i], &res);
    EXPECT_EQ(res.finish_reason, run.expected[i]);
    EXPECT_EQ(st, i == 2 ? LMRT_ERR_PLUGIN : LMRT_OK) << lmrt_engine_last_error(run.engine.get());
  }
  EXPECT_EQ(run.watches[1].pieces, 3);  // cancelled by its callback at its third piece
  EXPECT_EQ(run.watches[3].pieces, 0);  // cancelled before it ran
}

TEST(CApi, EngineThreadNoticesEveryFinishOnce) {
  FiveRequests run;
  submit_all(&run);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ASSERT_EQ(lmrt_engine_start(run.engine.get()), LMRT_OK);
  {
    std::unique_lock<std::mutex> lock(run.board.mu);
    ASSERT_TRUE(run.board.changed.wait_for(lock, std::chrono::seconds(60), [&] { return run.board.notices == 5; }));
  }
  // A notice means finished: lmrt_engine_wait agrees at once.
  for (uint64_t id : run.ids) {
    int finished = 0;
    EXPECT_EQ(lmrt_engine_wait(run.engine.get(), id, 0, &finished), LMRT_OK);
    EXPECT_EQ(finished, 1);
  }
  std::thread::id engine_thread;
  {
    std::lock_guard<std::mutex> lock(run.board.mu);
    engine_thread = run.watches[0].notice_thread;
  }
  EXPECT_NE(engine_thread, std::this_thread::get_id());
  ASSERT_EQ(lmrt_engine_stop(run.engine.get()), LMRT_OK);
  check_notices(run, engine_thread);
  for (uint64_t id : run.ids) EXPECT_EQ(lmrt_engine_release(run.engine.get(), id), LMRT_OK);
  run.engine.reset();  // nothing left to notice
  std::lock_guard<std::mutex> lock(run.board.mu);
  EXPECT_EQ(run.board.notices, 5);
}

TEST(CApi, EngineRunNoticesOnTheCallersThread) {
  FiveRequests run;
  submit_all(&run);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ASSERT_EQ(lmrt_engine_run(run.engine.get()), LMRT_OK) << lmrt_engine_last_error(run.engine.get());
  check_notices(run, std::this_thread::get_id());
}

TEST(CApi, EngineFreeDropsUnfinishedWithoutNotice) {
  FiveRequests run;
  submit_all(&run);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  ASSERT_EQ(lmrt_engine_step(run.engine.get(), nullptr), LMRT_OK);  // the cancelled one ends here
  run.engine.reset();
  std::lock_guard<std::mutex> lock(run.board.mu);
  EXPECT_EQ(run.board.notices, 1);
  EXPECT_EQ(run.watches[3].notices, 1);
}

}  // namespace
