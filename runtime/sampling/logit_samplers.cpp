// temperature and logit_bias: samplers that rewrite logits without history.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/exact_fp.h"

namespace lmrt {
namespace {

class TemperatureSampler final : public Sampler {
 public:
  // Every t <= 0 means the same thing, so all are stored (and written) as 0.
  explicit TemperatureSampler(float t) : t_(t > 0.0f ? t : 0.0f) {}
  std::string_view name() const override { return "temperature"; }
  std::string canonical_text() const override { return "temperature(t=" + format_float(t_) + ")"; }
  bool per_candidate() const override { return t_ > 0.0f; }  // t = 0 keeps only the best
  Status apply(CandidateArray& c, Rng&) override {
    if (c.size == 0 || t_ == 1.0f) return Status::Ok();
    if (t_ > 0.0f) {
      // Divide unless some logit/t would overflow: such a t is indistinguishable from 0.
      float largest = 0;
      for (size_t i = 0; i < c.size; ++i) {
        const float a = std::fabs(c.data[i].logit);
        if (a != INFINITY) largest = std::max(largest, a);
      }
      if (largest / t_ < std::numeric_limits<float>::max()) {
        for (size_t i = 0; i < c.size; ++i) c.data[i].logit /= t_;
        return Status::Ok();  // dividing by t > 0 keeps the order: `sorted` holds
      }
    }
    const size_t best = argmax_candidate(c);
    std::swap(c.data[0], c.data[best]);
    c.size = 1;
    c.sorted = true;
    return Status::Ok();
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<TemperatureSampler>(*this);
    return Status::Ok();
  }

 private:
  float t_;
};

class LogitBiasSampler final : public Sampler {
 public:
  explicit LogitBiasSampler(std::vector<TokenBias> biases) : biases_(std::move(biases)) {}
  std::string_view name() const override { return "logit_bias"; }
  bool per_candidate() const override { return true; }
  std::span<const TokenBias> added_biases() const override { return biases_; }
  std::string canonical_text() const override {
    std::string text = "logit_bias(";
    for (size_t i = 0; i < biases_.size(); ++i) {
      if (i > 0) text += ',';
      text += std::to_string(biases_[i].token) + "=" + format_float(biases_[i].bias);
    }
    return text + ")";
  }
  Status reserve(int32_t n_vocab) override {
    if (!biases_.empty() && biases_.back().token >= n_vocab) {
      return Error(Code::invalid_argument, "logit_bias: token " + std::to_string(biases_.back().token) +
                                               " is outside the vocabulary (" + std::to_string(n_vocab) + " tokens)");
    }
    return Status::Ok();
  }
  Status apply(CandidateArray& c, Rng&) override {
    for (const TokenBias& b : biases_) {
      // Before any reordering (the usual place, first in a chain) candidate i is token i.
      const size_t t = static_cast<size_t>(b.token);
      Candidate* hit = nullptr;
      if (t < c.size && c.data[t].id == b.token) {
        hit = &c.data[t];
      } else {
        for (size_t i = 0; i < c.size; ++i) {
          if (c.data[i].id == b.token) {
            hit = &c.data[i];
            break;
          }
        }
      }
      if (hit != nullptr) {
        hit->logit += b.bias;
        c.sorted = false;
      }
    }
    return Status::Ok();
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<LogitBiasSampler>(*this);
    return Status::Ok();
  }

 private:
  std::vector<TokenBias> biases_;  // sorted by token, unique
};

}  // namespace

Status make_temperature_sampler(float t, std::unique_ptr<Sampler>* out) {
  LMRT_RETURN_IF_ERROR(check_float_param("temperature", "t", t, FloatRange{-INFINITY, INFINITY, false, false}));
  *out = std::make_unique<TemperatureSampler>(t);
  return Status::Ok();
}

Status make_logit_bias_sampler(std::vector<TokenBias> biases, std::unique_ptr<Sampler>* out) {
  for (const TokenBias& b : biases) {
    LMRT_RETURN_IF_ERROR(check_int_param("logit_bias", "token", b.token, 0, std::numeric_limits<int32_t>::max()));
    // -inf bans a token; +inf or NaN would make probabilities undefined.
    LMRT_RETURN_IF_ERROR(
        check_float_param("logit_bias", std::to_string(b.token), b.bias, FloatRange{-INFINITY, INFINITY, true, false}));
  }
  std::sort(biases.begin(), biases.end(), [](const TokenBias& a, const TokenBias& b) { return a.token < b.token; });
  for (size_t i = 1; i < biases.size(); ++i) {
    if (biases[i].token == biases[i - 1].token) {
      return Error(Code::invalid_argument, "logit_bias: token " + std::to_string(biases[i].token) + " is given twice");
    }
  }
  *out = std::make_unique<LogitBiasSampler>(std::move(biases));
  return Status::Ok();
}

}  // namespace lmrt
