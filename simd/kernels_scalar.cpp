// Scalar reference kernels: the definition every SIMD table is tested against.
#include <cmath>
#include <cstring>

#include "formats/q4_0x16.h"
#include "runtime/util/fp16.h"
#include "simd/kernels.h"
#include "simd/quant_kernels.h"

namespace lmrt::simd {
namespace {

float dot_f32_row(const float* w, const float* x, size_t n) {
  float s = 0.0f;
  for (size_t i = 0; i < n; ++i) s += w[i] * x[i];
  return s;
}

float dot_f16_row(const uint16_t* w, const float* x, size_t n) {
  float s = 0.0f;
  for (size_t i = 0; i < n; ++i) s += fp16_to_f32(w[i]) * x[i];
  return s;
}

float dot_bf16_row(const uint16_t* w, const float* x, size_t n) {
  float s = 0.0f;
  for (size_t i = 0; i < n; ++i) s += bf16_to_f32(w[i]) * x[i];
  return s;
}

// Q8_0 weights meet float activations: int8 weights carry 8 bits already, and quantizing the
// activations to 8 bits as well flips near-tied top-1 tokens of Q8_0 models (measured on
// TinyStories-656K against its float32 reference: 4 flips in 146 positions, none without).
float dot_q8_0_row(const BlockQ8_0* w, const float* x, size_t nb) {
  float s = 0.0f;
  for (size_t b = 0; b < nb; ++b) {
    float acc = 0.0f;
    for (int j = 0; j < 32; ++j) acc += static_cast<float>(w[b].qs[j]) * x[b * 32 + j];
    s += acc * fp16_to_f32(w[b].d);
  }
  return s;
}

// Reads the activations' qs and d only; minus8_sum is a shortcut for SIMD kernels.
float dot_q4_0_row(const BlockQ4_0* w, const BlockQ8Act* x, size_t nb) {
  float s = 0.0f;
  for (size_t b = 0; b < nb; ++b) {
    int32_t acc = 0;
    for (int j = 0; j < 16; ++j) {
      acc += (static_cast<int32_t>(w[b].qs[j] & 0x0F) - 8) * x[b].qs[j];
      acc += (static_cast<int32_t>(w[b].qs[j] >> 4) - 8) * x[b].qs[j + 16];
    }
    s += static_cast<float>(acc) * (fp16_to_f32(w[b].d) * x[b].d);
  }
  return s;
}

// The reference for Q4_0x16 (formats/q4_0x16.h): the arithmetic of dot_q4_0_row, reading each
// row's scale and nibbles from its group's interleaved units.
void matmul_q4_0x16(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                    size_t r0, size_t r1, float* y, size_t ldy) {
  const size_t nb = n / 32;
  const auto* wb = static_cast<const uint8_t*>(w);
  for (size_t t = 0; t < n_tok; ++t) {
    const auto* xt = reinterpret_cast<const BlockQ8Act*>(static_cast<const uint8_t*>(x) + t * x_row_bytes);
    for (size_t r = r0; r < r1; ++r) {
      const uint8_t* group = wb + (r / kQ4_0x16Rows) * kQ4_0x16Rows * w_row_bytes;
      const size_t j = r % kQ4_0x16Rows;
      float s = 0.0f;
      for (size_t b = 0; b < nb; ++b) {
        const uint8_t* unit = group + b * kQ4_0x16UnitBytes;
        int32_t acc = 0;
        for (size_t c = 0; c < 4; ++c)
          for (size_t e = 0; e < 4; ++e) {
            const uint8_t q = unit[32 + 64 * c + 4 * j + e];
            acc += (static_cast<int32_t>(q & 0x0F) - 8) * xt[b].qs[4 * c + e];
            acc += (static_cast<int32_t>(q >> 4) - 8) * xt[b].qs[16 + 4 * c + e];
          }
        uint16_t d;
        std::memcpy(&d, unit + 2 * j, 2);
        s += static_cast<float>(acc) * (fp16_to_f32(d) * xt[b].d);
      }
      y[t * ldy + r] = s;
    }
  }
}

// Runs a row-dot function over the [r0, r1) x [0, n_tok) block.
template <typename W, typename X, float (*Dot)(const W*, const X*, size_t), size_t kElemsPerUnit>
void matmul_rows(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes, size_t n, size_t n_tok,
                 size_t r0, size_t r1, float* y, size_t ldy) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* xb = static_cast<const uint8_t*>(x);
  for (size_t t = 0; t < n_tok; ++t) {
    const X* xt = reinterpret_cast<const X*>(xb + t * x_row_bytes);
    for (size_t r = r0; r < r1; ++r)
      y[t * ldy + r] = Dot(reinterpret_cast<const W*>(wb + r * w_row_bytes), xt, n / kElemsPerUnit);
  }
}

void quantize_q8_act(const float* x, BlockQ8Act* y, size_t n) {
  for (size_t b = 0; b < n / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = d;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      y[b].qs[j] = static_cast<int8_t>(std::nearbyint(xb[j] * id));
      sum += y[b].qs[j];
    }
    y[b].minus8_sum = -8 * sum;
  }
}

void rmsnorm(float* out, const float* x, const float* w, size_t n, float eps) {
  float ss = 0.0f;
  for (size_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] * scale * w[i];
}

void softmax(float* x, size_t n) {
  float mx = x[0];
  for (size_t i = 1; i < n; ++i) mx = std::fmax(mx, x[i]);
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (size_t i = 0; i < n; ++i) x[i] *= inv;
}

void silu_mul(float* gate, const float* up, size_t n) {
  for (size_t i = 0; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add(float* y, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

void axpy(float* y, float a, const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

float dot_f16(const float* a, const uint16_t* b, size_t n) {
  float s = 0.0f;
  for (size_t i = 0; i < n; ++i) s += a[i] * fp16_to_f32(b[i]);
  return s;
}

void axpy_f16(float* y, float a, const uint16_t* x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += a * fp16_to_f32(x[i]);
}

void scores_f16(const float* q, const uint16_t* k, size_t stride, size_t n_keys, size_t dim, float scale, float* out) {
  for (size_t p = 0; p < n_keys; ++p) out[p] = dot_f16(q, k + p * stride, dim) * scale;
}

void weighted_sum_f16(float* out, const float* w, const uint16_t* v, size_t stride, size_t n_rows, size_t dim) {
  for (size_t i = 0; i < dim; ++i) out[i] = 0.0f;
  for (size_t p = 0; p < n_rows; ++p) axpy_f16(out, w[p], v + p * stride, dim);
}

void to_f16(const float* x, uint16_t* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}

void rope(float* v, const float* cs, size_t n_pairs) {
  for (size_t i = 0; i < n_pairs; ++i) {
    const float a = v[2 * i], b = v[2 * i + 1], c = cs[2 * i], s = cs[2 * i + 1];
    v[2 * i] = a * c - b * s;
    v[2 * i + 1] = a * s + b * c;
  }
}

// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), the approximation llama.cpp's GELU uses.
void gelu_mul(float* gate, const float* up, size_t n) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  for (size_t i = 0; i < n; ++i) {
    const float x = gate[i];
    gate[i] = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x))) * up[i];
  }
}

void softcap(float* x, size_t n, float cap) {
  const float inv = 1.0f / cap;
  for (size_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
}

void scale(float* x, float a, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] *= a;
}

void rope_neox(float* v, const float* cs, size_t n_pairs) {
  for (size_t i = 0; i < n_pairs; ++i) {
    const float a = v[i], b = v[i + n_pairs], c = cs[i], s = cs[n_pairs + i];
    v[i] = a * c - b * s;
    v[i + n_pairs] = a * s + b * c;
  }
}

constexpr ActivationFormat kF32 = ActivationFormat::f32, kQ8_32 = ActivationFormat::q8_32;

const Kernels kScalar = {
    .isa = Isa::scalar,
    .matmul =
        {
            .f32 = {matmul_rows<float, float, dot_f32_row, 1>, kF32},
            .f16 = {matmul_rows<uint16_t, float, dot_f16_row, 1>, kF32},
            .q4_0 = {matmul_rows<BlockQ4_0, BlockQ8Act, dot_q4_0_row, 32>, kQ8_32},
            .q4_1 = {scalar::matmul_q4_1, ActivationFormat::q8_32},
            .q5_0 = {scalar::matmul_q5_0, ActivationFormat::q8_32},
            .q5_1 = {scalar::matmul_q5_1, ActivationFormat::q8_32},
            .q8_0 = {matmul_rows<BlockQ8_0, float, dot_q8_0_row, 32>, kF32},
            .q2_k = {scalar::matmul_q2_k, ActivationFormat::q8_k},
            .q3_k = {scalar::matmul_q3_k, ActivationFormat::q8_k},
            .q4_k = {scalar::matmul_q4_k, ActivationFormat::q8_k},
            .q5_k = {scalar::matmul_q5_k, ActivationFormat::q8_k},
            .q6_k = {scalar::matmul_q6_k, ActivationFormat::q8_k},
            .iq4_nl = {scalar::matmul_iq4_nl, ActivationFormat::q8_32},
            .iq4_xs = {scalar::matmul_iq4_xs, ActivationFormat::q8_k},
            .bf16 = {matmul_rows<uint16_t, float, dot_bf16_row, 1>, kF32},
            .q4_0x16 = {matmul_q4_0x16, kQ8_32},
            .q4_kx8 = {scalar::matmul_q4_kx8, ActivationFormat::q8_k},
            .q6_kx8 = {scalar::matmul_q6_kx8, ActivationFormat::q8_k},
        },
    .quantize_q8_act = quantize_q8_act,
    .quantize_q8_k = scalar::quantize_q8_k,
    .rmsnorm = rmsnorm,
    .softmax = softmax,
    .silu_mul = silu_mul,
    .add = add,
    .dot_f32 = dot_f32_row,
    .axpy = axpy,
    .dot_f16 = dot_f16,
    .axpy_f16 = axpy_f16,
    .scores_f16 = scores_f16,
    .weighted_sum_f16 = weighted_sum_f16,
    .to_f16 = to_f16,
    .attend_f16 = nullptr,
    .attend_heads_f16 = nullptr,
    .rope = rope,
    .gelu_mul = gelu_mul,
    .softcap = softcap,
    .scale = scale,
    .rope_neox = rope_neox,
};

}  // namespace

const Kernels* scalar_kernels() { return &kScalar; }

}  // namespace lmrt::simd
