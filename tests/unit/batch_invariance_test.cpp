// Batch invariance (issue 17 point 7): a token's matmul outputs are the same bits whether the token is
// multiplied alone (decode) or in a batch of any size (a batched decode step, a prefill chunk), and whatever
// rows a thread is given. Every kernel table this machine runs, every weight type the models use, n_tok = 1 to
// 20 (past every dispatch threshold: small-batch kernels, GEMMs, token tiles) and row lengths of one slab and of
// several.
//
// Where a table is not invariant for a type the audit below prints the (type, ISA, n_tok) pairs that differ;
// the test fails only for the pairs promised() names (the ones the engine's guarantees rest on). The engine
// side (whole generations in a batch against alone) is BatchEngineInvariance in batch_engine_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/k_quants.h"
#include "formats/q4_0x16.h"
#include "formats/tensor_type.h"
#include "simd/kernels.h"

namespace lmrt::simd {
namespace {

constexpr size_t kMaxTok = 20;

// The (ISA, type) pairs whose every n_tok gives the bits of n_tok = 1: every type on the scalar reference, AVX2
// and AVX-512 (Q4_0: decode and GEMM sum each row alike, simd/q4_0_gemm_avx2.h and kernels_avx512.cpp; the
// K-quants: one FMA chain of exact block sums, quant_kernels_x86.h's SuperTiles and the GEMMs; the others one tile
// arithmetic for every batch), and NEON with and without dotprod (one tile arithmetic, its multiply-adds explicit
// fmas in quant_kernels_neon.cpp), audited under qemu by scripts/cross-test-aarch64.sh.
bool promised(Isa isa, TensorType) {
  return isa == Isa::scalar || isa == Isa::avx2 || isa == Isa::avx2vnni || isa == Isa::avx512 || isa == Isa::neon;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// rows x n weights of `type`, quantized from normal floats by the type's own quantizer (Q4_0x16: Q4_0 rows
// interleaved). Returns the bytes and the row stride a matmul takes.
std::vector<uint8_t> weights(TensorType type, size_t rows, size_t n, size_t* row_bytes) {
  const TensorType stored = type == TensorType::q4_0x16 ? TensorType::q4_0 : type;
  const TensorTypeTraits& t = tensor_type_traits(stored);
  *row_bytes = n / t.block_size * t.block_bytes;
  std::vector<uint8_t> w(rows * *row_bytes);
  const std::vector<float> v = random_floats(rows * n, 17);
  for (size_t r = 0; r < rows; ++r) {
    uint8_t* row = w.data() + r * *row_bytes;
    if (type == TensorType::bf16) {  // no quantizer: the top 16 bits of each float
      for (size_t i = 0; i < n; ++i) std::memcpy(row + 2 * i, reinterpret_cast<const uint8_t*>(&v[r * n + i]) + 2, 2);
      continue;
    }
    t.quantize_row(v.data() + r * n, row, n);
  }
  if (type != TensorType::q4_0x16) return w;
  std::vector<uint8_t> x16(w.size());
  interleave_q4_0(w.data(), rows, n, x16.data());
  return x16;
}

// kMaxTok activation rows in the format `input`, quantized by the table itself (as the graph does).
std::vector<uint8_t> activations(const Kernels& k, ActivationFormat input, size_t n, size_t* row_bytes) {
  const std::vector<float> v = random_floats(kMaxTok * n, 29);
  switch (input) {
    case ActivationFormat::f32:
      *row_bytes = n * sizeof(float);
      break;
    case ActivationFormat::q8_32:
      *row_bytes = n / 32 * sizeof(BlockQ8Act);
      break;
    case ActivationFormat::q8_k:
      *row_bytes = n / 256 * sizeof(BlockQ8_K);
      break;
  }
  std::vector<uint8_t> x(kMaxTok * *row_bytes + 64);
  for (size_t t = 0; t < kMaxTok; ++t) {
    uint8_t* row = x.data() + t * *row_bytes;
    const float* src = v.data() + t * n;
    if (input == ActivationFormat::f32) std::memcpy(row, src, n * sizeof(float));
    if (input == ActivationFormat::q8_32) k.quantize_q8_act(src, reinterpret_cast<BlockQ8Act*>(row), n);
    if (input == ActivationFormat::q8_k) k.quantize_q8_k(src, reinterpret_cast<BlockQ8_K*>(row), n);
  }
  return x;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The n_tok values (1..kMaxTok) for which some output of `type` on `k` is not the bits of n_tok = 1, or of the
// rows computed in thread-sized pieces.
std::vector<size_t> differing_batches(const Kernels& k, TensorType type, size_t n) {
  const size_t rows = 80;  // 5 groups of 16 (Q4_0x16); not a multiple of the 12- or 24-row GEMM tiles
  const Matmul& mm = matmul_for(k, type);
  size_t w_row_bytes = 0, x_row_bytes = 0;
  const std::vector<uint8_t> w = weights(type, rows, n, &w_row_bytes);
  const std::vector<uint8_t> x = activations(k, mm.input, n, &x_row_bytes);
  // Alone: each token by itself, the rows in one call.
  std::vector<float> alone(kMaxTok * rows);
  for (size_t t = 0; t < kMaxTok; ++t)
    mm.fn(w.data(), w_row_bytes, x.data() + t * x_row_bytes, x_row_bytes, n, 1, 0, rows, alone.data() + t * rows, rows);
  std::vector<size_t> differ;
  // n_tok == 0 below stands for "alone, the rows split as 3 threads split them" (multiples of 16 for Q4_0x16).
  for (size_t n_tok = 0; n_tok <= kMaxTok; ++n_tok) {
    std::vector<float> y(kMaxTok * rows, -1.0f);
    if (n_tok == 0) {
      const size_t cut[] = {0, 32, 48, rows};
      for (size_t t = 0; t < kMaxTok; ++t)
        for (int p = 0; p < 3; ++p)
          mm.fn(w.data(), w_row_bytes, x.data() + t * x_row_bytes, x_row_bytes, n, 1, cut[p], cut[p + 1],
                y.data() + t * rows, rows);
    } else {
      mm.fn(w.data(), w_row_bytes, x.data(), x_row_bytes, n, n_tok, 0, rows, y.data(), rows);
    }
    const size_t checked = n_tok == 0 ? kMaxTok : n_tok;
    bool same = true;
    for (size_t i = 0; i < checked * rows && same; ++i) same = same_bits(y[i], alone[i]);
    if (!same) differ.push_back(n_tok);
  }
  return differ;
}

std::vector<const Kernels*> tables() {
  std::vector<const Kernels*> v;
  for (Isa isa : kAllIsas)
    if (isa_available(isa)) v.push_back(&kernels_for(isa));
  return v;
}

std::string list(const std::vector<size_t>& v) {
  std::string s;
  for (size_t n : v) s += (s.empty() ? "" : ",") + (n == 0 ? std::string("split-rows") : std::to_string(n));
  return s;
}

TEST(BatchInvariance, EveryTokenGetsItsDecodeBitsInEveryBatch) {
  const TensorType types[] = {TensorType::f32,  TensorType::f16,     TensorType::bf16,   TensorType::q8_0,
                              TensorType::q4_0, TensorType::q4_0x16, TensorType::q4_k,   TensorType::q5_k,
                              TensorType::q6_k, TensorType::q3_k,    TensorType::q2_k,   TensorType::q4_1,
                              TensorType::q5_0, TensorType::q5_1,    TensorType::iq4_nl, TensorType::iq4_xs};
  // One slab of every GEMM, and several (the x86 Q4_0 GEMMs' slabs are 32 blocks, the K-quants'
  // 2 to 4 super-blocks).
  const size_t lengths[] = {256, 2304};
  std::string audit;
  for (const Kernels* k : tables()) {
    for (TensorType type : types) {
      const TensorTypeTraits& t = tensor_type_traits(type == TensorType::q4_0x16 ? TensorType::q4_0 : type);
      if (t.quantize_row == nullptr && type != TensorType::bf16) continue;
      for (size_t n : lengths) {
        const std::vector<size_t> differ = differing_batches(*k, type, n);
        if (differ.empty()) continue;
        const std::string what = std::string(isa_name(k->isa)) + " " + tensor_type_traits(type).name +
                                 " n=" + std::to_string(n) + ": n_tok " + list(differ);
        audit += "  " + what + "\n";
        EXPECT_FALSE(promised(k->isa, type)) << what;
      }
    }
  }
  std::printf("batch-variant (ISA, type, row length: n_tok that differ from alone):\n%s",
              audit.empty() ? "  none\n" : audit.c_str());
}

// On x86 the Q4_0x16 kernels sum each row as the Q4_0 ones (one chain over the blocks in order), so an
// interleaved file gives the standard file's bits, alone and in batches.
TEST(BatchInvariance, Q4_0x16GivesTheBitsOfQ4_0OnX86) {
  bool ran = false;
  for (Isa isa : {Isa::avx2, Isa::avx2vnni, Isa::avx512}) {
    if (!isa_available(isa)) continue;
    ran = true;
    SCOPED_TRACE(isa_name(isa));
    const Kernels& k = kernels_for(isa);
    const size_t rows = 48, n = 2304;
    size_t w_row_bytes = 0, x16_row_bytes = 0, x_row_bytes = 0;
    const std::vector<uint8_t> w = weights(TensorType::q4_0, rows, n, &w_row_bytes);
    const std::vector<uint8_t> w16 = weights(TensorType::q4_0x16, rows, n, &x16_row_bytes);
    const std::vector<uint8_t> x = activations(k, ActivationFormat::q8_32, n, &x_row_bytes);
    for (size_t n_tok : {1u, 2u, 5u, 9u, 20u}) {
      std::vector<float> a(n_tok * rows), b(n_tok * rows);
      k.matmul.q4_0.fn(w.data(), w_row_bytes, x.data(), x_row_bytes, n, n_tok, 0, rows, a.data(), rows);
      k.matmul.q4_0x16.fn(w16.data(), x16_row_bytes, x.data(), x_row_bytes, n, n_tok, 16, rows, b.data(), rows);
      for (size_t t = 0; t < n_tok; ++t)
        for (size_t r = 16; r < rows; ++r)
          ASSERT_TRUE(same_bits(a[t * rows + r], b[t * rows + r])) << "n_tok=" << n_tok << " t=" << t << " r=" << r;
    }
  }
  if (!ran) GTEST_SKIP() << "no x86 table is available here";
}

// The avx2vnni table is the AVX2 sources built with AVX-VNNI (simd/avx2_variant.h): its vpdpbusd sums are the
// integers of AVX2's maddubs/madd, so every type and batch size gives the AVX2 table's bits.
TEST(BatchInvariance, AvxVnniGivesTheBitsOfAvx2) {
  if (!isa_available(Isa::avx2vnni)) GTEST_SKIP() << "this CPU has no AVX-VNNI";
  const Kernels& plain = kernels_for(Isa::avx2);
  const Kernels& vnni = kernels_for(Isa::avx2vnni);
  const TensorType types[] = {TensorType::q4_0, TensorType::q4_0x16, TensorType::q4_k,   TensorType::q5_k,
                              TensorType::q6_k, TensorType::q3_k,    TensorType::q2_k,   TensorType::q4_1,
                              TensorType::q5_0, TensorType::q5_1,    TensorType::iq4_nl, TensorType::iq4_xs};
  const size_t rows = 80;
  for (TensorType type : types) {
    for (size_t n : {256u, 2304u}) {
      SCOPED_TRACE(std::string(tensor_type_traits(type).name) + " n=" + std::to_string(n));
      const Matmul &a = matmul_for(plain, type), &b = matmul_for(vnni, type);
      ASSERT_EQ(a.input, b.input);
      size_t w_row_bytes = 0, x_row_bytes = 0;
      const std::vector<uint8_t> w = weights(type, rows, n, &w_row_bytes);
      const std::vector<uint8_t> x = activations(plain, a.input, n, &x_row_bytes);
      for (size_t n_tok : {1u, 2u, 3u, 4u, 5u, 8u, 9u, 20u}) {
        std::vector<float> ya(n_tok * rows, -1.0f), yb(n_tok * rows, -2.0f);
        a.fn(w.data(), w_row_bytes, x.data(), x_row_bytes, n, n_tok, 0, rows, ya.data(), rows);
        b.fn(w.data(), w_row_bytes, x.data(), x_row_bytes, n, n_tok, 0, rows, yb.data(), rows);
        for (size_t i = 0; i < ya.size(); ++i)
          ASSERT_TRUE(same_bits(ya[i], yb[i]))
              << "n_tok=" << n_tok << " output " << i << ": " << ya[i] << " vs " << yb[i];
      }
    }
  }
}

}  // namespace
}  // namespace lmrt::simd
