// Q4_Kx8 and Q6_Kx8 (formats/k_quants_x8.h): the layout functions on real Q4_K / Q6_K tensors of a
// llama.cpp-quantized file, and every table's x8 kernels against the scalar standard-layout kernels.
#include "formats/k_quants_x8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "formats/blocks.h"
#include "runtime/generate/context.h"
#include "runtime/model/gguf_file.h"
#include "runtime/model/llama_model.h"
#include "simd/kernels.h"
#include "simd/quant_kernels.h"
#include "test_support.h"

namespace lmrt {
namespace {

std::unique_ptr<GgufFile> open_q4_k_m() {
  std::unique_ptr<GgufFile> g;
  const Status s = GgufFile::open(test::model_path("quant/base-Q4_K_M.gguf"), true, &g);
  EXPECT_TRUE(s.ok()) << s.message();
  return g;
}

// The matrix of `type` with the longest rows (several super-blocks) whose row count is a multiple of 8.
const GgufTensorInfo* first_matrix(const GgufFile& g, TensorType type) {
  const GgufTensorInfo* best = nullptr;
  for (const GgufTensorInfo& t : g.tensors())
    if (t.type == type && t.n_dims == 2 && t.n_rows() % kKx8Rows == 0 &&
        (best == nullptr || t.row_length() > best->row_length()))
      best = &t;
  return best;
}

TEST(Kx8Types, AreNamedInMemoryTypesThatNoFileMayUse) {
  EXPECT_STREQ(tensor_type_traits(TensorType::q4_kx8).name, "Q4_Kx8");
  EXPECT_STREQ(tensor_type_traits(TensorType::q6_kx8).name, "Q6_Kx8");
  EXPECT_EQ(tensor_row_bytes(TensorType::q4_kx8, 512), tensor_row_bytes(TensorType::q4_k, 512));
  EXPECT_EQ(tensor_row_bytes(TensorType::q6_kx8, 512), tensor_row_bytes(TensorType::q6_k, 512));
  EXPECT_EQ(kQ4_Kx8UnitBytes, 8 * sizeof(BlockQ4_K));
  EXPECT_EQ(kQ6_Kx8UnitBytes, 8 * sizeof(BlockQ6_K));
  TensorType t;
  EXPECT_FALSE(tensor_type_from_id(static_cast<uint32_t>(TensorType::q4_kx8), &t));
  EXPECT_FALSE(tensor_type_from_id(static_cast<uint32_t>(TensorType::q6_kx8), &t));
  ASSERT_TRUE(kx8_type_of(TensorType::q4_k, &t));
  EXPECT_EQ(t, TensorType::q4_kx8);
  ASSERT_TRUE(kx8_standard_type(TensorType::q6_kx8, &t));
  EXPECT_EQ(t, TensorType::q6_k);
  EXPECT_FALSE(kx8_type_of(TensorType::q5_k, &t));
}

// Interleaving a real matrix and back gives every byte back; in place gives what out of place gives; a
// group slice equals the same rows of the whole deinterleave.
TEST(Kx8Layout, RealTensorsRoundTrip) {
  auto g = open_q4_k_m();
  ASSERT_TRUE(g);
  for (TensorType type : {TensorType::q4_k, TensorType::q6_k}) {
    const GgufTensorInfo* t = first_matrix(*g, type);
    ASSERT_NE(t, nullptr) << tensor_type_traits(type).name;
    SCOPED_TRACE(std::string(t->name));
    const uint64_t rows = t->n_rows(), cols = t->row_length();
    std::vector<uint8_t> src(t->data, t->data + t->n_bytes), mid(src.size()), back(src.size());
    interleave_kx8(type, src.data(), rows, cols, mid.data());
    EXPECT_NE(mid, src);
    deinterleave_kx8(type, mid.data(), rows, cols, back.data());
    EXPECT_EQ(back, src);
    std::vector<uint8_t> in_place = src;
    interleave_kx8_in_place(type, in_place.data(), rows, cols);
    EXPECT_EQ(in_place, mid);
    // Group 1, blocks [1, 3): rows 8..15 of the standard matrix, those blocks.
    const size_t bb = tensor_type_traits(type).block_bytes, nb = cols / kQK, row_bytes = nb * bb;
    ASSERT_GE(nb, 3u);
    std::vector<uint8_t> slice(8 * 2 * bb);
    deinterleave_kx8_group(type, mid.data() + 8 * row_bytes, 1, 2, slice.data());
    for (size_t j = 0; j < 8; ++j)
      EXPECT_EQ(std::memcmp(slice.data() + j * 2 * bb, src.data() + (8 + j) * row_bytes + bb, 2 * bb), 0) << j;
  }
}

// One block's fields land where k_quants_x8.h says.
TEST(Kx8Layout, Q4_KBlockLandsWhereTheLayoutSays) {
  const uint64_t rows = 16, cols = 512, nb = 2;
  std::vector<uint8_t> src(rows * nb * 144), dst(src.size());
  std::mt19937 rng(3);
  for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
  interleave_kx8(TensorType::q4_k, src.data(), rows, cols, dst.data());
  const size_t row = 13, block = 1, g = 1, j = 5;
  const auto* b = reinterpret_cast<const BlockQ4_K*>(src.data() + row * nb * 144 + block * 144);
  const uint8_t* unit = dst.data() + (g * nb + block) * kQ4_Kx8UnitBytes;
  EXPECT_EQ(std::memcmp(unit + 2 * j, &b->d, 2), 0);
  EXPECT_EQ(std::memcmp(unit + 16 + 2 * j, &b->dmin, 2), 0);
  EXPECT_EQ(std::memcmp(unit + 32 + 12 * j, b->scales, 12), 0);
  for (size_t c = 0; c < 4; ++c)
    for (size_t q = 0; q < 4; ++q)
      EXPECT_EQ(std::memcmp(unit + 128 + 64 * (4 * c + q) + 8 * j, b->qs + 32 * c + 8 * q, 8), 0) << c << " " << q;
}

TEST(Kx8Layout, Q6_KBlockLandsWhereTheLayoutSays) {
  const uint64_t rows = 16, cols = 512, nb = 2;
  std::vector<uint8_t> src(rows * nb * 210), dst(src.size());
  std::mt19937 rng(4);
  for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
  interleave_kx8(TensorType::q6_k, src.data(), rows, cols, dst.data());
  const size_t row = 10, block = 0, g = 1, j = 2;
  const auto* b = reinterpret_cast<const BlockQ6_K*>(src.data() + row * nb * 210 + block * 210);
  const uint8_t* unit = dst.data() + (g * nb + block) * kQ6_Kx8UnitBytes;
  EXPECT_EQ(std::memcmp(unit + 2 * j, &b->d, 2), 0);
  for (size_t s = 0; s < 16; ++s) EXPECT_EQ(static_cast<int8_t>(unit[16 + 8 * s + j]), b->scales[s]) << s;
  for (size_t u = 0; u < 16; ++u) EXPECT_EQ(std::memcmp(unit + 144 + 64 * u + 8 * j, b->ql + 8 * u, 8), 0) << u;
  for (size_t u = 0; u < 8; ++u) EXPECT_EQ(std::memcmp(unit + 1168 + 64 * u + 8 * j, b->qh + 8 * u, 8), 0) << u;
}

// Activations from a smooth random signal, quantized to Q8_K by the scalar table.
std::vector<BlockQ8_K> q8_k_rows(size_t n_tok, size_t n, uint32_t seed, bool extreme = false) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n_tok * n);
  for (size_t i = 0; i < x.size(); ++i) x[i] = extreme ? (i % 2 ? 1.0f : -1.0f) : dist(rng);
  std::vector<BlockQ8_K> q(n_tok * n / kQK);
  simd::scalar_kernels()->quantize_q8_k(x.data(), q.data(), x.size());
  return q;
}

// The x8 kernel of `k` on the interleaved matrix against the scalar standard kernel on the original.
// exact: bit-identical (the scalar reference); otherwise within float reordering error.
void check_kernel(const simd::Kernels& k, TensorType type, const uint8_t* data, uint64_t rows, uint64_t cols,
                  size_t n_tok, size_t r0, size_t r1, uint32_t seed, bool exact, bool extreme = false) {
  SCOPED_TRACE(std::string(simd::isa_name(k.isa)) + " " + tensor_type_traits(type).name +
               " n_tok=" + std::to_string(n_tok) + " rows=[" + std::to_string(r0) + "," + std::to_string(r1) + ")");
  TensorType x8;
  ASSERT_TRUE(kx8_type_of(type, &x8));
  const size_t row_bytes = tensor_row_bytes(type, cols);
  std::vector<uint8_t> inter(rows * row_bytes);
  interleave_kx8(type, data, rows, cols, inter.data());
  const std::vector<BlockQ8_K> x = q8_k_rows(n_tok, cols, seed, extreme);
  const size_t xrb = cols / kQK * sizeof(BlockQ8_K), ldy = rows + 3;
  std::vector<float> want(n_tok * ldy, -7.0f), got(n_tok * ldy, -7.0f);
  simd::matmul_for(*simd::scalar_kernels(), type)
      .fn(data, row_bytes, x.data(), xrb, cols, n_tok, r0, r1, want.data(), ldy);
  const simd::Matmul& m = simd::matmul_for(k, x8);
  ASSERT_EQ(m.input, ActivationFormat::q8_k);
  m.fn(inter.data(), row_bytes, x.data(), xrb, cols, n_tok, r0, r1, got.data(), ldy);
  for (size_t t = 0; t < n_tok; ++t) {
    float scale = 0.0f;  // the size of the row's terms, for a relative tolerance
    for (size_t r = r0; r < r1; ++r) scale = std::max(scale, std::fabs(want[t * ldy + r]));
    for (size_t r = 0; r < ldy; ++r) {
      const float a = want[t * ldy + r], b = got[t * ldy + r];
      if (exact || r < r0 || r >= r1)
        ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << "t=" << t << " r=" << r << " want " << a << " got " << b;
      else
        ASSERT_NEAR(b, a, 2e-5f * scale + 1e-6f) << "t=" << t << " r=" << r;
    }
  }
}

TEST(Kx8Kernels, ScalarReferenceIsTheStandardKernelBitForBit) {
  auto g = open_q4_k_m();
  ASSERT_TRUE(g);
  for (TensorType type : {TensorType::q4_k, TensorType::q6_k}) {
    const GgufTensorInfo* t = first_matrix(*g, type);
    ASSERT_NE(t, nullptr);
    const uint64_t rows = std::min<uint64_t>(t->n_rows(), 64);
    check_kernel(*simd::scalar_kernels(), type, t->data, rows, t->row_length(), 1, 0, rows, 1, true);
    check_kernel(*simd::scalar_kernels(), type, t->data, rows, t->row_length(), 3, 8, 40, 2, true);
  }
}

// Random blocks (all codes, largest scales included) and real tensors, n_tok 1..9, 16 and 64, on every
// table with an x8 kernel of its own.
TEST(Kx8Kernels, EveryIsaMatchesTheScalarReference) {
  auto g = open_q4_k_m();
  ASSERT_TRUE(g);
  for (simd::Isa isa : {simd::Isa::avx2, simd::Isa::avx2vnni, simd::Isa::avx512, simd::Isa::neon}) {
    if (!simd::isa_available(isa)) continue;
    const simd::Kernels& k = simd::kernels_for(isa);
    for (TensorType type : {TensorType::q4_k, TensorType::q6_k}) {
      TensorType x8;
      kx8_type_of(type, &x8);
      if (simd::matmul_for(k, x8).fn == simd::matmul_for(*simd::scalar_kernels(), x8).fn) continue;
      const GgufTensorInfo* t = first_matrix(*g, type);
      ASSERT_NE(t, nullptr);
      const uint64_t rows = std::min<uint64_t>(t->n_rows(), 32);
      uint32_t seed = 10;
      for (size_t n_tok : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 64})
        check_kernel(k, type, t->data, rows, t->row_length(), n_tok, 8, rows, seed++, false);
      // Random bytes: every code and scale the format can hold, and saturating activations.
      const size_t cols = 3 * kQK, row_bytes = tensor_row_bytes(type, cols);
      std::vector<uint8_t> w(16 * row_bytes);
      std::mt19937 rng(seed);
      for (uint8_t& b : w) b = static_cast<uint8_t>(rng());
      for (size_t r = 0; r < 16; ++r)
        for (size_t b = 0; b < 3; ++b) {  // finite fp16 scales: clear the exponent's top bit
          uint8_t* blk = w.data() + r * row_bytes + b * tensor_type_traits(type).block_bytes;
          uint8_t* d = type == TensorType::q4_k ? blk : blk + 208;
          d[1] &= 0x3B;
          if (type == TensorType::q4_k) blk[3] &= 0x3B;
        }
      for (size_t n_tok : {1, 4, 8, 9})
        check_kernel(k, type, w.data(), 16, cols, n_tok, 0, 16, seed++, false, n_tok % 2 == 0);
    }
  }
}

// `rows` rows of `cols` normal values quantized to `type` (w) and interleaved (inter).
void gaussian_rows(TensorType type, uint64_t rows, uint64_t cols, uint32_t seed, std::vector<uint8_t>* w,
                   std::vector<uint8_t>* inter) {
  const size_t row_bytes = tensor_row_bytes(type, cols);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(rows * cols);
  for (float& f : v) f = dist(rng);
  w->assign(rows * row_bytes, 0);
  inter->assign(rows * row_bytes, 0);
  for (uint64_t r = 0; r < rows; ++r)
    tensor_type_traits(type).quantize_row(v.data() + r * cols, w->data() + r * row_bytes, cols);
  interleave_kx8(type, w->data(), rows, cols, inter->data());
}

// A token's result does not depend on how many tokens share the call (n_tok 1..20 and 47..50: the x8 kernels, in
// chunks of up to 8 tokens where a table chunks, then the standard GEMM fed a slab of super-blocks at a time, each
// slab turned back to the standard layout by the table's own code or the scalar one), and it has the bits of the
// same table's standard kernel on the un-interleaved rows: a repacked model decodes a sequence the same alone and in
// any batch (issue 17 point 7). Rows of 20 super-blocks, more than one slab of kx8_via_standard.h. The scalar table and
// every table with x8 kernels of its own (the others serve x8 through the scalar ones and never repack).
TEST(Kx8Kernels, EveryBatchGivesTheStandardKernelsBits) {
  const uint64_t rows = 32, cols = 20 * kQK;
  for (simd::Isa isa : simd::kAllIsas) {
    if (!simd::isa_available(isa)) continue;
    const simd::Kernels& k = simd::kernels_for(isa);
    for (TensorType type : {TensorType::q4_k, TensorType::q6_k}) {
      SCOPED_TRACE(std::string(simd::isa_name(isa)) + " " + tensor_type_traits(type).name);
      TensorType x8;
      kx8_type_of(type, &x8);
      if (isa != simd::Isa::scalar && simd::matmul_for(k, x8).fn == simd::matmul_for(*simd::scalar_kernels(), x8).fn)
        continue;
      const size_t row_bytes = tensor_row_bytes(type, cols), xrb = cols / kQK * sizeof(BlockQ8_K);
      std::vector<uint8_t> w, inter;
      gaussian_rows(type, rows, cols, 5, &w, &inter);
      constexpr size_t kTok = 50;
      const std::vector<BlockQ8_K> x = q8_k_rows(kTok, cols, 21);
      const auto* xb = reinterpret_cast<const uint8_t*>(x.data());
      std::vector<float> alone(kTok * rows);
      for (size_t tok = 0; tok < kTok; ++tok)
        simd::matmul_for(k, type).fn(w.data(), row_bytes, xb + tok * xrb, xrb, cols, 1, 0, rows,
                                     alone.data() + tok * rows, rows);
      for (size_t n_tok = 1; n_tok <= kTok; n_tok = n_tok == 20 ? 47 : n_tok + 1) {
        std::vector<float> batch(n_tok * rows);
        simd::matmul_for(k, x8).fn(inter.data(), row_bytes, xb, xrb, cols, n_tok, 0, rows, batch.data(), rows);
        EXPECT_EQ(std::memcmp(batch.data(), alone.data(), n_tok * rows * sizeof(float)), 0) << "n_tok=" << n_tok;
      }
    }
  }
}

#if defined(LMRT_ARCH_X86)
// Both kinds of x86 table's Q6_Kx8 kernels, whichever this CPU runs (simd::CpuTuning): the default prefetch into L1
// and Zen 4's into L2 give the bits of the same ISA's standard Q6_K kernel on every token alone, in the x8 kernels'
// batches and past them (the standard GEMM), over a row range that starts past the first group.
TEST(Kx8Kernels, BothQ6_Kx8PrefetchesGiveTheStandardKernelsBits) {
  struct Variants {
    simd::Isa isa;
    simd::MatmulFn standard, l1, l2;
  };
  const Variants variants[] = {
    {simd::Isa::avx2, simd::avx2::matmul_q6_k, simd::avx2::matmul_q6_kx8, simd::avx2::matmul_q6_kx8_prefetch_l2},
#if !defined(LMRT_NO_AVX2VNNI)  // the sanitizer builds leave the AVX-VNNI copy out
    {simd::Isa::avx2vnni, simd::avx2vnni::matmul_q6_k, simd::avx2vnni::matmul_q6_kx8,
     simd::avx2vnni::matmul_q6_kx8_prefetch_l2},
#endif
    {simd::Isa::avx512, simd::avx512::matmul_q6_k, simd::avx512::matmul_q6_kx8,
     simd::avx512::matmul_q6_kx8_prefetch_l2},
  };
  const uint64_t rows = 40, cols = 20 * kQK, r0 = 8;
  const size_t row_bytes = tensor_row_bytes(TensorType::q6_k, cols), xrb = cols / kQK * sizeof(BlockQ8_K);
  std::vector<uint8_t> w, inter;
  gaussian_rows(TensorType::q6_k, rows, cols, 17, &w, &inter);
  constexpr size_t kTok = 20;
  const std::vector<BlockQ8_K> x = q8_k_rows(kTok, cols, 23);
  const auto* xb = reinterpret_cast<const uint8_t*>(x.data());
  size_t checked = 0;
  for (const Variants& v : variants) {
    if (!simd::isa_available(v.isa)) continue;
    SCOPED_TRACE(simd::isa_name(v.isa));
    std::vector<float> alone(kTok * rows, 0.0f);
    for (size_t tok = 0; tok < kTok; ++tok)
      v.standard(w.data(), row_bytes, xb + tok * xrb, xrb, cols, 1, r0, rows, alone.data() + tok * rows, rows);
    for (simd::MatmulFn fn : {v.l1, v.l2})
      for (size_t n_tok = 1; n_tok <= kTok; ++n_tok) {
        std::vector<float> batch(n_tok * rows, 0.0f);
        fn(inter.data(), row_bytes, xb, xrb, cols, n_tok, r0, rows, batch.data(), rows);
        EXPECT_EQ(std::memcmp(batch.data(), alone.data(), n_tok * rows * sizeof(float)), 0)
            << (fn == v.l1 ? "L1" : "L2") << " n_tok=" << n_tok;
      }
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no AVX2 here";
}
#endif

// The logits of `ids` from `model` (base-Q4_K_M.gguf by default), loaded with repacking on or off: the first 48 as
// one batch (prefill), the rest one token at a time (decode).
struct ModelRun {
  std::vector<float> logits;
  uint32_t repacked = 0;
  bool file_view = false;  // some layer weight still has the file's type (`standard`)
};

ModelRun run_model(bool repack, const std::vector<int32_t>& ids, const char* model = "quant/base-Q4_K_M.gguf",
                   TensorType standard = TensorType::q4_k, bool use_mmap = true) {
  ModelRun out;
  std::unique_ptr<GgufFile> g;
  Status s = GgufFile::open(test::model_path(model), use_mmap, &g);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return out;
  std::unique_ptr<LlamaModel> m;
  s = LlamaModel::load(std::move(g), repack, &m);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return out;
  out.repacked = m->repacked_tensors();
  for (const LayerWeights& L : m->layers()) out.file_view |= L.wq.type == standard || L.w_down.type == standard;
  // The header keeps the file's types.
  for (const GgufTensorInfo& t : m->gguf().tensors())
    EXPECT_TRUE(t.type != TensorType::q4_kx8 && t.type != TensorType::q6_kx8 && t.type != TensorType::q4_0x16)
        << t.name;
  const uint32_t vocab = m->hparams().n_vocab;
  ContextParams p;
  p.n_ctx = 128;
  p.n_threads = 2;
  p.logits_all = true;
  std::unique_ptr<Context> ctx;
  s = Context::create(*m, p, &ctx);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return out;
  const size_t n_batch = 48;
  s = ctx->eval(ids.data(), n_batch);
  EXPECT_TRUE(s.ok()) << s.message();
  for (size_t i = 0; i < n_batch; ++i) out.logits.insert(out.logits.end(), ctx->logits(i), ctx->logits(i) + vocab);
  for (size_t i = n_batch; i < ids.size(); ++i) {
    s = ctx->eval(&ids[i], 1);
    EXPECT_TRUE(s.ok()) << s.message();
    out.logits.insert(out.logits.end(), ctx->logits(0), ctx->logits(0) + vocab);
  }
  return out;
}

std::vector<int32_t> reference_ids(size_t n) {
  std::vector<int32_t> ids;
  std::istringstream in(test::read_file(test::model_path("quant/ids.txt")));
  int32_t v;
  while (in >> v) ids.push_back(v);
  EXPECT_GE(ids.size(), n);
  ids.resize(n);
  return ids;
}

// The file's layout when loaded with repacking off, the interleaved one with it on.
void expect_repacked(const ModelRun& off, const ModelRun& on) {
  EXPECT_EQ(off.repacked, 0u);
  EXPECT_GT(on.repacked, 0u);
  EXPECT_TRUE(off.file_view);
  EXPECT_FALSE(on.file_view);
  ASSERT_EQ(on.logits.size(), off.logits.size());
  ASSERT_FALSE(on.logits.empty());
}

TEST(Kx8Model, RepackedQ4_K_MGivesTheSameLogits) {
  const simd::Kernels& best = simd::kernels_for(simd::best_isa());
  if (simd::matmul_for(best, TensorType::q4_kx8).fn == simd::matmul_for(*simd::scalar_kernels(), TensorType::q4_kx8).fn)
    GTEST_SKIP() << "the best kernel table here has no x8 kernels: nothing is repacked";
  const std::vector<int32_t> ids = reference_ids(56);
  const ModelRun off = run_model(false, ids), on = run_model(true, ids);
  expect_repacked(off, on);
  if (testing::Test::HasFatalFailure()) return;
  const size_t vocab = on.logits.size() / ids.size();
  for (size_t i = 0; i < ids.size(); ++i) {
    const float* a = off.logits.data() + i * vocab;
    const float* b = on.logits.data() + i * vocab;
    double num = 0, den = 0;
    size_t top_a = 0, top_b = 0;
    for (size_t v = 0; v < vocab; ++v) {
      num += (a[v] - b[v]) * (a[v] - b[v]);
      den += a[v] * a[v];
      if (a[v] > a[top_a]) top_a = v;
      if (b[v] > b[top_b]) top_b = v;
    }
    EXPECT_LT(std::sqrt(num / den), 1e-3) << "position " << i;
    EXPECT_EQ(top_a, top_b) << "position " << i;
  }
}

// Where Q4_0 is repacked at load (AVX-512, AVX2), the Q4_0x16 kernels sum every row as the Q4_0 ones do, so a
// llama.cpp Q4_0 file gives exactly the logits it gives unrepacked, in a batch and one token at a time.
TEST(Q4_0x16Model, RepackedQ4_0GivesTheFilesBits) {
  const simd::Isa best = simd::best_isa();
  if (best != simd::Isa::avx512 && best != simd::Isa::avx2 && best != simd::Isa::avx2vnni)
    GTEST_SKIP() << "Q4_0 is repacked at load on AVX-512 and AVX2 only";
  const std::vector<int32_t> ids = reference_ids(56);
  const ModelRun off = run_model(false, ids, "quant/base-Q4_0.gguf", TensorType::q4_0);
  const ModelRun on = run_model(true, ids, "quant/base-Q4_0.gguf", TensorType::q4_0);
  // Read into memory, the file is rewritten in place rather than copied: the same bits.
  const ModelRun in_memory = run_model(true, ids, "quant/base-Q4_0.gguf", TensorType::q4_0, false);
  expect_repacked(off, on);
  expect_repacked(off, in_memory);
  if (testing::Test::HasFatalFailure()) return;
  for (size_t i = 0; i < on.logits.size(); ++i) {
    ASSERT_EQ(std::memcmp(&on.logits[i], &off.logits[i], sizeof(float)), 0) << "logit " << i;
    ASSERT_EQ(std::memcmp(&in_memory.logits[i], &off.logits[i], sizeof(float)), 0) << "logit " << i;
  }
}

// Resident kB of this process's mappings inside [lo, hi) (/proc/self/smaps: whole areas only).
size_t resident_kb(const uint8_t* lo, const uint8_t* hi) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  size_t kb = 0;
  while (std::getline(in, line)) {
    unsigned long a = 0, b = 0;
    char dash = 0;
    std::istringstream head(line);
    if (line.find(':') > line.find(' ') && head >> std::hex >> a >> dash >> b && dash == '-') {
      inside = a >= reinterpret_cast<uintptr_t>(lo) && b <= reinterpret_cast<uintptr_t>(hi) + 4096;
      continue;
    }
    if (inside && line.rfind("Rss:", 0) == 0) kb += std::stoul(line.substr(4));
  }
  return kb;
}

// A mapped file is never written: its repacked matrices live in a buffer of the model's own, every tensor of
// the mapping still reads the file's bytes, and the file on disk keeps them. A file read into memory is
// rewritten in place instead (no second copy), its repacked matrices only.
TEST(Kx8Model, RepackNeverWritesTheFile) {
  const simd::Kernels& best = simd::kernels_for(simd::best_isa());
  if (simd::matmul_for(best, TensorType::q4_kx8).fn == simd::matmul_for(*simd::scalar_kernels(), TensorType::q4_kx8).fn)
    GTEST_SKIP() << "the best kernel table here has no x8 kernels: nothing is repacked";
  const std::string path = test::model_path("quant/base-Q4_K_M.gguf");
  const std::string before = test::read_file(path);
  for (const bool use_mmap : {true, false}) {
    SCOPED_TRACE(use_mmap ? "mapped" : "read into memory");
    std::unique_ptr<GgufFile> g;
    ASSERT_TRUE(GgufFile::open(path, use_mmap, &g).ok());
    std::unique_ptr<LlamaModel> m;
    ASSERT_TRUE(LlamaModel::load(std::move(g), true, &m).ok());
    ASSERT_GT(m->repacked_tensors(), 0u);
    const uint8_t* base = m->gguf().file().data();
    const uint8_t* end = base + m->gguf().file().size();
    if (use_mmap) {
      // The mapped pages of the repacked matrices were given back: the mapping's resident set is at most the
      // file less those pages (copy-on-write pages, the old scheme, stayed in it). Checked before the
      // comparison below reads every tensor back.
      uint64_t released = 0;  // whole pages inside every Q4_K matrix (token_embd is looked up, not repacked)
      for (const GgufTensorInfo& t : m->gguf().tensors())
        if (t.type == TensorType::q4_k && t.name != "token_embd.weight" && t.n_bytes > 2 * 4096)
          released += t.n_bytes - 2 * 4096;
      ASSERT_GT(released, 0u);
      EXPECT_LE(resident_kb(base, end) * 1024, m->gguf().file().size() - released);
    }
    size_t changed = 0, kept = 0;
    for (const GgufTensorInfo& t : m->gguf().tensors()) {
      const bool same = std::memcmp(t.data, before.data() + (t.data - base), t.n_bytes) == 0;
      if (t.name == "token_embd.weight") {
        EXPECT_TRUE(same);
      }
      (same ? kept : changed) += 1;
    }
    EXPECT_EQ(changed, use_mmap ? 0u : m->repacked_tensors());
    EXPECT_GT(kept, 0u);
    size_t outside = 0;
    for (const LayerWeights& L : m->layers())
      for (const WeightView* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down})
        if (v->type == TensorType::q4_kx8 || v->type == TensorType::q6_kx8) outside += v->data < base || v->data >= end;
    EXPECT_EQ(outside > 0, use_mmap) << "the repacked views of a mapped file point into the model's own buffer";
  }
  EXPECT_TRUE(test::read_file(path) == before) << "the model file changed on disk";
}

}  // namespace
}  // namespace lmrt
