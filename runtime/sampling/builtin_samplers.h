// The built-in samplers. Each has a typed constructor (for the C API) that checks its parameters,
// and a spec name with the same parameters (for chain text); register_builtin_samplers() adds the
// spec names to a registry. Parameters in spec order, with defaults:
//
//   greedy                          selects the most likely candidate (ties: lowest id).
//   dist                            selects by drawing from softmax(logits) of the candidates: one
//                                   53-bit uniform u per token, the first candidate in array order
//                                   whose cumulative probability exceeds u.
//   temperature(t)                  logits /= t. t <= 0 (or so small that a logit/t overflows)
//                                   keeps only the most likely candidate, i.e. greedy behaviour.
//   top_k(k=40)                     keeps the k most likely; k = 0 keeps all. O(n + k log k).
//   top_p(p, min_keep=1)            nucleus: keeps the smallest most-likely-first set whose
//                                   probability reaches p (at least min_keep, at least one).
//                                   p in [0, 1]; p = 1 keeps all.
//   min_p(p)                        keeps candidates with probability >= p * (largest probability).
//   typical(p, min_keep=1)          locally typical sampling (Meister et al. 2022): keeps the
//                                   smallest set, ordered by |surprisal - entropy|, whose
//                                   probability reaches p. p = 1 keeps all.
//   penalties(repeat=1, presence=0, frequency=0, last_n=64)
//                                   over the tokens accepted in the last last_n positions, with
//                                   count c of a token in that window (c > 0):
//                                     repetition: logit > 0 ? logit / repeat : logit * repeat
//                                     then OpenAI's: logit -= c * frequency + presence.
//                                   (OpenAI counts the whole completion; make last_n large for
//                                   that.) repeat > 0; presence, frequency in [-2, 2];
//                                   last_n in [0, 1048576], 0 disables.
//   logit_bias(TOKEN=BIAS, ...)     logit += bias for each listed token id; a bias of -inf bans it.
//
// Probabilities of the filters are computed over the candidates they receive (so after any
// earlier filter and temperature). Every computation that decides a token uses only IEEE basic
// operations and portable_exp, in a fixed order, so a seed selects the same tokens everywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/sampling/sampler.h"
#include "runtime/sampling/sampler_registry.h"
#include "runtime/util/status.h"

namespace lmrt {

struct PenaltyParams {
  float repeat = 1.0f;
  float presence = 0.0f;
  float frequency = 0.0f;
  int32_t last_n = 64;
};

inline constexpr int32_t kMaxPenaltyWindow = 1 << 20;

Status make_greedy_sampler(std::unique_ptr<Sampler>* out);
Status make_dist_sampler(std::unique_ptr<Sampler>* out);
Status make_temperature_sampler(float t, std::unique_ptr<Sampler>* out);
Status make_top_k_sampler(int32_t k, std::unique_ptr<Sampler>* out);
Status make_top_p_sampler(float p, int32_t min_keep, std::unique_ptr<Sampler>* out);
Status make_min_p_sampler(float p, std::unique_ptr<Sampler>* out);
Status make_typical_sampler(float p, int32_t min_keep, std::unique_ptr<Sampler>* out);
Status make_penalties_sampler(const PenaltyParams& params, std::unique_ptr<Sampler>* out);
// Token ids must be >= 0 and unique; they are checked against the vocabulary in reserve().
Status make_logit_bias_sampler(std::vector<TokenBias> biases, std::unique_ptr<Sampler>* out);

// Adds greedy, dist, temperature, top_k, top_p, min_p, typical, penalties, logit_bias.
Status register_builtin_samplers(SamplerRegistry& registry);

}  // namespace lmrt
