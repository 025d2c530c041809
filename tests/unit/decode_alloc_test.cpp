// Generating a token after the first performs no heap allocation: Context::eval on one token,
// through the graph, kernels, KV arena and thread pool, with one and two threads.
#include <gtest/gtest.h>

#include <algorithm>

#include "alloc_counter.h"
#include "runtime/generate/context.h"
#include "runtime/model/llama_model.h"
#include "test_support.h"

namespace lmrt {
namespace {

TEST(DecodeAlloc, TokensAfterTheFirstAllocateNothing) {
  std::unique_ptr<GgufFile> g;
  ASSERT_TRUE(GgufFile::open(test::model_path("stories260K.gguf"), true, &g).ok());
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

}  // namespace
}  // namespace lmrt
