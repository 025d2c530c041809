#include "runtime/generate/generator.h"

#include <algorithm>
#include <chrono>

#include "runtime/generate/sequence_decoder.h"

namespace lmrt {

namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

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
  LMRT_RETURN_IF_ERROR(SequenceDecoder::validate(req));
  if (req.context_shift && uint64_t{req.n_keep} + 2 > ctx.n_ctx())  // 64 bits: n_keep may be near 2^32
    return Error(Code::invalid_argument, "n_keep " + std::to_string(req.n_keep) +
                                             " leaves nothing to shift in a context of " + std::to_string(ctx.n_ctx()));
  std::vector<int32_t> prompt;
  LMRT_RETURN_IF_ERROR(tokenize_prompt(tok, req, &prompt));
  if (prompt.size() > ctx.n_ctx())
    return Error(Code::context_full, "the prompt has " + std::to_string(prompt.size()) +
                                         " tokens but the context holds only " + std::to_string(ctx.n_ctx()));
  SequenceDecoder decoder;
  LMRT_RETURN_IF_ERROR(decoder.start(tok, req, prompt, ctx.n_ctx(), sink, result, t_start));
  GenerateResult& r = *result;

  const auto t_prefill = Clock::now();
  LMRT_RETURN_IF_ERROR(prefill_prompt(ctx, prompt, &r.reused_tokens));
  r.timings.prefill_ms = ms_between(t_prefill, Clock::now());
  const size_t n_prefill = prompt.size() - r.reused_tokens;
  if (r.timings.prefill_ms > 0) r.timings.prefill_tokens_per_s = n_prefill * 1000.0 / r.timings.prefill_ms;

  for (;;) {
    int32_t next = 0;
    bool done = false;
    LMRT_RETURN_IF_ERROR(decoder.step(ctx.logits(ctx.last_eval_count() - 1), &next, &done));
    if (done) break;
    if (ctx.n_past() >= ctx.n_ctx()) {
      if (!req.context_shift) {
        decoder.finish(FinishReason::context_full);
        break;
      }
      const uint32_t n_discard = (ctx.n_past() - req.n_keep) / 2;
      LMRT_RETURN_IF_ERROR(ctx.shift(req.n_keep, n_discard));
      ++r.context_shifts;
    }
    LMRT_RETURN_IF_ERROR(ctx.eval(&next, 1));
  }
  return Status::Ok();
}

}  // namespace lmrt
