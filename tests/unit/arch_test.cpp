// Every architecture of arch_table.h against llama.cpp's logits on the synthetic models of
// ../shared/models/arch (F16, dim 256, 2 layers, 4 heads / 2 KV heads; README there): the 64 ids of
// ids.txt in one batch, and token by token, on every kernel table this machine runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "runtime/generate/context.h"
#include "runtime/model/arch_table.h"
#include "tools/gguf_writer.h"
#include "runtime/model/llama_model.h"
#include "test_support.h"

namespace lmrt {
namespace {

constexpr uint32_t kVocab = 512;  // tok512, the README's vocabulary
constexpr size_t kPositions = 64;

std::vector<int32_t> arch_ids() {
  std::ifstream in(test::model_path("arch/ids.txt"));
  return {std::istream_iterator<int32_t>(in), std::istream_iterator<int32_t>()};
}

// llama.cpp's logits: kPositions rows of kVocab little-endian floats.
std::vector<float> reference_logits(const std::string& path) {
  const std::string bytes = test::read_file(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

std::unique_ptr<LlamaModel> load_model_file(const std::string& path) {
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(path, true, &g);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return nullptr;
  std::unique_ptr<LlamaModel> m;
  s = LlamaModel::load(std::move(g), &m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

std::unique_ptr<LlamaModel> load_arch(const std::string& arch) {
  return load_model_file(test::model_path("arch/" + arch + "-f16.gguf"));
}

// compare.py's measures: ||got - want|| / ||want|| pooled over rows, and rows whose argmax agrees.
struct Agreement {
  double rms_rel = 0.0;
  size_t top1 = 0;
};

Agreement compare(const std::vector<float>& got, const std::vector<float>& want) {
  Agreement a;
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    norm += static_cast<double>(want[i]) * want[i];
  }
  a.rms_rel = std::sqrt(diff / norm);
  for (size_t r = 0; r < want.size() / kVocab; ++r) {
    const float* g = got.data() + r * kVocab;
    const float* w = want.data() + r * kVocab;
    a.top1 += std::max_element(g, g + kVocab) - g == std::max_element(w, w + kVocab) - w;
  }
  return a;
}

struct ArchCase {
  const char* arch;
  simd::Isa isa;
};

class ArchLogits : public ::testing::TestWithParam<ArchCase> {
 protected:
  void SetUp() override {
    if (!simd::isa_available(GetParam().isa)) GTEST_SKIP() << simd::isa_name(GetParam().isa) << " not available here";
    load(test::model_path("arch/" + std::string(GetParam().arch) + "-f16"));
  }
  // Reads stem.gguf and llama.cpp's logits for it, stem.logits.f32.
  void load(const std::string& stem) {
    model_ = load_model_file(stem + ".gguf");
    ASSERT_TRUE(model_);
    ASSERT_EQ(model_->config().n_vocab, kVocab);
    ids_ = arch_ids();
    ASSERT_EQ(ids_.size(), kPositions);
    want_ = reference_logits(stem + ".logits.f32");
    ASSERT_EQ(want_.size(), kPositions * kVocab);
  }

  std::unique_ptr<Context> make_context(bool logits_all, KvType kv) const {
    ContextParams p;
    p.n_ctx = 128;
    p.n_batch = kPositions;
    p.n_threads = 2;
    p.logits_all = logits_all;
    p.kv_type = kv;
    p.isa = GetParam().isa;
    std::unique_ptr<Context> ctx;
    const Status s = Context::create(*model_, p, &ctx);
    EXPECT_TRUE(s.ok()) << s.message();
    return ctx;
  }

  // All 64 positions' logits from one batch.
  std::vector<float> batch_logits(KvType kv) const {
    std::unique_ptr<Context> ctx = make_context(true, kv);
    if (!ctx) return {};
    const Status s = ctx->eval(ids_.data(), ids_.size());
    EXPECT_TRUE(s.ok()) << s.message();
    std::vector<float> out;
    for (size_t i = 0; i < kPositions; ++i) out.insert(out.end(), ctx->logits(i), ctx->logits(i) + kVocab);
    return out;
  }

  // All 64 positions' logits, one token per step (F16 arena): the decode paths.
  std::vector<float> step_logits() const {
    std::unique_ptr<Context> ctx = make_context(false, KvType::f16);
    if (!ctx) return {};
    std::vector<float> out;
    for (int32_t id : ids_) {
      const Status s = ctx->eval(&id, 1);
      EXPECT_TRUE(s.ok()) << s.message();
      if (!s.ok()) return {};
      out.insert(out.end(), ctx->logits(0), ctx->logits(0) + kVocab);
    }
    return out;
  }

  std::unique_ptr<LlamaModel> model_;
  std::vector<int32_t> ids_;
  std::vector<float> want_;
};

// The bar: 1 % RMS over all positions, the same top-1 token at all but two of 64.
void expect_matches_llama_cpp(const Agreement& a, const char* what) {
  EXPECT_LE(a.rms_rel, 0.01) << what;
  EXPECT_GE(a.top1, kPositions - 2) << what;
  std::printf("[ arch ] %-28s rms_rel %.5f  top1 %zu/%zu\n", what, a.rms_rel, a.top1, kPositions);
}

TEST_P(ArchLogits, OneBatchMatchesLlamaCpp) {
  const std::vector<float> got = batch_logits(KvType::f16);
  ASSERT_EQ(got.size(), want_.size());
  expect_matches_llama_cpp(compare(got, want_), (std::string(GetParam().arch) + " batch f16 kv").c_str());
}

// An F32 arena sends attention through the general path (scores, softmax, weighted sum).
TEST_P(ArchLogits, OneBatchWithF32KvMatchesLlamaCpp) {
  const std::vector<float> got = batch_logits(KvType::f32);
  ASSERT_EQ(got.size(), want_.size());
  expect_matches_llama_cpp(compare(got, want_), (std::string(GetParam().arch) + " batch f32 kv").c_str());
}

// One token per step: the decode paths (attention by KV head per thread, the sliding window at every
// position past it) agree with the batch and with llama.cpp.
TEST_P(ArchLogits, TokenByTokenMatchesBatch) {
  const std::vector<float> batch = batch_logits(KvType::f16);
  ASSERT_EQ(batch.size(), want_.size());
  const std::vector<float> steps = step_logits();
  ASSERT_EQ(steps.size(), want_.size());
  const Agreement vs_batch = compare(steps, batch);
  // Both read the same F16 arena; they differ only in rounding order (the batched kernel divides by the
  // softmax sum after adding the values up).
  EXPECT_LE(vs_batch.rms_rel, 2e-3) << "token by token vs batch";
  EXPECT_GE(vs_batch.top1, kPositions - 1) << "token by token vs batch";
  expect_matches_llama_cpp(compare(steps, want_), (std::string(GetParam().arch) + " token by token").c_str());
}

// F32 files are not in ../shared: make them with make_synth.py --dtype f32 (the README's arguments) and
// llama.cpp's logits with the oracle (`oracle logits ARCH-f32.gguf --all --fa off --kv f32 -o
// ARCH-f32.logits.f32`), then point LMRT_ARCH_F32_DIR at them. Skipped otherwise (CI).
class ArchLogitsF32 : public ArchLogits {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("LMRT_ARCH_F32_DIR");
    if (dir == nullptr) GTEST_SKIP() << "LMRT_ARCH_F32_DIR not set";
    if (!simd::isa_available(GetParam().isa)) GTEST_SKIP() << simd::isa_name(GetParam().isa) << " not available here";
    load(std::string(dir) + "/" + GetParam().arch + "-f32");
  }
};

TEST_P(ArchLogitsF32, OneBatchMatchesLlamaCpp) {
  const std::vector<float> got = batch_logits(KvType::f32);
  ASSERT_EQ(got.size(), want_.size());
  expect_matches_llama_cpp(compare(got, want_), (std::string(GetParam().arch) + " f32 batch f32 kv").c_str());
}

TEST_P(ArchLogitsF32, TokenByTokenMatchesLlamaCpp) {
  const std::vector<float> steps = step_logits();
  ASSERT_EQ(steps.size(), want_.size());
  expect_matches_llama_cpp(compare(steps, want_), (std::string(GetParam().arch) + " f32 token by token").c_str());
}

std::vector<ArchCase> all_cases() {
  std::vector<ArchCase> v;
  for (const char* arch : {"llama3", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"})
    for (simd::Isa isa : {simd::Isa::scalar, simd::Isa::avx2, simd::Isa::avx512, simd::Isa::neon})
      v.push_back({arch, isa});
  return v;
}

std::string case_name(const ::testing::TestParamInfo<ArchCase>& info) {
  return std::string(info.param.arch) + "_" + simd::isa_name(info.param.isa);
}

INSTANTIATE_TEST_SUITE_P(ArchIsa, ArchLogits, ::testing::ValuesIn(all_cases()), case_name);
INSTANTIATE_TEST_SUITE_P(ArchIsa, ArchLogitsF32, ::testing::ValuesIn(all_cases()), case_name);

// What each file's metadata becomes (README of ../shared/models/arch and llama.cpp's fixed choices).
TEST(ArchConfig, ReadsEachArchitecturesFields) {
  auto llama3 = load_arch("llama3");
  ASSERT_TRUE(llama3);
  EXPECT_EQ(llama3->config().rope_style, RopeStyle::adjacent_pairs);
  EXPECT_FLOAT_EQ(llama3->config().rope_freq_base, 5e5f);
  EXPECT_NE(llama3->rope_factors(128), nullptr);  // rope_freqs.weight
  EXPECT_FALSE(llama3->config().tied_output);

  auto qwen2 = load_arch("qwen2");
  ASSERT_TRUE(qwen2);
  EXPECT_EQ(qwen2->config().rope_style, RopeStyle::neox_halves);
  EXPECT_NE(qwen2->layers()[0].bq, nullptr);
  EXPECT_NE(qwen2->layers()[1].bv, nullptr);
  EXPECT_EQ(qwen2->layers()[0].bo, nullptr);
  EXPECT_TRUE(qwen2->config().tied_output);

  auto qwen3 = load_arch("qwen3");
  ASSERT_TRUE(qwen3);
  EXPECT_TRUE(qwen3->config().qk_norm);
  EXPECT_NE(qwen3->layers()[1].k_norm, nullptr);
  EXPECT_EQ(qwen3->config().head_dim, 64u);

  // Fused tensors are row views of the mapping: Q, K, V and gate, up follow each other in the file.
  auto phi3 = load_arch("phi3");
  ASSERT_TRUE(phi3);
  const LayerWeights& p0 = phi3->layers()[0];
  EXPECT_EQ(p0.wq.n_rows, 256u);
  EXPECT_EQ(p0.wk.n_rows, 128u);
  EXPECT_EQ(p0.wk.data, p0.wq.data + 256 * p0.wq.row_bytes);
  EXPECT_EQ(p0.wv.data, p0.wk.data + 128 * p0.wk.row_bytes);
  EXPECT_EQ(p0.w_gate.n_rows, 768u);
  EXPECT_EQ(p0.w_up.data, p0.w_gate.data + 768 * p0.w_gate.row_bytes);

  auto gemma2 = load_arch("gemma2");
  ASSERT_TRUE(gemma2);
  const ModelConfig& g2 = gemma2->config();
  EXPECT_EQ(g2.activation, Activation::gelu_tanh);
  EXPECT_FLOAT_EQ(g2.embd_scale, 16.0f);
  EXPECT_FLOAT_EQ(g2.attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(g2.final_softcap, 30.0f);
  EXPECT_EQ(g2.window_of(0), 16u);  // every other layer, from the first
  EXPECT_EQ(g2.window_of(1), 0u);
  EXPECT_NE(gemma2->layers()[0].post_ffn_norm, nullptr);

  auto gemma3 = load_arch("gemma3");
  ASSERT_TRUE(gemma3);
  const ModelConfig& g3 = gemma3->config();
  EXPECT_EQ(g3.attn_softcap, 0.0f);
  EXPECT_EQ(g3.window_of(0), 16u);  // five of every six
  EXPECT_EQ(g3.window_of(1), 16u);
  EXPECT_TRUE(g3.local_rope(1));
  EXPECT_FLOAT_EQ(g3.rope_freq_base_local, 1e4f);
  EXPECT_FLOAT_EQ(g3.rope_freq_base, 1e6f);
}

TEST(ArchConfig, RefusesAnotherArchitectureByName) {
  for (const char* name : {"llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"}) EXPECT_NE(find_arch(name), nullptr);
  // A falcon file with falcon's keys is refused by name, with the list of what is supported.
  GgufWriter w;
  w.add_string("general.architecture", "falcon");
  w.add_u32("falcon.embedding_length", 64);
  w.add_u32("falcon.block_count", 1);
  ASSERT_TRUE(w.add_tensor("token_embd.weight", {64, 32}, TensorType::f32).ok());
  const std::string path = test::write_temp_file("falcon.gguf", "");
  ASSERT_TRUE(w.write(path, [](size_t, uint8_t* d, uint64_t n) {
                 std::memset(d, 0, n);
                 return Status::Ok();
               }).ok());
  std::unique_ptr<GgufFile> g;
  ASSERT_TRUE(GgufFile::open(path, true, &g).ok());
  std::unique_ptr<LlamaModel> m;
  const Status s = LlamaModel::load(std::move(g), &m);
  EXPECT_EQ(s.code(), Code::unsupported);
  EXPECT_NE(s.message().find("'falcon'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("llama, qwen2, qwen3, phi3, gemma2, gemma3"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace lmrt
