#include "runtime/generate/beam_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "runtime/kv/kv_sequences.h"

namespace lmrt {

namespace {

using Clock = std::chrono::steady_clock;

struct LiveBeam {
  uint32_t seq = 0;  // its sequence of the arena: the prompt's cells and those of its evaluated tokens
  std::vector<int32_t> tokens;
  double logprob = 0;
};

struct BeamCandidate {
  uint32_t parent;
  int32_t token;
  double logprob;  // the parent's plus this token's
};

// log-softmax of logits into out (double for stable sums over long sequences).
void log_softmax(const float* logits, uint32_t n, std::vector<double>* out) {
  const float mx = *std::max_element(logits, logits + n);
  double sum = 0;
  for (uint32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  out->resize(n);
  for (uint32_t i = 0; i < n; ++i) (*out)[i] = logits[i] - lse;
}

// The `count` best tokens of one distribution (ties: lower id first).
void best_tokens(const std::vector<double>& lp, uint32_t count, std::vector<int32_t>* out) {
  out->resize(lp.size());
  for (size_t i = 0; i < lp.size(); ++i) (*out)[i] = static_cast<int32_t>(i);
  count = std::min<uint32_t>(count, static_cast<uint32_t>(lp.size()));
  std::partial_sort(out->begin(), out->begin() + count, out->end(),
                    [&](int32_t a, int32_t b) { return lp[a] > lp[b] || (lp[a] == lp[b] && a < b); });
  out->resize(count);
}

std::string detokenize(const Tokenizer& tok, int32_t prev, const std::vector<int32_t>& tokens) {
  std::string text, piece, assembled;
  Utf8Assembler utf8;
  for (int32_t t : tokens) {
    piece.clear();
    if (!tok.token_to_bytes(t, &piece).ok()) continue;
    utf8.push(tok.visible_piece(prev, piece), &text);
    prev = t;
  }
  utf8.flush(&text);
  return text;
}

}  // namespace

double beam_score(double logprob, size_t n_tokens, float length_penalty) {
  return logprob / std::pow(static_cast<double>(std::max<size_t>(n_tokens, 1)), length_penalty);
}

Status beam_search(Context& ctx, const Tokenizer& tok, const BeamSearchRequest& req, std::vector<Beam>* beams,
                   GenerateResult* summary) {
  const auto t_start = Clock::now();
  const uint32_t k = req.n_beams;
  if (k < 1 || k > LlamaGraph::kMaxLogitRows)
    return Error(Code::invalid_argument, "n_beams must be 1 to " + std::to_string(LlamaGraph::kMaxLogitRows));
  if (req.base.max_tokens < 1) return Error(Code::invalid_argument, "max_tokens must be at least 1");
  if (!std::isfinite(req.length_penalty)) return Error(Code::invalid_argument, "length_penalty must be finite");
  GenerateResult& r = *summary;
  r = GenerateResult{};
  beams->clear();

  std::vector<int32_t> prompt;
  LMRT_RETURN_IF_ERROR(tokenize_prompt(tok, req.base, &prompt));
  if (prompt.size() > ctx.n_ctx())
    return Error(Code::context_full, "the prompt has " + std::to_string(prompt.size()) +
                                         " tokens but the context holds only " + std::to_string(ctx.n_ctx()));
  // The beams share the arena: each step after the first takes one slot per beam. A context without
  // room for one such step would end every beam after one token; say so instead.
  const size_t free_after_prompt = ctx.n_ctx() - prompt.size();
  if (req.base.max_tokens > 1 && free_after_prompt < k)
    return Error(Code::context_full, std::to_string(k) + " beams need at least " + std::to_string(k) +
                                         " free context slots after the " + std::to_string(prompt.size()) +
                                         "-token prompt to grow past one token, and the context (n_ctx " +
                                         std::to_string(ctx.n_ctx()) + ") has " + std::to_string(free_after_prompt) +
                                         "; raise n_ctx (each further token takes up to " + std::to_string(k) +
                                         " slots) or use fewer beams");
  r.prompt_tokens = static_cast<uint32_t>(prompt.size());
  const auto t_prefill = Clock::now();
  LMRT_RETURN_IF_ERROR(prefill_prompt(ctx, prompt, &r.reused_tokens));
  r.timings.prefill_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_prefill).count();
  if (r.timings.prefill_ms > 0)
    r.timings.prefill_tokens_per_s = (prompt.size() - r.reused_tokens) * 1000.0 / r.timings.prefill_ms;
  const uint32_t n_prompt = ctx.n_past();
  const uint32_t n_vocab = ctx.model().hparams().n_vocab;

  // Beams are sequences of the arena (KvSequences): the prompt is one (its cells are where the prefill
  // put it, positions 0..n_prompt-1), each continuation a fork of its parent that shares every cell of
  // its history and takes one cell of its own per token. The beams of two consecutive steps live at once.
  KvSequences seqs(ctx.n_ctx(), 2 * k + 1);
  uint32_t prompt_seq = 0;
  LMRT_RETURN_IF_ERROR(seqs.create(&prompt_seq));
  LMRT_RETURN_IF_ERROR(seqs.grow(prompt_seq, n_prompt));

  std::vector<Beam> finished;
  auto finish = [&](const LiveBeam& b, double logprob, FinishReason why) {
    Beam out;
    out.tokens = b.tokens;
    out.logprob = logprob;
    out.score = beam_score(logprob, b.tokens.size(), req.length_penalty);
    out.finish_reason = why;
    finished.push_back(std::move(out));
  };

  std::vector<double> lp;
  std::vector<int32_t> best;
  std::vector<BeamCandidate> candidates;
  // The first step expands the prompt's own logits.
  std::vector<LiveBeam> live(1);
  live[0].seq = prompt_seq;
  log_softmax(ctx.logits(ctx.last_eval_count() - 1), n_vocab, &lp);
  std::vector<std::vector<double>> step_lp(1, lp);  // each live beam's next-token distribution
  FinishReason stop_reason = FinishReason::length;

  for (;;) {
    {
      candidates.clear();
      for (uint32_t i = 0; i < live.size(); ++i) {
        best_tokens(step_lp[i], 2 * k, &best);
        for (int32_t t : best) candidates.push_back({i, t, live[i].logprob + step_lp[i][t]});
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const BeamCandidate& a, const BeamCandidate& b) { return a.logprob > b.logprob; });
      std::vector<LiveBeam> next;
      for (size_t rank = 0; rank < candidates.size() && next.size() < k; ++rank) {
        const BeamCandidate& c = candidates[rank];
        if (tok.is_eog(c.token)) {
          if (rank < k) finish(live[c.parent], c.logprob, FinishReason::eos);
          continue;
        }
        LiveBeam b = live[c.parent];
        LMRT_RETURN_IF_ERROR(seqs.fork(live[c.parent].seq, seqs.length(live[c.parent].seq), &b.seq));
        b.tokens.push_back(c.token);
        b.logprob = c.logprob;
        next.push_back(std::move(b));
      }
      for (const LiveBeam& b : live) seqs.free(b.seq);
      live = std::move(next);
      if (finished.size() >= k || live.empty()) break;
      if (live[0].tokens.size() >= static_cast<size_t>(req.base.max_tokens)) break;
    }
    // Evaluate each live beam's newest token in one batch, each in a cell of its own.
    if (seqs.n_free_cells() < live.size()) {
      stop_reason = FinishReason::context_full;
      break;
    }
    std::vector<int32_t> batch_tokens(live.size());
    std::vector<uint32_t> batch_pos(live.size()), batch_slot(live.size());
    std::vector<AttentionView> views(live.size());
    for (uint32_t i = 0; i < live.size(); ++i) {
      const uint32_t s = live[i].seq;
      LMRT_RETURN_IF_ERROR(seqs.grow(s, 1));
      const uint32_t n = seqs.length(s);
      batch_tokens[i] = live[i].tokens.back();
      batch_pos[i] = n - 1;
      batch_slot[i] = seqs.cells(s)[n - 1];
      views[i] = {seqs.cells(s), n};  // read slot by slot, as the views of beams always were
    }
    GraphBatch batch;
    batch.tokens = batch_tokens.data();
    batch.n = static_cast<uint32_t>(live.size());
    batch.pos = batch_pos.data();
    batch.slot = batch_slot.data();
    batch.views = views.data();
    LMRT_RETURN_IF_ERROR(ctx.eval_batch(batch));
    step_lp.resize(live.size());
    for (uint32_t i = 0; i < live.size(); ++i) log_softmax(ctx.batch_logits(i), n_vocab, &step_lp[i]);
  }
  // Unfinished beams count only when fewer than k beams ended on their own.
  if (finished.size() < k)
    for (const LiveBeam& b : live) finish(b, b.logprob, stop_reason);
  std::stable_sort(finished.begin(), finished.end(), [](const Beam& a, const Beam& b) { return a.score > b.score; });
  if (finished.size() > k) finished.resize(k);
  for (Beam& b : finished) b.text = detokenize(tok, prompt.back(), b.tokens);
  *beams = std::move(finished);

  ctx.truncate(n_prompt);  // the slots after the prompt now hold beam keys; forget them
  if (!beams->empty()) {
    const Beam& top = beams->front();
    r.tokens = top.tokens;
    r.text = top.text;
    r.finish_reason = top.finish_reason;
    r.completion_tokens = static_cast<uint32_t>(top.tokens.size());
  }
  r.timings.decode_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - t_start).count() - r.timings.prefill_ms;
  r.timings.ttft_ms = r.timings.prefill_ms + r.timings.decode_ms;  // beams are known only at the end
  if (r.timings.decode_ms > 0) r.timings.decode_tokens_per_s = r.completion_tokens * 1000.0 / r.timings.decode_ms;
  return Status::Ok();
}

}  // namespace lmrt
