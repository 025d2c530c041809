// The weight-format layer (formats/): the type table, every dequantizer against llama.cpp's quantizations
// of a known F16 model (../shared/models/quant), and the Q8_K activation quantizer.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "formats/k_quants.h"
#include "formats/tensor_type.h"
#include "runtime/model/gguf_file.h"
#include "simd/kernels.h"
#include "test_support.h"

namespace lmrt {
namespace {

std::unique_ptr<GgufFile> open_quant(const std::string& name) {
  std::unique_ptr<GgufFile> g;
  const Status s = GgufFile::open(test::model_path("quant/" + name), true, &g);
  EXPECT_TRUE(s.ok()) << name << ": " << s.message();
  return g;
}

std::vector<float> dequantize_tensor(const GgufTensorInfo& t) {
  std::vector<float> out(t.n_elements);
  const TensorTypeTraits& tr = tensor_type_traits(t.type);
  const size_t n = t.ne[0], rows = t.n_elements / n, row_bytes = tensor_row_bytes(t.type, n);
  for (size_t r = 0; r < rows; ++r) tr.dequantize_row(t.data + r * row_bytes, out.data() + r * n, n);
  return out;
}

TEST(TensorTypeTable, DescribesEveryTypeOnceWithGgmlsGeometry) {
  // ggml's ids, block sizes and block bytes (ggml-common.h / ggml.c type_traits), written out here.
  const std::map<std::string, std::array<uint32_t, 3>> ggml = {
      {"F32", {0, 1, 4}},       {"F16", {1, 1, 2}},         {"Q4_0", {2, 32, 18}},    {"Q4_1", {3, 32, 20}},
      {"Q5_0", {6, 32, 22}},    {"Q5_1", {7, 32, 24}},      {"Q8_0", {8, 32, 34}},    {"Q2_K", {10, 256, 84}},
      {"Q3_K", {11, 256, 110}}, {"Q4_K", {12, 256, 144}},   {"Q5_K", {13, 256, 176}}, {"Q6_K", {14, 256, 210}},
      {"IQ4_NL", {20, 32, 18}}, {"IQ4_XS", {23, 256, 136}}, {"BF16", {30, 1, 2}},
  };
  std::set<std::string> seen;
  for (const TensorTypeTraits& t : all_tensor_types()) {
    SCOPED_TRACE(t.name);
    EXPECT_TRUE(seen.insert(t.name).second);
    EXPECT_EQ(&tensor_type_traits(t.type), &t);
    if (t.type == TensorType::q4_kx8 || t.type == TensorType::q6_kx8) continue;  // in memory only, no file id
    TensorType back;
    ASSERT_TRUE(tensor_type_from_id(t.ggml_id, &back));
    EXPECT_EQ(back, t.type);
    EXPECT_EQ(&tensor_type_traits(t.type), &t);
    if (t.type == TensorType::q4_0x16) continue;  // lmrt's own layout, not ggml's
    ASSERT_TRUE(ggml.count(t.name));
    EXPECT_EQ(ggml.at(t.name), (std::array<uint32_t, 3>{t.ggml_id, t.block_size, t.block_bytes}));
    EXPECT_EQ(ggml_type_name(t.ggml_id), t.name);
    EXPECT_NE(t.dequantize_row, nullptr);
  }
  EXPECT_EQ(seen.size(), ggml.size() + 3);  // + Q4_0x16, Q4_Kx8, Q6_Kx8
  TensorType out;
  EXPECT_FALSE(tensor_type_from_id(16, &out));  // IQ2_XXS
  EXPECT_FALSE(tensor_type_from_id(15, &out));  // Q8_K is an activation format, never a weight
}

TEST(TensorTypeTable, ActivationFormatsFollowLlamaCpp) {
  using A = ActivationFormat;
  for (TensorType t :
       {TensorType::q2_k, TensorType::q3_k, TensorType::q4_k, TensorType::q5_k, TensorType::q6_k, TensorType::iq4_xs})
    EXPECT_EQ(tensor_type_traits(t).activation, A::q8_k) << tensor_type_traits(t).name;
  for (TensorType t : {TensorType::q4_0, TensorType::q4_1, TensorType::q5_0, TensorType::q5_1, TensorType::iq4_nl,
                       TensorType::q4_0x16})
    EXPECT_EQ(tensor_type_traits(t).activation, A::q8_32) << tensor_type_traits(t).name;
  for (TensorType t : {TensorType::f32, TensorType::f16, TensorType::bf16, TensorType::q8_0})
    EXPECT_EQ(tensor_type_traits(t).activation, A::f32) << tensor_type_traits(t).name;
}

// Every ISA's table serves every type: its own kernel or the scalar one, never a null function, and the
// scalar table has an entry of its own for every type.
TEST(KernelTable, EveryTypeHasAMatmulOnEveryIsa) {
  for (simd::Isa isa : {simd::Isa::scalar, simd::Isa::avx2, simd::Isa::avx512, simd::Isa::neon}) {
    if (!simd::isa_available(isa)) continue;
    const simd::Kernels& k = simd::kernels_for(isa);
    EXPECT_NE(k.quantize_q8_k, nullptr);
    for (const TensorTypeTraits& t : all_tensor_types())
      EXPECT_NE(simd::matmul_for(k, t.type).fn, nullptr) << simd::isa_name(isa) << " " << t.name;
  }
}

// Relative RMS error a quantizer with `bits` per weight may leave on Gaussian weights: a uniform grid over
// the block's range (about +-2.5 sigma for 32 samples) has step 5 sigma / (2^bits - 1) and RMS error
// step / sqrt(12); twice that allows for the coarser super-block scales. A dequantizer that misplaces,
// drops or mis-scales values is off by the weights' own size (relative error ~1 or more).
double allowed_error(uint32_t bits) { return 2.0 * 5.0 / ((1u << bits) - 1) / std::sqrt(12.0); }

uint32_t bits_of(TensorType t) {
  switch (t) {
    case TensorType::q2_k:
      return 2;
    case TensorType::q3_k:
      return 3;
    case TensorType::q4_0:
    case TensorType::q4_1:
    case TensorType::q4_k:
    case TensorType::iq4_nl:
    case TensorType::iq4_xs:
      return 4;
    case TensorType::q5_0:
    case TensorType::q5_1:
    case TensorType::q5_k:
      return 5;
    case TensorType::q6_k:
      return 6;
    default:
      return 8;
  }
}

// Each quantized tensor of each llama.cpp file, dequantized, is its F16 source within the type's
// quantization error, and no closer than a grid of that many bits can be (so the test cannot pass on the
// F16 values themselves by accident).
TEST(Dequantize, EveryLlamaCppTypeMatchesItsF16Source) {
  std::map<TensorType, double> worst;
  for (const std::string base : {"base", "w320"}) {
    auto f16 = open_quant(base + "-f16.gguf");
    ASSERT_TRUE(f16);
    const std::vector<std::string> kinds =
        base == "base"
            ? std::vector<std::string>{"IQ4_NL", "IQ4_XS", "Q2_K", "Q3_K_L", "Q3_K_M", "Q4_0", "Q4_1", "Q4_K_M",
                                       "Q4_K_S", "Q5_0",   "Q5_1", "Q5_K_M", "Q5_K_S", "Q6_K", "Q8_0"}
            : std::vector<std::string>{"IQ4_XS", "Q4_K_M", "Q5_K_M", "Q6_K"};
    for (const std::string& kind : kinds) {
      auto q = open_quant(base + "-" + kind + ".gguf");
      ASSERT_TRUE(q);
      for (const GgufTensorInfo& t : q->tensors()) {
        if (t.type == TensorType::f32) continue;
        SCOPED_TRACE(base + "-" + kind + " " + std::string(t.name) + " " + tensor_type_traits(t.type).name);
        const GgufTensorInfo* src = f16->find_tensor(t.name);
        ASSERT_NE(src, nullptr);
        ASSERT_EQ(src->n_elements, t.n_elements);
        const std::vector<float> got = dequantize_tensor(t), want = dequantize_tensor(*src);
        double d2 = 0.0, w2 = 0.0;
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_TRUE(std::isfinite(got[i])) << i;
          d2 += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
          w2 += static_cast<double>(want[i]) * want[i];
        }
        const double rel = std::sqrt(d2 / w2);
        EXPECT_LT(rel, allowed_error(bits_of(t.type)));
        EXPECT_GT(rel, allowed_error(bits_of(t.type)) / 100.0);
        worst[t.type] = std::max(worst[t.type], rel);
      }
    }
  }
  // Every type llama.cpp wrote into these files was seen.
  for (TensorType t :
       {TensorType::q2_k, TensorType::q3_k, TensorType::q4_k, TensorType::q5_k, TensorType::q6_k, TensorType::q4_0,
        TensorType::q4_1, TensorType::q5_0, TensorType::q5_1, TensorType::q8_0, TensorType::iq4_nl, TensorType::iq4_xs})
    EXPECT_TRUE(worst.count(t)) << tensor_type_traits(t).name;
  for (const auto& [t, e] : worst)
    std::printf("  %-7s worst relative RMS vs F16 %.4f\n", tensor_type_traits(t).name, e);
}

// Every ISA's matmul of each type computes W x for a real llama.cpp tensor: within float rounding of the
// dot product, in double, of the dequantized rows with the activations as the kernel reads them (float,
// or quantized by the same table's quantize_q8_act / quantize_q8_k, whose integer sums are exact).
TEST(KernelTable, EveryIsaMultipliesRealTensorsOfEveryType) {
  const struct {
    const char* file;
    const char* tensor;
  } cases[] = {
      {"base-Q2_K.gguf", "blk.0.ffn_gate.weight"},   {"base-Q3_K_M.gguf", "blk.0.ffn_gate.weight"},
      {"base-Q4_K_M.gguf", "blk.0.ffn_gate.weight"}, {"base-Q5_K_S.gguf", "blk.0.ffn_gate.weight"},
      {"base-Q6_K.gguf", "blk.0.ffn_down.weight"},   {"base-Q4_1.gguf", "blk.0.ffn_down.weight"},
      {"base-Q5_0.gguf", "blk.0.ffn_down.weight"},   {"base-IQ4_NL.gguf", "blk.0.ffn_down.weight"},
      {"base-IQ4_XS.gguf", "blk.0.ffn_down.weight"}, {"w320-Q5_K_M.gguf", "blk.0.ffn_down.weight"},
      {"base-Q8_0.gguf", "blk.0.attn_q.weight"},
  };
  for (const auto& c : cases) {
    auto g = open_quant(c.file);
    ASSERT_TRUE(g);
    const GgufTensorInfo* t = g->find_tensor(c.tensor);
    ASSERT_NE(t, nullptr) << c.file << " " << c.tensor;
    SCOPED_TRACE(std::string(c.file) + " " + c.tensor + " " + tensor_type_traits(t->type).name);
    const size_t n = t->ne[0], rows = t->ne[1], n_tok = 3, row_bytes = tensor_row_bytes(t->type, n);
    const std::vector<float> w = dequantize_tensor(*t);
    std::vector<float> x(n_tok * n);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.1f * static_cast<float>(i)) + 0.25f;
    for (simd::Isa isa : {simd::Isa::scalar, simd::Isa::avx2, simd::Isa::avx512, simd::Isa::neon}) {
      if (!simd::isa_available(isa)) continue;
      const simd::Matmul& mm = simd::matmul_for(simd::kernels_for(isa), t->type);
      const simd::Kernels& k = simd::kernels_for(isa);
      // The input rows in the entry's format, and the values they stand for.
      std::vector<float> xv = x;
      std::vector<simd::BlockQ8Act> q8(n_tok * n / 32);
      std::vector<BlockQ8_K> q8k(mm.input == ActivationFormat::q8_k ? n_tok * n / 256 : 0);
      const void* xin = x.data();
      size_t x_row_bytes = n * sizeof(float);
      if (mm.input == ActivationFormat::q8_32) {
        for (size_t tok = 0; tok < n_tok; ++tok) k.quantize_q8_act(x.data() + tok * n, q8.data() + tok * n / 32, n);
        for (size_t i = 0; i < xv.size(); ++i) xv[i] = q8[i / 32].d * q8[i / 32].qs[i % 32];
        xin = q8.data();
        x_row_bytes = n / 32 * sizeof(simd::BlockQ8Act);
      } else if (mm.input == ActivationFormat::q8_k) {
        for (size_t tok = 0; tok < n_tok; ++tok) k.quantize_q8_k(x.data() + tok * n, q8k.data() + tok * n / 256, n);
        for (size_t i = 0; i < xv.size(); ++i) xv[i] = q8k[i / 256].d * q8k[i / 256].qs[i % 256];
        xin = q8k.data();
        x_row_bytes = n / 256 * sizeof(BlockQ8_K);
      }
      std::vector<float> y(n_tok * rows, -1.0f);
      mm.fn(t->data, row_bytes, xin, x_row_bytes, n, n_tok, 0, rows, y.data(), rows);
      for (size_t tok = 0; tok < n_tok; ++tok)
        for (size_t r = 0; r < rows; ++r) {
          double want = 0.0, mag = 0.0;
          for (size_t i = 0; i < n; ++i) {
            want += static_cast<double>(w[r * n + i]) * xv[tok * n + i];
            mag += std::fabs(static_cast<double>(w[r * n + i]) * xv[tok * n + i]);
          }
          ASSERT_NEAR(y[tok * rows + r], want, 1e-5 * mag + 1e-6) << simd::isa_name(isa) << " t=" << tok << " r=" << r;
        }
    }
  }
}

// ggml's quantize_row_q8_K: the scale comes from the signed value of largest magnitude (that value maps
// to -127), values round to nearest, bsums are the 16-element sums, and an all-zero block has d = 0.
TEST(QuantizeQ8K, FollowsGgmlsDefinition) {
  std::vector<float> x(512);
  for (size_t i = 0; i < 256; ++i) x[i] = std::sin(0.37f * i) * 2.0f;
  x[77] = 5.0f;  // the largest magnitude is positive: d = 5 / -127 < 0
  // the second block stays zero
  std::vector<BlockQ8_K> y(2);
  quantize_row_q8_k(x.data(), y.data(), x.size());
  EXPECT_FLOAT_EQ(y[0].d, 5.0f / -127.0f);
  EXPECT_EQ(y[0].qs[77], -127);
  for (size_t i = 0; i < 256; ++i) {
    EXPECT_EQ(y[0].qs[i], static_cast<int8_t>(std::nearbyint(x[i] * (-127.0f / 5.0f)))) << i;
    EXPECT_LE(std::fabs(y[0].qs[i] * y[0].d - x[i]), std::fabs(y[0].d) * 0.5f + 1e-6f) << i;
  }
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int i = 0; i < 16; ++i) sum += y[0].qs[16 * g + i];
    EXPECT_EQ(y[0].bsums[g], sum);
  }
  EXPECT_EQ(y[1].d, 0.0f);
  for (int8_t q : y[1].qs) EXPECT_EQ(q, 0);
  for (int16_t s : y[1].bsums) EXPECT_EQ(s, 0);
  // Every table's quantize_q8_k is bit-identical to the reference.
  for (simd::Isa isa : {simd::Isa::scalar, simd::Isa::avx2, simd::Isa::avx512, simd::Isa::neon}) {
    if (!simd::isa_available(isa)) continue;
    std::vector<BlockQ8_K> z(2);
    simd::kernels_for(isa).quantize_q8_k(x.data(), z.data(), x.size());
    EXPECT_EQ(std::memcmp(y.data(), z.data(), 2 * sizeof(BlockQ8_K)), 0) << simd::isa_name(isa);
  }
}

}  // namespace
}  // namespace lmrt
