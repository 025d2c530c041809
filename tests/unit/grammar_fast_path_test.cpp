// The grammar checked on the picked token first (SamplerChain::sample): it must give the tokens that
// masking the vocabulary first gives for greedy, and the masked distribution for untruncated sampling.
// With dist the two paths do not give the same token for the same random number, by construction:
// check-last draws u1 over the whole vocabulary and, when the grammar refuses that token, u2 over the
// allowed ones, where mask-first draws u1 over the allowed ones; the cumulative sums u1 walks differ,
// so the tests compare the distribution of the draws (on a real model's logits) instead.
#include <gtest/gtest.h>
#include <lmrt/lmrt.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "runtime/grammar/token_trie.h"
#include "runtime/model/gguf_file.h"
#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/grammar_sampler.h"
#include "runtime/sampling/sampler_chain.h"
#include "runtime/tokenizer/tokenizer.h"
#include "test_support.h"

namespace lmrt {
namespace {

std::unique_ptr<Tokenizer> tokenizer_of(const std::string& path) {
  std::unique_ptr<GgufFile> gguf;
  Status s = GgufFile::open(path, true, &gguf);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return nullptr;
  std::unique_ptr<Tokenizer> tok;
  s = Tokenizer::from_gguf(*gguf, &tok);
  EXPECT_TRUE(s.ok()) << s.message();
  return tok;
}

// grammar + `rest` (made fresh for each chain); mask_first turns the check-last path off.
std::unique_ptr<SamplerChain> chain_of(const std::string& text, bool is_schema,
                                       const std::shared_ptr<const TokenTrie>& trie,
                                       std::vector<std::unique_ptr<Sampler>> rest, bool mask_first) {
  std::unique_ptr<Sampler> grammar;
  Status s = make_grammar_sampler_from_text(text, is_schema, trie, &grammar);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.push_back(std::move(grammar));
  for (auto& r : rest) samplers.push_back(std::move(r));
  std::unique_ptr<SamplerChain> chain;
  s = SamplerChain::create(std::move(samplers), 7, &chain);
  EXPECT_TRUE(s.ok()) << s.message();
  if (chain != nullptr) chain->set_filter_checked_last(!mask_first);
  return chain;
}

std::vector<std::unique_ptr<Sampler>> one(Status (*make)(std::unique_ptr<Sampler>*)) {
  std::vector<std::unique_ptr<Sampler>> v(1);
  EXPECT_TRUE(make(&v[0]).ok());
  return v;
}

// On the 128k Llama 3 vocabulary, with logits whose best token is often refused (structure) and
// often allowed (inside strings), greedy through the check-last path picks exactly the mask-first
// token at every step, and both paths were really taken.
TEST(GrammarCheckLast, GreedyGivesTheMaskFirstTokensOnTheLlama3Vocabulary) {
  auto tok = tokenizer_of(test::shared_dir() + "/vocab/llama-bpe.gguf");
  ASSERT_NE(tok, nullptr);
  std::shared_ptr<const TokenTrie> trie;
  ASSERT_TRUE(make_token_trie(*tok, &trie).ok());
  const std::string schema = R"({"type":"object","properties":{
      "name":{"type":"string","maxLength":24},"note":{"type":"string"},
      "address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"integer","minimum":0}},
                 "required":["city","zip"]}},
      "required":["name","note","address"],"additionalProperties":false})";
  auto fast = chain_of(schema, true, trie, one(make_greedy_sampler), false);
  auto full = chain_of(schema, true, trie, one(make_greedy_sampler), true);
  ASSERT_NE(fast, nullptr);
  ASSERT_NE(full, nullptr);
  const int32_t n = tok->n_vocab();
  std::mt19937 rng(12345);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(n));
  std::string text;
  for (int step = 0; step < 80; ++step) {
    for (float& l : logits) l = noise(rng);
    int32_t a = -1, b = -1;
    ASSERT_TRUE(fast->sample(logits.data(), n, &a).ok());
    ASSERT_TRUE(full->sample(logits.data(), n, &b).ok());
    ASSERT_EQ(a, b) << "step " << step << " after " << text;
    if (tok->is_eog(a)) break;
    ASSERT_TRUE(fast->accept(a).ok());
    ASSERT_TRUE(full->accept(b).ok());
    text += trie->piece(a);
  }
  EXPECT_GT(fast->filter_stats().checked, 10u) << text;
  EXPECT_GT(fast->filter_stats().refused, 3u) << text;
  // Refused picks were settled both ways: by checking the next candidates, and by the mask.
  EXPECT_GT(fast->filter_stats().repicked, 0u) << text;
  EXPECT_LT(fast->filter_stats().repicked, fast->filter_stats().refused) << text;
  EXPECT_EQ(full->filter_stats().checked + full->filter_stats().refused, 0u);
}

// The stories260K model and a context on it, closed at the end of the test.
struct StoryModel {
  lmrt_model* model = nullptr;
  lmrt_context* ctx = nullptr;
  ~StoryModel() {
    if (ctx != nullptr) lmrt_context_free(ctx);
    if (model != nullptr) lmrt_model_close(model);
  }
};

void open_story_model(StoryModel* h, uint32_t logits_all) {
  char err[512] = {0};
  ASSERT_EQ(lmrt_model_open(test::model_path("stories260K.gguf").c_str(), nullptr, &h->model, err, sizeof err), LMRT_OK)
      << err;
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.n_ctx = 512;
  p.n_threads = 1;
  p.logits_all = logits_all;
  ASSERT_EQ(lmrt_context_create(h->model, &p, &h->ctx, err, sizeof err), LMRT_OK) << err;
}

std::vector<int32_t> tokenize(const lmrt_model* model, const std::string& text) {
  std::vector<int32_t> ids(256);
  size_t n = 0;
  EXPECT_EQ(lmrt_tokenize(model, text.data(), text.size(), LMRT_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n), LMRT_OK);
  ids.resize(n);
  return ids;
}

// Seeded untruncated sampling through the check-last path draws from the masked distribution: on
// the model's real next-token logits, frequencies over many draws at one grammar state match
// softmax(logits / T) over the allowed tokens (and never a refused token), within 5 standard
// errors per token, and the refused draws (drawn again from the allowed tokens) happen as often as
// the refused tokens' probability says.
TEST(GrammarCheckLast, SeededSamplingDrawsFromTheMaskedDistribution) {
  StoryModel h;
  open_story_model(&h, 0);
  auto tok = tokenizer_of(test::model_path("stories260K.gguf"));
  ASSERT_NE(tok, nullptr);
  std::shared_ptr<const TokenTrie> trie;
  ASSERT_TRUE(make_token_trie(*tok, &trie).ok());
  const std::vector<int32_t> prompt = tokenize(h.model, "Once upon a time, there was a little");
  ASSERT_FALSE(prompt.empty());
  ASSERT_EQ(lmrt_eval(h.ctx, prompt.data(), prompt.size()), LMRT_OK) << lmrt_context_last_error(h.ctx);
  const float* raw = nullptr;
  size_t n_vocab = 0;
  ASSERT_EQ(lmrt_get_logits(h.ctx, prompt.size() - 1, &raw, &n_vocab), LMRT_OK);
  const int32_t n = static_cast<int32_t>(n_vocab);
  ASSERT_EQ(n, tok->n_vocab());
  const std::vector<float> logits(raw, raw + n_vocab);
  // A word that starts with one of a-l: the model's likely nouns fall on both sides.
  const std::string gbnf = "root ::= \" \" [a-l] [a-z]*\n";
  const float temp = 1.5f;
  std::vector<std::unique_ptr<Sampler>> rest(2);
  ASSERT_TRUE(make_temperature_sampler(temp, &rest[0]).ok());
  ASSERT_TRUE(make_dist_sampler(&rest[1]).ok());
  auto chain = chain_of(gbnf, false, trie, std::move(rest), false);
  ASSERT_NE(chain, nullptr);
  // The allowed set, checked token by token, and the masked softmax over it.
  std::unique_ptr<Sampler> g;
  ASSERT_TRUE(make_grammar_sampler_from_text(gbnf, false, trie, &g).ok());
  std::vector<double> expect(static_cast<size_t>(n), 0.0);
  double z = 0, z_all = 0;
  for (int32_t i = 0; i < n; ++i) {
    const double e = std::exp(static_cast<double>(logits[static_cast<size_t>(i)]) / temp);
    z_all += e;
    if (g->keeps_token(i) == 1) {
      expect[static_cast<size_t>(i)] = e;
      z += e;
    }
  }
  ASSERT_GT(z, 0.0);
  const double mass_allowed = z / z_all;
  ASSERT_GT(mass_allowed, 0.05) << "both paths must be taken often";
  ASSERT_LT(mass_allowed, 0.95) << "both paths must be taken often";
  for (double& p : expect) p /= z;
  const int kDraws = 40000;
  std::vector<int> count(static_cast<size_t>(n), 0);
  for (int d = 0; d < kDraws; ++d) {
    int32_t t = -1;
    ASSERT_TRUE(chain->sample(logits.data(), n, &t).ok());
    ++count[static_cast<size_t>(t)];
  }
  for (int32_t i = 0; i < n; ++i) {
    const double p = expect[static_cast<size_t>(i)];
    const double f = count[static_cast<size_t>(i)] / static_cast<double>(kDraws);
    if (p == 0.0) {
      ASSERT_EQ(count[static_cast<size_t>(i)], 0) << "token " << i << " is refused by the grammar";
      continue;
    }
    EXPECT_NEAR(f, p, 5 * std::sqrt(p * (1 - p) / kDraws) + 1e-4) << "token " << i << " '" << trie->piece(i) << "'";
  }
  const auto& st = chain->filter_stats();
  EXPECT_EQ(st.checked + st.refused, static_cast<uint64_t>(kDraws));
  EXPECT_NEAR(st.checked / static_cast<double>(kDraws), mass_allowed,
              5 * std::sqrt(mass_allowed * (1 - mass_allowed) / kDraws));
  // Most refused draws were drawn again without the mask.
  EXPECT_GT(st.repicked, st.refused / 2);
}

// A truncation after the grammar (top_k) is not per-candidate: cutting to the best k of the whole
// vocabulary and then checking is not the same as masking and then cutting, so such a chain masks
// first on every step and never takes the check-last path.
TEST(GrammarCheckLast, ChainsWithATruncationMaskFirst) {
  auto tok = tokenizer_of(test::model_path("stories260K.gguf"));
  ASSERT_NE(tok, nullptr);
  std::shared_ptr<const TokenTrie> trie;
  ASSERT_TRUE(make_token_trie(*tok, &trie).ok());
  std::vector<std::unique_ptr<Sampler>> rest(2);
  ASSERT_TRUE(make_top_k_sampler(5, &rest[0]).ok());
  ASSERT_TRUE(make_dist_sampler(&rest[1]).ok());
  auto chain = chain_of("root ::= [a-z]+\n", false, trie, std::move(rest), false);
  ASSERT_NE(chain, nullptr);
  const int32_t n = tok->n_vocab();
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  std::vector<float> logits(static_cast<size_t>(n));
  for (int step = 0; step < 20; ++step) {
    for (float& l : logits) l = noise(rng);
    int32_t t = -1;
    ASSERT_TRUE(chain->sample(logits.data(), n, &t).ok());
    ASSERT_TRUE(chain->accept(t).ok()) << "the picked token must continue the grammar";
  }
  EXPECT_EQ(chain->filter_stats().checked + chain->filter_stats().refused, 0u);
}

// On a real model through the C API: greedy JSON Schema generation gives the same tokens whether
// the grammar is checked last ("grammar greedy") or masks first (top_k(0) is no cut but is not
// per-candidate, so it keeps the mask-first order), and the output validates.
TEST(GrammarCheckLast, RealModelGreedyJsonIsTheSameEitherWay) {
  char err[512] = {0};
  lmrt_model* model = nullptr;
  ASSERT_EQ(lmrt_model_open(test::model_path("stories260K.gguf").c_str(), nullptr, &model, err, sizeof err), LMRT_OK)
      << err;
  lmrt_context_params p;
  lmrt_context_params_init(&p);
  p.n_ctx = 512;
  p.n_threads = 1;
  lmrt_context* ctx = nullptr;
  ASSERT_EQ(lmrt_context_create(model, &p, &ctx, err, sizeof err), LMRT_OK) << err;
  const char* schema = R"({"type":"object","properties":{"name":{"type":"string","maxLength":20},
      "age":{"type":"integer","minimum":1,"maximum":99},"story":{"type":"string"}},
      "required":["name","age","story"],"additionalProperties":false})";
  std::vector<std::vector<int32_t>> outputs;
  for (const char* chain : {"grammar greedy", "grammar top_k(0) greedy"}) {
    lmrt_generate_request req;
    lmrt_generate_request_init(&req);
    req.prompt = "Once upon a time";
    req.max_tokens = 160;
    req.json_schema = schema;
    req.samplers = chain;
    lmrt_generate_result res;
    res.struct_size = sizeof res;
    ASSERT_EQ(lmrt_generate(ctx, &req, nullptr, nullptr, &res), LMRT_OK) << lmrt_context_last_error(ctx);
    const std::string text(res.text, res.text_len);
    ASSERT_EQ(res.finish_reason, LMRT_FINISH_EOS) << chain << ": " << text;
    const nlohmann::json v = nlohmann::json::parse(text);
    EXPECT_TRUE(v.is_object() && v.size() == 3u && v["age"].is_number_integer()) << text;
    outputs.emplace_back(res.tokens, res.tokens + res.completion_tokens);
  }
  EXPECT_GT(outputs[0].size(), 8u);
  EXPECT_EQ(outputs[0], outputs[1]);
  lmrt_context_free(ctx);
  lmrt_model_close(model);
}

// Logprobs under a grammar are the model's raw distribution (lmrt.h, lmrt_token_logprobs): each
// generated token's logprob equals the log-softmax of the raw logits at its position (recomputed by
// evaluating prompt + output as one batch), not the distribution renormalized over the allowed
// tokens (which differs by nats at the structural tokens), and the alternatives include tokens the
// grammar refuses at that step. Checked on the check-last path (grammar temperature dist).
TEST(GrammarCheckLast, LogprobsUnderAGrammarAreTheRawDistribution) {
  StoryModel h;
  open_story_model(&h, 1);
  auto tok = tokenizer_of(test::model_path("stories260K.gguf"));
  ASSERT_NE(tok, nullptr);
  std::shared_ptr<const TokenTrie> trie;
  ASSERT_TRUE(make_token_trie(*tok, &trie).ok());
  const std::string schema = R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
      "age":{"type":"integer","minimum":1,"maximum":99}},"required":["name","age"],"additionalProperties":false})";
  const std::vector<int32_t> prompt = tokenize(h.model, "Once upon a time");
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt_tokens = prompt.data();
  req.n_prompt_tokens = prompt.size();
  req.max_tokens = 60;
  req.json_schema = schema.c_str();
  req.samplers = "grammar temperature(0.8) dist";
  req.seed = 5;
  req.logprobs = 20;
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  ASSERT_EQ(lmrt_generate(h.ctx, &req, nullptr, nullptr, &res), LMRT_OK) << lmrt_context_last_error(h.ctx);
  ASSERT_NE(res.logprobs, nullptr);
  const std::vector<int32_t> out(res.tokens, res.tokens + res.completion_tokens);
  std::vector<lmrt_token_logprobs> lps(res.logprobs, res.logprobs + res.completion_tokens);
  ASSERT_GT(out.size(), 8u) << std::string(res.text, res.text_len);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), out.begin(), out.end());
  ASSERT_EQ(lmrt_context_reset(h.ctx), LMRT_OK);  // evaluate from position 0, not after the generation
  ASSERT_EQ(lmrt_eval(h.ctx, all.data(), all.size()), LMRT_OK) << lmrt_context_last_error(h.ctx);
  std::unique_ptr<Sampler> g;
  ASSERT_TRUE(make_grammar_sampler_from_text(schema, true, trie, &g).ok());
  double max_gap = 0;  // largest |raw - masked| logprob of a chosen token
  size_t refused_alternatives = 0;
  for (size_t k = 0; k < out.size(); ++k) {
    const float* logits = nullptr;
    size_t n_vocab = 0;
    ASSERT_EQ(lmrt_get_logits(h.ctx, prompt.size() - 1 + k, &logits, &n_vocab), LMRT_OK);
    double mx = -INFINITY;
    for (size_t i = 0; i < n_vocab; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
    double z_all = 0, z_allowed = 0;
    for (size_t i = 0; i < n_vocab; ++i) {
      const double e = std::exp(static_cast<double>(logits[i]) - mx);
      z_all += e;
      if (g->keeps_token(static_cast<int32_t>(i)) == 1) z_allowed += e;
    }
    const double raw = logits[static_cast<size_t>(out[k])] - mx - std::log(z_all);
    const double masked = logits[static_cast<size_t>(out[k])] - mx - std::log(z_allowed);
    EXPECT_EQ(lps[k].chosen.token, out[k]);
    EXPECT_NEAR(lps[k].chosen.logprob, raw, 2e-3) << "token " << k;
    max_gap = std::max(max_gap, raw - masked < 0 ? masked - raw : raw - masked);
    ASSERT_EQ(lps[k].n_top, 20u);
    for (uint32_t j = 0; j < lps[k].n_top; ++j)
      if (g->keeps_token(lps[k].top[j].token) == 0) ++refused_alternatives;
    ASSERT_TRUE(g->accept(out[k]).ok()) << "token " << k << " does not continue the grammar";
  }
  EXPECT_GT(max_gap, 1.0) << "the raw and masked logprobs must differ somewhere for this test to tell them apart";
  EXPECT_GT(refused_alternatives, 0u);
}

}  // namespace
}  // namespace lmrt
