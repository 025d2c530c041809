// The sampler chain that OpenAI-style request fields describe (temperature, top_k, top_p, ...), in
// the documented order: logit_bias penalties top_k top_p min_p typical temperature dist — each
// only when switched on; temperature <= 0 ends the chain with greedy instead of
// top_k .. temperature dist.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/sampler_chain.h"
#include "runtime/util/status.h"

namespace lmrt {

struct SamplingParams {
  float temperature = 0.0f;
  int32_t top_k = 0;  // 0: off
  float top_p = 1.0f;
  float min_p = 0.0f;
  float typical_p = 1.0f;
  PenaltyParams penalties;
  std::vector<TokenBias> logit_bias;
};

// Errors: invalid_argument for out-of-range values (named).
Status make_chain_from_params(const SamplingParams& params, uint64_t seed, std::unique_ptr<SamplerChain>* out);

}  // namespace lmrt
