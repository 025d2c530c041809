// The K-quant, IQ4 and 32-element quant matmuls (simd/quant_kernels.h) and Q8_K quantization:
// (a) the scalar kernels against a double-precision reference that dequantizes the blocks with loops
//     written here from ggml's dequantize_row_* (ggml-quants.c), on random valid blocks and extreme ones;
// (b) every ISA kernel this CPU runs against the scalar one;
// (c) quantize_q8_k bit-identical on every ISA and to ggml's quantize_row_q8_K written out here.
//
// Tolerances: the scalar kernel sums each sub-block exactly in integers and rounds only when scaling the
// block total and adding blocks, so |y - y_ref| <= 1e-5 * the sum of the magnitudes of the terms (for
// weights d * sc * q - dmin * m, |d * sc * q * x| + |dmin * m * x| per element). SIMD kernels against the
// scalar one: the same bound, since their integer parts are exact too and only the float order differs.
#include "simd/quant_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "formats/blocks.h"
#include "runtime/util/fp16.h"
#include "simd/kernels.h"

namespace lmrt::simd {
namespace {

constexpr double kTol = 1e-5;

enum class QType { q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs, q4_1, q5_0, q5_1, iq4_nl };
constexpr QType kAllTypes[] = {QType::q2_k,   QType::q3_k, QType::q4_k, QType::q5_k, QType::q6_k,
                               QType::iq4_xs, QType::q4_1, QType::q5_0, QType::q5_1, QType::iq4_nl};

const char* type_name(QType t) {
  switch (t) {
    case QType::q2_k:
      return "q2_k";
    case QType::q3_k:
      return "q3_k";
    case QType::q4_k:
      return "q4_k";
    case QType::q5_k:
      return "q5_k";
    case QType::q6_k:
      return "q6_k";
    case QType::iq4_xs:
      return "iq4_xs";
    case QType::q4_1:
      return "q4_1";
    case QType::q5_0:
      return "q5_0";
    case QType::q5_1:
      return "q5_1";
    case QType::iq4_nl:
      return "iq4_nl";
  }
  return "?";
}

bool is_super(QType t) { return t <= QType::iq4_xs; }
size_t block_elems(QType t) { return is_super(t) ? 256 : 32; }
size_t block_bytes(QType t) {
  switch (t) {
    case QType::q2_k:
      return sizeof(BlockQ2_K);
    case QType::q3_k:
      return sizeof(BlockQ3_K);
    case QType::q4_k:
      return sizeof(BlockQ4_K);
    case QType::q5_k:
      return sizeof(BlockQ5_K);
    case QType::q6_k:
      return sizeof(BlockQ6_K);
    case QType::iq4_xs:
      return sizeof(BlockIQ4_XS);
    case QType::q4_1:
      return sizeof(BlockQ4_1);
    case QType::q5_0:
      return sizeof(BlockQ5_0);
    case QType::q5_1:
      return sizeof(BlockQ5_1);
    case QType::iq4_nl:
      return sizeof(BlockIQ4_NL);
  }
  return 0;
}

// ---- the reference: ggml's dequantize_row_* loops, in double, with each element's magnitude ----

struct Deq {
  std::vector<double> v;    // value of each element
  std::vector<double> mag;  // |scale part| + |min part| of each element
};

double h(uint16_t bits) { return fp16_to_f32(bits); }

template <class B>
B block_at(const uint8_t* p) {
  B b;
  std::memcpy(&b, p, sizeof b);
  return b;
}

// ggml's get_scale_min_k4.
void get_scale_min_k4(int j, const uint8_t* q, int* d, int* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

void put(Deq& out, double scale_part, double min_part) {
  out.v.push_back(scale_part - min_part);
  out.mag.push_back(std::fabs(scale_part) + std::fabs(min_part));
}

void deq_block(QType t, const uint8_t* p, Deq& out) {
  switch (t) {
    case QType::q4_k: {
      const auto x = block_at<BlockQ4_K>(p);
      const double d = h(x.d), min = h(x.dmin);
      const uint8_t* q = x.qs;
      int is = 0, sc, m;
      for (int j = 0; j < 256; j += 64) {
        get_scale_min_k4(is + 0, x.scales, &sc, &m);
        const double d1 = d * sc, m1 = min * m;
        get_scale_min_k4(is + 1, x.scales, &sc, &m);
        const double d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; ++l) put(out, d1 * (q[l] & 0xF), m1);
        for (int l = 0; l < 32; ++l) put(out, d2 * (q[l] >> 4), m2);
        q += 32;
        is += 2;
      }
      return;
    }
    case QType::q5_k: {
      const auto x = block_at<BlockQ5_K>(p);
      const double d = h(x.d), min = h(x.dmin);
      const uint8_t* ql = x.qs;
      int is = 0, sc, m;
      uint8_t u1 = 1, u2 = 2;
      for (int j = 0; j < 256; j += 64) {
        get_scale_min_k4(is + 0, x.scales, &sc, &m);
        const double d1 = d * sc, m1 = min * m;
        get_scale_min_k4(is + 1, x.scales, &sc, &m);
        const double d2 = d * sc, m2 = min * m;
        for (int l = 0; l < 32; ++l) put(out, d1 * ((ql[l] & 0xF) + (x.qh[l] & u1 ? 16 : 0)), m1);
        for (int l = 0; l < 32; ++l) put(out, d2 * ((ql[l] >> 4) + (x.qh[l] & u2 ? 16 : 0)), m2);
        ql += 32;
        is += 2;
        u1 <<= 2;
        u2 <<= 2;
      }
      return;
    }
    case QType::q6_k: {
      const auto x = block_at<BlockQ6_K>(p);
      const double d = h(x.d);
      double y[256];
      const uint8_t* ql = x.ql;
      const uint8_t* qh = x.qh;
      const int8_t* sc = x.scales;
      for (int n = 0; n < 256; n += 128) {
        for (int l = 0; l < 32; ++l) {
          const int is = l / 16;
          const int q1 = ((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
          const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
          const int q3 = ((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
          const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
          y[n + l + 0] = d * sc[is + 0] * q1;
          y[n + l + 32] = d * sc[is + 2] * q2;
          y[n + l + 64] = d * sc[is + 4] * q3;
          y[n + l + 96] = d * sc[is + 6] * q4;
        }
        ql += 64;
        qh += 32;
        sc += 8;
      }
      for (double v : y) put(out, v, 0.0);
      return;
    }
    case QType::q3_k: {
      const auto x = block_at<BlockQ3_K>(p);
      const double d_all = h(x.d);
      const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
      uint32_t aux[4];
      std::memcpy(aux, x.scales, 12);
      const uint32_t tmp = aux[2];
      aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
      aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
      aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
      aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
      int8_t scales[16];
      std::memcpy(scales, aux, 16);
      const uint8_t* q = x.qs;
      uint8_t m = 1;
      int is = 0;
      for (int n = 0; n < 256; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
          double dl = d_all * (scales[is++] - 32);
          for (int l = 0; l < 16; ++l) put(out, dl * (((q[l + 0] >> shift) & 3) - ((x.hmask[l + 0] & m) ? 0 : 4)), 0);
          dl = d_all * (scales[is++] - 32);
          for (int l = 0; l < 16; ++l) put(out, dl * (((q[l + 16] >> shift) & 3) - ((x.hmask[l + 16] & m) ? 0 : 4)), 0);
          shift += 2;
          m <<= 1;
        }
        q += 32;
      }
      return;
    }
    case QType::q2_k: {
      const auto x = block_at<BlockQ2_K>(p);
      const double d = h(x.d), min = h(x.dmin);
      const uint8_t* q = x.qs;
      int is = 0;
      for (int n = 0; n < 256; n += 128) {
        int shift = 0;
        for (int j = 0; j < 4; ++j) {
          uint8_t sc = x.scales[is++];
          double dl = d * (sc & 0xF), ml = min * (sc >> 4);
          for (int l = 0; l < 16; ++l) put(out, dl * ((q[l] >> shift) & 3), ml);
          sc = x.scales[is++];
          dl = d * (sc & 0xF);
          ml = min * (sc >> 4);
          for (int l = 0; l < 16; ++l) put(out, dl * ((q[l + 16] >> shift) & 3), ml);
          shift += 2;
        }
        q += 32;
      }
      return;
    }
    case QType::iq4_xs: {
      const auto x = block_at<BlockIQ4_XS>(p);
      const double d = h(x.d);
      const uint8_t* qs = x.qs;
      for (int ib = 0; ib < 8; ++ib) {
        const int ls = ((x.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((x.scales_h >> 2 * ib) & 3) << 4);
        const double dl = d * (ls - 32);
        double y[32];
        for (int j = 0; j < 16; ++j) {
          y[j] = dl * kIq4nlValues[qs[j] & 0xf];
          y[j + 16] = dl * kIq4nlValues[qs[j] >> 4];
        }
        for (double v : y) put(out, v, 0.0);
        qs += 16;
      }
      return;
    }
    case QType::q4_1: {
      const auto x = block_at<BlockQ4_1>(p);
      double y[32], mags[32];
      for (int j = 0; j < 16; ++j) {
        y[j] = (x.qs[j] & 0x0F) * h(x.d);
        y[j + 16] = (x.qs[j] >> 4) * h(x.d);
      }
      for (int j = 0; j < 32; ++j) {
        mags[j] = std::fabs(y[j]) + std::fabs(h(x.m));
        y[j] += h(x.m);
      }
      out.v.insert(out.v.end(), y, y + 32);
      out.mag.insert(out.mag.end(), mags, mags + 32);
      return;
    }
    case QType::q5_0:
    case QType::q5_1: {
      const bool one = t == QType::q5_1;
      uint16_t d16, m16 = 0;
      uint8_t qh_bytes[4], qs[16];
      std::memcpy(&d16, p, 2);
      if (one) std::memcpy(&m16, p + 2, 2);
      std::memcpy(qh_bytes, p + (one ? 4 : 2), 4);
      std::memcpy(qs, p + (one ? 8 : 6), 16);
      uint32_t qh;
      std::memcpy(&qh, qh_bytes, 4);
      double y[32];
      for (int j = 0; j < 16; ++j) {
        const uint8_t xh_0 = ((qh >> (j + 0)) << 4) & 0x10;
        const uint8_t xh_1 = ((qh >> (j + 12))) & 0x10;
        const int x0 = ((qs[j] & 0x0F) | xh_0) - (one ? 0 : 16);
        const int x1 = ((qs[j] >> 4) | xh_1) - (one ? 0 : 16);
        y[j] = x0 * h(d16);
        y[j + 16] = x1 * h(d16);
      }
      for (double v : y) put(out, v, -h(m16));
      return;
    }
    case QType::iq4_nl: {
      const auto x = block_at<BlockIQ4_NL>(p);
      for (int j = 0; j < 16; ++j) put(out, h(x.d) * kIq4nlValues[x.qs[j] & 0xf], 0);
      for (int j = 0; j < 16; ++j) put(out, h(x.d) * kIq4nlValues[x.qs[j] >> 4], 0);
      return;
    }
  }
}

// ---- weights: random valid blocks (every bit pattern of the quant bytes is valid; fp16 scales are
// finite), with some extreme blocks: all quant bytes 0xFF or 0x00, the largest and a subnormal scale. ----

uint16_t random_scale(std::mt19937& rng) {
  std::uniform_real_distribution<float> mag(0.0005f, 0.05f);
  return f32_to_fp16(rng() % 4 == 0 ? -mag(rng) : mag(rng));
}

// Byte offsets of the fp16 fields of a block.
std::vector<size_t> scale_offsets(QType t) {
  switch (t) {
    case QType::q2_k:
      return {80, 82};
    case QType::q3_k:
      return {108};
    case QType::q4_k:
    case QType::q5_k:
      return {0, 2};
    case QType::q6_k:
      return {208};
    case QType::iq4_xs:
      return {0};  // scales_h (offset 2) is bits
    case QType::q4_1:
    case QType::q5_1:
      return {0, 2};
    case QType::q5_0:
    case QType::iq4_nl:
      return {0};
  }
  return {};
}

void fill_block(QType t, uint8_t* p, std::mt19937& rng) {
  const size_t bytes = block_bytes(t);
  const uint32_t kind = rng() % 16;
  for (size_t i = 0; i < bytes; ++i) p[i] = kind == 0 ? 0xFF : kind == 1 ? 0x00 : static_cast<uint8_t>(rng());
  for (size_t off : scale_offsets(t)) {
    uint16_t s = random_scale(rng);
    if (kind == 2) s = 0x7BFF;  // 65504, the largest fp16
    if (kind == 3) s = 0x0001;  // the smallest subnormal
    std::memcpy(p + off, &s, 2);
  }
}

struct Weights {
  std::vector<uint8_t> bytes;
  size_t row_bytes = 0;
};

// `pad` bytes (even) of junk after each row that kernels must not read.
Weights random_weights(QType t, size_t rows, size_t n, size_t pad, uint32_t seed) {
  std::mt19937 rng(seed);
  Weights w;
  w.row_bytes = n / block_elems(t) * block_bytes(t) + pad;
  w.bytes.assign(rows * w.row_bytes + 64, 0xA5);
  for (size_t r = 0; r < rows; ++r)
    for (size_t b = 0; b < n / block_elems(t); ++b)
      fill_block(t, w.bytes.data() + r * w.row_bytes + b * block_bytes(t), rng);
  return w;
}

// ---- activations ----

struct Acts {
  std::vector<uint32_t> words;  // 4-byte aligned storage
  size_t row_bytes = 0;
  std::vector<double> values;  // n_tok x n, the quantized values qs * d
  const void* data() const { return words.data(); }
};

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = normal(rng);
  return v;
}

// Activations for `t`, quantized by the scalar reference, rows `row_bytes` apart (padded by 8 bytes).
// With `ones`, every value is 1 (every activation byte -127, the largest magnitude, all of one sign).
Acts make_acts(QType t, size_t n_tok, size_t n, uint32_t seed, bool ones = false) {
  std::mt19937 rng(seed);
  Acts a;
  const size_t nb = n / block_elems(t);
  a.row_bytes = nb * (is_super(t) ? sizeof(BlockQ8_K) : sizeof(BlockQ8Act)) + 8;
  a.words.assign(n_tok * a.row_bytes / 4, 0xA5A5A5A5);
  for (size_t tok = 0; tok < n_tok; ++tok) {
    std::vector<float> x = ones ? std::vector<float>(n, 1.0f) : random_floats(n, rng);
    if (tok == 1 && !ones)
      for (size_t i = 0; i < std::min<size_t>(n, 256); ++i) x[i] = 0.0f;  // an all-zero block
    auto* row = reinterpret_cast<uint8_t*>(a.words.data()) + tok * a.row_bytes;
    if (is_super(t)) {
      auto* blk = reinterpret_cast<BlockQ8_K*>(row);
      scalar::quantize_q8_k(x.data(), blk, n);
      for (size_t b = 0; b < nb; ++b)
        for (int j = 0; j < 256; ++j) a.values.push_back(static_cast<double>(blk[b].qs[j]) * blk[b].d);
    } else {
      auto* blk = reinterpret_cast<BlockQ8Act*>(row);
      scalar_kernels()->quantize_q8_act(x.data(), blk, n);
      for (size_t b = 0; b < nb; ++b)
        for (int j = 0; j < 32; ++j) a.values.push_back(static_cast<double>(blk[b].qs[j]) * blk[b].d);
    }
  }
  return a;
}

// ---- kernels per ISA ----

struct IsaKernels {
  Isa isa;
  MatmulFn fn[10];
  void (*quantize_q8_k)(const float*, BlockQ8_K*, size_t);
};

#define LMRT_ISA_KERNELS(ns, isa)                                                                   \
  IsaKernels {                                                                                      \
    isa, {ns::matmul_q2_k,   ns::matmul_q3_k, ns::matmul_q4_k, ns::matmul_q5_k, ns::matmul_q6_k,    \
          ns::matmul_iq4_xs, ns::matmul_q4_1, ns::matmul_q5_0, ns::matmul_q5_1, ns::matmul_iq4_nl}, \
        ns::quantize_q8_k                                                                           \
  }

std::vector<IsaKernels> all_isa_kernels() {
  std::vector<IsaKernels> v = {LMRT_ISA_KERNELS(scalar, Isa::scalar)};
#if defined(LMRT_ARCH_X86)
  v.push_back(LMRT_ISA_KERNELS(avx2, Isa::avx2));
#if !defined(LMRT_NO_AVX2VNNI)
  v.push_back(LMRT_ISA_KERNELS(avx2vnni, Isa::avx2vnni));
#endif
  v.push_back(LMRT_ISA_KERNELS(avx512, Isa::avx512));
#elif defined(LMRT_ARCH_ARM)
  v.push_back(LMRT_ISA_KERNELS(neon, Isa::neon));
#endif
  return v;
}

MatmulFn scalar_fn(QType t) { return all_isa_kernels()[0].fn[static_cast<int>(t)]; }

struct Shape {
  size_t rows, n, n_tok, r0, r1;
};

// Shapes in blocks of the type: remainders of the tiles (odd rows, tokens), sub-ranges and, with enough
// rows, the decode path's separate streams.
std::vector<Shape> shapes(QType t) {
  const size_t e = block_elems(t);
  return {{9, e, 1, 0, 9},
          {37, 3 * e, 1, 3, 37},
          {150, 2 * e, 1, 5, 147},
          {13, 5 * e, 3, 1, 12},
          {11, 2 * e, 7, 0, 11},
          {6, 4 * e, 13, 2, 6},
          {70, e, 17, 0, 70},
          {300, 2 * e, 1, 0, 300},
          // The x86 super-block GEMMs (16-row groups and 2-block slabs on AVX-512, 8 and 4 on AVX2): a ragged
          // last group, a partial last slab, the smallest batch, token tiles split evenly (23 = 8 + 8 + 7).
          {35, 3 * e, 4, 0, 35},
          {48, 5 * e, 23, 5, 45},
          {20, e, 9, 1, 19}};
}

struct Result {
  std::vector<float> y;
  size_t ldy;
};

Result run(MatmulFn fn, const Weights& w, const Acts& a, const Shape& s) {
  Result res;
  res.ldy = s.rows + 3;
  res.y.assign(s.n_tok * res.ldy, -12345.0f);
  fn(w.bytes.data(), w.row_bytes, a.data(), a.row_bytes, s.n, s.n_tok, s.r0, s.r1, res.y.data(), res.ldy);
  return res;
}

// Outside [r0, r1) nothing may be written.
void expect_untouched(const Result& res, const Shape& s, const std::string& what) {
  for (size_t tok = 0; tok < s.n_tok; ++tok)
    for (size_t r = 0; r < res.ldy; ++r) {
      if (r < s.r0 || r >= s.r1) {
        ASSERT_EQ(res.y[tok * res.ldy + r], -12345.0f) << what << " wrote row " << r;
      }
    }
}

class QuantKernels : public ::testing::TestWithParam<QType> {};

TEST_P(QuantKernels, ScalarMatchesDoubleDequantizedReference) {
  const QType t = GetParam();
  uint32_t seed = 100 + static_cast<uint32_t>(t);
  for (const Shape& s : shapes(t)) {
    const Weights w = random_weights(t, s.rows, s.n, 4, ++seed);
    const Acts a = make_acts(t, s.n_tok, s.n, ++seed);
    const Result res = run(scalar_fn(t), w, a, s);
    const std::string what =
        std::string(type_name(t)) + " n=" + std::to_string(s.n) + " n_tok=" + std::to_string(s.n_tok);
    expect_untouched(res, s, what);
    for (size_t r = s.r0; r < s.r1; ++r) {
      Deq deq;
      for (size_t b = 0; b < s.n / block_elems(t); ++b)
        deq_block(t, w.bytes.data() + r * w.row_bytes + b * block_bytes(t), deq);
      ASSERT_EQ(deq.v.size(), s.n);
      for (size_t tok = 0; tok < s.n_tok; ++tok) {
        double ref = 0.0, mag = 0.0;
        for (size_t i = 0; i < s.n; ++i) {
          const double x = a.values[tok * s.n + i];
          ref += deq.v[i] * x;
          mag += deq.mag[i] * std::fabs(x);
        }
        ASSERT_NEAR(res.y[tok * res.ldy + r], ref, kTol * mag + 1e-30) << what << " row " << r << " token " << tok;
      }
    }
  }
}

TEST_P(QuantKernels, EveryIsaMatchesScalar) {
  const QType t = GetParam();
  uint32_t seed = 900 + static_cast<uint32_t>(t);
  for (const IsaKernels& k : all_isa_kernels()) {
    if (k.isa == Isa::scalar || !isa_available(k.isa)) continue;
    for (const Shape& s : shapes(t)) {
      const Weights w = random_weights(t, s.rows, s.n, 4, ++seed);
      const Acts a = make_acts(t, s.n_tok, s.n, ++seed);
      const Result want = run(scalar_fn(t), w, a, s);
      const Result got = run(k.fn[static_cast<int>(t)], w, a, s);
      const std::string what = std::string(isa_name(k.isa)) + " " + type_name(t) + " n=" + std::to_string(s.n) +
                               " n_tok=" + std::to_string(s.n_tok);
      expect_untouched(got, s, what);
      for (size_t r = s.r0; r < s.r1; ++r) {
        Deq deq;
        for (size_t b = 0; b < s.n / block_elems(t); ++b)
          deq_block(t, w.bytes.data() + r * w.row_bytes + b * block_bytes(t), deq);
        for (size_t tok = 0; tok < s.n_tok; ++tok) {
          double mag = 0.0;
          for (size_t i = 0; i < s.n; ++i) mag += deq.mag[i] * std::fabs(a.values[tok * s.n + i]);
          ASSERT_NEAR(got.y[tok * got.ldy + r], want.y[tok * want.ldy + r], kTol * mag + 1e-30)
              << what << " row " << r << " token " << tok;
        }
      }
    }
  }
}

// A batched decode step (one token per sequence, 2 to 16 sequences) on every ISA against the scalar kernel: every
// token count, over a ragged row range (partial row groups of the GEMMs at both ends) and a partial last slab.
TEST_P(QuantKernels, SmallBatchesEveryIsaMatchesScalar) {
  const QType t = GetParam();
  uint32_t seed = 3000 + 100 * static_cast<uint32_t>(t);
  for (const IsaKernels& k : all_isa_kernels()) {
    if (k.isa == Isa::scalar || !isa_available(k.isa)) continue;
    for (size_t n_tok = 2; n_tok <= 16; ++n_tok) {
      const Shape s{41, 3 * block_elems(t), n_tok, 3, 38};
      const Weights w = random_weights(t, s.rows, s.n, 4, ++seed);
      const Acts a = make_acts(t, s.n_tok, s.n, ++seed);
      const Result want = run(scalar_fn(t), w, a, s);
      const Result got = run(k.fn[static_cast<int>(t)], w, a, s);
      const std::string what = std::string(isa_name(k.isa)) + " " + type_name(t) + " n_tok=" + std::to_string(s.n_tok);
      expect_untouched(got, s, what);
      for (size_t r = s.r0; r < s.r1; ++r) {
        Deq deq;
        for (size_t b = 0; b < s.n / block_elems(t); ++b)
          deq_block(t, w.bytes.data() + r * w.row_bytes + b * block_bytes(t), deq);
        for (size_t tok = 0; tok < s.n_tok; ++tok) {
          double mag = 0.0;
          for (size_t i = 0; i < s.n; ++i) mag += deq.mag[i] * std::fabs(a.values[tok * s.n + i]);
          ASSERT_NEAR(got.y[tok * got.ldy + r], want.y[tok * want.ldy + r], kTol * mag + 1e-30)
              << what << " row " << r << " token " << tok;
        }
      }
    }
  }
}

// Every weight code bit set, the block's scales left as drawn.
void set_code_bits(QType t, uint8_t* p) {
  auto fill = [](auto& field) { std::memset(field, 0xFF, sizeof field); };
  switch (t) {
    case QType::q2_k:
      return fill(reinterpret_cast<BlockQ2_K*>(p)->qs);
    case QType::q3_k:
      fill(reinterpret_cast<BlockQ3_K*>(p)->hmask);
      return fill(reinterpret_cast<BlockQ3_K*>(p)->qs);
    case QType::q4_k:
      return fill(reinterpret_cast<BlockQ4_K*>(p)->qs);
    case QType::q5_k:
      fill(reinterpret_cast<BlockQ5_K*>(p)->qh);
      return fill(reinterpret_cast<BlockQ5_K*>(p)->qs);
    case QType::q6_k:
      fill(reinterpret_cast<BlockQ6_K*>(p)->qh);
      return fill(reinterpret_cast<BlockQ6_K*>(p)->ql);
    case QType::iq4_xs:
      return fill(reinterpret_cast<BlockIQ4_XS*>(p)->qs);
    case QType::q4_1:
      return fill(reinterpret_cast<BlockQ4_1*>(p)->qs);
    case QType::q5_0:
      fill(reinterpret_cast<BlockQ5_0*>(p)->qh);
      return fill(reinterpret_cast<BlockQ5_0*>(p)->qs);
    case QType::q5_1:
      fill(reinterpret_cast<BlockQ5_1*>(p)->qh);
      return fill(reinterpret_cast<BlockQ5_1*>(p)->qs);
    case QType::iq4_nl:
      return fill(reinterpret_cast<BlockIQ4_NL*>(p)->qs);
  }
}

// Every ISA's kernel against the scalar one on shape s with every code bit set and the largest activations of
// one sign: integer sums at their bounds.
void expect_largest_codes_match(QType t, const Shape& s) {
  Weights w = random_weights(t, s.rows, s.n, 4, 4242);
  for (size_t r = 0; r < s.rows; ++r)
    for (size_t b = 0; b < s.n / block_elems(t); ++b)
      set_code_bits(t, w.bytes.data() + r * w.row_bytes + b * block_bytes(t));
  const Acts a = make_acts(t, s.n_tok, s.n, 1, true);
  const Result want = run(scalar_fn(t), w, a, s);
  for (const IsaKernels& k : all_isa_kernels()) {
    if (k.isa == Isa::scalar || !isa_available(k.isa)) continue;
    const Result got = run(k.fn[static_cast<int>(t)], w, a, s);
    for (size_t r = s.r0; r < s.r1; ++r) {
      Deq deq;
      for (size_t b = 0; b < s.n / block_elems(t); ++b)
        deq_block(t, w.bytes.data() + r * w.row_bytes + b * block_bytes(t), deq);
      for (size_t tok = 0; tok < s.n_tok; ++tok) {
        double mag = 0.0;
        for (size_t i = 0; i < s.n; ++i) mag += deq.mag[i] * std::fabs(a.values[tok * s.n + i]);
        ASSERT_NEAR(got.y[tok * got.ldy + r], want.y[tok * want.ldy + r], kTol * mag + 1e-30)
            << isa_name(k.isa) << " " << type_name(t) << " n_tok=" << s.n_tok << " row " << r << " token " << tok;
      }
    }
  }
}

// The largest codes in a batch (the x86 batch GEMMs add products in 16 bits only as far as the largest code
// allows) and in decode (one token, enough rows for the separate row streams).
TEST_P(QuantKernels, LargestCodesEveryIsaMatchesScalar) {
  const QType t = GetParam();
  for (const Shape& s : {Shape{24, 2 * block_elems(t), 5, 0, 24}, Shape{70, 2 * block_elems(t), 1, 0, 70}})
    expect_largest_codes_match(t, s);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantKernels, ::testing::ValuesIn(kAllTypes),
                         [](const ::testing::TestParamInfo<QType>& info) {
                           return std::string(type_name(info.param));
                         });

// ggml's quantize_row_q8_K, written out: nearest_int is its round-half-to-even through 1.5 * 2^23. Not
// inlined, so the compiler cannot fuse the caller's product into the addition (AArch64 contracts a * b + c
// into one FMA, which would round the unrounded product).
[[gnu::noinline]] int nearest_int(float fval) {
  const float val = fval + 12582912.f;
  int i;
  std::memcpy(&i, &val, sizeof(int));
  return (i & 0x007fffff) - 0x00400000;
}

BlockQ8_K ggml_q8_k(const float* x) {
  BlockQ8_K y{};
  float max = 0, amax = 0;
  for (int j = 0; j < 256; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (!amax) return y;
  const float iscale = -127.f / max;
  for (int j = 0; j < 256; ++j) y.qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * x[j])));
  for (int j = 0; j < 16; ++j) {
    int sum = 0;
    for (int ii = 0; ii < 16; ++ii) sum += y.qs[j * 16 + ii];
    y.bsums[j] = static_cast<int16_t>(sum);
  }
  y.d = 1 / iscale;
  return y;
}

// Blocks that exercise the definition: ties of |x| with opposite signs (the first wins), a negative
// maximum, values exactly halfway between two steps, an all-zero block, tiny and huge magnitudes.
std::vector<float> q8_k_inputs() {
  std::mt19937 rng(7);
  std::vector<float> x = random_floats(256 * 12, rng);
  x[5] = 4.0f;
  x[9] = -4.0f;  // block 0: tie, positive first
  x[256 + 3] = -5.0f;
  x[256 + 200] = 5.0f;                                                                   // block 1: tie, negative first
  for (int j = 0; j < 256; ++j) x[512 + j] = -3.0f + 0.5f * static_cast<float>(j % 13);  // block 2: max negative
  for (int j = 0; j < 256; ++j) x[768 + j] = static_cast<float>(j % 255 - 127) + 0.5f;   // block 3: halves
  x[768 + 255] = 127.0f;
  std::fill(x.begin() + 1024, x.begin() + 1280, 0.0f);                  // block 4: zero
  for (int j = 0; j < 256; ++j) x[1280 + j] *= 1e-30f;                  // block 5: tiny
  for (int j = 0; j < 256; ++j) x[1536 + j] *= 1e30f;                   // block 6: huge
  for (int j = 0; j < 256; ++j) x[1792 + j] = j == 17 ? -1e-3f : 0.0f;  // block 7: one value
  return x;
}

TEST(QuantizeQ8K, ScalarMatchesGgmlDefinition) {
  const std::vector<float> x = q8_k_inputs();
  const size_t nb = x.size() / 256;
  std::vector<BlockQ8_K> got(nb);
  scalar::quantize_q8_k(x.data(), got.data(), x.size());
  for (size_t b = 0; b < nb; ++b) {
    const BlockQ8_K want = ggml_q8_k(x.data() + 256 * b);
    EXPECT_EQ(std::memcmp(&got[b], &want, sizeof want), 0) << "block " << b;
  }
  EXPECT_EQ(got[0].qs[5], -127);  // the first largest |x| (4) sets the sign: iscale = -127 / 4
  EXPECT_EQ(got[0].qs[9], 127);
  EXPECT_EQ(got[1].qs[3], -127);
  EXPECT_EQ(got[4].d, 0.0f);
}

TEST(QuantizeQ8K, EveryIsaBitIdentical) {
  const std::vector<float> x = q8_k_inputs();
  const size_t nb = x.size() / 256;
  std::vector<BlockQ8_K> want(nb);
  scalar::quantize_q8_k(x.data(), want.data(), x.size());
  for (const IsaKernels& k : all_isa_kernels()) {
    if (k.isa == Isa::scalar || !isa_available(k.isa)) continue;
    std::vector<BlockQ8_K> got(nb);
    k.quantize_q8_k(x.data(), got.data(), x.size());
    for (size_t b = 0; b < nb; ++b)
      EXPECT_EQ(std::memcmp(&got[b], &want[b], sizeof(BlockQ8_K)), 0) << isa_name(k.isa) << " block " << b;
  }
}

}  // namespace
}  // namespace lmrt::simd
