// What a grammar adds to a greedy decode step, measured inside one process on the same logits: the
// model decodes under a JSON Schema, and at every step both the constrained chain ("grammar greedy",
// checked last as SamplerChain runs it) and the unconstrained one ("greedy") sample and accept on the
// logits of that step, each timed, beside the forward pass that made them. The overhead is the extra
// sampler time over the whole unconstrained step (forward + greedy), summed over the generation, so
// host noise in the forward pass, which end-to-end runs of two processes cannot separate from a few
// percent, cancels out.
//   grammar_step_bench MODEL.gguf [SCHEMA.json] [-n TOKENS] [-t THREADS] [-p PROMPT] [--no-grammar]
// (--no-grammar: greedy decoding alone, for the forward pass's times without a grammar beside it)
#include <lmrt/lmrt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/grammar/token_trie.h"
#include "runtime/model/gguf_file.h"
#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/grammar_sampler.h"
#include "runtime/sampling/sampler_chain.h"
#include "runtime/tokenizer/tokenizer.h"

using namespace lmrt;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int fail(const std::string& what) {
  std::fprintf(stderr, "grammar_step_bench: %s\n", what.c_str());
  return 1;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: grammar_step_bench MODEL.gguf [SCHEMA.json] [-n TOKENS] [-t THREADS] [-p PROMPT] [--no-grammar]\n");
    return 2;
  }
  const std::string model_path = argv[1];
  std::string schema_path = "tests/bench/nested-schema.json", prompt = "Give me a customer record as JSON:";
  int n_tokens = 48, threads = 1;
  bool no_grammar = false;  // decode unconstrained, the grammar not run: the forward pass's own times
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-n" && i + 1 < argc)
      n_tokens = std::atoi(argv[++i]);
    else if (a == "-t" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (a == "-p" && i + 1 < argc)
      prompt = argv[++i];
    else if (a == "--no-grammar")
      no_grammar = true;
    else
      schema_path = a;
  }
  std::ifstream in(schema_path);
  if (!in) return fail("cannot read " + schema_path);
  std::stringstream text;
  text << in.rdbuf();

  std::unique_ptr<GgufFile> gguf;
  std::unique_ptr<Tokenizer> tok;
  std::shared_ptr<const TokenTrie> trie;
  Status s = GgufFile::open(model_path, true, &gguf);
  if (s.ok()) s = Tokenizer::from_gguf(*gguf, &tok);
  if (s.ok()) s = make_token_trie(*tok, &trie);
  std::unique_ptr<Sampler> grammar, greedy_c, greedy_u;
  if (s.ok()) s = make_grammar_sampler_from_text(text.str(), true, trie, &grammar);
  if (s.ok()) s = make_greedy_sampler(&greedy_c);
  if (s.ok()) s = make_greedy_sampler(&greedy_u);
  std::unique_ptr<SamplerChain> constrained, unconstrained;
  if (s.ok()) {
    std::vector<std::unique_ptr<Sampler>> v;
    v.push_back(std::move(grammar));
    v.push_back(std::move(greedy_c));
    s = SamplerChain::create(std::move(v), 0, &constrained);
  }
  if (s.ok()) {
    std::vector<std::unique_ptr<Sampler>> v;
    v.push_back(std::move(greedy_u));
    s = SamplerChain::create(std::move(v), 0, &unconstrained);
  }
  if (!s.ok()) return fail(s.message());

  char err[512] = {0};
  lmrt_model* model = nullptr;
  lmrt_context* ctx = nullptr;
  if (lmrt_model_open(model_path.c_str(), nullptr, &model, err, sizeof err) != LMRT_OK) return fail(err);
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = 512;
  cp.n_threads = static_cast<uint32_t>(threads);
  if (lmrt_context_create(model, &cp, &ctx, err, sizeof err) != LMRT_OK) return fail(err);
  std::vector<int32_t> ids(1024);
  size_t n_ids = 0;
  if (lmrt_tokenize(model, prompt.data(), prompt.size(), LMRT_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n_ids) !=
      LMRT_OK)
    return fail("tokenize failed");
  if (lmrt_eval(ctx, ids.data(), n_ids) != LMRT_OK) return fail(lmrt_context_last_error(ctx));
  size_t last = n_ids - 1;

  std::vector<double> fwd, samp_u, samp_c;
  int generated = 0;
  for (int step = 0; step < n_tokens; ++step) {
    const float* logits = nullptr;
    size_t n_vocab = 0;
    if (lmrt_get_logits(ctx, last, &logits, &n_vocab) != LMRT_OK) return fail(lmrt_context_last_error(ctx));
    const int32_t nv = static_cast<int32_t>(n_vocab);
    int32_t t_u = -1, t_c = -1;
    auto t0 = Clock::now();
    s = unconstrained->sample(logits, nv, &t_u);
    if (s.ok()) s = unconstrained->accept(t_u);
    samp_u.push_back(ms_since(t0));
    t0 = Clock::now();
    if (no_grammar) t_c = t_u;
    if (s.ok() && !no_grammar) s = constrained->sample(logits, nv, &t_c);
    if (s.ok() && !no_grammar) s = constrained->accept(t_c);
    samp_c.push_back(ms_since(t0));
    if (!s.ok()) return fail(s.message());
    ++generated;
    if (tok->is_eog(t_c)) break;
    if (step + 1 == n_tokens) break;  // the last token is not fed back, as in generation
    t0 = Clock::now();
    if (lmrt_eval(ctx, &t_c, 1) != LMRT_OK) return fail(lmrt_context_last_error(ctx));
    fwd.push_back(ms_since(t0));
    if (std::getenv("STEP_TRACE") != nullptr)
      std::fprintf(stderr, "step %d sampler %.3f ms forward %.3f ms\n", step, samp_c.back(), fwd.back());
    last = 0;
  }
  // Per step: the forward pass that produced the logits of the next one; the first step's logits came
  // from the prompt, so the sampler sums run over the steps that had a forward pass.
  const size_t n = fwd.size();
  samp_u.resize(n);
  samp_c.resize(n);
  const double extra = sum(samp_c) - sum(samp_u), base = sum(fwd) + sum(samp_u);
  const SamplerChain::FilterStats& st = constrained->filter_stats();
  std::printf(
      "%s: %d tokens, %zu steps, threads %d: forward ms/step median %.3f mean %.3f; greedy sampler ms/step median "
      "%.4f mean %.4f; grammar+greedy median %.4f mean %.4f max %.3f; overhead %.2f %% of the unconstrained step; "
      "picked token kept %llu, refused %llu (found by checking more candidates %llu, masked %llu)\n",
      model_path.substr(model_path.find_last_of('/') + 1).c_str(), generated, n, threads, median(fwd),
      sum(fwd) / std::max<size_t>(n, 1), median(samp_u), sum(samp_u) / std::max<size_t>(n, 1), median(samp_c),
      sum(samp_c) / std::max<size_t>(n, 1), samp_c.empty() ? 0.0 : *std::max_element(samp_c.begin(), samp_c.end()),
      base > 0 ? 100.0 * extra / base : 0.0, static_cast<unsigned long long>(st.checked),
      static_cast<unsigned long long>(st.refused), static_cast<unsigned long long>(st.repicked),
      static_cast<unsigned long long>(st.refused - st.repicked));
  lmrt_context_free(ctx);
  lmrt_model_close(model);
  return 0;
}
