#include "runtime/sampling/logit_scan.h"

#include <bit>
#include <cstdint>

namespace lmrt {

namespace {

constexpr uint32_t kAbsMask = 0x7fffffffu, kInfBits = 0x7f800000u;

uint32_t bits_of(const float* p) { return std::bit_cast<uint32_t>(*p); }

// The float's bits as an int32 in the float's order (for non-NaN values; -0 sorts below +0): the negative
// values' magnitude bits flipped. The map is its own inverse.
int32_t ordered(uint32_t u) {
  const int32_t s = std::bit_cast<int32_t>(u);
  return s ^ static_cast<int32_t>(static_cast<uint32_t>(s >> 31) & kAbsMask);
}

// NaN (either sign) or +inf.
bool nan_or_inf(uint32_t u) { return (u & kAbsMask) > kInfBits || u == kInfBits; }

}  // namespace

size_t first_nan_or_inf(const float* x, size_t n) {
  // Blocks of 256 with a branch-free test each; the offender is looked for in the block that has one.
  constexpr size_t kBlock = 256;
  for (size_t i0 = 0; i0 < n; i0 += kBlock) {
    const size_t i1 = n - i0 < kBlock ? n : i0 + kBlock;
    uint32_t bad = 0;
    for (size_t i = i0; i < i1; ++i) bad |= nan_or_inf(bits_of(x + i)) ? 1u : 0u;
    if (bad != 0)
      for (size_t i = i0; i < i1; ++i)
        if (nan_or_inf(bits_of(x + i))) return i;
  }
  return n;
}

float max_logit(const float* x, size_t n) {
  // Eight independent maxima keep the pass from waiting on one dependency chain.
  int32_t m[8];
  for (int32_t& v : m) v = ordered(bits_of(x));
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
      const int32_t v = ordered(bits_of(x + i + k));
      m[k] = v > m[k] ? v : m[k];
    }
  for (; i < n; ++i) {
    const int32_t v = ordered(bits_of(x + i));
    m[0] = v > m[0] ? v : m[0];
  }
  int32_t best = m[0];
  for (int k = 1; k < 8; ++k) best = m[k] > best ? m[k] : best;
  return std::bit_cast<float>(ordered(std::bit_cast<uint32_t>(best)));  // ordered is its own inverse
}

}  // namespace lmrt
