// The mirostat plugin on known logits, against values worked out by hand from the definitions
// (Basu et al. 2021; llama.cpp's reference behaviour), with the RNG draw reproduced from the seed.
#include <cmath>
#include <vector>

#include "runtime/sampling/rng.h"
#include "tests/unit/plugin_test_support.h"

namespace lmrt {
namespace {

using test::LoadedPlugin;

// p = 1/2, 1/4, 1/8, 1/8: surprises of 1, 2, 3 and 3 bits.
const float kDyadic[] = {std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.125f)};

TEST(PluginMirostatTest, V2KeepsTokensWithinMuAndUpdatesMu) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_MIROSTAT);
  const uint64_t seed = 7;
  // tau = 1.25: mu starts at 2.5, so tokens 0 and 1 (1 and 2 bits) are kept, renormalised to 2/3, 1/3.
  auto chain = p.chain("mirostat_v2(tau=1.25,eta=1)", seed);
  EXPECT_EQ(chain->canonical_text(), "mirostat_v2(tau=1.25,eta=1)");
  int32_t token = -1;
  ASSERT_TRUE(chain->sample(kDyadic, 4, &token).ok());
  const CandidateArray& c = chain->last_candidates();
  ASSERT_EQ(c.size, 2u);
  EXPECT_EQ(c.data[0].id, 0);
  EXPECT_NEAR(c.data[0].p, 2.0 / 3.0, 1e-6);
  EXPECT_NEAR(c.data[1].p, 1.0 / 3.0, 1e-6);
  // The draw: the first candidate whose cumulative probability exceeds u.
  Rng rng(seed);
  const double u = rng.uniform_double();
  const int32_t expected = u < 2.0 / 3.0 ? 0 : 1;
  EXPECT_EQ(token, expected);
  // mu -= eta * (surprise - tau): token 0 -> 2.5 - (log2(3/2) - 1.25) = 3.165 (all 4 kept next);
  // token 1 -> 2.5 - (log2 3 - 1.25) = 2.165 (2 kept next).
  const double mu = 2.5 - (-std::log2(expected == 0 ? 2.0 / 3.0 : 1.0 / 3.0) - 1.25);
  ASSERT_TRUE(chain->sample(kDyadic, 4, &token).ok());
  const size_t kept = mu >= 3.0 ? 4 : mu >= 2.0 ? 2 : 1;
  EXPECT_EQ(chain->last_candidates().size, kept) << "mu " << mu;
}

TEST(PluginMirostatTest, V2AlwaysKeepsOneAndResetRestoresMu) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_MIROSTAT);
  // tau = 0.25: mu = 0.5 is below every surprise, so only the most likely token stays (p = 1).
  auto chain = p.chain("mirostat_v2(tau=0.25,eta=0.5)", 3);
  int32_t token = -1;
  ASSERT_TRUE(chain->sample(kDyadic, 4, &token).ok());
  EXPECT_EQ(token, 0);
  EXPECT_EQ(chain->last_candidates().size, 1u);
  EXPECT_FLOAT_EQ(chain->last_candidates().data[0].p, 1.0f);
  // surprise 0 -> mu = 0.5 + 0.5 * 0.25 = 0.625, still only one.
  ASSERT_TRUE(chain->sample(kDyadic, 4, &token).ok());
  EXPECT_EQ(chain->last_candidates().size, 1u);
}

TEST(PluginMirostatTest, V1EstimatesZipfExponentAndTruncatesToK) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_MIROSTAT);
  // Zipf logits with s = 2 over N = 16 tokens: p_i ∝ 1/(i+1)^2, so the estimate is exactly s_hat = 2.
  constexpr int kN = 16;
  std::vector<float> logits(kN);
  for (int i = 0; i < kN; ++i) logits[i] = -2.0f * std::log(static_cast<float>(i + 1));
  const uint64_t seed = 11;
  auto chain = p.chain("mirostat(tau=2,eta=0.5,m=100)", seed);
  EXPECT_EQ(chain->canonical_text(), "mirostat(tau=2,eta=0.5,m=100)");
  // mu = 4: k = (eps 2^mu / (1 - N^-eps))^(1/s) with eps = 1 -> sqrt(16 / (15/16)) = 4.131 -> 4.
  int32_t token = -1;
  ASSERT_TRUE(chain->sample(logits.data(), kN, &token).ok());
  const CandidateArray& c = chain->last_candidates();
  ASSERT_EQ(c.size, 4u);
  const double w[] = {1.0, 1.0 / 4, 1.0 / 9, 1.0 / 16};
  const double sum = w[0] + w[1] + w[2] + w[3];
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c.data[i].id, i);
    EXPECT_NEAR(c.data[i].p, w[i] / sum, 1e-6);
  }
  Rng rng(seed);
  const double u = rng.uniform_double();
  int32_t expected = 0;
  double cum = 0;
  for (int i = 0; i < 4; ++i) {
    cum += w[i] / sum;
    if (u < cum) {
      expected = i;
      break;
    }
  }
  EXPECT_EQ(token, expected);
  // Next step: mu' = 4 - 0.5 (surprise - 2), k' = floor(sqrt(2^mu' * 16/15)).
  const double mu = 4.0 - 0.5 * (-std::log2(w[expected] / sum) - 2.0);
  const size_t k = static_cast<size_t>(std::sqrt(std::pow(2.0, mu) * 16.0 / 15.0));
  ASSERT_TRUE(chain->sample(logits.data(), kN, &token).ok());
  EXPECT_EQ(chain->last_candidates().size, k) << "mu " << mu;
}

TEST(PluginMirostatTest, RefusesBadParameters) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_MIROSTAT);
  std::unique_ptr<SamplerChain> chain;
  EXPECT_EQ(SamplerChain::parse("mirostat_v2(tau=-1)", p.registry, 1, &chain).code(), Code::plugin);
  EXPECT_EQ(SamplerChain::parse("mirostat_v2(m=5)", p.registry, 1, &chain).code(), Code::plugin);
  EXPECT_EQ(SamplerChain::parse("mirostat(eta=2)", p.registry, 1, &chain).code(), Code::plugin);
  // A selecting sampler must be last.
  EXPECT_EQ(SamplerChain::parse("mirostat_v2 top_k(3)", p.registry, 1, &chain).code(), Code::invalid_argument);
}

}  // namespace
}  // namespace lmrt
