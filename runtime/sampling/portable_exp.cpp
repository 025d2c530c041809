#include "runtime/sampling/portable_exp.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "runtime/sampling/exact_fp.h"

namespace lmrt {
namespace {

// 2^k for -1022 <= k <= 1023.
double pow2(int64_t k) { return std::bit_cast<double>(static_cast<uint64_t>(k + 1023) << 52); }

}  // namespace

double portable_exp(double x) {
  if (x != x) return x;
  if (x > 709.78) return HUGE_VAL;
  if (x < -745.2) return 0.0;
  // x = k*ln2 + r with |r| <= ln2/2; ln2 is split so that k*ln2_hi is exact (ln2_hi has 21 trailing
  // zero bits and |k| < 1100) and the reduction loses nothing.
  constexpr double kLog2e = 1.4426950408889634074;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  // Round to nearest (halves away from zero) by truncating conversion: one instruction, no libm.
  const double t = x * kLog2e;
  const int64_t ki = static_cast<int64_t>(t + (t >= 0 ? 0.5 : -0.5));
  const double k = static_cast<double>(ki);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  // Taylor series of e^r to degree 13: the remainder r^14/14! < 2e-17 for |r| <= 0.35.
  constexpr double c[14] = {
      1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,       1.0 / 120,       1.0 / 720,
      1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};
  double p = c[13];
  for (int i = 12; i >= 0; --i) p = p * r + c[i];
  // Scale by 2^k, built from its bits. Exact for normal results; for subnormal ones, an exact
  // scaling by 2^(k+64) first leaves the single rounding to the final multiplication.
  if (ki > 1023) return (p * pow2(ki - 1)) * 2.0;
  if (ki >= -1022) return p * pow2(ki);
  return (p * pow2(ki + 64)) * 0x1.0p-64;
}

}  // namespace lmrt
