// The float kernels of the SIMD tables (RMSNorm, softmax, SiLU·mul, add, RoPE), written once over
// xsimd batches and instantiated by each ISA file for its own xsimd architecture.
//
// Include only from an ISA file (kernels_avx2.cpp, kernels_avx512.cpp, kernels_neon.cpp). Everything
// here sits in an anonymous namespace, so each file gets its own copy compiled with its own flags; the
// xsimd code each copy instantiates is specialised on that file's architecture. Horizontal sums and
// maxima go through a small array instead of xsimd's reducers because the AVX-512 reducer calls the
// AVX2 one, and that instantiation would be shared, at link time, with the AVX2 file's
// (tests/isa/no_shared_weak_symbols.sh checks that no two ISA files share a weak symbol).
#pragma once

#include <cmath>
#include <cstddef>
#include <xsimd/xsimd.hpp>

namespace lmrt::simd {
namespace {

template <class Arch>
struct FloatOps {
  using batch = xsimd::batch<float, Arch>;
  static constexpr size_t kLanes = batch::size;

  static float lanes_sum(const batch& v) {
    alignas(64) float t[kLanes];
    v.store_aligned(t);
    float s = 0.0f;
    for (size_t i = 0; i < kLanes; ++i) s += t[i];
    return s;
  }
  static float lanes_max(const batch& v) {
    alignas(64) float t[kLanes];
    v.store_aligned(t);
    float m = t[0];
    for (size_t i = 1; i < kLanes; ++i) m = std::fmax(m, t[i]);
    return m;
  }

  // out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]; out may alias x.
  static void rmsnorm(float* out, const float* x, const float* w, size_t n, float eps) {
    batch acc(0.0f);
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      const batch v = batch::load_unaligned(x + i);
      acc = xsimd::fma(v, v, acc);
    }
    float ss = lanes_sum(acc);
    for (size_t j = i; j < n; ++j) ss += x[j] * x[j];
    const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    const batch vs(scale);
    for (i = 0; i + kLanes <= n; i += kLanes)
      (batch::load_unaligned(x + i) * vs * batch::load_unaligned(w + i)).store_unaligned(out + i);
    for (; i < n; ++i) out[i] = x[i] * scale * w[i];
  }

  // In place, numerically stable: exp(x - max) / sum.
  static void softmax(float* x, size_t n) {
    if (n == 0) return;
    float mx = x[0];
    size_t i = 0;
    if (n >= kLanes) {
      batch m = batch::load_unaligned(x);
      for (i = kLanes; i + kLanes <= n; i += kLanes) m = xsimd::max(m, batch::load_unaligned(x + i));
      mx = lanes_max(m);
    }
    for (; i < n; ++i) mx = std::fmax(mx, x[i]);
    const batch vmx(mx);
    batch acc(0.0f);
    for (i = 0; i + kLanes <= n; i += kLanes) {
      const batch e = xsimd::exp(batch::load_unaligned(x + i) - vmx);
      e.store_unaligned(x + i);
      acc += e;
    }
    float sum = lanes_sum(acc);
    for (; i < n; ++i) sum += (x[i] = std::exp(x[i] - mx));
    const float inv = 1.0f / sum;
    const batch vinv(inv);
    for (i = 0; i + kLanes <= n; i += kLanes) (batch::load_unaligned(x + i) * vinv).store_unaligned(x + i);
    for (; i < n; ++i) x[i] *= inv;
  }

  // gate[i] = silu(gate[i]) * up[i].
  static void silu_mul(float* gate, const float* up, size_t n) {
    const batch one(1.0f);
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      const batch g = batch::load_unaligned(gate + i);
      (g / (one + xsimd::exp(-g)) * batch::load_unaligned(up + i)).store_unaligned(gate + i);
    }
    for (; i < n; ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }

  // gate[i] = gelu(gate[i]) * up[i] (tanh approximation); the same formula as the scalar reference.
  static void gelu_mul(float* gate, const float* up, size_t n) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    const batch half(0.5f), one(1.0f), c(kSqrt2OverPi), k(0.044715f);
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      const batch x = batch::load_unaligned(gate + i);
      const batch t = xsimd::tanh(c * x * xsimd::fma(k * x, x, one));
      (half * x * (one + t) * batch::load_unaligned(up + i)).store_unaligned(gate + i);
    }
    for (; i < n; ++i) {
      const float x = gate[i];
      gate[i] = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x))) * up[i];
    }
  }

  // x[i] = cap * tanh(x[i] / cap).
  static void softcap(float* x, size_t n, float cap) {
    const float inv = 1.0f / cap;
    const batch vcap(cap), vinv(inv);
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      (vcap * xsimd::tanh(batch::load_unaligned(x + i) * vinv)).store_unaligned(x + i);
    for (; i < n; ++i) x[i] = cap * std::tanh(x[i] * inv);
  }

  // x[i] *= a.
  static void scale(float* x, float a, size_t n) {
    const batch va(a);
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) (batch::load_unaligned(x + i) * va).store_unaligned(x + i);
    for (; i < n; ++i) x[i] *= a;
  }

  // NeoX RoPE: (v[i], v[i + n_pairs]) turned by cosines cs[0, n_pairs) and sines cs[n_pairs, 2 n_pairs).
  static void rope_neox(float* v, const float* cs, size_t n_pairs) {
    float* hi = v + n_pairs;
    const float* sn = cs + n_pairs;
    size_t i = 0;
    for (; i + kLanes <= n_pairs; i += kLanes) {
      const batch a = batch::load_unaligned(v + i), b = batch::load_unaligned(hi + i);
      const batch c = batch::load_unaligned(cs + i), s = batch::load_unaligned(sn + i);
      xsimd::fms(a, c, b * s).store_unaligned(v + i);
      xsimd::fma(a, s, b * c).store_unaligned(hi + i);
    }
    for (; i < n_pairs; ++i) {
      const float a = v[i], b = hi[i], c = cs[i], s = sn[i];
      v[i] = a * c - b * s;
      hi[i] = a * s + b * c;
    }
  }

  // y[i] += x[i].
  static void add(float* y, const float* x, size_t n) {
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
      (batch::load_unaligned(y + i) + batch::load_unaligned(x + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] += x[i];
  }

  // Lane masks for RoPE: swap each pair, repeat each pair's first or second element.
  struct SwapPairs {
    static constexpr uint32_t get(size_t i, size_t) { return static_cast<uint32_t>(i ^ 1); }
  };
  struct EvenOfPair {
    static constexpr uint32_t get(size_t i, size_t) { return static_cast<uint32_t>(i & ~size_t{1}); }
  };
  struct OddOfPair {
    static constexpr uint32_t get(size_t i, size_t) { return static_cast<uint32_t>(i | 1); }
  };

  // Rotates the pairs (v[2i], v[2i+1]) by the angles whose cosine and sine are cs[2i], cs[2i+1]:
  // (a, b) -> (a cos - b sin, a sin + b cos).
  static void rope(float* v, const float* cs, size_t n_pairs) {
    using index = xsimd::batch<uint32_t, Arch>;
    const auto swap = xsimd::make_batch_constant<index, SwapPairs>();
    const auto even = xsimd::make_batch_constant<index, EvenOfPair>();
    const auto odd = xsimd::make_batch_constant<index, OddOfPair>();
    alignas(64) float sign_init[kLanes];
    for (size_t i = 0; i < kLanes; ++i) sign_init[i] = (i & 1) != 0 ? 1.0f : -1.0f;
    const batch sign = batch::load_aligned(sign_init);
    const size_t n = 2 * n_pairs;
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      const batch x = batch::load_unaligned(v + i);
      const batch c = batch::load_unaligned(cs + i);
      const batch cos_ = xsimd::swizzle(c, even), sin_ = xsimd::swizzle(c, odd);
      xsimd::fma(x, cos_, xsimd::swizzle(x, swap) * sin_ * sign).store_unaligned(v + i);
    }
    for (; i < n; i += 2) {
      const float a = v[i], b = v[i + 1], c = cs[i], s = cs[i + 1];
      v[i] = a * c - b * s;
      v[i + 1] = a * s + b * c;
    }
  }
};

}  // namespace
}  // namespace lmrt::simd
