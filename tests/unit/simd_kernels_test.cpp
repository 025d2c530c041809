// Every SIMD kernel table against the scalar reference, on every ISA this machine can run.
//
// Tolerances (the scalar reference sums in a different order, and SIMD code contracts a * b + c into
// one fused multiply-add):
// - matmuls and dot_f32: |y - y_ref| <= 1e-5 * sum_i |w_i x_i| (the magnitude of the summed terms; for
//   Q4_0/Q8_0 the integer block sums are exact, so only the per-block float terms are reordered);
// - rmsnorm, softmax, silu_mul: 1e-5 relative per element (plus 1e-37 absolute for results that
//   underflow);
// - axpy and axpy_f16: 2 ulp of |y| + |a x|; dot_f16 like dot_f32; add: exact;
// - quantize_q8_act and the F16/BF16 widening: bit-exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "formats/q4_0x16.h"
#include "runtime/util/fp16.h"
#include "simd/kernels.h"

namespace lmrt::simd {
namespace {

constexpr double kMatmulTol = 1e-5;
constexpr double kElemTol = 1e-5;

const Kernels& ref() { return *scalar_kernels(); }

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

// A weight matrix of `rows` rows in `type`, `row_bytes` apart (row_bytes may exceed the packed size by
// `pad`, a multiple of 4 so float rows stay aligned),
// and its dequantized values for computing magnitudes.
struct Matrix {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // rows x n
  size_t row_bytes = 0;
};

size_t packed_row_bytes(TensorType type, size_t n) {
  const TensorTypeTraits t = tensor_type_traits(type);
  return n / t.block_size * t.block_bytes;
}

Matrix random_matrix(TensorType type, size_t rows, size_t n, size_t pad, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.001f, 0.05f);
  Matrix m;
  m.row_bytes = packed_row_bytes(type, n) + pad;
  m.bytes.assign(rows * m.row_bytes, 0xA5);  // padding holds junk the kernels must not read as data
  m.values.resize(rows * n);
  for (size_t r = 0; r < rows; ++r) {
    uint8_t* row = m.bytes.data() + r * m.row_bytes;
    float* val = m.values.data() + r * n;
    switch (type) {
      case TensorType::f32:
        for (size_t i = 0; i < n; ++i) {
          val[i] = normal(rng);
          std::memcpy(row + 4 * i, &val[i], 4);
        }
        break;
      case TensorType::f16:
        for (size_t i = 0; i < n; ++i) {
          const uint16_t h = f32_to_fp16(normal(rng));
          val[i] = fp16_to_f32(h);
          std::memcpy(row + 2 * i, &h, 2);
        }
        break;
      case TensorType::bf16:
        for (size_t i = 0; i < n; ++i) {
          const float f = normal(rng);
          uint32_t bits;
          std::memcpy(&bits, &f, 4);
          const uint16_t b = static_cast<uint16_t>(bits >> 16);
          val[i] = bf16_to_f32(b);
          std::memcpy(row + 2 * i, &b, 2);
        }
        break;
      case TensorType::q4_0x16:  // made from Q4_0 rows by check_q4_0x16
      case TensorType::q4_0:
        for (size_t b = 0; b < n / 32; ++b) {
          BlockQ4_0 blk;
          blk.d = f32_to_fp16(scale(rng));
          for (uint8_t& q : blk.qs) q = static_cast<uint8_t>(rng() & 0xFF);
          for (int j = 0; j < 16; ++j) {
            val[b * 32 + j] = static_cast<float>((blk.qs[j] & 0x0F) - 8) * fp16_to_f32(blk.d);
            val[b * 32 + j + 16] = static_cast<float>((blk.qs[j] >> 4) - 8) * fp16_to_f32(blk.d);
          }
          std::memcpy(row + b * sizeof blk, &blk, sizeof blk);
        }
        break;
      case TensorType::q8_0:
        for (size_t b = 0; b < n / 32; ++b) {
          BlockQ8_0 blk;
          blk.d = f32_to_fp16(scale(rng));
          for (int j = 0; j < 32; ++j) {
            blk.qs[j] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);  // Q8_0 range [-127, 127]
            val[b * 32 + j] = static_cast<float>(blk.qs[j]) * fp16_to_f32(blk.d);
          }
          std::memcpy(row + b * sizeof blk, &blk, sizeof blk);
        }
        break;
      default:  // the other block types: quant_kernels_test (random blocks), quant_formats_test (real tensors)
        ADD_FAILURE() << "no random blocks of " << tensor_type_traits(type).name;
        return m;
    }
  }
  return m;
}

// Activation rows for `type`: floats, or floats quantized to BlockQ8Act by the reference, `row_bytes`
// apart.
struct Activations {
  std::vector<uint8_t> bytes;
  std::vector<float> values;  // n_tok x n, as the kernel sees them
  size_t row_bytes = 0;
};

Activations random_activations(TensorType type, size_t n_tok, size_t n, uint32_t seed) {
  Activations a;
  a.values.resize(n_tok * n);
  if (matmul_for(ref(), type).input == ActivationFormat::f32) {
    a.row_bytes = n * sizeof(float) + 16;
    a.bytes.assign(n_tok * a.row_bytes, 0xA5);
    for (size_t t = 0; t < n_tok; ++t) {
      const std::vector<float> x = random_floats(n, seed + static_cast<uint32_t>(t), 2.0f);
      std::memcpy(a.bytes.data() + t * a.row_bytes, x.data(), n * sizeof(float));
      std::memcpy(a.values.data() + t * n, x.data(), n * sizeof(float));
    }
    return a;
  }
  a.row_bytes = n / 32 * sizeof(BlockQ8Act) + sizeof(BlockQ8Act);
  a.bytes.assign(n_tok * a.row_bytes, 0xA5);
  for (size_t t = 0; t < n_tok; ++t) {
    const std::vector<float> x = random_floats(n, seed + static_cast<uint32_t>(t), 2.0f);
    std::vector<BlockQ8Act> q(n / 32);
    ref().quantize_q8_act(x.data(), q.data(), n);
    std::memcpy(a.bytes.data() + t * a.row_bytes, q.data(), q.size() * sizeof(BlockQ8Act));
    for (size_t i = 0; i < n; ++i) a.values[t * n + i] = q[i / 32].qs[i % 32] * q[i / 32].d;
  }
  return a;
}

struct MatmulShape {
  size_t n, n_tok, r0, r1;
};

// Runs the kernel of `isa` and the reference on the same inputs and checks every output of the block
// [r0, r1) x [0, n_tok) within tolerance and every other element of Y untouched.
void check_matmul(const Kernels& k, TensorType type, const MatmulShape& s, uint32_t seed) {
  SCOPED_TRACE(std::string(tensor_type_traits(type).name) + " n=" + std::to_string(s.n) + " n_tok=" +
               std::to_string(s.n_tok) + " rows=[" + std::to_string(s.r0) + "," + std::to_string(s.r1) + ")");
  const size_t rows = s.r1 + 3, ldy = rows + 5;
  const Matrix w = random_matrix(type, rows, s.n, 8, seed);
  const Activations x = random_activations(type, s.n_tok, s.n, seed * 7 + 1);
  const float sentinel = -12345.0f;
  std::vector<float> y_ref(s.n_tok * ldy, sentinel), y(s.n_tok * ldy, sentinel);
  ASSERT_EQ(matmul_for(ref(), type).input, matmul_for(k, type).input);
  matmul_for(ref(), type)
      .fn(w.bytes.data(), w.row_bytes, x.bytes.data(), x.row_bytes, s.n, s.n_tok, s.r0, s.r1, y_ref.data(), ldy);
  matmul_for(k, type).fn(w.bytes.data(), w.row_bytes, x.bytes.data(), x.row_bytes, s.n, s.n_tok, s.r0, s.r1, y.data(),
                         ldy);
  for (size_t t = 0; t < s.n_tok; ++t) {
    for (size_t r = 0; r < ldy; ++r) {
      const size_t at = t * ldy + r;
      if (r < s.r0 || r >= s.r1) {
        ASSERT_EQ(y[at], sentinel) << "wrote outside the row range at t=" << t << " r=" << r;
        continue;
      }
      double mag = 0.0;
      for (size_t i = 0; i < s.n; ++i)
        mag += std::fabs(static_cast<double>(w.values[r * s.n + i]) * x.values[t * s.n + i]);
      ASSERT_NEAR(y[at], y_ref[at], kMatmulTol * mag + 1e-30) << "t=" << t << " r=" << r;
    }
  }
}

// Q4_0x16: the same random Q4_0 rows interleaved; `k`'s Q4_0x16 kernel against the scalar Q4_0 kernel
// on the standard rows (the same integer block sums, so the matmul tolerance holds; bit-exact when
// `exact`), over row groups [r0, r1) (multiples of 16), rows outside untouched.
void check_q4_0x16(const Kernels& k, size_t n, size_t n_tok, size_t r0, size_t r1, uint32_t seed, bool exact = false) {
  SCOPED_TRACE("Q4_0x16 n=" + std::to_string(n) + " n_tok=" + std::to_string(n_tok) + " rows=[" + std::to_string(r0) +
               "," + std::to_string(r1) + ")");
  const size_t rows = r1 + 32, ldy = rows + 5;
  const Matrix w = random_matrix(TensorType::q4_0, rows, n, 0, seed);
  std::vector<uint8_t> x16(w.bytes.size());
  interleave_q4_0(w.bytes.data(), rows, n, x16.data());
  const Activations x = random_activations(TensorType::q4_0x16, n_tok, n, seed * 7 + 1);
  const float sentinel = -12345.0f;
  std::vector<float> y_ref(n_tok * ldy, sentinel), y(n_tok * ldy, sentinel);
  ref().matmul.q4_0.fn(w.bytes.data(), w.row_bytes, x.bytes.data(), x.row_bytes, n, n_tok, r0, r1, y_ref.data(), ldy);
  k.matmul.q4_0x16.fn(x16.data(), w.row_bytes, x.bytes.data(), x.row_bytes, n, n_tok, r0, r1, y.data(), ldy);
  for (size_t t = 0; t < n_tok; ++t) {
    for (size_t r = 0; r < ldy; ++r) {
      const size_t at = t * ldy + r;
      if (r < r0 || r >= r1) {
        ASSERT_EQ(y[at], sentinel) << "wrote outside the row range at t=" << t << " r=" << r;
        continue;
      }
      if (exact) {
        ASSERT_EQ(y[at], y_ref[at]) << "t=" << t << " r=" << r;
        continue;
      }
      double mag = 0.0;
      for (size_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(w.values[r * n + i]) * x.values[t * n + i]);
      ASSERT_NEAR(y[at], y_ref[at], kMatmulTol * mag + 1e-30) << "t=" << t << " r=" << r;
    }
  }
}

// The scalar Q4_0x16 kernel does the scalar Q4_0 kernel's arithmetic in the same order: bit-exact.
TEST(SimdKernelsScalar, Q4_0x16IsQ4_0Interleaved) {
  check_q4_0x16(ref(), 64, 1, 0, 16, 1, true);
  check_q4_0x16(ref(), 32 * 70, 3, 16, 64, 2, true);
}

class SimdKernels : public testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_available(GetParam())) GTEST_SKIP() << isa_name(GetParam()) << " not available on this CPU";
  }
  const Kernels& k() const { return kernels_for(GetParam()); }
};

TEST_P(SimdKernels, TableIsTheRequestedIsa) { EXPECT_EQ(k().isa, GetParam()); }

TEST_P(SimdKernels, QuantizedMatmulsMatchReference) {
  uint32_t seed = 1;
  for (TensorType type : {TensorType::q4_0, TensorType::q8_0}) {
    for (size_t n : {32u, 64u, 96u, 2048u, 5632u}) {
      for (size_t n_tok : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 16u, 33u}) {
        if (n > 1000 && (n_tok == 2 || n_tok == 7 || n_tok == 8 || n_tok == 16)) continue;  // keeps the suite fast
        check_matmul(k(), type, {n, n_tok, 3, n < 1000 ? 37u : 14u}, seed++);
        if (HasFatalFailure()) return;
      }
    }
    // Rows starting at 0, a single row, and an empty range.
    check_matmul(k(), type, {128, 5, 0, 9}, seed++);
    check_matmul(k(), type, {128, 1, 5, 6}, seed++);
    check_matmul(k(), type, {128, 3, 4, 4}, seed++);
  }
}

TEST_P(SimdKernels, FloatMatmulsMatchReference) {
  uint32_t seed = 100;
  for (TensorType type : {TensorType::f32, TensorType::f16, TensorType::bf16}) {
    for (size_t n : {1u, 7u, 33u, 172u, 32u, 64u, 96u, 2048u, 5632u}) {
      for (size_t n_tok : {1u, 2u, 3u, 4u, 5u, 7u, 8u, 16u, 33u}) {
        if (n > 1000 && (n_tok == 2 || n_tok == 7 || n_tok == 8 || n_tok == 16)) continue;  // keeps the suite fast
        check_matmul(k(), type, {n, n_tok, 3, n < 1000 ? 37u : 14u}, seed++);
        if (HasFatalFailure()) return;
      }
    }
    check_matmul(k(), type, {48, 5, 0, 9}, seed++);
    check_matmul(k(), type, {48, 3, 4, 4}, seed++);
  }
}

// The Q4_0 batch path: tokens in tiles of up to 12 (and uneven splits), rows in groups of 16 with a
// partial last group and unaligned starts, K in slabs of 32 blocks with a partial last slab.
TEST_P(SimdKernels, Q4_0BatchShapesMatchReference) {
  uint32_t seed = 500;
  for (size_t n_tok : {2u, 6u, 11u, 12u, 13u, 24u, 25u, 40u}) {
    check_matmul(k(), TensorType::q4_0, {32 * 45, n_tok, 5, 40}, seed++);
    if (HasFatalFailure()) return;
  }
  for (size_t r1 : {16u, 17u, 31u, 48u}) {
    check_matmul(k(), TensorType::q4_0, {32 * 33, 9, 0, r1}, seed++);
    check_matmul(k(), TensorType::q4_0, {32 * 64, 3, 1, r1}, seed++);
    if (HasFatalFailure()) return;
  }
  check_matmul(k(), TensorType::q4_0, {32, 14, 7, 8}, seed++);  // one block, one row
}

// A batched decode step: one token per sequence, every count from 2 to 16, over a ragged row range (partial row
// groups at both ends) and rows of a partial last slab (45 blocks), standard and interleaved Q4_0 and Q8_0.
TEST_P(SimdKernels, SmallBatchesMatchReference) {
  uint32_t seed = 700;
  for (size_t n_tok = 2; n_tok <= 16; ++n_tok) {
    check_matmul(k(), TensorType::q4_0, {32 * 45, n_tok, 5, 40}, seed++);
    check_matmul(k(), TensorType::q8_0, {32 * 9, n_tok, 3, 21}, seed++);
    check_q4_0x16(k(), 32 * 45, n_tok, 16, 64, seed++);
    if (HasFatalFailure()) return;
  }
}

// Many rows, so the prefill path cuts the rows into several cache-sized chunks.
TEST_P(SimdKernels, MatmulsAcrossRowChunks) {
  check_matmul(k(), TensorType::q4_0, {2048, 9, 1, 250}, 7);
  check_matmul(k(), TensorType::f32, {2048, 6, 2, 70}, 8);
}

// One token over many rows: decode reads each tile's rows from separate streams (rows far apart),
// including the rows left over when the range does not split evenly.
TEST_P(SimdKernels, DecodeMatmulsOverManyRowStreams) {
  check_matmul(k(), TensorType::q4_0, {2048, 1, 3, 250}, 11);
  check_matmul(k(), TensorType::q4_0, {96, 1, 0, 67}, 12);
  // Rows longer than the activations a decode call prepares on its stack (AVX-512: 16384).
  check_matmul(k(), TensorType::q4_0, {16416, 1, 0, 70}, 15);
  check_matmul(k(), TensorType::q8_0, {256, 1, 1, 131}, 13);
  check_matmul(k(), TensorType::f16, {172, 1, 2, 129}, 14);
}

// Decode (one token: 8, 4 and single-group streams over the row range) and batches (through the Q4_0
// GEMM, K in slabs of 64 blocks with a partial last slab, tokens in passes of 64).
TEST_P(SimdKernels, Q4_0x16MatchesQ4_0) {
  uint32_t seed = 900;
  for (size_t n : {32u, 768u, 32u * 65, 5632u}) {
    check_q4_0x16(k(), n, 1, 0, 16, seed++);
    check_q4_0x16(k(), n, 1, 32, 32 + 16 * 21, seed++);  // 21 groups: 8 x 2, then 4 x 1, then one
    check_q4_0x16(k(), n, 3, 16, 80, seed++);
    if (HasFatalFailure()) return;
  }
  check_q4_0x16(k(), 32 * 3, 1, 0, 16 * 40, seed++);
  check_q4_0x16(k(), 32 * 3, 70, 16, 48, seed++);
  check_q4_0x16(k(), 32 * 130, 13, 0, 32, seed++);
  check_q4_0x16(k(), 64, 5, 16, 16, seed++);  // empty range
  // Decode on 4-stream kernels (NEON, AVX2): 7 groups are 4 x 1 then three alone; 2 groups only alone.
  check_q4_0x16(k(), 32 * 5, 1, 16, 16 + 16 * 7, seed++);
  check_q4_0x16(k(), 32 * 9, 1, 48, 48 + 16 * 2, seed++);
  check_q4_0x16(k(), 64, 1, 32, 32, seed++);  // empty range, one token
}

// Y = W^T through X = identity: every finite F16 / BF16 value must widen exactly as fp16.h does.
void check_widening(const Kernels& k, TensorType type) {
  constexpr size_t n = 64, rows = 65536 / n;
  std::vector<uint16_t> w(rows * n);
  std::vector<bool> finite(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    const float f =
        type == TensorType::f16 ? fp16_to_f32(static_cast<uint16_t>(i)) : bf16_to_f32(static_cast<uint16_t>(i));
    finite[i] = std::isfinite(f);
    w[i] = finite[i] ? static_cast<uint16_t>(i) : 0;
  }
  std::vector<float> x(n * n, 0.0f), y(n * rows, 0.0f);
  for (size_t t = 0; t < n; ++t) x[t * n + t] = 1.0f;
  matmul_for(k, type).fn(w.data(), n * 2, x.data(), n * sizeof(float), n, n, 0, rows, y.data(), rows);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t t = 0; t < n; ++t) {
      const size_t i = r * n + t;
      if (!finite[i]) continue;
      const float want = type == TensorType::f16 ? fp16_to_f32(w[i]) : bf16_to_f32(w[i]);
      ASSERT_EQ(y[t * rows + r], want) << tensor_type_traits(type).name << " bits 0x" << std::hex << i;
    }
  }
}

TEST_P(SimdKernels, F16AndBf16WidenExactlyAsFp16Header) {
  check_widening(k(), TensorType::f16);
  check_widening(k(), TensorType::bf16);
}

TEST_P(SimdKernels, QuantizeQ8ActIsBitIdentical) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> exponent(-8.0f, 8.0f);
  for (size_t n : {32u, 64u, 96u, 2048u, 5632u}) {
    std::vector<float> x = random_floats(n, static_cast<uint32_t>(n));
    for (size_t b = 0; b < n / 32; ++b) {
      const float scale = std::pow(10.0f, exponent(rng));  // block magnitudes from 1e-8 to 1e8
      for (size_t j = 0; j < 32; ++j) x[b * 32 + j] *= scale;
    }
    for (size_t j = 0; j < 32; ++j) x[j] = 0.0f;  // an all-zero block (scale 0)
    if (n >= 64) {
      // Exact halves after scaling (amax 127 gives scale 1): rounding ties must go to even.
      for (size_t j = 0; j < 32; ++j) x[32 + j] = static_cast<float>(j) - 15.5f;
      x[63] = 127.0f;
    }
    std::vector<BlockQ8Act> want(n / 32), got(n / 32);
    ref().quantize_q8_act(x.data(), want.data(), n);
    k().quantize_q8_act(x.data(), got.data(), n);
    for (size_t b = 0; b < n / 32; ++b) {
      int32_t sum = 0;
      for (int8_t q : want[b].qs) sum += q;
      ASSERT_EQ(want[b].minus8_sum, -8 * sum) << "n=" << n << " block " << b;
      ASSERT_EQ(std::memcmp(&got[b].d, &want[b].d, sizeof(float)), 0) << "n=" << n << " block " << b;
      ASSERT_EQ(got[b].minus8_sum, want[b].minus8_sum) << "n=" << n << " block " << b;
      ASSERT_EQ(std::memcmp(got[b].qs, want[b].qs, 32), 0) << "n=" << n << " block " << b;
    }
  }
}

const size_t kLengths[] = {1, 7, 33, 172, 32, 64, 96, 2048, 5632};

void expect_close(const std::vector<float>& got, const std::vector<float>& want, const char* what, size_t n) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], kElemTol * std::fabs(want[i]) + 1e-37) << what << " n=" << n << " i=" << i;
}

TEST_P(SimdKernels, RmsnormMatchesReference) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, 11 + static_cast<uint32_t>(n), 3.0f);
    const std::vector<float> w = random_floats(n, 12 + static_cast<uint32_t>(n));
    std::vector<float> want(n), got(n), in_place = x;
    ref().rmsnorm(want.data(), x.data(), w.data(), n, 1e-5f);
    k().rmsnorm(got.data(), x.data(), w.data(), n, 1e-5f);
    expect_close(got, want, "rmsnorm", n);
    k().rmsnorm(in_place.data(), in_place.data(), w.data(), n, 1e-5f);
    expect_close(in_place, want, "rmsnorm in place", n);
  }
}

TEST_P(SimdKernels, SoftmaxMatchesReference) {
  for (float spread : {1.0f, 8.0f, 60.0f}) {  // the widest makes many terms underflow
    for (size_t n : kLengths) {
      std::vector<float> want = random_floats(n, 21 + static_cast<uint32_t>(n), spread), got = want;
      ref().softmax(want.data(), n);
      k().softmax(got.data(), n);
      expect_close(got, want, "softmax", n);
    }
  }
}

// Real angles; the tolerance is relative to the terms' size (a cos - b sin can cancel to ~0).
TEST_P(SimdKernels, RopeMatchesReference) {
  for (size_t n_pairs : {1u, 3u, 4u, 7u, 8u, 16u, 17u, 32u, 64u}) {
    const std::vector<float> v = random_floats(2 * n_pairs, 41 + static_cast<uint32_t>(n_pairs), 3.0f);
    std::vector<float> cs(2 * n_pairs);
    for (size_t i = 0; i < n_pairs; ++i) {
      const double angle = 37.0 * std::pow(10000.0, -2.0 * static_cast<double>(i) / (2.0 * n_pairs));
      cs[2 * i] = static_cast<float>(std::cos(angle));
      cs[2 * i + 1] = static_cast<float>(std::sin(angle));
    }
    std::vector<float> want = v, got = v;
    ref().rope(want.data(), cs.data(), n_pairs);
    k().rope(got.data(), cs.data(), n_pairs);
    for (size_t i = 0; i < n_pairs; ++i) {
      const double mag = std::fabs(v[2 * i]) + std::fabs(v[2 * i + 1]);
      ASSERT_NEAR(got[2 * i], want[2 * i], 2.0 * FLT_EPSILON * mag) << "n_pairs=" << n_pairs << " pair " << i;
      ASSERT_NEAR(got[2 * i + 1], want[2 * i + 1], 2.0 * FLT_EPSILON * mag) << "n_pairs=" << n_pairs << " pair " << i;
    }
  }
}

TEST_P(SimdKernels, SiluMulMatchesReference) {
  for (size_t n : kLengths) {
    std::vector<float> gate = random_floats(n, 31 + static_cast<uint32_t>(n), 4.0f);
    const std::vector<float> up = random_floats(n, 32 + static_cast<uint32_t>(n));
    if (n >= 4) {  // saturated sigmoid at both ends
      gate[0] = -120.0f;
      gate[1] = 120.0f;
      gate[2] = -87.0f;
      gate[3] = 0.0f;
    }
    std::vector<float> want = gate, got = gate;
    ref().silu_mul(want.data(), up.data(), n);
    k().silu_mul(got.data(), up.data(), n);
    expect_close(got, want, "silu_mul", n);
  }
}

TEST_P(SimdKernels, GeluMulMatchesReference) {
  for (size_t n : kLengths) {
    std::vector<float> gate = random_floats(n, 61 + static_cast<uint32_t>(n), 4.0f);
    const std::vector<float> up = random_floats(n, 62 + static_cast<uint32_t>(n));
    if (n >= 4) {  // tanh saturated at both ends, and zero
      gate[0] = -30.0f;
      gate[1] = 30.0f;
      gate[2] = -9.0f;
      gate[3] = 0.0f;
    }
    std::vector<float> want = gate, got = gate;
    ref().gelu_mul(want.data(), up.data(), n);
    k().gelu_mul(got.data(), up.data(), n);
    for (size_t i = 0; i < n; ++i)  // gelu(x) ~ 0 for x << 0: an absolute floor on the tolerance
      ASSERT_NEAR(got[i], want[i], kElemTol * std::fabs(want[i]) + 1e-6) << "gelu_mul n=" << n << " i=" << i;
  }
}

TEST_P(SimdKernels, SoftcapMatchesReference) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, 71 + static_cast<uint32_t>(n), 80.0f);
    std::vector<float> want = x, got = x;
    ref().softcap(want.data(), n, 30.0f);
    k().softcap(got.data(), n, 30.0f);
    expect_close(got, want, "softcap", n);
    for (float v : got) ASSERT_LE(std::fabs(v), 30.0f);
  }
}

TEST_P(SimdKernels, ScaleIsExact) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, 81 + static_cast<uint32_t>(n));
    std::vector<float> want = x, got = x;
    ref().scale(want.data(), 16.0f, n);
    k().scale(got.data(), 16.0f, n);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[i], want[i]) << "n=" << n << " i=" << i;
      ASSERT_EQ(want[i], x[i] * 16.0f);
    }
  }
}

// The halves layout: pair i is (v[i], v[i + n_pairs]); the reference is checked against a direct rotation.
TEST_P(SimdKernels, RopeNeoxMatchesReference) {
  for (size_t n_pairs : {1u, 3u, 4u, 7u, 8u, 16u, 17u, 32u, 64u}) {
    const std::vector<float> v = random_floats(2 * n_pairs, 91 + static_cast<uint32_t>(n_pairs), 3.0f);
    std::vector<float> cs(2 * n_pairs);
    for (size_t i = 0; i < n_pairs; ++i) {
      const double angle = 37.0 * std::pow(10000.0, -2.0 * static_cast<double>(i) / (2.0 * n_pairs));
      cs[i] = static_cast<float>(std::cos(angle));
      cs[n_pairs + i] = static_cast<float>(std::sin(angle));
    }
    std::vector<float> want = v, got = v;
    ref().rope_neox(want.data(), cs.data(), n_pairs);
    k().rope_neox(got.data(), cs.data(), n_pairs);
    for (size_t i = 0; i < n_pairs; ++i) {
      const double mag = std::fabs(v[i]) + std::fabs(v[i + n_pairs]);
      const double a = v[i], b = v[i + n_pairs], c = cs[i], s = cs[n_pairs + i];
      ASSERT_NEAR(want[i], a * c - b * s, 2.0 * FLT_EPSILON * mag) << "reference, pair " << i;
      ASSERT_NEAR(want[i + n_pairs], a * s + b * c, 2.0 * FLT_EPSILON * mag) << "reference, pair " << i;
      ASSERT_NEAR(got[i], want[i], 2.0 * FLT_EPSILON * mag) << "n_pairs=" << n_pairs << " pair " << i;
      ASSERT_NEAR(got[i + n_pairs], want[i + n_pairs], 2.0 * FLT_EPSILON * mag)
          << "n_pairs=" << n_pairs << " pair " << i;
    }
  }
}

TEST_P(SimdKernels, AddIsExact) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, 41 + static_cast<uint32_t>(n));
    std::vector<float> want = random_floats(n, 42 + static_cast<uint32_t>(n)), got = want;
    ref().add(want.data(), x.data(), n);
    k().add(got.data(), x.data(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << "n=" << n << " i=" << i;
  }
}

TEST_P(SimdKernels, AxpyMatchesReference) {
  for (size_t n : kLengths) {
    const std::vector<float> x = random_floats(n, 51 + static_cast<uint32_t>(n));
    const std::vector<float> y = random_floats(n, 52 + static_cast<uint32_t>(n));
    std::vector<float> want = y, got = y;
    ref().axpy(want.data(), 0.37f, x.data(), n);
    k().axpy(got.data(), 0.37f, x.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const double mag = std::fabs(y[i]) + std::fabs(0.37 * x[i]);
      ASSERT_NEAR(got[i], want[i], 2.0 * FLT_EPSILON * mag) << "n=" << n << " i=" << i;
    }
  }
}

TEST_P(SimdKernels, DotMatchesReference) {
  for (size_t n : kLengths) {
    const std::vector<float> a = random_floats(n, 61 + static_cast<uint32_t>(n));
    const std::vector<float> b = random_floats(n, 62 + static_cast<uint32_t>(n));
    double mag = 0.0;
    for (size_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(a[i]) * b[i]);
    ASSERT_NEAR(k().dot_f32(a.data(), b.data(), n), ref().dot_f32(a.data(), b.data(), n), kMatmulTol * mag)
        << "n=" << n;
  }
}

// 64-byte aligned floats (kernel scratch).
struct AlignedFloats {
  explicit AlignedFloats(size_t n) : v(n + 16) {}
  float* data() {
    const auto at = reinterpret_cast<uintptr_t>(v.data());
    return v.data() + ((64 - at % 64) % 64) / sizeof(float);
  }
  std::vector<float> v;
};

std::vector<uint16_t> random_halves(size_t n, uint32_t seed) {
  std::vector<uint16_t> h(n);
  const std::vector<float> f = random_floats(n, seed);
  for (size_t i = 0; i < n; ++i) h[i] = f32_to_fp16(f[i]);
  return h;
}

TEST_P(SimdKernels, F16DotMatchesReference) {
  for (size_t n : kLengths) {
    const std::vector<float> a = random_floats(n, 71 + static_cast<uint32_t>(n));
    const std::vector<uint16_t> b = random_halves(n, 72 + static_cast<uint32_t>(n));
    double mag = 0.0;
    for (size_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(a[i]) * fp16_to_f32(b[i]));
    ASSERT_NEAR(k().dot_f16(a.data(), b.data(), n), ref().dot_f16(a.data(), b.data(), n), kMatmulTol * mag)
        << "n=" << n;
  }
}

TEST_P(SimdKernels, F16AxpyMatchesReference) {
  for (size_t n : kLengths) {
    const std::vector<uint16_t> x = random_halves(n, 81 + static_cast<uint32_t>(n));
    const std::vector<float> y = random_floats(n, 82 + static_cast<uint32_t>(n));
    std::vector<float> want = y, got = y;
    ref().axpy_f16(want.data(), -0.61f, x.data(), n);
    k().axpy_f16(got.data(), -0.61f, x.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const double mag = std::fabs(y[i]) + std::fabs(0.61 * fp16_to_f32(x[i]));
      ASSERT_NEAR(got[i], want[i], 2.0 * FLT_EPSILON * mag) << "n=" << n << " i=" << i;
    }
  }
}

// Attention over consecutive F16 rows: head sizes with and without tails, key counts around the
// 4-key step, rows wider than the head (the KV row holds every KV head).
TEST_P(SimdKernels, AttentionScoresAndWeightedSumMatchReference) {
  for (size_t dim : {8u, 16u, 24u, 64u, 72u, 100u, 128u}) {
    // From 64 keys AVX-512 reads them as 4 streams; 70 and 131 leave rows over for the tail.
    for (size_t n_keys : {1u, 3u, 4u, 5u, 17u, 64u, 70u, 131u}) {
      const size_t stride = dim * 3 + 8;
      const uint32_t seed = static_cast<uint32_t>(dim * 131 + n_keys);
      const std::vector<uint16_t> rows = random_halves(stride * n_keys, seed);
      const std::vector<float> q = random_floats(dim, seed + 1);
      std::vector<float> want(n_keys), got(n_keys);
      ref().scores_f16(q.data(), rows.data() + 8, stride, n_keys, dim, 0.125f, want.data());
      k().scores_f16(q.data(), rows.data() + 8, stride, n_keys, dim, 0.125f, got.data());
      for (size_t p = 0; p < n_keys; ++p) {
        double mag = 0.0;
        for (size_t i = 0; i < dim; ++i) mag += std::fabs(q[i] * fp16_to_f32(rows[8 + p * stride + i]));
        ASSERT_NEAR(got[p], want[p], kMatmulTol * 0.125 * mag) << "dim=" << dim << " keys=" << n_keys << " p=" << p;
      }
      const std::vector<float> w = random_floats(n_keys, seed + 2);
      std::vector<float> want_v(dim, 7.0f), got_v(dim, 7.0f);  // overwritten, not added to
      ref().weighted_sum_f16(want_v.data(), w.data(), rows.data() + 8, stride, n_keys, dim);
      k().weighted_sum_f16(got_v.data(), w.data(), rows.data() + 8, stride, n_keys, dim);
      for (size_t i = 0; i < dim; ++i) {
        double mag = 0.0;
        for (size_t p = 0; p < n_keys; ++p) mag += std::fabs(w[p] * fp16_to_f32(rows[8 + p * stride + i]));
        ASSERT_NEAR(got_v[i], want_v[i], kMatmulTol * mag + 1e-30) << "dim=" << dim << " keys=" << n_keys << " i=" << i;
      }
    }
  }
}

// Every finite float (sampled: random bit patterns, plus the subnormal and overflow edges and exact
// ties) converts exactly as fp16.h does.
TEST_P(SimdKernels, ToF16MatchesFp16Header) {
  if (k().to_f16 == nullptr) GTEST_SKIP() << "no to_f16 in this table";
  std::mt19937 rng(9);
  std::vector<float> x;
  for (int i = 0; i < 20000; ++i) {
    const uint32_t bits = (rng() & 0x8FFFFFFFu) | ((rng() % 40 + 100) << 23);  // exponents around fp16's range
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, -1e9f, 5.96e-8f, 2.98e-8f, 2.99e-8f, 1.0f + 1.0f / 2048,
                  1.0f + 3.0f / 2048, 6.1e-5f, 1e-40f})
    x.push_back(f);
  for (size_t n : {x.size(), size_t{7}, size_t{17}}) {
    std::vector<uint16_t> got(n + 1, 0xBEEF);
    k().to_f16(x.data(), got.data(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], f32_to_fp16(x[i])) << "x=" << x[i] << " i=" << i;
    ASSERT_EQ(got[n], 0xBEEF) << "wrote past n";
  }
}

// Batched attention against a double-precision softmax over the same F16 rows.
// Double-precision attention of one query over n_pos F16 rows `stride` halves apart: want[d] =
// sum_p softmax_p(scale q . k_p) v_p[d], and vmax[d] = max_p |v_p[d]| (the tolerance's scale).
void reference_attention(const float* q, const uint16_t* k, const uint16_t* v, size_t stride, size_t n_pos, size_t hd,
                         float scale, std::vector<double>* want, std::vector<double>* vmax) {
  std::vector<double> w(n_pos);
  double mx = -1e300, sum = 0.0;
  for (size_t p = 0; p < n_pos; ++p) {
    double d = 0.0;
    for (size_t j = 0; j < hd; ++j) d += static_cast<double>(q[j]) * fp16_to_f32(k[p * stride + j]);
    w[p] = d * scale;
    mx = std::max(mx, w[p]);
  }
  for (double& x : w) sum += (x = std::exp(x - mx));
  want->assign(hd, 0.0);
  vmax->assign(hd, 0.0);
  for (size_t j = 0; j < hd; ++j)
    for (size_t p = 0; p < n_pos; ++p) {
      const double vj = fp16_to_f32(v[p * stride + j]);
      (*want)[j] += w[p] / sum * vj;
      (*vmax)[j] = std::max((*vmax)[j], std::fabs(vj));
    }
}

TEST_P(SimdKernels, AttendF16MatchesReference) {
  if (k().attend_f16 == nullptr) GTEST_SKIP() << "no attend_f16 in this table";
  uint32_t seed = 900;
  for (size_t hd : {8u, 64u, 72u}) {
    for (size_t n_q : {1u, 5u, 16u}) {
      const size_t n_pos = 70, stride = hd + 24, ldq = hd + 3, ldo = hd + 5;
      const std::vector<uint16_t> kr = random_halves(n_pos * stride, seed++);
      const std::vector<uint16_t> vr = random_halves(n_pos * stride, seed++);
      const std::vector<float> q = random_floats(n_q * ldq, seed++, 3.0f);
      std::vector<uint32_t> n_vis(n_q);
      for (size_t i = 0; i < n_q; ++i) n_vis[i] = static_cast<uint32_t>(i == 0 ? 1 : n_pos - 3 * i);  // one, many
      AlignedFloats scratch(attend_scratch_floats(n_pos, hd));
      std::vector<float> out(n_q * ldo, -7.0f);
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      k().attend_f16(q.data(), ldq, n_q, n_vis.data(), kr.data(), vr.data(), stride, hd, scale, scratch.data(),
                     out.data(), ldo);
      std::vector<double> want, vmax;
      for (size_t i = 0; i < n_q; ++i) {
        reference_attention(q.data() + i * ldq, kr.data(), vr.data(), stride, n_vis[i], hd, scale, &want, &vmax);
        for (size_t j = 0; j < ldo; ++j) {
          if (j >= hd) {
            ASSERT_EQ(out[i * ldo + j], -7.0f) << "wrote past the head";
            continue;
          }
          ASSERT_NEAR(out[i * ldo + j], want[j], 3e-5 * vmax[j])
              << "hd=" << hd << " n_q=" << n_q << " i=" << i << " d=" << j;
        }
      }
    }
  }
}

// Grouped-query decode attention against a double-precision softmax: n_q heads over the same
// consecutive rows (the 4-stream path from 64 rows, with leftover rows at 70 and 131).
TEST_P(SimdKernels, AttendHeadsF16MatchesReference) {
  if (k().attend_heads_f16 == nullptr) GTEST_SKIP() << "no attend_heads_f16 in this table";
  uint32_t seed = 1300;
  for (size_t hd : {16u, 48u, 64u, 128u}) {
    for (size_t n_q : {1u, 2u, 5u, 8u}) {
      for (size_t n_pos : {1u, 3u, 17u, 64u, 70u, 131u}) {
        const std::vector<uint16_t> kr = random_halves(n_pos * hd, seed++);
        const std::vector<uint16_t> vr = random_halves(n_pos * hd, seed++);
        std::vector<float> q = random_floats(n_q * hd + 16, seed++, 3.0f);
        std::vector<float> scratch(n_q * n_pos), out(n_q * hd + 16, -7.0f);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        k().attend_heads_f16(q.data(), n_q, kr.data(), vr.data(), n_pos, hd, scale, scratch.data(), out.data());
        std::vector<double> want, vmax;
        for (size_t i = 0; i < n_q; ++i) {
          reference_attention(q.data() + i * hd, kr.data(), vr.data(), hd, n_pos, hd, scale, &want, &vmax);
          for (size_t j = 0; j < hd; ++j)
            ASSERT_NEAR(out[i * hd + j], want[j], 3e-5 * vmax[j])
                << "hd=" << hd << " n_q=" << n_q << " n_pos=" << n_pos << " head " << i << " d=" << j;
        }
        for (size_t j = n_q * hd; j < out.size(); ++j) ASSERT_EQ(out[j], -7.0f) << "wrote past the last head";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, SimdKernels, testing::Values(Isa::avx2, Isa::avx2vnni, Isa::avx512, Isa::neon),
                         [](const testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace lmrt::simd
