#include "runtime/generate/generator.h"

#include <algorithm>
#include <chrono>

namespace lmrt {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

int32_t argmax(const float* x, size_t n) { return static_cast<int32_t>(std::max_element(x, x + n) - x); }

}  // namespace

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

Status generate(Context& ctx, const SpmTokenizer& tok, const GenerateRequest& req, TokenSink sink,
                GenerateResult* result) {
  const auto t_start = Clock::now();
  if (req.max_tokens < 1) return Error(Code::invalid_argument, "max_tokens must be at least 1");
  GenerateResult& r = *result;
  r = GenerateResult{};

  std::vector<int32_t> prompt;
  LMRT_RETURN_IF_ERROR(tok.tokenize(req.prompt, req.add_bos, req.parse_special, &prompt));
  if (prompt.empty()) {
    // An empty prompt without BOS still needs one token to start from.
    if (tok.bos() < 0) return Error(Code::invalid_argument, "the prompt is empty and the vocabulary has no BOS token");
    prompt.push_back(tok.bos());
  }
  if (prompt.size() > ctx.n_ctx())
    return Error(Code::context_full, "the prompt has " + std::to_string(prompt.size()) +
                                         " tokens but the context holds only " + std::to_string(ctx.n_ctx()));
  r.prompt_tokens = static_cast<uint32_t>(prompt.size());

  // Reuse the longest prefix already in the KV arena; at least the last prompt token is
  // evaluated again so that its logits are fresh.
  const std::vector<int32_t>& held = ctx.tokens();
  size_t common = 0;
  while (common < held.size() && common < prompt.size() && held[common] == prompt[common]) ++common;
  if (common == prompt.size()) --common;
  ctx.truncate(static_cast<uint32_t>(common));
  r.reused_tokens = static_cast<uint32_t>(common);

  const size_t cap = static_cast<size_t>(req.max_tokens);
  r.tokens.reserve(cap);
  r.text.reserve(cap * 8);
  std::string piece, emitted;
  piece.reserve(64);
  emitted.reserve(256);
  Utf8Assembler utf8;
  utf8.reserve(16);

  const auto t_prefill = Clock::now();
  LMRT_RETURN_IF_ERROR(ctx.eval(prompt.data() + common, prompt.size() - common));
  r.timings.prefill_ms = ms_since(t_prefill);
  const size_t n_prefill = prompt.size() - common;
  if (r.timings.prefill_ms > 0) r.timings.prefill_tokens_per_s = n_prefill * 1000.0 / r.timings.prefill_ms;

  const uint32_t n_vocab = ctx.model().hparams().n_vocab;
  int32_t prev = prompt.back();
  Clock::time_point t_first{};
  for (;;) {
    const int32_t next = argmax(ctx.logits(ctx.last_eval_count() - 1), n_vocab);
    if (r.tokens.empty()) {
      t_first = Clock::now();
      r.timings.ttft_ms = std::chrono::duration<double, std::milli>(t_first - t_start).count();
    }
    if (tok.is_eog(next)) {
      r.finish_reason = FinishReason::eos;
      break;
    }
    r.tokens.push_back(next);
    piece.clear();
    LMRT_RETURN_IF_ERROR(tok.token_to_piece(next, &piece));
    // SentencePiece marks word starts with a space; the first word after BOS has none to show.
    std::string_view bytes = piece;
    if (prev == tok.bos() && tok.vocab().add_space_prefix && !bytes.empty() && bytes[0] == ' ') bytes.remove_prefix(1);
    emitted.clear();
    utf8.push(bytes, &emitted);
    if (!emitted.empty()) {
      r.text.append(emitted);
      if (sink.fn != nullptr && sink.fn(sink.user, emitted, next, static_cast<uint32_t>(r.tokens.size())) != 0) {
        r.finish_reason = FinishReason::cancelled;
        break;
      }
    }
    prev = next;
    if (r.tokens.size() >= cap) {
      r.finish_reason = FinishReason::length;
      break;
    }
    if (ctx.n_past() >= ctx.n_ctx()) {
      r.finish_reason = FinishReason::context_full;
      break;
    }
    LMRT_RETURN_IF_ERROR(ctx.eval(&next, 1));
  }
  emitted.clear();
  utf8.flush(&emitted);
  if (!emitted.empty() && r.finish_reason != FinishReason::cancelled) {
    r.text.append(emitted);
    if (sink.fn != nullptr)
      (void)sink.fn(sink.user, emitted, r.tokens.empty() ? -1 : r.tokens.back(),
                    static_cast<uint32_t>(r.tokens.size()));
  }
  r.completion_tokens = static_cast<uint32_t>(r.tokens.size());
  if (!r.tokens.empty()) {
    r.timings.decode_ms = ms_since(t_first);
    if (r.tokens.size() > 1 && r.timings.decode_ms > 0)
      r.timings.decode_tokens_per_s = (r.tokens.size() - 1) * 1000.0 / r.timings.decode_ms;
  }
  return Status::Ok();
}

}  // namespace lmrt
