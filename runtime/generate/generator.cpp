#include "runtime/generate/generator.h"

#include <algorithm>
#include <chrono>

namespace lmrt {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

int32_t argmax(const float* x, size_t n) { return static_cast<int32_t>(std::max_element(x, x + n) - x); }

}  // namespace

Status prefill_prompt(Context& ctx, const std::vector<int32_t>& prompt, uint32_t* reused) {
  const std::vector<int32_t>& held = ctx.tokens();
  size_t common = 0;
  while (common < held.size() && common < prompt.size() && held[common] == prompt[common]) ++common;
  if (common == prompt.size()) --common;
  ctx.truncate(static_cast<uint32_t>(common));
  *reused = static_cast<uint32_t>(common);
  return ctx.eval(prompt.data() + common, prompt.size() - common);
}

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::none:
      return "none";
    case FinishReason::eos:
      return "eos";
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::context_full:
      return "context_full";
    case FinishReason::error:
      return "error";
  }
  return "none";
}

Status tokenize_prompt(const Tokenizer& tok, const GenerateRequest& req, std::vector<int32_t>* out) {
  if (!req.prompt_tokens.empty()) {
    for (size_t i = 0; i < req.prompt_tokens.size(); ++i)
      if (req.prompt_tokens[i] < 0 || req.prompt_tokens[i] >= tok.n_vocab())
        return Error(Code::invalid_argument, "prompt_tokens[" + std::to_string(i) +
                                                 "] = " + std::to_string(req.prompt_tokens[i]) +
                                                 " is not a token id (0.." + std::to_string(tok.n_vocab() - 1) + ")");
    *out = req.prompt_tokens;
    return Status::Ok();
  }
  LMRT_RETURN_IF_ERROR(tok.encode(req.prompt, req.add_bos, req.parse_special, out));
  if (out->empty()) {
    // An empty prompt without BOS still needs one token to start from.
    if (tok.bos() < 0) return Error(Code::invalid_argument, "the prompt is empty and the vocabulary has no BOS token");
    out->push_back(tok.bos());
  }
  return Status::Ok();
}

Status generate(Context& ctx, const Tokenizer& tok, const GenerateRequest& req, TokenSink sink,
                GenerateResult* result) {
  const auto t_start = Clock::now();
  if (req.max_tokens < 1) return Error(Code::invalid_argument, "max_tokens must be at least 1");
  if (req.top_logprobs > kMaxTopLogprobs)
    return Error(Code::invalid_argument, "top_logprobs must be at most " + std::to_string(kMaxTopLogprobs));
  if (req.context_shift && req.n_keep + 2 > ctx.n_ctx())
    return Error(Code::invalid_argument, "n_keep " + std::to_string(req.n_keep) +
                                             " leaves nothing to shift in a context of " + std::to_string(ctx.n_ctx()));
  GenerateResult& r = *result;
  r = GenerateResult{};

  std::vector<int32_t> prompt;
  LMRT_RETURN_IF_ERROR(tokenize_prompt(tok, req, &prompt));
  if (prompt.size() > ctx.n_ctx())
    return Error(Code::context_full, "the prompt has " + std::to_string(prompt.size()) +
                                         " tokens but the context holds only " + std::to_string(ctx.n_ctx()));
  r.prompt_tokens = static_cast<uint32_t>(prompt.size());
  const int32_t n_vocab = static_cast<int32_t>(ctx.model().hparams().n_vocab);
  if (req.sampler != nullptr) {
    LMRT_RETURN_IF_ERROR(req.sampler->reserve(n_vocab));
    for (int32_t t : prompt) LMRT_RETURN_IF_ERROR(req.sampler->accept_prompt(t));
  }

  // Everything the loop needs is reserved here, so decoding a token allocates nothing (up to n_ctx
  // tokens: more only with context shift, which then grows the buffers; max_tokens alone may be
  // 2^31 - 1, far beyond what should be reserved).
  const size_t max_tokens = static_cast<size_t>(req.max_tokens);
  const size_t cap = std::min(max_tokens, static_cast<size_t>(ctx.n_ctx()));
  r.tokens.reserve(cap);
  r.piece_lengths.reserve(cap + 1);
  r.piece_tokens.reserve(cap + 1);
  if (req.top_logprobs >= 0) r.logprobs.reserve(cap);
  r.text.reserve(cap * 8);
  std::string piece;
  piece.reserve(64);
  std::string generated;  // every complete character so far; r.text is its released prefix
  generated.reserve(cap * 16 + 64);
  Utf8Assembler utf8;
  utf8.reserve(16);
  StopMatcher stops;
  stops.set_stops(req.stop);
  for (StopCriterion* c : req.stop_criteria) c->reset();
  size_t first_unreported = 0;

  // Releases generated[r.text.size(), end) to the sink; false when the sink cancels.
  auto release = [&](size_t end, bool final_piece) -> bool {
    const size_t begin = r.text.size();
    if (end <= begin && !(final_piece && first_unreported < r.tokens.size())) return true;
    const std::string_view piece_text = std::string_view(generated).substr(begin, end > begin ? end - begin : 0);
    r.text.append(piece_text);
    r.piece_lengths.push_back(static_cast<uint32_t>(piece_text.size()));
    r.piece_tokens.push_back(static_cast<uint32_t>(r.tokens.size() - first_unreported));
    const size_t first = first_unreported;
    first_unreported = r.tokens.size();
    return sink.fn == nullptr || sink.fn(sink.user, piece_text, r, first, r.tokens.size() - first) == 0;
  };

  // Decides how much of `generated` may be released after the newest token: *end, and whether a
  // stop string or a stop criterion ended the generation (then *end is where the text stops).
  auto judge = [&](int32_t last_token, size_t* end, bool* stop) -> Status {
    *stop = false;
    *end = generated.size();
    const StopMatcher::Scan sc = stops.scan(generated, r.text.size());
    if (sc.match != std::string::npos) {
      *stop = true;
      *end = sc.match;
    } else {
      *end = generated.size() - sc.hold;
    }
    for (StopCriterion* c : req.stop_criteria) {
      StopVerdict v;
      LMRT_RETURN_IF_ERROR(c->check(generated, last_token, &v));
      if (v.bytes > generated.size())
        return Error(Code::plugin, "stop criterion '" + std::string(c->name()) + "' answered " +
                                       std::to_string(v.bytes) + " bytes for a text of " +
                                       std::to_string(generated.size()));
      if (v.action == StopVerdict::Action::stop && (!*stop || v.bytes < *end)) {
        *stop = true;
        *end = std::max(v.bytes, r.text.size());  // released text cannot be taken back
      } else if (v.action == StopVerdict::Action::hold && !*stop) {
        *end = std::min(*end, generated.size() - v.bytes);
      }
    }
    // Never cut a character: move back to the start of the one the boundary falls in.
    while (*end > r.text.size() && (static_cast<uint8_t>(generated[*end]) & 0xC0) == 0x80) --*end;
    *end = std::max(*end, r.text.size());
    return Status::Ok();
  };

  const auto t_prefill = Clock::now();
  LMRT_RETURN_IF_ERROR(prefill_prompt(ctx, prompt, &r.reused_tokens));
  r.timings.prefill_ms = ms_between(t_prefill, Clock::now());
  const size_t n_prefill = prompt.size() - r.reused_tokens;
  if (r.timings.prefill_ms > 0) r.timings.prefill_tokens_per_s = n_prefill * 1000.0 / r.timings.prefill_ms;

  int32_t prev = prompt.back();
  Clock::time_point t_first{};
  for (;;) {
    const float* logits = ctx.logits(ctx.last_eval_count() - 1);
    int32_t next = 0;
    if (req.sampler != nullptr) {
      LMRT_RETURN_IF_ERROR(req.sampler->sample(logits, n_vocab, &next));
    } else {
      next = argmax(logits, static_cast<size_t>(n_vocab));
    }
    if (r.tokens.empty()) {
      t_first = Clock::now();
      r.timings.ttft_ms = ms_between(t_start, t_first);
    }
    if (tok.is_eog(next)) {
      r.finish_reason = FinishReason::eos;
      break;
    }
    r.tokens.push_back(next);
    if (req.top_logprobs >= 0) {
      r.logprobs.emplace_back();
      LMRT_RETURN_IF_ERROR(compute_logprobs(logits, n_vocab, next, req.top_logprobs, &r.logprobs.back()));
    }
    if (req.sampler != nullptr) LMRT_RETURN_IF_ERROR(req.sampler->accept(next));

    piece.clear();
    LMRT_RETURN_IF_ERROR(tok.token_to_bytes(next, &piece));
    utf8.push(tok.visible_piece(prev, piece), &generated);
    prev = next;
    size_t end = 0;
    bool stopped = false;
    LMRT_RETURN_IF_ERROR(judge(next, &end, &stopped));
    if (!release(end, false)) {
      r.finish_reason = FinishReason::cancelled;
      break;
    }
    if (stopped) {
      r.finish_reason = FinishReason::stop;
      break;
    }
    if (r.tokens.size() >= max_tokens) {
      r.finish_reason = FinishReason::length;
      break;
    }
    if (ctx.n_past() >= ctx.n_ctx()) {
      if (!req.context_shift) {
        r.finish_reason = FinishReason::context_full;
        break;
      }
      const uint32_t n_discard = (ctx.n_past() - req.n_keep) / 2;
      LMRT_RETURN_IF_ERROR(ctx.shift(req.n_keep, n_discard));
      ++r.context_shifts;
    }
    LMRT_RETURN_IF_ERROR(ctx.eval(&next, 1));
  }
  if (r.finish_reason != FinishReason::cancelled && r.finish_reason != FinishReason::stop) {
    // The end: an unfinished character becomes U+FFFD; held text is released unless a stop string
    // (or a criterion) completes with it.
    utf8.flush(&generated);
    size_t end = generated.size();
    bool stopped = false;
    const StopMatcher::Scan sc = stops.scan(generated, r.text.size());
    if (sc.match != std::string::npos) {
      stopped = true;
      end = sc.match;
    }
    if (stopped) r.finish_reason = FinishReason::stop;
    (void)release(end, true);
  }
  r.completion_tokens = static_cast<uint32_t>(r.tokens.size());
  if (!r.tokens.empty()) {
    r.timings.decode_ms = ms_between(t_first, Clock::now());
    if (r.tokens.size() > 1 && r.timings.decode_ms > 0)
      r.timings.decode_tokens_per_s = (r.tokens.size() - 1) * 1000.0 / r.timings.decode_ms;
  }
  return Status::Ok();
}

}  // namespace lmrt
