// Runs one completion choice on a context through the public C API and collects what the
// OpenAI responses need: pieces of text, per-token logprobs, usage and the finish reason.
#pragma once

#include <lmrt/lmrt.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace server {

// Sampling and stopping controls of a request, already validated.
struct SamplingParams {
  const lmrt_plugin_host* plugins = nullptr;  // `samplers` may name the server's plugin samplers
  int32_t max_tokens = 16;
  float temperature = 1.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float typical_p = 1.0f;
  float repeat_penalty = 1.0f;
  int32_t repeat_last_n = 64;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::vector<lmrt_logit_bias> logit_bias;
  std::optional<uint64_t> seed;
  std::string samplers;  // lmrt chain spec; when set it replaces the fields above
  std::vector<std::string> stop;
  int32_t logprobs = -1;       // -1: none; else alternatives per token
  bool context_shift = false;  // on a full context drop the oldest half and go on
  // Constrained output (at most one): GBNF, or a JSON Schema's text.
  std::string grammar;
  std::string json_schema;
};

struct TokenLogprob {
  int32_t token;
  float logprob;
  std::vector<std::pair<int32_t, float>> top;
};

struct Piece {
  std::string text;
  std::vector<TokenLogprob> logprobs;  // the tokens that produced this text (when asked for)
};

struct ChoiceResult {
  lmrt_status status = LMRT_OK;
  std::string error;  // the context's message when status != LMRT_OK
  lmrt_finish_reason finish = LMRT_FINISH_NONE;
  std::string text;
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t reused_tokens = 0;  // prompt tokens whose KV entries were reused
  std::vector<TokenLogprob> logprobs;
  double ttft_ms = 0;
  double decode_ms = 0;   // every generated token after the first
  uint32_t kv_cells = 0;  // tokens the context holds afterwards
};

// The C request of one choice (seed_offset as for run_choice); *stops keeps the stop strings'
// pointers, which the request points to.
lmrt_generate_request make_choice_request(const std::vector<int32_t>& prompt, const SamplingParams& p,
                                          uint64_t seed_offset, std::vector<const char*>* stops);
// A streamed event as a Piece (its logprobs only when asked for).
Piece piece_from_event(const lmrt_token_event& ev, bool want_logprobs);
// A finished generation's result as a ChoiceResult (status LMRT_OK).
ChoiceResult choice_from_result(const lmrt_generate_result& res);

// Generates one choice. `seed_offset` is added to a given seed so that the n choices of one
// request differ yet stay reproducible. on_piece (may be empty) returns false to cancel.
ChoiceResult run_choice(lmrt_context* ctx, const std::vector<int32_t>& prompt, const SamplingParams& p,
                        uint64_t seed_offset, const std::function<bool(const Piece&)>& on_piece);

// "stop" / "length" as OpenAI names the finish reason.
const char* openai_finish_reason(lmrt_finish_reason r);

}  // namespace server
