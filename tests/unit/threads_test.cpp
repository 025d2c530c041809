// lmrt.h's thread-safety rules, exercised through the C API: one lmrt_model shared by several
// threads at once, each thread with its own lmrt_context. CI also runs these under ThreadSanitizer.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <array>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "c_api_fixture.h"
#include "test_support.h"

namespace {

constexpr int kThreads = 4;
constexpr int kMaxTokens = 48;

using lmrt::test::ContextPtr;
using lmrt::test::ModelPtr;

ModelPtr open_model(const std::string& name) { return lmrt::test::open_shared_model(name); }

// What one greedy generation produced: the streamed text, the final text and the token ids.
struct Run {
  lmrt_status status = LMRT_ERR_INTERNAL;
  std::string error;
  std::string streamed;
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<int32_t> prompt_tokens;
};

int append_piece(void* user, const lmrt_token_event* ev) {
  static_cast<Run*>(user)->streamed.append(ev->text, ev->text_len);
  return 0;
}

// Creates a context with `n_threads` workers on `model` and generates greedily from `prompt`.
// `start` (may be null) is waited on between creating the context and generating, so that the
// callers' generations overlap.
Run generate(lmrt_model* model, const std::string& prompt, uint32_t n_threads, std::latch* start) {
  Run run;
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = 128;
  cp.n_threads = n_threads;
  lmrt_context* raw = nullptr;
  char err[512] = {0};
  run.status = lmrt_context_create(model, &cp, &raw, err, sizeof err);
  ContextPtr ctx(raw);
  if (start != nullptr) start->arrive_and_wait();
  if (run.status != LMRT_OK) {
    run.error = err;
    return run;
  }
  // Tokenizing reads the shared model's vocabulary at the same time as the other threads.
  std::array<int32_t, 64> ids{};
  size_t n_ids = 0;
  run.status =
      lmrt_tokenize(model, prompt.data(), prompt.size(), LMRT_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n_ids);
  if (run.status != LMRT_OK) {
    run.error = lmrt_model_last_error(model);
    return run;
  }
  run.prompt_tokens.assign(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n_ids));

  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = prompt.c_str();
  req.prompt_len = prompt.size();
  req.max_tokens = kMaxTokens;
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  run.status = lmrt_generate(ctx.get(), &req, append_piece, &run, &res);
  if (run.status != LMRT_OK) {
    run.error = lmrt_context_last_error(ctx.get());
    return run;
  }
  run.text.assign(res.text, res.text_len);
  run.tokens.assign(res.tokens, res.tokens + res.completion_tokens);
  return run;
}

// Four threads, each with its own context (two workers each), generate from one shared model at
// once; each must produce exactly what the same prompt gives in a single-threaded run alone.
void expect_parallel_runs_match_sequential(const std::string& model_name) {
  ModelPtr model = open_model(model_name);
  ASSERT_NE(model, nullptr);
  const std::array<std::string, kThreads> prompts = {"Once upon a time", "The little dog", "Lily wanted to",
                                                     "One day, a boy"};

  std::array<Run, kThreads> alone;
  for (int i = 0; i < kThreads; ++i) {
    alone[i] = generate(model.get(), prompts[i], 1, nullptr);
    ASSERT_EQ(alone[i].status, LMRT_OK) << alone[i].error;
    ASSERT_FALSE(alone[i].tokens.empty()) << prompts[i];
  }
  // The prompts must lead to different stories, or cross-talk between contexts could go unseen.
  for (int i = 1; i < kThreads; ++i) EXPECT_NE(alone[i].text, alone[0].text) << prompts[i];

  std::array<Run, kThreads> together;
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] { together[i] = generate(model.get(), prompts[i], 2, &start); });
  for (std::thread& t : threads) t.join();

  for (int i = 0; i < kThreads; ++i) {
    SCOPED_TRACE(model_name + ", prompt \"" + prompts[i] + "\"");
    ASSERT_EQ(together[i].status, LMRT_OK) << together[i].error;
    EXPECT_EQ(together[i].prompt_tokens, alone[i].prompt_tokens);
    EXPECT_EQ(together[i].tokens, alone[i].tokens);
    EXPECT_EQ(together[i].text, alone[i].text);
    EXPECT_EQ(together[i].streamed, together[i].text);
  }
}

TEST(Threads, FourContextsOnOneSharedModelMatchSingleThreadedRuns) {
  expect_parallel_runs_match_sequential("stories260K.gguf");
}

TEST(Threads, FourContextsOnOneSharedQ8ModelMatchSingleThreadedRuns) {
  expect_parallel_runs_match_sequential("TinyStories-656K-Q8_0.gguf");
}

// lmrt_model_last_error is per calling thread: failures on the shared model in four threads at
// once each leave their own message, and a thread that never failed sees "". (The fresh thread
// runs while the four are alive: the library keys messages by std::thread::id, which the system
// may reuse once a thread has exited.)
TEST(Threads, ModelLastErrorIsKeptPerCallingThread) {
  ModelPtr model = open_model("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  std::array<std::string, kThreads> messages;
  std::array<lmrt_status, kThreads> statuses{};
  std::latch start(kThreads);
  std::latch recorded(kThreads + 1);
  std::latch may_exit(1);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      char piece[64];
      size_t len = 0;
      const int32_t bad_token = 1000000 + i;  // out of range, and different in each thread
      for (int round = 0; round < 20; ++round) {
        statuses[i] = lmrt_token_to_piece(model.get(), bad_token, piece, sizeof piece, &len);
        messages[i] = lmrt_model_last_error(model.get());
      }
      recorded.count_down();
      may_exit.wait();
    });
  }
  recorded.arrive_and_wait();
  std::string fresh_thread_message = "unset";
  std::thread([&] { fresh_thread_message = lmrt_model_last_error(model.get()); }).join();
  may_exit.count_down();
  for (std::thread& t : threads) t.join();

  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(statuses[i], LMRT_ERR_INVALID_ARGUMENT);
    EXPECT_NE(messages[i].find(std::to_string(1000000 + i)), std::string::npos) << messages[i];
  }
  EXPECT_EQ(fresh_thread_message, "");
}

}  // namespace
