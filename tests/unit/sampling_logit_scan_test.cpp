// The vectorized logit scans against their float definitions, at every length around the block and
// unroll sizes, with the special values placed at every position class (head, unrolled body, tail).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "runtime/sampling/logit_scan.h"

namespace lmrt {
namespace {

size_t reference_first(const std::vector<float>& x) {
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i] < INFINITY)) return i;
  return x.size();
}

float reference_max(const std::vector<float>& x) {
  float m = -INFINITY;
  for (float v : x) m = v > m ? v : m;
  return m;
}

float negative_nan() {
  const uint32_t u = 0xffc00001u;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(LogitScan, FindsTheFirstNanOrPositiveInfinity) {
  std::mt19937 rng(7);
  std::normal_distribution<float> logit(0.0f, 8.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), negative_nan(), INFINITY};
  for (size_t n : {1, 7, 8, 9, 255, 256, 257, 600, 32000}) {
    std::vector<float> x(n);
    for (float& v : x) v = logit(rng);
    x[n / 2] = -INFINITY;  // allowed: a banned token
    EXPECT_EQ(first_nan_or_inf(x.data(), n), n) << n;
    for (float s : specials)
      for (size_t at : {size_t{0}, n / 3, n - 1}) {
        std::vector<float> y = x;
        y[at] = s;
        if (at + 1 < n) y[n - 1] = INFINITY;  // a later offender does not hide the first
        EXPECT_EQ(first_nan_or_inf(y.data(), n), reference_first(y)) << n << " " << at;
        EXPECT_EQ(first_nan_or_inf(y.data(), n), at) << n << " " << at;
      }
  }
}

TEST(LogitScan, MaximumIsTheFloatMaximum) {
  std::mt19937 rng(11);
  std::normal_distribution<float> logit(0.0f, 8.0f);
  for (size_t n : {1, 2, 7, 8, 9, 15, 16, 17, 100, 32000}) {
    for (int round = 0; round < 20; ++round) {
      std::vector<float> x(n);
      for (float& v : x) v = logit(rng);
      if (round % 4 == 1)
        for (float& v : x) v = -std::fabs(v) - 1.0f;  // all negative
      if (round % 4 == 2)
        for (size_t i = 0; i < n; i += 2) x[i] = -INFINITY;
      if (round % 4 == 3) x[rng() % n] = 1e30f;
      EXPECT_EQ(max_logit(x.data(), n), reference_max(x)) << n << " " << round;
    }
  }
  const std::vector<float> banned(33, -INFINITY);
  EXPECT_EQ(max_logit(banned.data(), banned.size()), -INFINITY);
  const std::vector<float> zeros = {-0.0f, -1.0f, 0.0f, -0.0f};
  EXPECT_EQ(max_logit(zeros.data(), zeros.size()), 0.0f);   // either zero: they compare equal
  const std::vector<float> tiny = {-3.0f, -1e-40f, -2.0f};  // a denormal keeps its order
  EXPECT_EQ(max_logit(tiny.data(), tiny.size()), -1e-40f);
}

}  // namespace
}  // namespace lmrt
