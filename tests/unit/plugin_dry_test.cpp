// The dry plugin on known histories, against penalties worked out by hand from the DRY definition:
// logit -= multiplier * base^(L - allowed_length) for a continuation with match length L.
#include <map>
#include <string>
#include <vector>

#include "tests/unit/plugin_test_support.h"

namespace lmrt {
namespace {

using test::LoadedPlugin;

// Runs one step of `spec` (dry followed by nothing else that changes logits) over zero logits after
// accepting `history`; returns token -> logit of the candidates afterwards.
std::map<int32_t, float> dry_logits(LoadedPlugin& p, const std::string& spec, const std::vector<int32_t>& history,
                                    int32_t n_vocab = 10) {
  auto chain = p.chain(spec + " greedy");
  std::map<int32_t, float> out;
  if (chain == nullptr) return out;
  EXPECT_TRUE(chain->reserve(n_vocab).ok());
  for (int32_t t : history) EXPECT_TRUE(chain->accept(t).ok());
  std::vector<float> logits(static_cast<size_t>(n_vocab), 0.0f);
  int32_t token = -1;
  EXPECT_TRUE(chain->sample(logits.data(), n_vocab, &token).ok());
  const CandidateArray& c = chain->last_candidates();
  for (size_t i = 0; i < c.size; ++i) out[c.data[i].id] = c.data[i].logit;
  return out;
}

TEST(PluginDryTest, PenalisesTheContinuationOfARepeatedSequence) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_DRY);
  // 1 2 3 4 1 2 3: "1 2 3" repeats; 4 would continue it with match length 3 ->
  // 0.8 * 1.75^(3 - 2) = 1.4.
  auto l = dry_logits(p, "dry(multiplier=0.8,base=1.75,allowed_length=2)", {1, 2, 3, 4, 1, 2, 3});
  EXPECT_FLOAT_EQ(l[4], -1.4f);
  for (int32_t t : {0, 1, 2, 3, 5, 6, 7, 8, 9}) EXPECT_EQ(l[t], 0.0f) << t;
}

TEST(PluginDryTest, TakesTheLongestMatchPerToken) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_DRY);
  // 5 6 5 6 5: continuations of the last 5 are 6 after index 0 (length 1) and after index 2
  // (length 3: 6 5 agree before it); the longest counts. allowed_length 3 -> 0.8 * 1.75^0.
  auto l = dry_logits(p, "dry(multiplier=0.8,base=1.75,allowed_length=3)", {5, 6, 5, 6, 5});
  EXPECT_FLOAT_EQ(l[6], -0.8f);
  // allowed_length 4 > 3: no penalty.
  l = dry_logits(p, "dry(multiplier=0.8,base=1.75,allowed_length=4)", {5, 6, 5, 6, 5});
  EXPECT_EQ(l[6], 0.0f);
  // base 2, multiplier 1, allowed 1: 1 * 2^(3-1) = 4.
  l = dry_logits(p, "dry(1,2,1)", {5, 6, 5, 6, 5});
  EXPECT_FLOAT_EQ(l[6], -4.0f);
}

TEST(PluginDryTest, SequenceBreakersStopTheMatch) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_DRY);
  // As the first case, but 2 is a breaker: the match of 3 cannot extend over 2, so L = 1 < 2.
  auto l = dry_logits(p, "dry(multiplier=0.8,base=1.75,allowed_length=2,breaker_id=2)", {1, 2, 3, 4, 1, 2, 3});
  EXPECT_EQ(l[4], 0.0f);
  // A breaker as the last token disables the penalty; as the continuation it is never penalised.
  l = dry_logits(p, "dry(multiplier=0.8,allowed_length=1,breaker_id=3)", {1, 2, 3, 4, 1, 2, 3});
  EXPECT_EQ(l[4], 0.0f);
  l = dry_logits(p, "dry(multiplier=0.8,allowed_length=1,breaker_id=4)", {1, 2, 3, 4, 1, 2, 3});
  EXPECT_EQ(l[4], 0.0f);
}

TEST(PluginDryTest, WindowLimitsTheHistory) {
  LoadedPlugin p(LMRT_TEST_PLUGIN_DRY);
  // Only the last 3 tokens (5 6 5) count: 6 follows 5 once, length 1 < 2.
  auto l = dry_logits(p, "dry(multiplier=0.8,penalty_last_n=3)", {5, 6, 5, 6, 5});
  EXPECT_EQ(l[6], 0.0f);
  l = dry_logits(p, "dry(multiplier=0.8,penalty_last_n=5)", {5, 6, 5, 6, 5});
  EXPECT_FLOAT_EQ(l[6], -1.4f);
  // multiplier 0 disables.
  l = dry_logits(p, "dry(multiplier=0)", {1, 2, 3, 4, 1, 2, 3});
  EXPECT_EQ(l[4], 0.0f);
}

// Text breakers come from the host's vocabulary through token_text.
class TinyVocab : public TokenTextSource {
 public:
  int32_t n_vocab() const override { return 10; }
  bool token_text(int32_t token, std::string* out) const override {
    if (token < 0 || token >= 10) return false;
    *out = token == 7 ? "a:b" : "w" + std::to_string(token);
    return true;
  }
};

TEST(PluginDryTest, TextBreakersUseTheVocabulary) {
  TinyVocab vocab;
  LoadedPlugin p(LMRT_TEST_PLUGIN_DRY, &vocab);
  // 1 7 3 9 1 7 3: token 7 holds ':' (a default breaker), so the match of 3 stops there: L = 1.
  auto l = dry_logits(p, "dry(multiplier=0.8)", {1, 7, 3, 9, 1, 7, 3});
  EXPECT_EQ(l[9], 0.0f);
  // With text breakers off, L = 3 -> 1.4.
  l = dry_logits(p, "dry(multiplier=0.8,breaker=\"\")", {1, 7, 3, 9, 1, 7, 3});
  EXPECT_FLOAT_EQ(l[9], -1.4f);
}

}  // namespace
}  // namespace lmrt
