// Generating a token after the first performs no heap allocation: Context::eval on one token,
// through the graph, kernels, KV arena and thread pool, with one and two threads, on the F32
// stories260K, on a small synthetic Q4_0 model, standard and interleaved (Q4_0x16), and on llama.cpp's
// K-quant and IQ4 files (../shared/models/quant: Q4_K + Q6_K; IQ4_NL + Q5_1 + Q8_0), whose matmuls take
// Q8_K or dequantize on the stack.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "alloc_counter.h"
#include "runtime/generate/context.h"
#include "runtime/model/llama_model.h"
#include "test_support.h"
#include "tools/interleave_file.h"
#include "tools/synthetic_model.h"

namespace lmrt {
namespace {

void expect_decode_allocates_nothing(const std::string& path) {
  SCOPED_TRACE(path);
  std::unique_ptr<GgufFile> g;
  ASSERT_TRUE(GgufFile::open(path, true, &g).ok());
  std::unique_ptr<LlamaModel> m;
  ASSERT_TRUE(LlamaModel::load(std::move(g), &m).ok());
  for (uint32_t threads : {1u, 2u}) {
    for (KvType kv : {KvType::f16, KvType::f32}) {
      ContextParams cp;
      cp.n_ctx = 64;
      cp.n_threads = threads;
      cp.kv_type = kv;
      std::unique_ptr<Context> ctx;
      ASSERT_TRUE(Context::create(*m, cp, &ctx).ok());
      int32_t tok = 1;
      ASSERT_TRUE(ctx->eval(&tok, 1).ok());
      const uint32_t n_vocab = m->hparams().n_vocab;
      long allocations = 0;
      for (int i = 0; i < 20; ++i) {
        const float* logits = ctx->logits(0);
        tok = static_cast<int32_t>(std::max_element(logits, logits + n_vocab) - logits);
        test::AllocationCounter counter;
        const Status s = ctx->eval(&tok, 1);
        allocations += counter.count();
        ASSERT_TRUE(s.ok()) << s.message();
      }
      EXPECT_EQ(allocations, 0) << "threads=" << threads;
      EXPECT_EQ(ctx->n_past(), 21u);
    }
  }
}

TEST(DecodeAlloc, TokensAfterTheFirstAllocateNothing) {
  expect_decode_allocates_nothing(test::model_path("stories260K.gguf"));
}

TEST(DecodeAlloc, Q4_0AndQ4_0x16TokensAllocateNothing) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string base =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/lmrt-decode-alloc-" + std::to_string(getpid());
  SyntheticShape shape;
  shape.dim = 128;
  shape.layers = 2;
  shape.heads = 4;
  shape.kv_heads = 2;
  shape.ffn = 256;
  shape.vocab = 320;
  shape.ctx = 64;
  SyntheticOptions o;
  o.seed = 3;
  o.tokenizer_path = test::model_path("llama2-tokenizer.bin");
  const Status w = write_synthetic_model(base + "-q4_0.gguf", shape, o);
  ASSERT_TRUE(w.ok()) << w.message();
  const Status x = interleave_model_file(base + "-q4_0.gguf", base + "-q4_0x16.gguf", nullptr);
  ASSERT_TRUE(x.ok()) << x.message();
  expect_decode_allocates_nothing(base + "-q4_0.gguf");
  expect_decode_allocates_nothing(base + "-q4_0x16.gguf");
  std::remove((base + "-q4_0.gguf").c_str());
  std::remove((base + "-q4_0x16.gguf").c_str());
}

TEST(DecodeAlloc, KQuantAndIq4TokensAllocateNothing) {
  for (const char* file : {"base-Q4_K_M.gguf", "w320-IQ4_XS.gguf"})
    expect_decode_allocates_nothing(test::model_path(std::string("quant/") + file));
}

}  // namespace
}  // namespace lmrt
