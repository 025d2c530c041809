// penalties: repetition, presence and frequency penalties over a window of accepted tokens.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/exact_fp.h"

namespace lmrt {
namespace {

class PenaltiesSampler final : public Sampler {
 public:
  explicit PenaltiesSampler(const PenaltyParams& p) : params_(p), window_(static_cast<size_t>(p.last_n)) {}
  std::string_view name() const override { return "penalties"; }
  bool per_candidate() const override { return true; }
  std::string canonical_text() const override {
    return "penalties(repeat=" + format_float(params_.repeat) + ",presence=" + format_float(params_.presence) +
           ",frequency=" + format_float(params_.frequency) + ",last_n=" + std::to_string(params_.last_n) + ")";
  }
  Status reserve(int32_t n_vocab) override {
    if (params_.last_n <= 0 || counts_.size() >= static_cast<size_t>(n_vocab)) return Status::Ok();
    // Counted afresh from the window: tokens accepted before the vocabulary was known count from now on.
    counts_.assign(static_cast<size_t>(n_vocab), 0);
    count_window(1);
    return Status::Ok();
  }
  Status apply(CandidateArray& c, Rng&) override {
    const bool neutral = params_.repeat == 1.0f && params_.presence == 0.0f && params_.frequency == 0.0f;
    if (neutral || window_count_ == 0) return Status::Ok();
    for (size_t i = 0; i < c.size; ++i) {
      Candidate& cand = c.data[i];
      const size_t id = static_cast<size_t>(cand.id);
      const int32_t count = id < counts_.size() ? counts_[id] : 0;
      if (count == 0) continue;
      if (params_.repeat != 1.0f) {
        cand.logit = cand.logit > 0 ? cand.logit / params_.repeat : cand.logit * params_.repeat;
      }
      cand.logit -= static_cast<float>(count) * params_.frequency + params_.presence;
    }
    c.sorted = false;
    return Status::Ok();
  }
  Status accept(int32_t token) override {
    if (token < 0) return Error(Code::invalid_argument, "penalties: negative token id " + std::to_string(token));
    if (window_.empty()) return Status::Ok();
    // Until reserve() gives the vocabulary, tokens are only kept in the window (a counts array sized by
    // whatever id a caller passes could take gigabytes); SamplerChain::accept refuses ids past it after.
    if (window_count_ == window_.size()) {
      count(window_[head_], -1);
    } else {
      ++window_count_;
    }
    window_[head_] = token;
    head_ = (head_ + 1) % window_.size();
    count(token, 1);
    return Status::Ok();
  }
  void reset() override {
    // Undo the window's counts rather than clearing a vocabulary-sized array.
    count_window(-1);
    window_count_ = 0;
    head_ = 0;
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<PenaltiesSampler>(*this);
    return Status::Ok();
  }

 private:
  void count(int32_t token, int32_t delta) {
    if (static_cast<size_t>(token) < counts_.size()) counts_[static_cast<size_t>(token)] += delta;
  }
  // Every token in the window: slots [0, window_count_) (the ring fills from slot 0 and is whole once it wraps).
  void count_window(int32_t delta) {
    for (size_t i = 0; i < window_count_; ++i) count(window_[i], delta);
  }

  PenaltyParams params_;
  std::vector<int32_t> window_;  // ring buffer of the last last_n accepted tokens
  size_t head_ = 0;              // next slot to write
  size_t window_count_ = 0;
  std::vector<int32_t> counts_;  // occurrences of each token id in the window
};

}  // namespace

Status make_penalties_sampler(const PenaltyParams& params, std::unique_ptr<Sampler>* out) {
  LMRT_RETURN_IF_ERROR(
      check_float_param("penalties", "repeat", params.repeat, FloatRange{0.0, INFINITY, false, false}));
  LMRT_RETURN_IF_ERROR(check_float_param("penalties", "presence", params.presence, FloatRange{-2.0, 2.0}));
  LMRT_RETURN_IF_ERROR(check_float_param("penalties", "frequency", params.frequency, FloatRange{-2.0, 2.0}));
  LMRT_RETURN_IF_ERROR(check_int_param("penalties", "last_n", params.last_n, 0, kMaxPenaltyWindow));
  *out = std::make_unique<PenaltiesSampler>(params);
  return Status::Ok();
}

}  // namespace lmrt
