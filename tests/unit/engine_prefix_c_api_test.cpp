// Prefix reuse through lmrt.h: the engine parameters that turn it on (the default) and off, and
// reused_tokens in lmrt_engine_result; the tokens are those lmrt_generate gives alone either way.
// Runs under ThreadSanitizer (CApi.*).
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <memory>
#include <string>
#include <vector>

#include "c_api_fixture.h"

namespace {

using lmrt::test::ContextPtr;
using lmrt::test::EnginePtr;
using lmrt::test::ModelPtr;

constexpr const char* kSystem =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun with her "
    "friends. One day, she saw a big red ball in the park.";

std::vector<int32_t> generated(const lmrt_generate_result& r) {
  return std::vector<int32_t>(r.tokens, r.tokens + r.completion_tokens);
}

TEST(CApi, EnginePrefixReuseParamsAndReusedTokens) {
  ModelPtr m = lmrt::test::open_shared_model("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  lmrt_engine_params p;
  ASSERT_EQ(lmrt_engine_params_init(&p), LMRT_OK);
  EXPECT_EQ(p.struct_size, sizeof p);
  EXPECT_EQ(p.prefix_reuse, 1u);
  EXPECT_EQ(p.retained_sequences, 4u);

  const std::string first = std::string(kSystem) + " Lily";
  const std::string second = std::string(kSystem) + " Tom";
  // What each prompt gives alone.
  std::vector<std::vector<int32_t>> want;
  for (const std::string* prompt : {&first, &second}) {
    ContextPtr ctx = lmrt::test::make_context(m.get(), 256);
    const lmrt_generate_request r = lmrt::test::greedy_request(prompt->c_str(), 20);
    lmrt_generate_result res{};
    res.struct_size = sizeof res;
    ASSERT_EQ(lmrt_generate(ctx.get(), &r, nullptr, nullptr, &res), LMRT_OK);
    want.push_back(generated(res));
  }

  for (uint32_t reuse : {1u, 0u}) {
    SCOPED_TRACE("prefix_reuse=" + std::to_string(reuse));
    ContextPtr ctx = lmrt::test::make_context(m.get(), 256);
    p.prefix_reuse = reuse;
    lmrt_engine* e = nullptr;
    char err[256] = {0};
    ASSERT_EQ(lmrt_engine_create(ctx.get(), &p, &e, err, sizeof err), LMRT_OK) << err;
    EnginePtr engine(e);
    uint32_t prompt_tokens = 0;
    for (size_t i = 0; i < 2; ++i) {  // one after the other: the second finds the first's cached prefix
      const lmrt_generate_request r = lmrt::test::greedy_request(i == 0 ? first.c_str() : second.c_str(), 20);
      uint64_t id = 0;
      ASSERT_EQ(lmrt_engine_submit(engine.get(), &r, nullptr, nullptr, &id), LMRT_OK);
      ASSERT_EQ(lmrt_engine_run(engine.get()), LMRT_OK);
      lmrt_generate_result res{};
      res.struct_size = sizeof res;
      ASSERT_EQ(lmrt_engine_result(engine.get(), id, &res), LMRT_OK);
      EXPECT_EQ(generated(res), want[i]);
      if (i == 0) {
        EXPECT_EQ(res.reused_tokens, 0u);
        prompt_tokens = res.prompt_tokens;
      } else if (reuse == 1) {
        // The system prompt's tokens, up to where " Lily" and " Tom" part (a word may merge with
        // the space before it), at least 30 of them.
        EXPECT_GT(res.reused_tokens, 30u);
        EXPECT_LT(res.reused_tokens, prompt_tokens);
      } else {
        EXPECT_EQ(res.reused_tokens, 0u);
      }
    }
  }

  // Out of range: refused with a message.
  ContextPtr ctx = lmrt::test::make_context(m.get(), 256);
  lmrt_engine* e = nullptr;
  char err[256] = {0};
  p.prefix_reuse = 2;
  EXPECT_EQ(lmrt_engine_create(ctx.get(), &p, &e, err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("prefix_reuse"), std::string::npos);
  p.prefix_reuse = 1;
  p.retained_sequences = 17;
  EXPECT_EQ(lmrt_engine_create(ctx.get(), &p, &e, err, sizeof err), LMRT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("retained_sequences"), std::string::npos);
  EXPECT_EQ(e, nullptr);
  // A caller built against the older, 12-byte struct gets reuse on.
  lmrt_engine_params old{};
  ASSERT_EQ(lmrt_engine_params_init_sized(&old, 12), LMRT_OK);
  ASSERT_EQ(lmrt_engine_create(ctx.get(), &old, &e, err, sizeof err), LMRT_OK) << err;
  lmrt_engine_free(e);
}

}  // namespace
