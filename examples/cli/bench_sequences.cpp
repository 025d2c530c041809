#include "bench_sequences.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "bench_prompt.h"
#include "cli_common.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct SeqRep {
  double aggregate_tps = 0;  // tokens decoded by all sequences once every one has its first / time
  double ttft_ms = 0;        // median over the sequences
  double step_ms = 0;        // one batched decode step
};

// One round: N requests submitted at once, stepped until all are done. Decode is timed from the step
// after which every sequence has its first token (all prompts are in) to the end.
bool run_round(lmrt_model* model, lmrt_context* ctx, const lmrt_model_info& info, uint32_t n, uint32_t p, uint32_t g,
               SeqRep* out, std::string* error) {
  lmrt_engine_params ep;
  lmrt_engine_params_init(&ep);
  ep.max_sequences = n;
  ep.prefill_chunk = p;
  lmrt_engine* engine = nullptr;
  char err[512] = {0};
  if (lmrt_engine_create(ctx, &ep, &engine, err, sizeof err) != LMRT_OK) {
    *error = err;
    return false;
  }
  const int32_t bos = info.bos_token >= 0 ? info.bos_token : 1;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<uint64_t> ids(n);
  // EOS and its kin banned: every sequence decodes all G tokens, as the peer's do.
  lmrt_tokenizer_info ti;
  ti.struct_size = sizeof ti;
  std::vector<lmrt_logit_bias> ban;
  if (lmrt_model_get_tokenizer_info(model, &ti) == LMRT_OK)
    for (uint32_t i = 0; i < ti.n_eog_tokens && i < 16; ++i) ban.push_back({ti.eog_tokens[i], -INFINITY});
  bool ok = true;
  for (uint32_t s = 0; s < n && ok; ++s) {
    prompts.push_back(bench_prompt(p, info.n_vocab, bos, s));
    lmrt_generate_request r;
    lmrt_generate_request_init(&r);
    r.prompt_tokens = prompts.back().data();
    r.n_prompt_tokens = prompts.back().size();
    r.max_tokens = static_cast<int32_t>(g);
    r.logit_bias = ban.data();
    r.n_logit_bias = static_cast<uint32_t>(ban.size());
    ok = lmrt_engine_submit(engine, &r, nullptr, nullptr, &ids[s]) == LMRT_OK;
  }
  lmrt_generate_result res{};
  res.struct_size = sizeof res;
  auto tokens_so_far = [&](uint32_t* fewest) {
    uint64_t sum = 0;
    *fewest = UINT32_MAX;
    for (uint64_t id : ids) {
      lmrt_engine_result(engine, id, &res);
      sum += res.completion_tokens;
      *fewest = std::min(*fewest, res.completion_tokens);
    }
    return sum;
  };
  uint32_t unfinished = n, fewest = 0, decode_steps = 0;
  uint64_t tokens0 = 0;
  Clock::time_point t0{};
  bool decoding = false;
  while (ok && unfinished > 0) {
    ok = lmrt_engine_step(engine, &unfinished) == LMRT_OK;
    if (decoding) {
      ++decode_steps;
    } else if (tokens_so_far(&fewest), fewest >= 1) {
      decoding = true;
      tokens0 = tokens_so_far(&fewest);
      t0 = Clock::now();
    }
  }
  const double decode_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const uint64_t tokens1 = tokens_so_far(&fewest);
  std::vector<double> ttft;
  for (uint64_t id : ids) {
    lmrt_engine_result(engine, id, &res);
    ttft.push_back(res.ttft_ms);
  }
  if (!ok) *error = lmrt_engine_last_error(engine);
  lmrt_engine_free(engine);
  if (!ok) return false;
  out->aggregate_tps = decode_s > 0 ? static_cast<double>(tokens1 - tokens0) / decode_s : 0;
  out->step_ms = decode_steps > 0 ? decode_s * 1000.0 / decode_steps : 0;
  out->ttft_ms = median(ttft);
  return true;
}

}  // namespace

int bench_sequences(lmrt_model* model, const std::vector<uint32_t>& counts, uint32_t threads, uint32_t p, uint32_t g,
                    uint32_t reps, bool json) {
  lmrt_model_info info;
  info.struct_size = sizeof info;
  lmrt_model_get_info(model, &info);
  if (info.n_vocab <= 259) {
    cli::print_error("bench", "the synthetic prompt needs a vocabulary of more than 259 tokens");
    return 1;
  }
  if (!json) std::printf("isa=%s threads=%u P=%u G=%u reps=%u\n", lmrt_isa(), threads, p, g, reps);
  double base_tps = 0;
  for (uint32_t n : counts) {
    // One arena for all the sequences: N * (P + G), rounded up to 256 like the peer's per sequence.
    lmrt_context_params cp;
    lmrt_context_params_init(&cp);
    cp.n_ctx = n * static_cast<uint32_t>((p + g + 255) / 256 * 256);
    cp.n_batch = std::max(p, n);
    cp.n_threads = threads;
    lmrt_context* ctx = nullptr;
    char err[1024] = {0};
    if (lmrt_context_create(model, &cp, &ctx, err, sizeof err) != LMRT_OK) {
      cli::print_error("bench", std::string("cannot create the context: ") + err);
      return 1;
    }
    std::string error;
    SeqRep warm;
    bool ok = run_round(model, ctx, info, n, std::min<uint32_t>(p, 32), 2, &warm, &error);  // faults weights in
    std::vector<double> agg, ttft, step;
    for (uint32_t r = 0; r < reps && ok; ++r) {
      SeqRep rep;
      ok = run_round(model, ctx, info, n, p, g, &rep, &error);
      agg.push_back(rep.aggregate_tps);
      ttft.push_back(rep.ttft_ms);
      step.push_back(rep.step_ms);
    }
    lmrt_context_free(ctx);
    if (!ok) {
      cli::print_error("bench", error);
      return 1;
    }
    const double a = median(agg);
    if (base_tps == 0) base_tps = a;
    if (json) {
      std::printf(
          "{\"sequences\":%u,\"threads\":%u,\"P\":%u,\"G\":%u,\"reps\":%u,\"isa\":\"%s\","
          "\"aggregate_decode_tps\":%.2f,\"per_sequence_decode_tps\":%.2f,\"ttft_ms\":%.2f,\"step_ms\":%.3f}\n",
          n, threads, p, g, reps, lmrt_isa(), a, a / n, median(ttft), median(step));
    } else {
      std::printf(
          "sequences %2u: aggregate decode %8.1f tok/s (x%.2f)  per sequence %7.1f tok/s  ttft %8.1f ms  "
          "step %.2f ms\n",
          n, a, base_tps > 0 ? a / base_tps : 0.0, a / n, median(ttft), median(step));
    }
    std::fflush(stdout);
  }
  return 0;
}
