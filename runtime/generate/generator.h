// The request loop: tokenize -> reuse the KV prefix -> prefill -> decode (sampler chain) ->
// assemble UTF-8 -> hold back possible stop strings -> stream -> finish with a reason, usage and
// timings. Beam search lives in beam_search.h; the response cache is consulted by the caller.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/generate/context.h"
#include "runtime/generate/stop_matcher.h"
#include "runtime/sampling/logprobs.h"
#include "runtime/sampling/sampler_chain.h"
#include "runtime/sampling/stop_criterion.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/util/status.h"
#include "runtime/util/utf8.h"

namespace lmrt {

enum class FinishReason { none = 0, eos = 1, stop = 2, length = 3, cancelled = 4, context_full = 5, error = 6 };

const char* finish_reason_name(FinishReason r);

struct GenerateRequest {
  std::string_view prompt;
  std::vector<int32_t> prompt_tokens;  // when not empty: the prompt, used instead of prompt/add_bos/parse_special
  int32_t max_tokens = 256;
  bool add_bos = true;  // add BOS (and EOS) when the vocabulary asks for them
  bool parse_special = false;
  // The chain that picks each token; nullptr means greedy (argmax). It is used as given (its
  // history and Rng advance); prompt tokens are accepted into it before decoding.
  SamplerChain* sampler = nullptr;
  std::vector<std::string> stop;  // stop strings
  // Stop criteria (plugins), consulted after every token with all text generated so far; owned by
  // the caller, reset by generate() before use.
  std::vector<StopCriterion*> stop_criteria;
  int32_t top_logprobs = -1;  // -1: no logprobs; 0..20: logprob of each token plus that many alternatives
  // When the context fills during decoding: shift it (keep the first n_keep tokens, drop the
  // oldest half of the rest) instead of finishing with context_full.
  bool context_shift = false;
  uint32_t n_keep = 0;
};

struct GenerateTimings {
  double prefill_ms = 0;
  double decode_ms = 0;
  double ttft_ms = 0;
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
};

struct GenerateResult {
  FinishReason finish_reason = FinishReason::none;
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t reused_tokens = 0;
  uint32_t context_shifts = 0;
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<TokenLogprobs> logprobs;  // one per token when asked for
  std::vector<uint32_t> piece_lengths;  // bytes of each streamed piece, in order
  std::vector<uint32_t> piece_tokens;   // tokens reported with each streamed piece
  GenerateTimings timings;
};

// Receives each piece of complete UTF-8 text with the tokens generated since the previous piece
// (tokens[first, first + count) of the result; their logprobs when asked for). Non-zero cancels.
struct TokenSink {
  int (*fn)(void* user, std::string_view text, const GenerateResult& so_far, size_t first, size_t count) = nullptr;
  void* user = nullptr;
};

// Runs one request on `ctx`. Errors: invalid_argument (max_tokens < 1, top_logprobs > 20),
// bad_utf8 (prompt), context_full (the prompt alone does not fit; the context keeps its previous
// tokens), and sampler errors (a plugin's invalid output).
Status generate(Context& ctx, const Tokenizer& tok, const GenerateRequest& req, TokenSink sink, GenerateResult* result);

// Evaluates the prompt after the longest prefix the context already holds (*reused tokens); the
// last prompt token is always evaluated again so that its logits are fresh.
Status prefill_prompt(Context& ctx, const std::vector<int32_t>& prompt, uint32_t* reused);

// Tokenizes a request's prompt the way generate() does (an empty prompt becomes BOS alone).
Status tokenize_prompt(const Tokenizer& tok, const GenerateRequest& req, std::vector<int32_t>* out);

}  // namespace lmrt
