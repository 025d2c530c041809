#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/sampling/logprobs.h"
#include "runtime/sampling/rng.h"

namespace lmrt {
namespace {

TEST(SamplingLogprobs, LogSoftmaxOfKnownDistribution) {
  // Logits log(p) + 7: the shift must not matter. Token order: p = 0.1, 0.4, 0.05, 0.3, 0.15.
  const double p[] = {0.1, 0.4, 0.05, 0.3, 0.15};
  std::vector<float> logits;
  for (double x : p) logits.push_back(static_cast<float>(std::log(x) + 7.0));
  TokenLogprobs out;
  ASSERT_TRUE(compute_logprobs(logits.data(), 5, 2, 3, &out).ok());
  EXPECT_EQ(out.chosen.token, 2);
  EXPECT_NEAR(out.chosen.logprob, std::log(0.05), 1e-5);
  ASSERT_EQ(out.n_top, 3);
  EXPECT_EQ(out.top[0].token, 1);
  EXPECT_EQ(out.top[1].token, 3);
  EXPECT_EQ(out.top[2].token, 4);
  EXPECT_NEAR(out.top[0].logprob, std::log(0.4), 1e-5);
  EXPECT_NEAR(out.top[1].logprob, std::log(0.3), 1e-5);
  EXPECT_NEAR(out.top[2].logprob, std::log(0.15), 1e-5);
}

TEST(SamplingLogprobs, TopNIsCappedByVocabularyAndTiesGoToLowerIds) {
  const float logits[] = {1.0f, 2.0f, 2.0f, 0.0f};
  TokenLogprobs out;
  ASSERT_TRUE(compute_logprobs(logits, 4, 0, 20, &out).ok());
  ASSERT_EQ(out.n_top, 4);
  EXPECT_EQ(out.top[0].token, 1);
  EXPECT_EQ(out.top[1].token, 2);
  EXPECT_EQ(out.top[2].token, 0);
  EXPECT_EQ(out.top[3].token, 3);
  double total = 0;
  for (int i = 0; i < out.n_top; ++i) total += std::exp(out.top[i].logprob);
  EXPECT_NEAR(total, 1.0, 1e-6);
  ASSERT_TRUE(compute_logprobs(logits, 4, 0, 0, &out).ok());
  EXPECT_EQ(out.n_top, 0);
}

TEST(SamplingLogprobs, Top20OfLargeVocabularyMatchesFullSort) {
  constexpr int kVocab = 32000;
  std::vector<float> logits(kVocab);
  Rng rng(5);
  for (float& l : logits) l = rng.uniform_float() * 30.0f - 15.0f;
  logits[123] = -INFINITY;  // an impossible token is fine
  std::vector<int32_t> order(kVocab);
  for (int i = 0; i < kVocab; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  TokenLogprobs out;
  ASSERT_TRUE(compute_logprobs(logits.data(), kVocab, 123, kMaxTopLogprobs, &out).ok());
  EXPECT_EQ(out.chosen.logprob, -INFINITY);
  ASSERT_EQ(out.n_top, 20);
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l));
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(out.top[i].token, order[i]) << i;
    EXPECT_NEAR(out.top[i].logprob, logits[order[i]] - std::log(sum), 1e-4) << i;
  }
}

TEST(SamplingLogprobs, RefusesBadArguments) {
  const float logits[] = {0.0f, 1.0f};
  const float bad[] = {0.0f, NAN};
  const float banned[] = {-INFINITY, -INFINITY};
  TokenLogprobs out;
  EXPECT_EQ(compute_logprobs(logits, 2, 2, 1, &out).code(), Code::invalid_argument);
  EXPECT_EQ(compute_logprobs(logits, 2, -1, 1, &out).code(), Code::invalid_argument);
  EXPECT_EQ(compute_logprobs(logits, 2, 0, 21, &out).code(), Code::invalid_argument);
  EXPECT_EQ(compute_logprobs(logits, 2, 0, -1, &out).code(), Code::invalid_argument);
  EXPECT_EQ(compute_logprobs(bad, 2, 0, 1, &out).code(), Code::invalid_argument);
  EXPECT_EQ(compute_logprobs(banned, 2, 0, 1, &out).code(), Code::invalid_argument);
  EXPECT_EQ(compute_logprobs(nullptr, 2, 0, 1, &out).code(), Code::invalid_argument);
}

}  // namespace
}  // namespace lmrt
