// A prompt evaluated in chunks after cells its sequence already holds (the earlier turns of a chat,
// reused or computed before) gives the logits of the same prompt evaluated at once, to the bit: the
// chunks attend in tiles of queries (LlamaGraph::kMinTiledRun) exactly as a whole prompt does, over
// their earlier cells in one run or scattered through the arena. On the stories model and the synthetic
// architectures with grouped-query attention, Q/K norms and sliding windows, on every ISA here.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/generate/context.h"
#include "runtime/model/llama_model.h"
#include "test_support.h"

namespace lmrt {
namespace {

std::unique_ptr<LlamaModel> load_model(const std::string& name) {
  std::unique_ptr<GgufFile> g;
  EXPECT_TRUE(GgufFile::open(test::model_path(name), true, &g).ok()) << name;
  std::unique_ptr<LlamaModel> m;
  EXPECT_TRUE(LlamaModel::load(std::move(g), &m).ok()) << name;
  return m;
}

std::vector<int32_t> prompt_tokens(uint32_t n) {
  std::vector<int32_t> t(n);
  for (uint32_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(3 + (i * 7919u + 5 * 104729u) % 500u);
  t[0] = 1;  // BOS
  return t;
}

constexpr uint32_t kCells = 128;
constexpr uint32_t kPrompt = 40;   // longer than the gemma files' 16-token window
constexpr uint32_t kEarlier = 12;  // the cells the sequence holds before its chunks

// Tokens [first, first + n) of `prompt` at their positions, stored in cells[p] and seeing
// cells[0..p]; logits for the tokens `rows` names (absolute positions).
Status eval_range(Context& ctx, const std::vector<int32_t>& prompt, const std::vector<uint32_t>& cells, bool contiguous,
                  uint32_t first, uint32_t n, const std::vector<uint32_t>& rows) {
  std::vector<uint32_t> pos(n), slot(n), logit_rows;
  std::vector<AttentionView> views(n);
  for (uint32_t i = 0; i < n; ++i) {
    pos[i] = first + i;
    slot[i] = cells[first + i];
    views[i] = AttentionView{cells.data(), first + i + 1, contiguous};
  }
  for (uint32_t r : rows)
    if (r >= first && r < first + n) logit_rows.push_back(r - first);
  GraphBatch b;
  b.tokens = prompt.data() + first;
  b.n = n;
  b.pos = pos.data();
  b.slot = slot.data();
  b.views = views.data();
  if (logit_rows.empty()) logit_rows.push_back(n - 1);  // some row is always computed
  b.logit_rows = logit_rows.data();
  b.n_logit_rows = static_cast<uint32_t>(logit_rows.size());
  return ctx.eval_sequences(b);
}

struct ChunkCase {
  const char* model;
  simd::Isa isa;
};

class ChunkAfterCells : public testing::TestWithParam<ChunkCase> {};

TEST_P(ChunkAfterCells, GivesTheLogitsOfTheWholePromptAtOnce) {
  const ChunkCase c = GetParam();
  if (!simd::isa_available(c.isa)) GTEST_SKIP() << simd::isa_name(c.isa) << " is not available here";
  std::unique_ptr<LlamaModel> model = load_model(c.model);
  ASSERT_NE(model, nullptr);
  const uint32_t n_vocab = model->hparams().n_vocab;
  ContextParams cp;
  cp.n_ctx = kCells;
  cp.n_threads = 2;
  cp.isa = c.isa;
  const std::vector<int32_t> prompt = prompt_tokens(kPrompt);
  std::vector<uint32_t> in_order(kPrompt), scattered(kPrompt);
  for (uint32_t p = 0; p < kPrompt; ++p) {
    in_order[p] = p;
    scattered[p] = p < 8 ? p + 3 : kCells - 1 - 3 * (p - 8);  // a run, then descending with gaps
  }
  // Chunk sizes that cut the 28 tokens after the earlier cells into chunks of at least kMinTiledRun.
  for (uint32_t chunk : {4u, 6u, 7u, 16u, kPrompt - kEarlier}) {
    std::vector<uint32_t> ends;  // the last token of every chunk: its logits are compared
    for (uint32_t p = kEarlier; p < kPrompt; p += chunk) ends.push_back(std::min(p + chunk, kPrompt) - 1);
    ASSERT_LE(ends.size(), LlamaGraph::kMaxLogitRows);
    std::unique_ptr<Context> whole;
    ASSERT_TRUE(Context::create(*model, cp, &whole).ok());
    ASSERT_TRUE(eval_range(*whole, prompt, in_order, true, 0, kPrompt, ends).ok());
    for (bool contiguous : {true, false}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + (contiguous ? ", cells in order" : ", scattered cells"));
      const std::vector<uint32_t>& cells = contiguous ? in_order : scattered;
      std::unique_ptr<Context> chunked;
      ASSERT_TRUE(Context::create(*model, cp, &chunked).ok());
      ASSERT_TRUE(chunked->reserve_scattered_views().ok());
      ASSERT_TRUE(eval_range(*chunked, prompt, cells, contiguous, 0, kEarlier, {}).ok());
      for (uint32_t i = 0; i < ends.size(); ++i) {
        const uint32_t first = i == 0 ? kEarlier : ends[i - 1] + 1;
        ASSERT_TRUE(eval_range(*chunked, prompt, cells, contiguous, first, ends[i] + 1 - first, {ends[i]}).ok());
        EXPECT_EQ(std::memcmp(chunked->batch_logits(0), whole->batch_logits(i), n_vocab * sizeof(float)), 0)
            << "logits of position " << ends[i];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ModelsAndIsas, ChunkAfterCells,
                         testing::Values(ChunkCase{"stories260K.gguf", simd::Isa::avx512},
                                         ChunkCase{"arch/llama3-f16.gguf", simd::Isa::avx512},
                                         ChunkCase{"arch/qwen3-f16.gguf", simd::Isa::avx512},
                                         ChunkCase{"arch/gemma3-f16.gguf", simd::Isa::avx512},
                                         ChunkCase{"arch/llama3-f16.gguf", simd::Isa::avx2},
                                         ChunkCase{"arch/gemma3-f16.gguf", simd::Isa::avx2},
                                         ChunkCase{"arch/llama3-f16.gguf", simd::Isa::scalar},
                                         ChunkCase{"arch/gemma3-f16.gguf", simd::Isa::neon}),
                         [](const testing::TestParamInfo<ChunkCase>& i) {
                           std::string name = i.param.model;
                           name = name.substr(0, name.find(".gguf"));
                           for (char& ch : name)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name + "_" + simd::isa_name(i.param.isa);
                         });

}  // namespace
}  // namespace lmrt
