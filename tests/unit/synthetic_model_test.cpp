// Synthetic GGUF models: written by GgufWriter, read back through GgufFile and LlamaModel.
#include "tools/synthetic_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

#include "formats/dequantize.h"
#include "runtime/generate/context.h"
#include "runtime/model/gguf_file.h"
#include "runtime/model/llama_model.h"
#include "test_support.h"
#include "tools/gguf_writer.h"

namespace lmrt {
namespace {

std::string temp_path(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr ? tmp : "/tmp") + "/lmrt-synth-" + std::to_string(::getpid()) + "-" + name;
}

SyntheticShape small_shape() {
  SyntheticShape s;
  s.dim = 64;
  s.layers = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.ffn = 96;
  s.vocab = 300;
  s.ctx = 64;
  return s;
}

SyntheticOptions options(uint64_t seed = 7) {
  SyntheticOptions o;
  o.seed = seed;
  o.tokenizer_path = test::model_path("llama2-tokenizer.bin");
  return o;
}

TEST(SyntheticModel, RoundTripsThroughGgufFileAndLlamaModel) {
  const std::string path = temp_path("a.gguf");
  ASSERT_TRUE(write_synthetic_model(path, small_shape(), options()).ok());
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(path, true, &g);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->get_string("general.architecture"), "llama");
  EXPECT_EQ(g->get_int("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(g->tensors().size(), 1u + 2u * 9u + 2u);
  const GgufTensorInfo* k = g->find_tensor("blk.1.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->type, TensorType::q4_0);
  EXPECT_EQ(k->ne[0], 64u);
  EXPECT_EQ(k->ne[1], 32u);  // kv_heads * head size
  EXPECT_EQ(k->offset % 32, 0u);
  const GgufValue* tokens = g->find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  ASSERT_EQ(tokens->size(), 300u);
  EXPECT_EQ(tokens->item(1).str, "<s>");
  EXPECT_EQ(tokens->item(3).str, "<0x00>");
  // Pieces keep the sentencepiece word marker the llama2.c export replaced by a space.
  EXPECT_EQ(tokens->item(259).str.substr(0, 3), "\xE2\x96\x81");

  // Q4_0 weights dequantize to values of about the requested spread, centred on zero.
  const GgufTensorInfo* q = g->find_tensor("blk.0.ffn_down.weight");
  ASSERT_NE(q, nullptr);
  std::vector<float> row(96);
  double sum = 0, sq = 0;
  const size_t rows = q->n_rows(), row_bytes = q->n_bytes / rows;
  for (size_t r = 0; r < rows; ++r) {
    dequantize_row(q->type, q->data + r * row_bytes, row.data(), 96);
    for (float v : row) sum += v, sq += double(v) * v;
  }
  const double n = double(rows) * 96, mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(sd, 0.02, 0.003);

  std::unique_ptr<LlamaModel> m;
  s = LlamaModel::load(std::move(g), &m);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(m->hparams().n_embd, 64u);
  EXPECT_EQ(m->hparams().n_ff, 96u);
  EXPECT_EQ(m->hparams().n_vocab, 300u);
  EXPECT_FALSE(m->tied_output());

  std::unique_ptr<Context> ctx;
  ContextParams cp;
  cp.n_threads = 1;
  ASSERT_TRUE(Context::create(*m, cp, &ctx).ok());
  const int32_t toks[3] = {1, 300 - 1, 42};
  ASSERT_TRUE(ctx->eval(toks, 3).ok());
  const float* logits = ctx->logits(2);
  for (uint32_t i = 0; i < 300; ++i) ASSERT_TRUE(std::isfinite(logits[i]));
  std::remove(path.c_str());
}

// A Q4_0 model: a batch goes through the repacked int8 GEMM and the batched attention kernel, one
// token at a time through the decode kernels; the logits must agree.
TEST(SyntheticModel, Q4_0BatchedPrefillMatchesTokenByToken) {
  const std::string path = temp_path("prefill.gguf");
  SyntheticShape shape = small_shape();
  shape.dim = 256;
  shape.ffn = 704;  // 22 blocks: not a multiple of the GEMM's 16-row groups or its K slab
  shape.ctx = 128;
  ASSERT_TRUE(write_synthetic_model(path, shape, options(3)).ok());
  std::unique_ptr<GgufFile> g;
  ASSERT_TRUE(GgufFile::open(path, true, &g).ok());
  std::unique_ptr<LlamaModel> m;
  ASSERT_TRUE(LlamaModel::load(std::move(g), &m).ok());
  std::vector<int32_t> toks(45);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = i == 0 ? 1 : static_cast<int32_t>(3 + (i * 97) % 290);
  for (KvType kv : {KvType::f32, KvType::f16}) {
    ContextParams cp;
    cp.n_ctx = 128;
    cp.n_batch = 64;
    cp.n_threads = 2;
    cp.kv_type = kv;
    cp.logits_all = true;
    std::unique_ptr<Context> batched, single;
    ASSERT_TRUE(Context::create(*m, cp, &batched).ok());
    cp.logits_all = false;
    ASSERT_TRUE(Context::create(*m, cp, &single).ok());
    ASSERT_TRUE(batched->eval(toks.data(), toks.size()).ok());
    for (size_t i = 0; i < toks.size(); ++i) {
      ASSERT_TRUE(single->eval(&toks[i], 1).ok());
      const float* a = batched->logits(i);
      const float* b = single->logits(0);
      ASSERT_NE(a, nullptr);
      // Int8 activations carry about 1 % of noise into these logits (a random model's logits are small
      // sums of many terms, each input rounded to 1/127 of its block's largest value), and the two paths
      // round some inputs differently, so the check is on the relative RMS difference per position: about
      // 0.01 here, about 1 for a wrong row, token or position.
      double diff = 0.0, norm = 0.0;
      for (uint32_t v = 0; v < 300; ++v) {
        diff += (static_cast<double>(a[v]) - b[v]) * (static_cast<double>(a[v]) - b[v]);
        norm += static_cast<double>(b[v]) * b[v];
      }
      ASSERT_LT(std::sqrt(diff / norm), 0.04) << "position " << i << (kv == KvType::f16 ? " f16" : " f32");
    }
  }
  std::remove(path.c_str());
}

TEST(SyntheticModel, SameSeedGivesSameBytesAndAnotherSeedDiffers) {
  const std::string a = temp_path("s1.gguf"), b = temp_path("s2.gguf"), c = temp_path("s3.gguf");
  ASSERT_TRUE(write_synthetic_model(a, small_shape(), options(7)).ok());
  ASSERT_TRUE(write_synthetic_model(b, small_shape(), options(7)).ok());
  ASSERT_TRUE(write_synthetic_model(c, small_shape(), options(8)).ok());
  EXPECT_EQ(test::read_file(a), test::read_file(b));
  EXPECT_NE(test::read_file(a), test::read_file(c));
  EXPECT_EQ(test::read_file(a).size(), test::read_file(c).size());
  std::remove(a.c_str());
  std::remove(b.c_str());
  std::remove(c.c_str());
}

TEST(SyntheticModel, RejectsBadShapesAndNames) {
  SyntheticShape s = small_shape();
  s.heads = 3;
  Status st = write_synthetic_model(temp_path("bad.gguf"), s, options());
  EXPECT_EQ(st.code(), Code::invalid_argument);
  EXPECT_NE(st.message().find("heads"), std::string::npos);
  s = small_shape();
  s.vocab = 100;
  EXPECT_EQ(check_synthetic_shape(s).code(), Code::invalid_argument);
  EXPECT_EQ(synthetic_shape("7b", &s).code(), Code::invalid_argument);
  ASSERT_TRUE(synthetic_shape("tinyllama-1.1b", &s).ok());
  EXPECT_EQ(s.dim, 2048u);
  EXPECT_EQ(s.kv_heads, 4u);
  EXPECT_EQ(s.ffn, 5632u);
  SyntheticOptions o = options();
  o.tokenizer_path = "/nonexistent/tokenizer.bin";
  EXPECT_EQ(write_synthetic_model(temp_path("x.gguf"), small_shape(), o).code(), Code::io);
}

TEST(GgufWriter, RejectsRowsThatAreNotWholeBlocks) {
  GgufWriter w;
  EXPECT_EQ(w.add_tensor("t", {33, 2}, TensorType::q4_0).code(), Code::invalid_argument);
  EXPECT_EQ(w.add_tensor("t", {}, TensorType::f32).code(), Code::invalid_argument);
  EXPECT_TRUE(w.add_tensor("t", {64, 2}, TensorType::q4_0).ok());
  EXPECT_EQ(w.tensor_bytes(0), 2u * 2u * 18u);
}

}  // namespace
}  // namespace lmrt
