// greedy and dist: the samplers that select the token and so end a chain.
#include <cmath>
#include <memory>

#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/exact_fp.h"

namespace lmrt {
namespace {

class GreedySampler final : public Sampler {
 public:
  std::string_view name() const override { return "greedy"; }
  std::string canonical_text() const override { return "greedy"; }
  bool always_selects() const override { return true; }
  bool per_candidate() const override { return true; }
  bool selects_best() const override { return true; }
  Status apply(CandidateArray& c, Rng&) override {
    if (c.size == 0) return Error(Code::invalid_argument, "greedy: no candidates");
    const size_t best = argmax_candidate(c);
    // Every token banned (logit_bias -inf, a grammar...): there is nothing to choose, as dist finds.
    if (c.data[best].logit == -INFINITY)
      return Error(Code::invalid_argument, "every candidate token is excluded (all logits are -inf)");
    c.selected = static_cast<int32_t>(best);
    return Status::Ok();
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<GreedySampler>(*this);
    return Status::Ok();
  }
};

class DistSampler final : public Sampler {
 public:
  std::string_view name() const override { return "dist"; }
  std::string canonical_text() const override { return "dist"; }
  bool always_selects() const override { return true; }
  bool uses_rng() const override { return true; }
  bool per_candidate() const override { return true; }
  Status apply(CandidateArray& c, Rng& rng) override {
    LMRT_RETURN_IF_ERROR(softmax_candidates(c));
    // Sum and walk in the same order so that the last cumulative value equals the sum exactly and
    // u * sum < sum always finds a candidate.
    double sum = 0;
    for (size_t i = 0; i < c.size; ++i) sum += c.data[i].p;
    const double target = rng.uniform_double() * sum;
    double cum = 0;
    size_t pick = c.size;
    for (size_t i = 0; i < c.size; ++i) {
      cum += c.data[i].p;
      if (target < cum) {
        pick = i;
        break;
      }
    }
    if (pick == c.size) {  // unreachable with finite sums; pick the last possible token anyway
      pick = 0;
      for (size_t i = 0; i < c.size; ++i) {
        if (c.data[i].p > 0) pick = i;
      }
    }
    c.selected = static_cast<int32_t>(pick);
    return Status::Ok();
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<DistSampler>(*this);
    return Status::Ok();
  }
};

}  // namespace

Status make_greedy_sampler(std::unique_ptr<Sampler>* out) {
  *out = std::make_unique<GreedySampler>();
  return Status::Ok();
}

Status make_dist_sampler(std::unique_ptr<Sampler>* out) {
  *out = std::make_unique<DistSampler>();
  return Status::Ok();
}

}  // namespace lmrt
