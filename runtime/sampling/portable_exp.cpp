#include "runtime/sampling/portable_exp.h"

#include <cmath>

#include "runtime/sampling/exact_fp.h"

namespace lmrt {

double portable_exp(double x) {
  if (x != x) return x;
  if (x > 709.78) return HUGE_VAL;
  if (x < -745.2) return 0.0;
  // x = k*ln2 + r with |r| <= ln2/2; ln2 is split so that k*ln2_hi is exact (ln2_hi has 21 trailing
  // zero bits and |k| < 1100) and the reduction loses nothing.
  constexpr double kLog2e = 1.4426950408889634074;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double k = std::floor(x * kLog2e + 0.5);
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  // Taylor series of e^r to degree 13: the remainder r^14/14! < 2e-17 for |r| <= 0.35.
  constexpr double c[14] = {
      1.0,        1.0,         1.0 / 2,      1.0 / 6,       1.0 / 24,       1.0 / 120,       1.0 / 720,
      1.0 / 5040, 1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0};
  double p = c[13];
  for (int i = 12; i >= 0; --i) p = p * r + c[i];
  // Scaling by 2^k is exact unless the result is subnormal, where ldexp rounds correctly.
  return std::ldexp(p, static_cast<int>(k));
}

}  // namespace lmrt
