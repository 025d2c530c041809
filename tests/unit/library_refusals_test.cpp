// Issue 19, "the library, quietly wrong": inputs the C API used to accept and then did the wrong thing
// with (or described misleadingly). Each must now be refused with a status and a message that says
// what is wrong.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "abi/api_support.h"
#include "c_api_fixture.h"
#include "model_variant.h"
#include "test_support.h"

namespace lmrt {
namespace {

using test::ContextPtr;
using test::greedy_request;
using test::make_context;
using test::ModelPtr;
using test::open_shared_model;

// lmrt_model_open's status and message for `path`.
struct OpenOutcome {
  lmrt_status status;
  std::string message;
};
OpenOutcome open_model_file(const std::string& path) {
  lmrt_model* m = nullptr;
  char err[1024] = {0};
  const lmrt_status s = lmrt_model_open(path.c_str(), nullptr, &m, err, sizeof err);
  lmrt_model_close(m);
  return {s, err};
}

// A copy of stories260K.gguf with one edit.
std::string stories_variant(const std::string& file_name, const test::KvEdit& kv_edit,
                            const test::ShapeEdit& shape_edit) {
  return test::write_model_variant("stories260K.gguf", file_name, kv_edit, shape_edit);
}
using test::kKeepKvs;
using test::kKeepShapes;

TEST(Refusals, TheUneditedVariantOpens) {  // so the refusals below are caused by their one edit
  const std::string path = stories_variant("variant-plain.gguf", kKeepKvs, kKeepShapes);
  EXPECT_EQ(open_model_file(path).status, LMRT_OK) << open_model_file(path).message;
}

TEST(Refusals, ArchitectureOfTheWrongTypeIsNamedAsSuch) {
  const std::string path = stories_variant(
      "variant-arch-u32.gguf",
      [](const GgufKv& kv, GgufWriter* w) {
        if (kv.key != "general.architecture") return false;
        w->add_u32("general.architecture", 7);
        return true;
      },
      kKeepShapes);
  const OpenOutcome o = open_model_file(path);
  EXPECT_EQ(o.status, LMRT_ERR_BAD_FORMAT);
  EXPECT_NE(o.message.find("'general.architecture' has type u32; it must be a string"), std::string::npos) << o.message;
  EXPECT_EQ(o.message.find("lacks"), std::string::npos) << o.message;
}

TEST(Refusals, AThreeDimensionalWeightShowsEveryDimension) {
  const std::string path =
      stories_variant("variant-3d.gguf", kKeepKvs, [](std::string_view name, std::vector<uint64_t>* ne) {
        if (name == "blk.0.attn_q.weight") ne->push_back(1);
      });
  const OpenOutcome o = open_model_file(path);
  EXPECT_EQ(o.status, LMRT_ERR_BAD_FORMAT);
  // Not "has shape [64, 64], expected [64, 64]".
  EXPECT_NE(o.message.find("'blk.0.attn_q.weight' has shape [64, 64, 1] (3 dimensions), expected [64, 64]"),
            std::string::npos)
      << o.message;
}

// stories260K has 5 layers: with block_count 4, blk.4's tensors would be left out without a word.
TEST(Refusals, ALayerPastTheBlockCountIsRefused) {
  const std::string path = stories_variant(
      "variant-block-count.gguf",
      [](const GgufKv& kv, GgufWriter* w) {
        if (kv.key != "llama.block_count") return false;
        w->add_u32("llama.block_count", 4);
        return true;
      },
      kKeepShapes);
  const OpenOutcome o = open_model_file(path);
  EXPECT_EQ(o.status, LMRT_ERR_BAD_FORMAT);
  EXPECT_NE(o.message.find("is of layer 4, but llama.block_count is 4"), std::string::npos) << o.message;
}

TEST(Refusals, ANaNTokenScoreIsRefused) {
  const std::string path = stories_variant(
      "variant-nan-score.gguf",
      [](const GgufKv& kv, GgufWriter* w) {
        if (kv.key != "tokenizer.ggml.scores") return false;
        GgufValue v;  // the scores as items in memory, one of them NaN
        v.type = GgufValueType::array;
        v.elem_type = kv.value.elem_type;
        for (uint64_t k = 0; k < kv.value.size(); ++k) v.items.push_back(kv.value.item(k));
        v.items.at(300).f = std::nan("");
        w->add_value("tokenizer.ggml.scores", v);
        return true;
      },
      kKeepShapes);
  const OpenOutcome o = open_model_file(path);
  EXPECT_EQ(o.status, LMRT_ERR_BAD_FORMAT);
  EXPECT_NE(o.message.find("tokenizer.ggml.scores[300] is NaN"), std::string::npos) << o.message;
}

// `lmrt info -m FIFO` blocked forever: opening a FIFO for reading waits for a writer.
TEST(Refusals, AFifoIsRefusedWithoutWaitingForAWriter) {
  const std::string fifo = test::write_temp_file("model-fifo", "");
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Should the open block, a writer comes after 3 s to release it, so the test fails instead of hanging.
  std::atomic<bool> done{false};
  std::thread releaser([&] {
    const auto start = std::chrono::steady_clock::now();
    while (!done && std::chrono::steady_clock::now() - start < std::chrono::seconds(3))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    while (!done) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd >= 0) ::close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  const OpenOutcome o = open_model_file(fifo);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  done = true;
  releaser.join();
  ::unlink(fifo.c_str());
  EXPECT_LT(secs, 1.0) << "lmrt_model_open waited for a writer";
  EXPECT_EQ(o.status, LMRT_ERR_IO);
  EXPECT_NE(o.message.find("not a regular file"), std::string::npos) << o.message;
}

TEST(Refusals, TokenizeTakesSizeMaxAsNulTerminated) {
  ModelPtr m = open_shared_model("stories260K.gguf");
  ASSERT_TRUE(m);
  // A heap copy exactly as long as the text and its NUL, so ASan sees any read past it.
  const std::string text = "Once upon a time, there was a cat.";
  std::vector<char> buf(text.begin(), text.end());
  buf.push_back('\0');
  int32_t want[64], got[64];
  size_t n_want = 0, n_got = 0;
  ASSERT_EQ(lmrt_tokenize(m.get(), buf.data(), text.size(), LMRT_TOKENIZE_ADD_BOS, want, 64, &n_want), LMRT_OK);
  ASSERT_EQ(lmrt_tokenize(m.get(), buf.data(), static_cast<size_t>(-1), LMRT_TOKENIZE_ADD_BOS, got, 64, &n_got),
            LMRT_OK)
      << lmrt_model_last_error(m.get());
  ASSERT_EQ(n_got, n_want);
  EXPECT_GT(n_want, 5u);
  EXPECT_EQ(std::vector<int32_t>(got, got + n_got), std::vector<int32_t>(want, want + n_want));
}

// What lmrt_generate says about a request: status, message and the tokens it produced.
struct Generated {
  lmrt_status status;
  std::string message;
  std::vector<int32_t> tokens;
  lmrt_finish_reason finish = LMRT_FINISH_NONE;
};
Generated generate(lmrt_context* ctx, const lmrt_generate_request& req) {
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  Generated g{lmrt_generate(ctx, &req, nullptr, nullptr, &res), "", {}};
  g.message = lmrt_context_last_error(ctx);
  if (g.status == LMRT_OK) {
    g.tokens.assign(res.tokens, res.tokens + res.completion_tokens);
    g.finish = res.finish_reason;
  }
  return g;
}

TEST(Refusals, InvalidUtf8StopStringsAreRefused) {
  ModelPtr m = open_shared_model("stories260K.gguf");
  ASSERT_TRUE(m);
  ContextPtr ctx = make_context(m.get(), 64);
  for (const char* bad : {"\xff", "ab\xc3", "\xed\xa0\x80" /* a surrogate */}) {
    const char* stops[] = {"fine", bad};
    lmrt_generate_request req = greedy_request("Once", 4);
    req.stop = stops;
    req.n_stop = 2;
    const Generated g = generate(ctx.get(), req);
    EXPECT_EQ(g.status, LMRT_ERR_BAD_UTF8) << g.message;
    EXPECT_NE(g.message.find("stop[1]: invalid UTF-8 at byte offset"), std::string::npos) << g.message;
  }
  const char* good[] = {"caf\xc3\xa9"};
  lmrt_generate_request req = greedy_request("Once", 4);
  req.stop = good;
  req.n_stop = 1;
  EXPECT_EQ(generate(ctx.get(), req).status, LMRT_OK);
}

// Greedy over a vocabulary whose every token is banned emitted token 0 and finished with "length".
TEST(Refusals, AGreedyChainWithEveryTokenBannedFails) {
  ModelPtr m = open_shared_model("stories260K.gguf");
  ASSERT_TRUE(m);
  ContextPtr ctx = make_context(m.get(), 64);
  lmrt_model_info info;
  info.struct_size = sizeof info;
  ASSERT_EQ(lmrt_model_get_info(m.get(), &info), LMRT_OK);
  std::vector<lmrt_logit_bias> ban(info.n_vocab);
  for (uint32_t t = 0; t < info.n_vocab; ++t) ban[t] = {static_cast<int32_t>(t), -INFINITY};
  for (const char* samplers : {"", "greedy"}) {
    lmrt_generate_request req = greedy_request("Once", 3);
    req.logit_bias = ban.data();
    req.n_logit_bias = static_cast<uint32_t>(ban.size());
    std::string spec;
    if (samplers[0] != '\0') {  // the same through a spec chain
      spec = "logit_bias(";
      for (uint32_t t = 0; t < info.n_vocab; ++t) spec += (t ? "," : "") + std::to_string(t) + "=-inf";
      spec += ") greedy";
      req.samplers = spec.c_str();
    }
    const Generated g = generate(ctx.get(), req);
    EXPECT_EQ(g.status, LMRT_ERR_INVALID_ARGUMENT) << samplers << ": tokens " << g.tokens.size();
    EXPECT_NE(g.message.find("every candidate token is excluded"), std::string::npos) << g.message;
  }
  // Banning all but one token leaves that token.
  ban.erase(ban.begin() + 300);
  lmrt_generate_request req = greedy_request("Once", 3);
  req.logit_bias = ban.data();
  req.n_logit_bias = static_cast<uint32_t>(ban.size());
  const Generated g = generate(ctx.get(), req);
  ASSERT_EQ(g.status, LMRT_OK) << g.message;
  EXPECT_EQ(g.tokens, std::vector<int32_t>(3, 300));
}

// The message lmrt_sampler_create gives for `spec` (the spec parser's validation).
std::string spec_error(const std::string& spec) {
  lmrt_sampler* s = nullptr;
  char err[512] = {0};
  EXPECT_NE(lmrt_sampler_create(spec.c_str(), 1, &s, err, sizeof err), LMRT_OK) << spec;
  lmrt_sampler_free(s);
  return err;
}

// The request fields were checked only when they switched a sampler on: NaN or 1.5 meant "off".
TEST(Refusals, OutOfRangeSamplingFieldsFailAsTheSpecParserFails) {
  ModelPtr m = open_shared_model("stories260K.gguf");
  ASSERT_TRUE(m);
  ContextPtr ctx = make_context(m.get(), 64);
  struct Case {
    float lmrt_generate_request::*field;
    float value;
    const char* spec;  // the same value written as a spec, when a spec can say it
    const char* says;
  } cases[] = {
      {&lmrt_generate_request::top_p, 1.5f, "top_p(1.5)", "top_p: parameter 'p' must be in [0, 1], got 1.5"},
      {&lmrt_generate_request::top_p, -0.5f, "top_p(-0.5)", "top_p: parameter 'p' must be in [0, 1], got -0.5"},
      {&lmrt_generate_request::min_p, 2.0f, "min_p(2)", "min_p: parameter 'p' must be in [0, 1], got 2"},
      {&lmrt_generate_request::min_p, -1.0f, "min_p(-1)", "min_p: parameter 'p' must be in [0, 1], got -1"},
      {&lmrt_generate_request::typical_p, 3.0f, "typical(3)", "typical: parameter 'p' must be in [0, 1], got 3"},
      {&lmrt_generate_request::temperature, INFINITY, "temperature(inf)",
       "temperature: parameter 't' must be in (-inf, inf), got inf"},
      {&lmrt_generate_request::top_p, NAN, nullptr, "top_p: parameter 'p' must be in [0, 1], got nan"},
      {&lmrt_generate_request::min_p, NAN, nullptr, "min_p: parameter 'p' must be in [0, 1], got nan"},
      {&lmrt_generate_request::typical_p, NAN, nullptr, "typical: parameter 'p' must be in [0, 1], got nan"},
      {&lmrt_generate_request::temperature, NAN, nullptr, "temperature: parameter 't' must be in (-inf, inf), got nan"},
  };
  for (const Case& c : cases) {
    if (c.spec != nullptr) {
      const std::string said = spec_error(c.spec);
      EXPECT_NE(said.find(c.says), std::string::npos) << said;
    }
    for (float temperature : {0.0f, 0.8f}) {  // greedy and sampled
      lmrt_generate_request req = greedy_request("Once", 2);
      req.temperature = temperature;
      req.seed = 1;
      req.*c.field = c.value;
      const Generated g = generate(ctx.get(), req);
      EXPECT_EQ(g.status, LMRT_ERR_INVALID_ARGUMENT) << c.says << " (temperature " << temperature << ")";
      EXPECT_NE(g.message.find(c.says), std::string::npos) << g.message;
    }
  }
}

// Beams take one arena slot each per step: 16 beams in 8 slots ended after one token.
TEST(Refusals, BeamsThatCannotGrowInTheContextAreAnError) {
  ModelPtr m = open_shared_model("stories260K.gguf");
  ASSERT_TRUE(m);
  ContextPtr ctx = make_context(m.get(), 8);
  lmrt_generate_request req = greedy_request("Once", 5);
  req.n_beams = 16;
  Generated g = generate(ctx.get(), req);
  EXPECT_EQ(g.status, LMRT_ERR_CONTEXT_FULL);
  EXPECT_NE(g.message.find("16 beams need at least 16 free context slots after the 2-token prompt"), std::string::npos)
      << g.message;
  req.n_beams = 4;  // 6 free slots: room for a step
  g = generate(ctx.get(), req);
  ASSERT_EQ(g.status, LMRT_OK) << g.message;
  EXPECT_GE(g.tokens.size(), 2u);
  req.n_beams = 16;  // one token needs no slot
  req.max_tokens = 1;
  g = generate(ctx.get(), req);
  ASSERT_EQ(g.status, LMRT_OK) << g.message;
  EXPECT_EQ(g.tokens.size(), 1u);
}

// A failed allocation was reported as "out of memory: out of memory" (status text, then message).
TEST(Refusals, AFailedAllocationIsNotDescribedTwice) {
  std::string message;
  const lmrt_status s =
      abi::guarded([]() -> Status { throw std::bad_alloc(); }, [&](const std::string& m) { message = m; });
  EXPECT_EQ(s, LMRT_ERR_OUT_OF_MEMORY);
  EXPECT_STREQ(lmrt_status_str(s), "out of memory");
  EXPECT_EQ(message.find("out of memory"), std::string::npos) << message;
  EXPECT_NE(message.find("allocation failed"), std::string::npos) << message;
}

}  // namespace
}  // namespace lmrt
