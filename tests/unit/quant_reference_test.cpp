// Every llama.cpp quantization in ../shared/models/quant against llama.cpp's own logits for the same ids
// (README there): lmrt's logits are within 3 % relative RMS of llama.cpp's on the same file, and no further
// from the F16 source's logits than llama.cpp's are (x 1.05), on every kernel table this machine runs.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/generate/context.h"
#include "runtime/model/llama_model.h"
#include "runtime/util/logit_stats.h"
#include "test_support.h"

namespace lmrt {
namespace {

constexpr uint32_t kVocab = 512;

std::vector<int32_t> quant_ids() {
  std::istringstream in(test::read_file(test::model_path("quant/ids.txt")));
  std::vector<int32_t> ids;
  int32_t x;
  while (in >> x) ids.push_back(x);
  return ids;
}

std::vector<float> read_logits(const std::string& file) {
  const std::string bytes = test::read_file(test::model_path("quant/" + file));
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// lmrt's logits for every position of `ids`, evaluated as one batch.
std::vector<float> lmrt_logits(const std::string& file, const std::vector<int32_t>& ids, simd::Isa isa) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::model_path("quant/" + file), true, &g);
  EXPECT_TRUE(s.ok()) << file << ": " << s.message();
  if (!s.ok()) return {};
  std::unique_ptr<LlamaModel> m;
  s = LlamaModel::load(std::move(g), &m);
  EXPECT_TRUE(s.ok()) << file << ": " << s.message();
  if (!s.ok()) return {};
  EXPECT_EQ(m->hparams().n_vocab, kVocab);
  ContextParams p;
  p.n_ctx = 128;
  p.n_threads = 2;
  p.logits_all = true;
  p.isa = isa;
  std::unique_ptr<Context> ctx;
  s = Context::create(*m, p, &ctx);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {};
  s = ctx->eval(ids.data(), ids.size());
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {};
  std::vector<float> out(ids.size() * kVocab);
  for (size_t i = 0; i < ids.size(); ++i) std::memcpy(out.data() + i * kVocab, ctx->logits(i), kVocab * sizeof(float));
  return out;
}

// Every GGUF file in the folder (README.md / types.tsv there).
const char* const kFiles[] = {
    "base-f16",    "base-Q8_0",   "base-Q6_K", "base-Q5_K_M", "base-Q5_K_S", "base-Q4_K_M", "base-Q4_K_S",
    "base-Q3_K_L", "base-Q3_K_M", "base-Q2_K", "base-Q5_1",   "base-Q5_0",   "base-Q4_1",   "base-Q4_0",
    "base-IQ4_NL", "base-IQ4_XS", "w320-f16",  "w320-Q6_K",   "w320-Q5_K_M", "w320-Q4_K_M", "w320-IQ4_XS",
};

class QuantReference : public ::testing::TestWithParam<simd::Isa> {};

TEST_P(QuantReference, EveryFileGivesLlamaCppsLogits) {
  if (!simd::isa_available(GetParam())) GTEST_SKIP() << simd::isa_name(GetParam()) << " not available here";
  const std::vector<int32_t> ids = quant_ids();
  ASSERT_EQ(ids.size(), 64u);
  std::printf("  %-12s %6s  %12s  %10s %10s  %12s\n", "file", "isa", "vs llama.cpp", "lmrt-F16", "llama-F16",
              "top1 (llama)");
  for (const char* name : kFiles) {
    SCOPED_TRACE(name);
    const std::string file(name);
    const std::string base = file.substr(0, file.find('-'));
    const std::vector<float> ours = lmrt_logits(file + ".gguf", ids, GetParam());
    const std::vector<float> theirs = read_logits(file + ".logits.f32");
    const std::vector<float> f16 = read_logits(base + "-f16.logits.f32");
    ASSERT_EQ(ours.size(), ids.size() * kVocab);
    ASSERT_EQ(theirs.size(), ours.size());
    ASSERT_EQ(f16.size(), ours.size());
    const LogitStats vs_llama = compare_logits(theirs.data(), ours.data(), ids.size(), kVocab);
    const LogitStats ours_f16 = compare_logits(f16.data(), ours.data(), ids.size(), kVocab);
    const LogitStats theirs_f16 = compare_logits(f16.data(), theirs.data(), ids.size(), kVocab);
    std::printf("  %-12s %6s  %11.2f%%  %9.2f%% %9.2f%%  %8zu/%zu\n", name, simd::isa_name(GetParam()),
                100 * vs_llama.rms_rel, 100 * ours_f16.rms_rel, 100 * theirs_f16.rms_rel, vs_llama.top1_agree,
                vs_llama.rows);
    EXPECT_LE(vs_llama.rms_rel, 0.03);
    // The F16 file's own reference is llama.cpp's float path: there the first bound is the whole check.
    if (file.find("-f16") == std::string::npos) {
      EXPECT_LE(ours_f16.rms_rel, 1.05 * theirs_f16.rms_rel);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, QuantReference, ::testing::ValuesIn(simd::kAllIsas),
                         [](const auto& info) { return std::string(simd::isa_name(info.param)); });

}  // namespace
}  // namespace lmrt
