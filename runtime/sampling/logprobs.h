// Log-probabilities for a generated token under the model's own distribution: log-softmax of the
// raw logits, before any sampler changed them (what OpenAI-style `logprobs` report), plus the
// top-n alternatives. Under a grammar too (the raw distribution, not the one renormalized over the
// allowed tokens), so they never need the grammar's vocabulary mask, which the sampler computes only
// when it refuses the token picked first (SamplerChain::sample). Works in fixed-size storage:
// computing them allocates nothing.
#pragma once

#include <array>
#include <cstdint>

#include "runtime/util/status.h"

namespace lmrt {

inline constexpr int32_t kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;
};

struct TokenLogprobs {
  TokenLogprob chosen;
  int32_t n_top = 0;  // min(top_n, n_vocab)
  // top[0..n_top): most likely first; equal logits in ascending token order.
  std::array<TokenLogprob, kMaxTopLogprobs> top;
};

// Fills `out` for `token` from logits[0..n_vocab). top_n in [0, kMaxTopLogprobs]. Errors
// (invalid_argument): token out of range, top_n out of range, NaN or +inf logits, all logits -inf.
Status compute_logprobs(const float* logits, int32_t n_vocab, int32_t token, int32_t top_n, TokenLogprobs* out);

}  // namespace lmrt
