// Each built-in sampler alone, on known logits, against hand-computed results.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/candidates.h"
#include "runtime/sampling/rng.h"

namespace lmrt {
namespace {

// Candidates owning their storage; candidate i is token i with the given logit.
struct Cands {
  explicit Cands(const std::vector<float>& logits) : buf(logits.size()) {
    for (size_t i = 0; i < logits.size(); ++i) buf[i] = {static_cast<int32_t>(i), logits[i], 0.0f};
    arr = {buf.data(), buf.size(), false, -1};
  }
  std::vector<int32_t> ids() const {
    std::vector<int32_t> out;
    for (size_t i = 0; i < arr.size; ++i) out.push_back(arr.data[i].id);
    return out;
  }
  float logit_of(int32_t id) const {
    for (size_t i = 0; i < arr.size; ++i) {
      if (arr.data[i].id == id) return arr.data[i].logit;
    }
    ADD_FAILURE() << "token " << id << " not among the candidates";
    return NAN;
  }
  std::vector<Candidate> buf;
  CandidateArray arr;
};

std::vector<float> log_of(const std::vector<double>& p) {
  std::vector<float> out;
  for (double x : p) out.push_back(static_cast<float>(std::log(x)));
  return out;
}

// The textbook 5-token distribution p = [0.4, 0.3, 0.15, 0.1, 0.05], placed on scrambled token ids
// so that a filter that merely keeps a prefix of the input would fail:
//   token:  0     1     2     3     4
//   p:      0.1   0.4   0.05  0.3   0.15
const std::vector<double> kScrambled = {0.1, 0.4, 0.05, 0.3, 0.15};

void apply(Sampler& s, Cands& c) {
  Rng rng(1);
  Status st = s.apply(c.arr, rng);
  ASSERT_TRUE(st.ok()) << st.message();
}

TEST(SamplingFilters, TopK3KeepsTheThreeMostLikelyInOrder) {
  std::unique_ptr<Sampler> s;
  ASSERT_TRUE(make_top_k_sampler(3, &s).ok());
  Cands c(log_of(kScrambled));
  apply(*s, c);
  EXPECT_EQ(c.ids(), (std::vector<int32_t>{1, 3, 4}));
  EXPECT_TRUE(c.arr.sorted);
  EXPECT_EQ(c.arr.selected, -1);
}

TEST(SamplingFilters, TopKZeroOrLargerThanVocabKeepsAll) {
  for (int32_t k : {0, 5, 100}) {
    std::unique_ptr<Sampler> s;
    ASSERT_TRUE(make_top_k_sampler(k, &s).ok());
    Cands c(log_of(kScrambled));
    apply(*s, c);
    EXPECT_EQ(c.ids(), (std::vector<int32_t>{0, 1, 2, 3, 4})) << "k=" << k;
  }
}

TEST(SamplingFilters, TopKOnLargeVocabularyMatchesFullSortAndBreaksTiesByLowerId) {
  constexpr int kVocab = 32000;
  std::vector<float> logits(kVocab);
  Rng rng(123);
  // Coarse values so many logits tie: ties must resolve to the lower token id.
  for (float& l : logits) l = static_cast<float>(static_cast<int>(rng.uniform_float() * 200)) / 10.0f;
  std::vector<int32_t> order(kVocab);
  for (int i = 0; i < kVocab; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  for (int32_t k : {1, 40, 1000}) {
    std::unique_ptr<Sampler> s;
    ASSERT_TRUE(make_top_k_sampler(k, &s).ok());
    Cands c(logits);
    apply(*s, c);
    EXPECT_EQ(c.ids(), std::vector<int32_t>(order.begin(), order.begin() + k)) << "k=" << k;
  }
}

// The indices of the first k candidates in the total order, found without moving any: the full
// sort's first k, ties to the lower id, also when k exceeds the array or the array is shuffled.
TEST(SamplingFilters, FirstCandidateIndicesMatchTheFullSortWithoutMovingAny) {
  constexpr int kVocab = 32000;
  std::vector<float> logits(kVocab);
  Rng rng(77);
  for (float& l : logits) l = static_cast<float>(static_cast<int>(rng.uniform_float() * 200)) / 10.0f;
  Cands c(logits);
  // Shuffled, so that array position and token id differ.
  for (size_t i = c.buf.size() - 1; i > 0; --i) std::swap(c.buf[i], c.buf[rng.next_u64() % (i + 1)]);
  std::vector<Candidate> sorted = c.buf;
  std::sort(sorted.begin(), sorted.end(), candidate_before);
  const std::vector<int32_t> before = c.ids();
  for (size_t k : {size_t{1}, size_t{32}, size_t{500}}) {
    std::vector<size_t> index(k);
    ASSERT_EQ(first_candidate_indices(c.arr, k, index.data()), k);
    for (size_t i = 0; i < k; ++i) EXPECT_EQ(c.arr.data[index[i]].id, sorted[i].id) << "k=" << k << " i=" << i;
  }
  EXPECT_EQ(c.ids(), before);
  Cands small({1.0f, 3.0f, 3.0f, 2.0f});
  size_t index[8];
  ASSERT_EQ(first_candidate_indices(small.arr, 8, index), 4u);
  EXPECT_EQ((std::vector<size_t>(index, index + 4)), (std::vector<size_t>{1, 2, 3, 0}));
}

TEST(SamplingFilters, TopPTextbookExamples) {
  struct Case {
    float p;
    std::vector<int32_t> kept;
  };
  // 0.75: 0.4 + 0.3 = 0.7 < 0.75, + 0.15 = 0.85 -> 3 tokens.
  // 0.9: 0.85 < 0.9, + 0.1 = 0.95 -> 4 tokens.
  // 0.35: the first token alone reaches it. 0 still keeps one token; 1 keeps all.
  const Case cases[] = {{0.75f, {1, 3, 4}}, {0.9f, {1, 3, 4, 0}}, {0.35f, {1}}, {0.0f, {1}}, {1.0f, {0, 1, 2, 3, 4}}};
  for (const Case& tc : cases) {
    std::unique_ptr<Sampler> s;
    ASSERT_TRUE(make_top_p_sampler(tc.p, 1, &s).ok());
    Cands c(log_of(kScrambled));
    apply(*s, c);
    EXPECT_EQ(c.ids(), tc.kept) << "p=" << tc.p;
  }
}

TEST(SamplingFilters, TopPHonoursMinKeep) {
  std::unique_ptr<Sampler> s;
  ASSERT_TRUE(make_top_p_sampler(0.3f, 3, &s).ok());
  Cands c(log_of(kScrambled));
  apply(*s, c);
  EXPECT_EQ(c.ids(), (std::vector<int32_t>{1, 3, 4}));
}

TEST(SamplingFilters, TopPOnLargeVocabularyMatchesDirectComputation) {
  constexpr int kVocab = 32000;
  std::vector<float> logits(kVocab);
  Rng rng(99);
  for (float& l : logits) l = rng.uniform_float() * 12.0f;
  // Direct: sort everything (equal logits: lower id first), accumulate normalized probabilities
  // until reaching p.
  std::vector<int32_t> order(kVocab);
  for (int i = 0; i < kVocab; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - 12.0);
  for (float p : {0.5f, 0.9f, 0.99f}) {
    size_t n = 0;
    double cum = 0;
    while (cum < p) cum += std::exp(static_cast<double>(logits[order[n++]]) - 12.0) / sum;
    std::unique_ptr<Sampler> s;
    ASSERT_TRUE(make_top_p_sampler(p, 1, &s).ok());
    Cands c(logits);
    apply(*s, c);
    ASSERT_EQ(c.arr.size, n) << "p=" << p;
    EXPECT_EQ(c.ids(), std::vector<int32_t>(order.begin(), order.begin() + n)) << "p=" << p;
  }
}

TEST(SamplingFilters, MinPKeepsTokensAboveFractionOfMaxInInputOrder) {
  struct Case {
    float p;
    std::vector<int32_t> kept;
  };
  // Threshold p * 0.4: 0.3 -> 0.12 keeps 0.4, 0.3, 0.15; 0.2 -> 0.08 adds 0.1; 1 keeps only 0.4.
  const Case cases[] = {{0.3f, {1, 3, 4}}, {0.2f, {0, 1, 3, 4}}, {1.0f, {1}}, {0.0f, {0, 1, 2, 3, 4}}};
  for (const Case& tc : cases) {
    std::unique_ptr<Sampler> s;
    ASSERT_TRUE(make_min_p_sampler(tc.p, &s).ok());
    Cands c(log_of(kScrambled));
    apply(*s, c);
    EXPECT_EQ(c.ids(), tc.kept) << "p=" << tc.p;
  }
}

TEST(SamplingFilters, TypicalKeepsTokensClosestToTheEntropy) {
  // H = -sum p ln p = 1.3923 nats. Surprisals -ln p: 0.4 -> 0.916, 0.3 -> 1.204, 0.15 -> 1.897,
  // 0.1 -> 2.303, 0.05 -> 2.996; distances to H: 0.476, 0.188, 0.505, 0.910, 1.603.
  // Most typical first: 0.3, 0.4, 0.15, 0.1, 0.05.
  struct Case {
    float p;
    std::vector<int32_t> kept;  // as a set
  };
  const Case cases[] = {
      {0.2f, {3}},           // 0.3 alone reaches 0.2: typical drops the most likely token
      {0.5f, {1, 3}},        // 0.3 + 0.4 = 0.7
      {0.8f, {1, 3, 4}},     // + 0.15 = 0.85
      {0.9f, {0, 1, 3, 4}},  // + 0.1 = 0.95
      {1.0f, {0, 1, 2, 3, 4}},
  };
  for (const Case& tc : cases) {
    std::unique_ptr<Sampler> s;
    ASSERT_TRUE(make_typical_sampler(tc.p, 1, &s).ok());
    Cands c(log_of(kScrambled));
    apply(*s, c);
    std::vector<int32_t> got = c.ids();
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, tc.kept) << "p=" << tc.p;
  }
}

TEST(SamplingFilters, TemperatureScalesLogits) {
  std::unique_ptr<Sampler> s;
  ASSERT_TRUE(make_temperature_sampler(0.5f, &s).ok());
  Cands c({1.0f, -2.0f, 3.0f});
  apply(*s, c);
  EXPECT_EQ(c.ids(), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_FLOAT_EQ(c.logit_of(0), 2.0f);
  EXPECT_FLOAT_EQ(c.logit_of(1), -4.0f);
  EXPECT_FLOAT_EQ(c.logit_of(2), 6.0f);

  ASSERT_TRUE(make_temperature_sampler(2.0f, &s).ok());
  Cands d({1.0f, -2.0f, 3.0f});
  apply(*s, d);
  EXPECT_FLOAT_EQ(d.logit_of(0), 0.5f);
  EXPECT_FLOAT_EQ(d.logit_of(2), 1.5f);
}

TEST(SamplingFilters, TemperatureZeroOrNegativeKeepsOnlyTheMostLikely) {
  for (float t : {0.0f, -1.0f, 1e-45f}) {
    std::unique_ptr<Sampler> s;
    ASSERT_TRUE(make_temperature_sampler(t, &s).ok());
    Cands c({1.0f, 5.0f, 3.0f, 5.0f});
    apply(*s, c);
    EXPECT_EQ(c.ids(), (std::vector<int32_t>{1})) << "t=" << t;  // tie 5.0: lower id
  }
  std::unique_ptr<Sampler> a, b;
  ASSERT_TRUE(make_temperature_sampler(-3.0f, &a).ok());
  ASSERT_TRUE(make_temperature_sampler(0.0f, &b).ok());
  EXPECT_EQ(a->canonical_text(), "temperature(t=0)");
  EXPECT_EQ(b->canonical_text(), "temperature(t=0)");
}

TEST(SamplingFilters, GreedySelectsArgmaxWithLowestIdOnTies) {
  std::unique_ptr<Sampler> s;
  ASSERT_TRUE(make_greedy_sampler(&s).ok());
  Cands c({1.0f, 3.0f, 3.0f, 2.0f});
  apply(*s, c);
  ASSERT_EQ(c.arr.selected, 1);
  EXPECT_EQ(c.arr.data[c.arr.selected].id, 1);
}

TEST(SamplingFilters, DistComputesProbabilitiesAndSelects) {
  std::unique_ptr<Sampler> s;
  ASSERT_TRUE(make_dist_sampler(&s).ok());
  Cands c(log_of(kScrambled));
  apply(*s, c);
  ASSERT_GE(c.arr.selected, 0);
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(c.arr.data[i].p, kScrambled[i], 1e-6);
  Cands all_banned({-INFINITY, -INFINITY});
  Rng rng(1);
  EXPECT_EQ(s->apply(all_banned.arr, rng).code(), Code::invalid_argument);
}

// Logits [1, -1, 2, -2, 0.5] for tokens 0..4; history (accepted) 2, 2, 3.
class SamplingPenalties : public ::testing::Test {
 protected:
  std::unique_ptr<Sampler> make(PenaltyParams p, const std::vector<int32_t>& history) {
    std::unique_ptr<Sampler> s;
    Status st = make_penalties_sampler(p, &s);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(s->reserve(5).ok());
    for (int32_t t : history) EXPECT_TRUE(s->accept(t).ok());
    return s;
  }
  const std::vector<float> logits_ = {1.0f, -1.0f, 2.0f, -2.0f, 0.5f};
};

TEST_F(SamplingPenalties, RepetitionDividesPositiveAndMultipliesNegative) {
  auto s = make({2.0f, 0.0f, 0.0f, 64}, {2, 2, 3});
  Cands c(logits_);
  apply(*s, c);
  EXPECT_FLOAT_EQ(c.logit_of(0), 1.0f);
  EXPECT_FLOAT_EQ(c.logit_of(1), -1.0f);
  EXPECT_FLOAT_EQ(c.logit_of(2), 1.0f);   // 2 / 2
  EXPECT_FLOAT_EQ(c.logit_of(3), -4.0f);  // -2 * 2
  EXPECT_FLOAT_EQ(c.logit_of(4), 0.5f);
}

TEST_F(SamplingPenalties, PresenceAndFrequencyFollowOpenAI) {
  // logit -= count * frequency + (count > 0) * presence
  auto s = make({1.0f, 0.5f, 0.25f, 64}, {2, 2, 3});
  Cands c(logits_);
  apply(*s, c);
  EXPECT_FLOAT_EQ(c.logit_of(2), 2.0f - (2 * 0.25f + 0.5f));
  EXPECT_FLOAT_EQ(c.logit_of(3), -2.0f - (1 * 0.25f + 0.5f));
  EXPECT_FLOAT_EQ(c.logit_of(0), 1.0f);
  EXPECT_FLOAT_EQ(c.logit_of(4), 0.5f);
}

TEST_F(SamplingPenalties, RepetitionThenPresenceAndFrequency) {
  auto s = make({2.0f, 0.5f, 0.25f, 64}, {2, 2, 3});
  Cands c(logits_);
  apply(*s, c);
  EXPECT_FLOAT_EQ(c.logit_of(2), 2.0f / 2 - 1.0f);
  EXPECT_FLOAT_EQ(c.logit_of(3), -2.0f * 2 - 0.75f);
}

TEST_F(SamplingPenalties, OnlyTheLastNTokensCount) {
  // Window of 2 over 2, 2, 3 holds {2, 3}: each counted once.
  auto s = make({1.0f, 1.0f, 1.0f, 2}, {2, 2, 3});
  Cands c(logits_);
  apply(*s, c);
  EXPECT_FLOAT_EQ(c.logit_of(2), 2.0f - 2.0f);
  EXPECT_FLOAT_EQ(c.logit_of(3), -2.0f - 2.0f);
  // A fourth token evicts the oldest 2.
  ASSERT_TRUE(s->accept(4).ok());
  Cands d(logits_);
  apply(*s, d);
  EXPECT_FLOAT_EQ(d.logit_of(2), 2.0f);
  EXPECT_FLOAT_EQ(d.logit_of(3), -4.0f);
  EXPECT_FLOAT_EQ(d.logit_of(4), -1.5f);
}

TEST_F(SamplingPenalties, ResetAndCloneAndZeroWindow) {
  auto s = make({2.0f, 0.0f, 0.0f, 64}, {2});
  std::unique_ptr<Sampler> copy;
  ASSERT_TRUE(s->clone(&copy).ok());
  s->reset();
  Cands c(logits_);
  apply(*s, c);
  EXPECT_FLOAT_EQ(c.logit_of(2), 2.0f);  // history forgotten
  Cands d(logits_);
  apply(*copy, d);
  EXPECT_FLOAT_EQ(d.logit_of(2), 1.0f);  // the clone kept it

  auto off = make({2.0f, 1.0f, 1.0f, 0}, {2, 3});
  Cands e(logits_);
  apply(*off, e);
  EXPECT_FLOAT_EQ(e.logit_of(2), 2.0f);
  EXPECT_EQ(off->accept(-1).code(), Code::invalid_argument);
}

TEST(SamplingFilters, LogitBiasAddsAndBans) {
  std::unique_ptr<Sampler> s;
  ASSERT_TRUE(make_logit_bias_sampler({{3, -INFINITY}, {1, 2.5f}}, &s).ok());
  EXPECT_EQ(s->canonical_text(), "logit_bias(1=2.5,3=-inf)");
  ASSERT_TRUE(s->reserve(4).ok());
  Cands c({0.0f, 0.0f, 1.0f, 5.0f});
  apply(*s, c);
  EXPECT_FLOAT_EQ(c.logit_of(1), 2.5f);
  EXPECT_EQ(c.logit_of(3), -INFINITY);
  EXPECT_FLOAT_EQ(c.logit_of(2), 1.0f);
  // Also when candidates are no longer in id order.
  std::swap(c.arr.data[0], c.arr.data[3]);
  apply(*s, c);
  EXPECT_FLOAT_EQ(c.logit_of(1), 5.0f);

  EXPECT_EQ(s->reserve(3).code(), Code::invalid_argument);  // token 3 outside a 3-token vocabulary
  EXPECT_EQ(make_logit_bias_sampler({{1, 1.0f}, {1, 2.0f}}, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_logit_bias_sampler({{-1, 1.0f}}, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_logit_bias_sampler({{1, INFINITY}}, &s).code(), Code::invalid_argument);
}

TEST(SamplingFilters, TypedConstructorsRejectOutOfRangeParameters) {
  std::unique_ptr<Sampler> s;
  EXPECT_EQ(make_top_k_sampler(-1, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_top_p_sampler(1.5f, 1, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_top_p_sampler(0.5f, 0, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_min_p_sampler(-0.1f, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_typical_sampler(NAN, 1, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_temperature_sampler(INFINITY, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_penalties_sampler({0.0f, 0.0f, 0.0f, 64}, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_penalties_sampler({1.0f, 2.5f, 0.0f, 64}, &s).code(), Code::invalid_argument);
  EXPECT_EQ(make_penalties_sampler({1.0f, 0.0f, 0.0f, -1}, &s).code(), Code::invalid_argument);
  Status st = make_top_p_sampler(1.5f, 1, &s);
  EXPECT_EQ(st.message(), "top_p: parameter 'p' must be in [0, 1], got 1.5");
}

}  // namespace
}  // namespace lmrt
