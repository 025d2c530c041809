#include "bench_prefix.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_prompt.h"
#include "cli_common.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// n tokens of the benchmark prompt without its BOS: a message inside a conversation.
std::vector<int32_t> message(uint32_t n, uint32_t n_vocab, int32_t bos, uint32_t seed) {
  std::vector<int32_t> t = bench_prompt(n + 1, n_vocab, bos, seed);
  t.erase(t.begin());
  return t;
}

struct Setup {
  lmrt_model_info info{};
  int32_t bos = 1;
  std::vector<lmrt_logit_bias> ban;  // EOS and its kin: every reply has G tokens
};

bool setup(lmrt_model* model, Setup* s) {
  s->info.struct_size = sizeof s->info;
  lmrt_model_get_info(model, &s->info);
  if (s->info.n_vocab <= 259) {
    cli::print_error("bench", "the synthetic prompt needs a vocabulary of more than 259 tokens");
    return false;
  }
  s->bos = s->info.bos_token >= 0 ? s->info.bos_token : 1;
  lmrt_tokenizer_info ti;
  ti.struct_size = sizeof ti;
  if (lmrt_model_get_tokenizer_info(model, &ti) == LMRT_OK)
    for (uint32_t i = 0; i < ti.n_eog_tokens && i < 16; ++i) s->ban.push_back({ti.eog_tokens[i], -INFINITY});
  return true;
}

lmrt_context* make_context(lmrt_model* model, uint32_t n_ctx, uint32_t threads) {
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = (n_ctx + 255) / 256 * 256;
  cp.n_threads = threads;
  lmrt_context* ctx = nullptr;
  char err[1024] = {0};
  if (lmrt_context_create(model, &cp, &ctx, err, sizeof err) != LMRT_OK)
    cli::print_error("bench", std::string("cannot create the context: ") + err);
  return ctx;
}

lmrt_engine* make_engine(lmrt_context* ctx, uint32_t max_sequences, uint32_t chunk, bool reuse) {
  lmrt_engine_params ep;
  lmrt_engine_params_init(&ep);
  ep.max_sequences = max_sequences;
  ep.prefill_chunk = chunk;
  ep.prefix_reuse = reuse ? 1 : 0;
  lmrt_engine* engine = nullptr;
  char err[1024] = {0};
  if (lmrt_engine_create(ctx, &ep, &engine, err, sizeof err) != LMRT_OK)
    cli::print_error("bench", std::string("cannot create the engine: ") + err);
  return engine;
}

bool submit(lmrt_engine* engine, const Setup& s, const std::vector<int32_t>& prompt, uint32_t g, uint64_t* id) {
  lmrt_generate_request r;
  lmrt_generate_request_init(&r);
  r.prompt_tokens = prompt.data();
  r.n_prompt_tokens = prompt.size();
  r.max_tokens = static_cast<int32_t>(g);
  r.logit_bias = s.ban.data();
  r.n_logit_bias = static_cast<uint32_t>(s.ban.size());
  return lmrt_engine_submit(engine, &r, nullptr, nullptr, id) == LMRT_OK;
}

struct Turn {
  uint32_t prompt_tokens = 0, reused_tokens = 0;
  double ttft_ms = 0;
};

// One chat of o.turns turns on a fresh engine; the turns' measurements in *turns.
bool chat_once(lmrt_context* ctx, const Setup& s, const PrefixBenchOptions& o, bool reuse, std::vector<Turn>* turns) {
  lmrt_engine* engine = make_engine(ctx, 1, o.chunk, reuse);
  if (engine == nullptr) return false;
  std::vector<int32_t> conversation(1, s.bos);
  turns->clear();
  bool ok = true;
  for (uint32_t k = 0; k < o.turns && ok; ++k) {
    const std::vector<int32_t> user = message(o.p, s.info.n_vocab, s.bos, 1000 + k);
    conversation.insert(conversation.end(), user.begin(), user.end());
    uint64_t id = 0;
    lmrt_generate_result res{};
    res.struct_size = sizeof res;
    ok = submit(engine, s, conversation, o.g, &id) && lmrt_engine_run(engine) == LMRT_OK &&
         lmrt_engine_result(engine, id, &res) == LMRT_OK;
    if (!ok) break;
    turns->push_back({res.prompt_tokens, res.reused_tokens, res.ttft_ms});
    conversation.insert(conversation.end(), res.tokens, res.tokens + res.completion_tokens);
    lmrt_engine_release(engine, id);
  }
  if (!ok) cli::print_error("bench", lmrt_engine_last_error(engine));
  lmrt_engine_free(engine);
  return ok;
}

struct Shared {
  uint64_t prompt_tokens = 0, evaluated = 0;
  double ttft_first = 0, ttft_median = 0, ttft_max = 0, total_ms = 0;
};

bool shared_once(lmrt_context* ctx, const Setup& s, const PrefixBenchOptions& o, bool reuse, Shared* out) {
  lmrt_engine* engine = make_engine(ctx, o.sequences, o.chunk, reuse);
  if (engine == nullptr) return false;
  const std::vector<int32_t> system = bench_prompt(o.shared, s.info.n_vocab, s.bos, 7);
  std::vector<uint64_t> ids(o.sequences);
  std::vector<std::vector<int32_t>> prompts;
  bool ok = true;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < o.sequences && ok; ++i) {
    prompts.push_back(system);
    const std::vector<int32_t> own = message(o.p, s.info.n_vocab, s.bos, 100 + i);
    prompts.back().insert(prompts.back().end(), own.begin(), own.end());
    ok = submit(engine, s, prompts.back(), o.g, &ids[i]);
  }
  ok = ok && lmrt_engine_run(engine) == LMRT_OK;
  *out = Shared{};
  out->total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> ttft;
  for (uint32_t i = 0; i < o.sequences && ok; ++i) {
    lmrt_generate_result res{};
    res.struct_size = sizeof res;
    ok = lmrt_engine_result(engine, ids[i], &res) == LMRT_OK;
    out->prompt_tokens += res.prompt_tokens;
    out->evaluated += res.prompt_tokens - res.reused_tokens;
    ttft.push_back(res.ttft_ms);
    if (i == 0) out->ttft_first = res.ttft_ms;
  }
  if (!ok) cli::print_error("bench", lmrt_engine_last_error(engine));
  lmrt_engine_free(engine);
  out->ttft_median = median(ttft);
  out->ttft_max = ttft.empty() ? 0 : *std::max_element(ttft.begin(), ttft.end());
  return ok;
}

}  // namespace

int bench_chat_turns(lmrt_model* model, const PrefixBenchOptions& o) {
  Setup s;
  if (!setup(model, &s)) return 1;
  lmrt_context* ctx = make_context(model, 1 + o.turns * (o.p + o.g), o.threads);
  if (ctx == nullptr) return 1;
  // Per setting (reuse on, off), per turn: the medians over the runs.
  std::vector<std::vector<std::vector<Turn>>> runs(2);
  std::vector<Turn> turns;
  PrefixBenchOptions warm = o;
  warm.turns = std::min<uint32_t>(o.turns, 2);
  bool ok = chat_once(ctx, s, warm, true, &turns);  // faults the weights in
  for (uint32_t r = 0; r < o.reps && ok; ++r)
    for (int off = 0; off < 2 && ok; ++off) {
      ok = chat_once(ctx, s, o, off == 0, &turns);
      runs[off].push_back(turns);
    }
  lmrt_context_free(ctx);
  if (!ok) return 1;
  double first[2] = {0, 0};
  for (uint32_t k = 0; k < o.turns; ++k) {
    double ttft[2];
    for (int off = 0; off < 2; ++off) {
      std::vector<double> v;
      for (const auto& run : runs[off]) v.push_back(run[k].ttft_ms);
      ttft[off] = median(v);
      if (k == 0) first[off] = ttft[off];
    }
    const Turn& t = runs[0].front()[k];
    if (o.json) {
      std::printf(
          "{\"turn\":%u,\"threads\":%u,\"P\":%u,\"G\":%u,\"reps\":%u,\"prompt_tokens\":%u,\"reused_tokens\":%u,"
          "\"ttft_ms\":%.2f,\"ttft_vs_turn1\":%.3f,\"ttft_ms_no_reuse\":%.2f,\"ttft_vs_turn1_no_reuse\":%.3f}\n",
          k + 1, o.threads, o.p, o.g, o.reps, t.prompt_tokens, t.reused_tokens, ttft[0], ttft[0] / first[0], ttft[1],
          ttft[1] / first[1]);
    } else {
      std::printf(
          "turn %u: prompt %5u tokens, %5u reused  ttft %8.1f ms (x%.2f of turn 1)  without reuse %8.1f ms "
          "(x%.2f)\n",
          k + 1, t.prompt_tokens, t.reused_tokens, ttft[0], ttft[0] / first[0], ttft[1], ttft[1] / first[1]);
    }
    std::fflush(stdout);
  }
  return 0;
}

int bench_shared_prefix(lmrt_model* model, const PrefixBenchOptions& o) {
  Setup s;
  if (!setup(model, &s)) return 1;
  lmrt_context* ctx = make_context(model, o.sequences * (o.shared + o.p + o.g), o.threads);
  if (ctx == nullptr) return 1;
  PrefixBenchOptions warm = o;
  warm.shared = std::min<uint32_t>(o.shared, 32);
  warm.g = 2;
  Shared w;
  bool ok = shared_once(ctx, s, warm, true, &w);  // faults the weights in
  std::vector<std::vector<Shared>> runs(2);
  for (uint32_t r = 0; r < o.reps && ok; ++r)
    for (int off = 0; off < 2 && ok; ++off) {
      Shared one;
      ok = shared_once(ctx, s, o, off == 0, &one);
      runs[off].push_back(one);
    }
  lmrt_context_free(ctx);
  if (!ok) return 1;
  for (int off = 0; off < 2; ++off) {
    std::vector<double> first, med, mx, total;
    for (const Shared& one : runs[off]) {
      first.push_back(one.ttft_first);
      med.push_back(one.ttft_median);
      mx.push_back(one.ttft_max);
      total.push_back(one.total_ms);
    }
    const Shared& one = runs[off].front();
    if (o.json) {
      std::printf(
          "{\"prefix_reuse\":%d,\"sequences\":%u,\"shared_prefix\":%u,\"threads\":%u,\"P\":%u,\"G\":%u,\"chunk\":%u,"
          "\"reps\":%u,\"prompt_tokens\":%llu,\"evaluated_prompt_tokens\":%llu,\"ttft_ms_first\":%.2f,"
          "\"ttft_ms_median\":%.2f,\"ttft_ms_max\":%.2f,\"total_ms\":%.2f}\n",
          off == 0, o.sequences, o.shared, o.threads, o.p, o.g, o.chunk, o.reps,
          static_cast<unsigned long long>(one.prompt_tokens), static_cast<unsigned long long>(one.evaluated),
          median(first), median(med), median(mx), median(total));
    } else {
      std::printf(
          "prefix reuse %-3s: %u requests of %u shared + %u own tokens: evaluated %llu of %llu prompt tokens  "
          "ttft first %8.1f median %8.1f max %8.1f ms  all done in %8.1f ms\n",
          off == 0 ? "on" : "off", o.sequences, o.shared, o.p, static_cast<unsigned long long>(one.evaluated),
          static_cast<unsigned long long>(one.prompt_tokens), median(first), median(med), median(mx), median(total));
    }
    std::fflush(stdout);
  }
  return 0;
}
