#include "generation.h"

namespace server {
namespace {

TokenLogprob to_logprob(const lmrt_token_logprobs& lp) {
  TokenLogprob out{lp.chosen.token, lp.chosen.logprob, {}};
  for (uint32_t i = 0; i < lp.n_top && i < LMRT_MAX_TOP_LOGPROBS; ++i)
    out.top.emplace_back(lp.top[i].token, lp.top[i].logprob);
  return out;
}

struct CallbackState {
  const std::function<bool(const Piece&)>* on_piece;
  bool want_logprobs;
};

int on_token(void* user, const lmrt_token_event* ev) {
  auto* st = static_cast<CallbackState*>(user);
  if (!*st->on_piece) return 0;
  // Exceptions must not cross the C library's frames.
  try {
    return (*st->on_piece)(piece_from_event(*ev, st->want_logprobs)) ? 0 : 1;
  } catch (...) {
    return 1;
  }
}

}  // namespace

lmrt_generate_request make_choice_request(const std::vector<int32_t>& prompt, const SamplingParams& p,
                                          uint64_t seed_offset, std::vector<const char*>* stops) {
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt_tokens = prompt.data();
  req.n_prompt_tokens = prompt.size();
  req.max_tokens = p.max_tokens;
  req.seed = p.seed ? *p.seed + seed_offset : LMRT_SEED_RANDOM;
  if (req.seed == LMRT_SEED_RANDOM && p.seed) req.seed = 0;  // a wrapped seed stays deterministic
  if (!p.samplers.empty()) req.samplers = p.samplers.c_str();
  req.plugins = p.plugins;
  req.temperature = p.temperature;
  req.top_k = p.top_k;
  req.top_p = p.top_p;
  req.min_p = p.min_p;
  req.typical_p = p.typical_p;
  req.repeat_penalty = p.repeat_penalty;
  req.repeat_last_n = p.repeat_last_n;
  req.presence_penalty = p.presence_penalty;
  req.frequency_penalty = p.frequency_penalty;
  req.n_logit_bias = static_cast<uint32_t>(p.logit_bias.size());
  req.logit_bias = p.logit_bias.empty() ? nullptr : p.logit_bias.data();
  stops->clear();
  for (const auto& s : p.stop) stops->push_back(s.c_str());
  req.stop = stops->empty() ? nullptr : stops->data();
  req.n_stop = stops->size();
  req.logprobs = p.logprobs;
  req.context_shift = p.context_shift ? 1 : 0;
  req.grammar = p.grammar.empty() ? nullptr : p.grammar.c_str();
  req.json_schema = p.json_schema.empty() ? nullptr : p.json_schema.c_str();
  return req;
}

Piece piece_from_event(const lmrt_token_event& ev, bool want_logprobs) {
  Piece piece;
  piece.text.assign(ev.text, ev.text_len);
  if (want_logprobs && ev.logprobs != nullptr)
    for (uint32_t i = 0; i < ev.n_tokens; ++i) piece.logprobs.push_back(to_logprob(ev.logprobs[i]));
  return piece;
}

ChoiceResult choice_from_result(const lmrt_generate_result& res) {
  ChoiceResult out;
  out.finish = res.finish_reason;
  out.text.assign(res.text, res.text_len);
  out.prompt_tokens = res.prompt_tokens;
  out.completion_tokens = res.completion_tokens;
  out.reused_tokens = res.reused_tokens;
  out.ttft_ms = res.ttft_ms;
  out.decode_ms = res.decode_ms;
  out.kv_cells = res.n_past;
  if (res.logprobs != nullptr)
    for (uint32_t i = 0; i < res.completion_tokens; ++i) out.logprobs.push_back(to_logprob(res.logprobs[i]));
  return out;
}

ChoiceResult run_choice(lmrt_context* ctx, const std::vector<int32_t>& prompt, const SamplingParams& p,
                        uint64_t seed_offset, const std::function<bool(const Piece&)>& on_piece) {
  std::vector<const char*> stops;
  const lmrt_generate_request req = make_choice_request(prompt, p, seed_offset, &stops);
  CallbackState state{&on_piece, p.logprobs >= 0};
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  const lmrt_status st = lmrt_generate(ctx, &req, on_token, &state, &res);
  if (st != LMRT_OK) {
    ChoiceResult out;
    out.status = st;
    out.error = lmrt_context_last_error(ctx);
    return out;
  }
  return choice_from_result(res);
}

const char* openai_finish_reason(lmrt_finish_reason r) {
  switch (r) {
    case LMRT_FINISH_LENGTH:
    case LMRT_FINISH_CONTEXT_FULL:
      return "length";
    case LMRT_FINISH_CANCELLED:
      return "cancelled";
    case LMRT_FINISH_ERROR:
      return "error";
    default:
      return "stop";
  }
}

}  // namespace server
