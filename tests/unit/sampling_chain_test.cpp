// The chain end to end: sampling statistics, seed reproducibility, clone/reset, errors.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/sampler_chain.h"
#include "tests/test_support.h"

namespace lmrt {
namespace {

std::unique_ptr<SamplerChain> make_chain(std::string_view spec, uint64_t seed) {
  SamplerRegistry registry;
  EXPECT_TRUE(register_builtin_samplers(registry).ok());
  std::unique_ptr<SamplerChain> chain;
  Status st = SamplerChain::parse(spec, registry, seed, &chain);
  EXPECT_TRUE(st.ok()) << spec << ": " << st.message();
  return chain;
}

std::vector<float> log_of(const std::vector<double>& p) {
  std::vector<float> out;
  for (double x : p) out.push_back(static_cast<float>(std::log(x)));
  return out;
}

// Draws n tokens from the same logits and returns how often each token came up.
std::vector<int> histogram(SamplerChain& chain, const std::vector<float>& logits, int n) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) {
    int32_t token = -1;
    Status st = chain.sample(logits.data(), static_cast<int32_t>(logits.size()), &token);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) break;
    ++counts[static_cast<size_t>(token)];
  }
  return counts;
}

// Pearson's chi-square of observed counts against expected probabilities (tokens with expected
// probability 0 must never be observed).
double chi_square(const std::vector<int>& counts, const std::vector<double>& expected, int n) {
  double chi2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (expected[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " must never be drawn";
      continue;
    }
    const double e = expected[i] * n;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi2;
}

const std::vector<double> kP = {0.4, 0.3, 0.15, 0.1, 0.05};
constexpr int kDraws = 20000;

TEST(SamplingChain, DistMatchesTheDistribution) {
  auto chain = make_chain("dist", 2024);
  const std::vector<int> counts = histogram(*chain, log_of(kP), kDraws);
  // 4 degrees of freedom: P(chi2 > 18.47) = 0.001 for a correct sampler.
  EXPECT_LT(chi_square(counts, kP, kDraws), 18.47);
  for (size_t i = 0; i < kP.size(); ++i) {
    const double sd = std::sqrt(kDraws * kP[i] * (1 - kP[i]));
    EXPECT_NEAR(counts[i], kDraws * kP[i], 4.5 * sd) << "token " << i;
  }
}

TEST(SamplingChain, TopKAndTemperatureReshapeTheDistribution) {
  // top_k(3) keeps 0.4, 0.3, 0.15; temperature 0.5 squares them: 0.16, 0.09, 0.0225 over 0.2725.
  auto chain = make_chain("top_k(3) temperature(0.5) dist", 7);
  const std::vector<double> expected = {0.16 / 0.2725, 0.09 / 0.2725, 0.0225 / 0.2725, 0, 0};
  const std::vector<int> counts = histogram(*chain, log_of(kP), kDraws);
  EXPECT_LT(chi_square(counts, expected, kDraws), 13.82);  // 2 degrees of freedom, p = 0.001
}

TEST(SamplingChain, TopPRenormalizesTheNucleus) {
  // top_p(0.75) keeps 0.4, 0.3, 0.15 (sum 0.85).
  auto chain = make_chain("top_p(0.75)", 8);
  const std::vector<double> expected = {0.4 / 0.85, 0.3 / 0.85, 0.15 / 0.85, 0, 0};
  const std::vector<int> counts = histogram(*chain, log_of(kP), kDraws);
  EXPECT_LT(chi_square(counts, expected, kDraws), 13.82);
}

TEST(SamplingChain, HighTemperatureFlattens) {
  // temperature 2: q ∝ sqrt(p).
  auto chain = make_chain("temperature(2)", 9);
  std::vector<double> expected;
  double sum = 0;
  for (double p : kP) sum += std::sqrt(p);
  for (double p : kP) expected.push_back(std::sqrt(p) / sum);
  const std::vector<int> counts = histogram(*chain, log_of(kP), kDraws);
  EXPECT_LT(chi_square(counts, expected, kDraws), 18.47);
}

// dist is specified as: one 53-bit uniform u per token, the first candidate whose cumulative
// probability exceeds u. Checked against a separate Rng with the same seed.
TEST(SamplingChain, DistInvertsTheCumulativeDistributionWithOneDrawPerToken) {
  constexpr uint64_t kSeed = 31337;
  auto chain = make_chain("dist", kSeed);
  Rng reference(kSeed);
  const std::vector<float> logits = log_of(kP);
  int checked = 0;
  for (int i = 0; i < 2000; ++i) {
    const double u = reference.uniform_double();
    int32_t token = -1;
    ASSERT_TRUE(chain->sample(logits.data(), 5, &token).ok());
    double cum = 0;
    int32_t want = -1;
    bool near_boundary = false;
    for (size_t t = 0; t < kP.size(); ++t) {
      cum += kP[t];
      near_boundary = near_boundary || std::fabs(cum - u) < 1e-6;
      if (want < 0 && u < cum) want = static_cast<int32_t>(t);
    }
    if (near_boundary) continue;
    EXPECT_EQ(token, want) << "draw " << i << " u=" << u;
    ++checked;
  }
  EXPECT_GT(checked, 1990);
}

// Logits that change each step, as a model's would: a fixed pseudo-random function of the step.
std::vector<float> step_logits(int step, int n_vocab) {
  Rng rng(static_cast<uint64_t>(step) * 7919 + 1);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  for (float& l : logits) l = rng.uniform_float() * 8.0f;
  return logits;
}

std::vector<int32_t> generate(SamplerChain& chain, int first_step, int n_steps, int n_vocab) {
  std::vector<int32_t> tokens;
  for (int s = first_step; s < first_step + n_steps; ++s) {
    const std::vector<float> logits = step_logits(s, n_vocab);
    int32_t token = -1;
    Status st = chain.sample(logits.data(), n_vocab, &token);
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(chain.accept(token).ok());
    tokens.push_back(token);
  }
  return tokens;
}

constexpr std::string_view kFullChain =
    "penalties(repeat=1.3,presence=0.4,frequency=0.2,last_n=16) logit_bias(3=-inf,5=1.5) top_k(50) "
    "typical(0.95) top_p(0.9) min_p(0.02) temperature(0.9) dist";

TEST(SamplingChain, SameSeedSameTokensDifferentSeedDifferentTokens) {
  auto a = make_chain(kFullChain, 42);
  auto b = make_chain(kFullChain, 42);
  auto c = make_chain(kFullChain, 43);
  const std::vector<int32_t> ta = generate(*a, 0, 200, 500);
  EXPECT_EQ(ta, generate(*b, 0, 200, 500));
  EXPECT_NE(ta, generate(*c, 0, 200, 500));
  for (int32_t t : ta) EXPECT_NE(t, 3);  // banned by logit_bias
}

TEST(SamplingChain, CloneContinuesIdenticallyAndResetRestarts) {
  auto chain = make_chain(kFullChain, 5);
  const std::vector<int32_t> full = generate(*chain, 0, 120, 300);

  auto again = make_chain(kFullChain, 5);
  generate(*again, 0, 60, 300);
  std::unique_ptr<SamplerChain> copy;
  ASSERT_TRUE(again->clone(&copy).ok());
  EXPECT_EQ(copy->canonical_text(), again->canonical_text());
  const std::vector<int32_t> tail(full.begin() + 60, full.end());
  EXPECT_EQ(generate(*copy, 60, 60, 300), tail);
  EXPECT_EQ(generate(*again, 60, 60, 300), tail);  // the original is unaffected by its clone

  again->reset();
  EXPECT_EQ(generate(*again, 0, 120, 300), full);

  again->set_seed(6);
  again->reset();
  auto six = make_chain(kFullChain, 6);
  EXPECT_EQ(generate(*again, 0, 50, 300), generate(*six, 0, 50, 300));
}

TEST(SamplingChain, SameTokensWhateverTheThreadCount) {
  auto chain = make_chain(kFullChain, 77);
  const std::vector<int32_t> sequential = generate(*chain, 0, 100, 400);
  chain->reset();
  std::vector<std::unique_ptr<SamplerChain>> clones(4);
  for (auto& c : clones) ASSERT_TRUE(chain->clone(&c).ok());
  std::vector<std::vector<int32_t>> results(clones.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < clones.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = generate(*clones[i], 0, 100, 400); });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, sequential);
}

TEST(SamplingChain, GreedyAndZeroTemperatureAreArgmax) {
  auto greedy = make_chain("greedy", 1);
  auto cold = make_chain("top_k(40) temperature(0)", 1);
  EXPECT_FALSE(greedy->uses_rng());
  EXPECT_TRUE(cold->uses_rng());
  for (int s = 0; s < 20; ++s) {
    const std::vector<float> logits = step_logits(s, 1000);
    const int32_t argmax = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    int32_t t1 = -1, t2 = -1;
    ASSERT_TRUE(greedy->sample(logits.data(), 1000, &t1).ok());
    ASSERT_TRUE(cold->sample(logits.data(), 1000, &t2).ok());
    EXPECT_EQ(t1, argmax);
    EXPECT_EQ(t2, argmax);
  }
}

TEST(SamplingChain, PenaltiesSeeAcceptedTokens) {
  auto chain = make_chain("penalties(repeat=1.5,last_n=8) greedy", 1);
  const float logits[] = {2.0f, 1.9f, 1.0f};
  int32_t token = -1;
  ASSERT_TRUE(chain->sample(logits, 3, &token).ok());
  EXPECT_EQ(token, 0);
  ASSERT_TRUE(chain->accept(0).ok());
  ASSERT_TRUE(chain->sample(logits, 3, &token).ok());
  EXPECT_EQ(token, 1);  // 2.0 / 1.5 = 1.33 < 1.9
  chain->reset();
  ASSERT_TRUE(chain->sample(logits, 3, &token).ok());
  EXPECT_EQ(token, 0);
}

// Tokens accepted before the chain knows the vocabulary (lmrt_sampler_accept before any sample) are kept in
// the window and counted once it does; an id far past any vocabulary costs no memory.
TEST(SamplingChain, PenaltiesTakeTokensAcceptedBeforeTheVocabularyIsKnown) {
  auto chain = make_chain("penalties(repeat=1.5,last_n=8) greedy", 1);
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  ASSERT_TRUE(chain->accept(1 << 28).ok());  // a dense count array up to it would take 1 GiB
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);  // KiB
  ASSERT_TRUE(chain->accept(0).ok());
  const float logits[] = {2.0f, 1.9f, 1.0f};
  int32_t token = -1;
  ASSERT_TRUE(chain->sample(logits, 3, &token).ok());
  EXPECT_EQ(token, 1);                                               // token 0 was accepted: 2.0 / 1.5 < 1.9
  EXPECT_EQ(chain->accept(3).code(), lmrt::Code::invalid_argument);  // now past the vocabulary
  chain->reset();
  ASSERT_TRUE(chain->sample(logits, 3, &token).ok());
  EXPECT_EQ(token, 0);
}

TEST(SamplingChain, LastCandidatesShowWhatTheSelectorSaw) {
  auto chain = make_chain("top_k(3) dist", 1);
  const std::vector<float> logits = log_of(kP);
  int32_t token = -1;
  ASSERT_TRUE(chain->sample(logits.data(), 5, &token).ok());
  const CandidateArray& c = chain->last_candidates();
  ASSERT_EQ(c.size, 3u);
  ASSERT_GE(c.selected, 0);
  EXPECT_EQ(c.data[c.selected].id, token);
  double sum = 0;
  for (size_t i = 0; i < c.size; ++i) sum += c.data[i].p;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_NEAR(c.data[0].p, 0.4 / 0.85, 1e-6);
}

TEST(SamplingChain, RefusesBadInput) {
  auto chain = make_chain("dist", 1);
  int32_t token = -1;
  const float with_nan[] = {0.0f, NAN};
  const float with_inf[] = {0.0f, INFINITY};
  const float all_banned[] = {-INFINITY, -INFINITY};
  EXPECT_EQ(chain->sample(with_nan, 2, &token).code(), Code::invalid_argument);
  EXPECT_EQ(chain->sample(with_inf, 2, &token).code(), Code::invalid_argument);
  EXPECT_EQ(chain->sample(all_banned, 2, &token).code(), Code::invalid_argument);
  EXPECT_EQ(chain->sample(with_nan, 0, &token).code(), Code::invalid_argument);
  EXPECT_EQ(chain->sample(nullptr, 2, &token).code(), Code::invalid_argument);
  EXPECT_EQ(chain->accept(2).code(), Code::invalid_argument);  // vocabulary of 2
  EXPECT_EQ(chain->accept(-1).code(), Code::invalid_argument);

  auto biased = make_chain("logit_bias(10=1)", 1);
  EXPECT_EQ(biased->reserve(10).code(), Code::invalid_argument);
  EXPECT_TRUE(biased->reserve(11).ok());
}

// Greedy after one logit_bias picks from the logits without building candidates; temperature(1) changes
// nothing but keeps the chain on the candidate path, whose greedy is the reference. Real logits (llama.cpp's,
// 64 positions x 512 tokens of the quant model), and the same rows made hard: the best logit repeated at a
// later and an earlier token, -0 against +0, long -inf runs, biases on the winner, on the first and last
// tokens, and a bias that ties a low token with the best.
TEST(SamplingChain, GreedyAfterLogitBiasPicksWhatTheCandidatesPick) {
  const std::string bytes = test::read_file(test::shared_dir() + "/models/quant/base-Q4_0.logits.f32");
  constexpr size_t kVocab = 512;
  ASSERT_EQ(bytes.size() % (kVocab * sizeof(float)), 0u);
  const size_t n_rows = bytes.size() / (kVocab * sizeof(float));
  ASSERT_GE(n_rows, 64u);
  std::vector<float> all(bytes.size() / sizeof(float));
  std::memcpy(all.data(), bytes.data(), bytes.size());
  const std::vector<std::string> specs = {"", "logit_bias(0=-inf)", "logit_bias(511=3.5)",
                                          "logit_bias(2=-inf,7=2,300=-1)"};
  size_t checked = 0;
  for (size_t r = 0; r < n_rows; ++r) {
    for (int variant = 0; variant < 5; ++variant) {
      std::vector<float> l(all.begin() + r * kVocab, all.begin() + (r + 1) * kVocab);
      const size_t top = static_cast<size_t>(std::max_element(l.begin(), l.end()) - l.begin());
      if (variant == 1) l[(top + 97) % kVocab] = l[top];  // a tie, after or before the first best
      if (variant == 2) l[(top + 400) % kVocab] = l[top];
      if (variant == 3) {
        for (float& v : l) v = v > 0 ? 0.0f : -0.0f;  // only signed zeros: the lowest token wins
      }
      if (variant == 4)
        for (size_t i = 0; i < kVocab; ++i)
          if (i % 64 < 60 && i != top) l[i] = -INFINITY;
      // Biases on this row's winner, and one that lifts token 5 exactly onto the best logit.
      std::vector<std::string> row_specs = specs;
      row_specs.push_back("logit_bias(" + std::to_string(top) + "=-inf)");
      row_specs.push_back("logit_bias(" + std::to_string(top) + "=-0.25)");
      if (top != 5 && std::isfinite(l[5]) && std::isfinite(l[top]) && l[5] + (l[top] - l[5]) == l[top])
        row_specs.push_back("logit_bias(5=" + std::to_string(l[top] - l[5]) + ")");
      for (const std::string& bias : row_specs) {
        auto fast = make_chain(bias + (bias.empty() ? "" : " ") + "greedy", 1);
        auto ref = make_chain(bias + (bias.empty() ? "" : " ") + "temperature(1) greedy", 1);
        int32_t a = -1, b = -1;
        const Status sa = fast->sample(l.data(), kVocab, &a), sb = ref->sample(l.data(), kVocab, &b);
        ASSERT_EQ(sa.code(), sb.code()) << bias << " row " << r << " variant " << variant;
        if (!sa.ok()) continue;
        EXPECT_EQ(a, b) << bias << " row " << r << " variant " << variant;
        EXPECT_EQ(fast->last_candidates().size, 1u);  // the fast path ran
        EXPECT_EQ(ref->last_candidates().size, kVocab);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, n_rows * 5 * 6);

  // Every token banned: the error greedy gives.
  std::vector<float> l(kVocab, -INFINITY);
  l[3] = 1.0f;
  int32_t token = -1;
  EXPECT_EQ(make_chain("logit_bias(3=-inf) greedy", 1)->sample(l.data(), kVocab, &token).code(),
            Code::invalid_argument);
  EXPECT_TRUE(make_chain("logit_bias(4=-inf) greedy", 1)->sample(l.data(), kVocab, &token).ok());
  EXPECT_EQ(token, 3);
}

TEST(SamplingChain, CreateFromTypedSamplersEqualsParse) {
  std::vector<std::unique_ptr<Sampler>> samplers(2);
  ASSERT_TRUE(make_top_k_sampler(40, &samplers[0]).ok());
  ASSERT_TRUE(make_top_p_sampler(0.9f, 1, &samplers[1]).ok());
  std::unique_ptr<SamplerChain> chain;
  ASSERT_TRUE(SamplerChain::create(std::move(samplers), 3, &chain).ok());
  EXPECT_EQ(chain->canonical_text(), make_chain("top_k(40) top_p(0.9) dist", 3)->canonical_text());
  EXPECT_EQ(chain->size(), 3u);
  EXPECT_EQ(chain->sampler(2).name(), "dist");
  EXPECT_TRUE(chain->deterministic());
}

}  // namespace
}  // namespace lmrt
