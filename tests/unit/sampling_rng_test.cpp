#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>

#include "runtime/sampling/portable_exp.h"
#include "runtime/sampling/rng.h"

namespace lmrt {
namespace {

// Published reference outputs of xoshiro256** from the state {1, 2, 3, 4} (as in the test suite of
// the rand_xoshiro crate, produced with the authors' reference C implementation).
TEST(SamplingRng, XoshiroMatchesReferenceVectors) {
  Rng rng = Rng::from_state({1, 2, 3, 4});
  const uint64_t expected[] = {11520u,
                               0u,
                               1509978240u,
                               1215971899390074240u,
                               1216172134540287360u,
                               607988272756665600u,
                               16172922978634559625u,
                               8476171486693032832u,
                               10595114339597558777u,
                               2904607092377533576u};
  for (uint64_t e : expected) EXPECT_EQ(rng.next_u64(), e);
}

// splitmix64 from state 0: the widely published first outputs.
TEST(SamplingRng, SplitMix64MatchesReferenceVectors) {
  uint64_t state = 0;
  EXPECT_EQ(splitmix64_next(state), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(splitmix64_next(state), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(splitmix64_next(state), 0x06C45D188009454Full);
  EXPECT_EQ(splitmix64_next(state), 0xF88BB8A8724C81ECull);
}

TEST(SamplingRng, SeedFillsStateWithSplitMix64Outputs) {
  Rng rng(0);
  const std::array<uint64_t, 4> expected = {0xE220A8397B1DCDAFull, 0x6E789E6AA1B965F4ull, 0x06C45D188009454Full,
                                            0xF88BB8A8724C81ECull};
  EXPECT_EQ(rng.state(), expected);
  rng.next_u64();
  rng.reseed(0);
  EXPECT_EQ(rng.state(), expected);
  EXPECT_EQ(Rng::from_state({0, 0, 0, 0}).state(), expected);  // the all-zero state is refused
}

TEST(SamplingRng, UniformsUseTheTopBitsOfOneOutput) {
  Rng a(42), b(42);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = b.next_u64();
    EXPECT_EQ(a.uniform_float(), static_cast<float>(x >> 40) / 16777216.0f);
    const uint64_t y = b.next_u64();
    EXPECT_EQ(a.uniform_double(), static_cast<double>(y >> 11) / 9007199254740992.0);
  }
}

TEST(SamplingRng, UniformDoubleIsInRangeAndBalanced) {
  Rng rng(7);
  double sum = 0;
  int below_quarter = 0;
  constexpr int kN = 100000;
  for (int i = 0; i < kN; ++i) {
    const double u = rng.uniform_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    below_quarter += u < 0.25;
  }
  // Mean 0.5 with standard error 0.29/sqrt(N) ~ 0.0009; a quarter below 0.25 with error ~0.0014.
  EXPECT_NEAR(sum / kN, 0.5, 0.005);
  EXPECT_NEAR(static_cast<double>(below_quarter) / kN, 0.25, 0.007);
}

TEST(SamplingRng, DifferentSeedsGiveDifferentStreams) {
  Rng a(1), b(2);
  int equal = 0;
  for (int i = 0; i < 64; ++i) equal += a.next_u64() == b.next_u64();
  EXPECT_EQ(equal, 0);
}

TEST(SamplingPortableExp, MatchesLibmClosely) {
  EXPECT_EQ(portable_exp(0.0), 1.0);
  EXPECT_EQ(portable_exp(-800.0), 0.0);
  EXPECT_TRUE(std::isinf(portable_exp(800.0)));
  EXPECT_TRUE(std::isnan(portable_exp(NAN)));
  EXPECT_EQ(portable_exp(-INFINITY), 0.0);
  for (double x = -700; x <= 700; x += 0.37) {
    const double want = std::exp(x);
    EXPECT_NEAR(portable_exp(x) / want, 1.0, 1e-15) << "x=" << x;
  }
  EXPECT_NEAR(portable_exp(709.78) / std::exp(709.78), 1.0, 1e-15);
  EXPECT_NEAR(portable_exp(-740.0) / std::exp(-740.0), 1.0, 1e-2);  // subnormal: few bits left
  EXPECT_EQ(portable_exp(-744.0), std::exp(-744.0));                // the smallest subnormals
  for (double x = -1; x <= 1; x += 1.0 / 1024) {
    EXPECT_NEAR(portable_exp(x) / std::exp(x), 1.0, 4e-16) << "x=" << x;
  }
}

}  // namespace
}  // namespace lmrt
