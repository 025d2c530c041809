#include "runtime/sampling/chain_from_params.h"

#include <cmath>

#include "runtime/sampling/sampler_spec.h"

namespace lmrt {

Status make_chain_from_params(const SamplingParams& p, uint64_t seed, std::unique_ptr<SamplerChain>* out) {
  std::vector<std::unique_ptr<Sampler>> chain;
  auto add = [&](Status s, std::unique_ptr<Sampler>& made) -> Status {
    LMRT_RETURN_IF_ERROR(s);
    chain.push_back(std::move(made));
    return Status::Ok();
  };
  // Every field is range-checked, also one that switches its sampler off or is unused by greedy, by
  // the checks the spec parser's samplers use: a NaN or out-of-range value is an error, never "off".
  LMRT_RETURN_IF_ERROR(
      check_float_param("temperature", "t", p.temperature, FloatRange{-INFINITY, INFINITY, false, false}));
  LMRT_RETURN_IF_ERROR(check_float_param("top_p", "p", p.top_p, FloatRange{0.0, 1.0}));
  LMRT_RETURN_IF_ERROR(check_float_param("min_p", "p", p.min_p, FloatRange{0.0, 1.0}));
  LMRT_RETURN_IF_ERROR(check_float_param("typical", "p", p.typical_p, FloatRange{0.0, 1.0}));
  std::unique_ptr<Sampler> s;
  if (!p.logit_bias.empty()) LMRT_RETURN_IF_ERROR(add(make_logit_bias_sampler(p.logit_bias, &s), s));
  const PenaltyParams& pen = p.penalties;
  if (pen.repeat != 1.0f || pen.presence != 0.0f || pen.frequency != 0.0f)
    LMRT_RETURN_IF_ERROR(add(make_penalties_sampler(pen, &s), s));
  if (!(p.temperature > 0.0f)) {
    LMRT_RETURN_IF_ERROR(add(make_greedy_sampler(&s), s));
  } else {
    if (p.top_k < 0) return Error(Code::invalid_argument, "top_k must be >= 0 (0 = off)");
    if (p.top_k > 0) LMRT_RETURN_IF_ERROR(add(make_top_k_sampler(p.top_k, &s), s));
    if (p.top_p < 1.0f) LMRT_RETURN_IF_ERROR(add(make_top_p_sampler(p.top_p, 1, &s), s));
    if (p.min_p > 0.0f) LMRT_RETURN_IF_ERROR(add(make_min_p_sampler(p.min_p, &s), s));
    if (p.typical_p < 1.0f) LMRT_RETURN_IF_ERROR(add(make_typical_sampler(p.typical_p, 1, &s), s));
    LMRT_RETURN_IF_ERROR(add(make_temperature_sampler(p.temperature, &s), s));
    LMRT_RETURN_IF_ERROR(add(make_dist_sampler(&s), s));
  }
  return SamplerChain::create(std::move(chain), seed, out);
}

}  // namespace lmrt
