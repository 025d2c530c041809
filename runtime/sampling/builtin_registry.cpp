// Spec-text factories of the built-in samplers: bind the item's arguments, then call the typed
// constructor (which owns the range checks).
#include <cmath>
#include <limits>

#include "runtime/sampling/builtin_samplers.h"

namespace lmrt {
namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr FloatRange kAnyFloat{-INFINITY, INFINITY, true, true};  // typed constructors check ranges

Status no_params(const SamplerSpec& spec) {
  SamplerParams params;
  return SamplerParams::bind(spec, {}, &params);
}

// A parameter without a sensible default must be given.
Status require(const SamplerSpec& spec, const SamplerParams& params, std::string_view name) {
  if (params.has(name)) return Status::Ok();
  return Error(Code::invalid_argument, spec.name + ": parameter '" + std::string(name) + "' is required (offset " +
                                           std::to_string(spec.offset) + ")");
}

Status greedy_factory(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
  LMRT_RETURN_IF_ERROR(no_params(spec));
  return make_greedy_sampler(out);
}

Status dist_factory(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
  LMRT_RETURN_IF_ERROR(no_params(spec));
  return make_dist_sampler(out);
}

Status temperature_factory(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
  SamplerParams params;
  LMRT_RETURN_IF_ERROR(SamplerParams::bind(spec, {"t"}, &params));
  LMRT_RETURN_IF_ERROR(require(spec, params, "t"));
  float t = 0;
  LMRT_RETURN_IF_ERROR(params.get_float("t", 1.0f, kAnyFloat, &t));
  return make_temperature_sampler(t, out);
}

Status top_k_factory(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
  SamplerParams params;
  LMRT_RETURN_IF_ERROR(SamplerParams::bind(spec, {"k"}, &params));
  int64_t k = 0;
  LMRT_RETURN_IF_ERROR(params.get_int("k", 40, 0, kMaxInt32, &k));
  return make_top_k_sampler(static_cast<int32_t>(k), out);
}

// top_p and typical share the shape (p, min_keep).
template <Status (*Make)(float, int32_t, std::unique_ptr<Sampler>*)>
Status p_min_keep_factory(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
  SamplerParams params;
  LMRT_RETURN_IF_ERROR(SamplerParams::bind(spec, {"p", "min_keep"}, &params));
  LMRT_RETURN_IF_ERROR(require(spec, params, "p"));
  float p = 0;
  int64_t min_keep = 0;
  LMRT_RETURN_IF_ERROR(params.get_float("p", 1.0f, kAnyFloat, &p));
  LMRT_RETURN_IF_ERROR(params.get_int("min_keep", 1, 1, kMaxInt32, &min_keep));
  return Make(p, static_cast<int32_t>(min_keep), out);
}

Status min_p_factory(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
  SamplerParams params;
  LMRT_RETURN_IF_ERROR(SamplerParams::bind(spec, {"p"}, &params));
  LMRT_RETURN_IF_ERROR(require(spec, params, "p"));
  float p = 0;
  LMRT_RETURN_IF_ERROR(params.get_float("p", 0.0f, kAnyFloat, &p));
  return make_min_p_sampler(p, out);
}

Status penalties_factory(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
  SamplerParams params;
  LMRT_RETURN_IF_ERROR(SamplerParams::bind(spec, {"repeat", "presence", "frequency", "last_n"}, &params));
  PenaltyParams p;
  int64_t last_n = 0;
  LMRT_RETURN_IF_ERROR(params.get_float("repeat", p.repeat, kAnyFloat, &p.repeat));
  LMRT_RETURN_IF_ERROR(params.get_float("presence", p.presence, kAnyFloat, &p.presence));
  LMRT_RETURN_IF_ERROR(params.get_float("frequency", p.frequency, kAnyFloat, &p.frequency));
  LMRT_RETURN_IF_ERROR(params.get_int("last_n", p.last_n, 0, kMaxPenaltyWindow, &last_n));
  p.last_n = static_cast<int32_t>(last_n);
  return make_penalties_sampler(p, out);
}

// logit_bias(TOKEN=BIAS, ...): every argument is named by a token id.
Status logit_bias_factory(const SamplerSpec& spec, std::unique_ptr<Sampler>* out) {
  std::vector<TokenBias> biases;
  biases.reserve(spec.args.size());
  for (const SamplerArg& arg : spec.args) {
    int64_t token = 0;
    if (arg.key.empty() || !parse_int_text(arg.key, &token) || token < 0 || token > kMaxInt32) {
      return Error(Code::invalid_argument, "logit_bias: expected TOKEN_ID=BIAS with a token id >= 0, got '" +
                                               (arg.key.empty() ? arg.value : arg.key + "=" + arg.value) +
                                               "' (offset " + std::to_string(arg.offset) + ")");
    }
    float bias = 0;
    if (!parse_float_text(arg.value, &bias)) {
      return Error(Code::invalid_argument,
                   "logit_bias: the bias of token " + arg.key + " must be a number, got '" + arg.value + "'");
    }
    biases.push_back({static_cast<int32_t>(token), bias});
  }
  return make_logit_bias_sampler(std::move(biases), out);
}

}  // namespace

Status register_builtin_samplers(SamplerRegistry& registry) {
  LMRT_RETURN_IF_ERROR(registry.add("greedy", greedy_factory));
  LMRT_RETURN_IF_ERROR(registry.add("dist", dist_factory));
  LMRT_RETURN_IF_ERROR(registry.add("temperature", temperature_factory));
  LMRT_RETURN_IF_ERROR(registry.add("top_k", top_k_factory));
  LMRT_RETURN_IF_ERROR(registry.add("top_p", p_min_keep_factory<make_top_p_sampler>));
  LMRT_RETURN_IF_ERROR(registry.add("min_p", min_p_factory));
  LMRT_RETURN_IF_ERROR(registry.add("typical", p_min_keep_factory<make_typical_sampler>));
  LMRT_RETURN_IF_ERROR(registry.add("penalties", penalties_factory));
  LMRT_RETURN_IF_ERROR(registry.add("logit_bias", logit_bias_factory));
  return Status::Ok();
}

}  // namespace lmrt
