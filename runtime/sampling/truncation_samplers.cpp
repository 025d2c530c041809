// top_k, top_p, min_p, typical: filters that keep a subset of the candidates.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/exact_fp.h"
#include "runtime/sampling/portable_exp.h"

namespace lmrt {
namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr FloatRange kUnitRange{0.0, 1.0};

// e^(logit - max) of one candidate: its probability relative to the most likely one.
double relative_weight(const Candidate& c, float max) { return portable_exp(static_cast<double>(c.logit) - max); }

class TopKSampler final : public Sampler {
 public:
  explicit TopKSampler(int32_t k) : k_(k) {}
  std::string_view name() const override { return "top_k"; }
  std::string canonical_text() const override { return "top_k(k=" + std::to_string(k_) + ")"; }
  Status apply(CandidateArray& c, Rng&) override {
    const size_t k = static_cast<size_t>(k_);
    if (k == 0 || k >= c.size) return Status::Ok();
    sort_candidate_prefix(c, k);
    truncate_candidates(c, k);
    c.sorted = true;
    return Status::Ok();
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<TopKSampler>(*this);
    return Status::Ok();
  }

 private:
  int32_t k_;
};

class TopPSampler final : public Sampler {
 public:
  TopPSampler(float p, int32_t min_keep) : p_(p), min_keep_(min_keep) {}
  std::string_view name() const override { return "top_p"; }
  std::string canonical_text() const override {
    return "top_p(p=" + format_float(p_) + ",min_keep=" + std::to_string(min_keep_) + ")";
  }
  Status apply(CandidateArray& c, Rng&) override {
    if (p_ >= 1.0f || c.size <= 1) return Status::Ok();
    const float max = max_logit(c);
    if (!(max > -INFINITY)) return Status::Ok();  // nothing is possible; dist reports it
    double total = 0;
    for (size_t i = 0; i < c.size; ++i) total += relative_weight(c.data[i], max);
    const double threshold = static_cast<double>(p_) * total;
    const size_t min_keep = std::min(static_cast<size_t>(min_keep_), c.size);
    // The nucleus is usually a few dozen tokens: sort a growing prefix instead of the vocabulary.
    // The prefix of a total order is unique, so a longer sorted prefix extends the shorter one.
    size_t k = std::min(c.size, std::max<size_t>(64, min_keep));
    size_t keep = 0;
    size_t i = 0;
    double cum = 0;
    while (keep == 0) {
      sort_candidate_prefix(c, k);
      for (; i < k; ++i) {
        cum += relative_weight(c.data[i], max);
        if (cum >= threshold && i + 1 >= min_keep) {
          keep = i + 1;
          break;
        }
      }
      if (keep == 0) {
        if (k == c.size) keep = c.size;
        k = std::min(c.size, k * 8);
      }
    }
    truncate_candidates(c, keep);
    c.sorted = true;
    return Status::Ok();
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<TopPSampler>(*this);
    return Status::Ok();
  }

 private:
  float p_;
  int32_t min_keep_;
};

class MinPSampler final : public Sampler {
 public:
  explicit MinPSampler(float p) : p_(p) {}
  std::string_view name() const override { return "min_p"; }
  std::string canonical_text() const override { return "min_p(p=" + format_float(p_) + ")"; }
  Status apply(CandidateArray& c, Rng&) override {
    if (p_ <= 0.0f || c.size <= 1) return Status::Ok();
    const float max = max_logit(c);
    if (!(max > -INFINITY)) return Status::Ok();
    // p_i >= p * p_max  <=>  e^(logit_i - max) >= p. Stable compaction keeps the order (and
    // `sorted`); the most likely candidate always stays since p <= 1.
    size_t kept = 0;
    for (size_t i = 0; i < c.size; ++i) {
      if (relative_weight(c.data[i], max) >= p_) c.data[kept++] = c.data[i];
    }
    c.size = kept;
    return Status::Ok();
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<MinPSampler>(*this);
    return Status::Ok();
  }

 private:
  float p_;
};

class TypicalSampler final : public Sampler {
 public:
  TypicalSampler(float p, int32_t min_keep) : p_(p), min_keep_(min_keep) {}
  std::string_view name() const override { return "typical"; }
  std::string canonical_text() const override {
    return "typical(p=" + format_float(p_) + ",min_keep=" + std::to_string(min_keep_) + ")";
  }
  Status apply(CandidateArray& c, Rng&) override {
    if (p_ >= 1.0f || c.size <= 1) return Status::Ok();
    sort_candidates(c);
    const float max = c.data[0].logit;
    if (!(max > -INFINITY)) return Status::Ok();
    // With z_i = logit_i - max and S = sum e^z: surprisal_i = log S - z_i and the entropy
    // H = log S - E[z], so |surprisal_i - H| = |E[z] - z_i|: no logarithm needed.
    double total = 0;
    double weighted_z = 0;
    for (size_t i = 0; i < c.size; ++i) {
      const double z = static_cast<double>(c.data[i].logit) - max;
      const double w = portable_exp(z);
      if (w == 0) continue;
      total += w;
      weighted_z += w * z;
    }
    const double mean_z = weighted_z / total;
    // Along the sorted array z falls, so the score |mean_z - z| falls then rises: ordering by
    // score means growing a window outwards from the pivot, taking the cheaper end each time.
    size_t lo = 0;
    while (lo<c.size&& static_cast<double>(c.data[lo].logit) - max> mean_z) ++lo;
    size_t hi = lo;
    const double threshold = static_cast<double>(p_) * total;
    const size_t min_keep = std::min(static_cast<size_t>(min_keep_), c.size);
    double cum = 0;
    while (hi - lo < c.size) {
      bool take_left;
      if (lo == 0) {
        take_left = false;
      } else if (hi == c.size) {
        take_left = true;
      } else {
        const double left_score = (static_cast<double>(c.data[lo - 1].logit) - max) - mean_z;
        const double right_score = mean_z - (static_cast<double>(c.data[hi].logit) - max);
        take_left = left_score <= right_score;
      }
      const size_t index = take_left ? --lo : hi++;
      cum += relative_weight(c.data[index], max);
      if (cum >= threshold && hi - lo >= min_keep) break;
    }
    if (lo > 0) std::copy(c.data + lo, c.data + hi, c.data);
    c.size = hi - lo;
    return Status::Ok();
  }
  Status clone(std::unique_ptr<Sampler>* out) const override {
    *out = std::make_unique<TypicalSampler>(*this);
    return Status::Ok();
  }

 private:
  float p_;
  int32_t min_keep_;
};

}  // namespace

Status make_top_k_sampler(int32_t k, std::unique_ptr<Sampler>* out) {
  LMRT_RETURN_IF_ERROR(check_int_param("top_k", "k", k, 0, kMaxInt32));
  *out = std::make_unique<TopKSampler>(k);
  return Status::Ok();
}

Status make_top_p_sampler(float p, int32_t min_keep, std::unique_ptr<Sampler>* out) {
  LMRT_RETURN_IF_ERROR(check_float_param("top_p", "p", p, kUnitRange));
  LMRT_RETURN_IF_ERROR(check_int_param("top_p", "min_keep", min_keep, 1, kMaxInt32));
  *out = std::make_unique<TopPSampler>(p, min_keep);
  return Status::Ok();
}

Status make_min_p_sampler(float p, std::unique_ptr<Sampler>* out) {
  LMRT_RETURN_IF_ERROR(check_float_param("min_p", "p", p, kUnitRange));
  *out = std::make_unique<MinPSampler>(p);
  return Status::Ok();
}

Status make_typical_sampler(float p, int32_t min_keep, std::unique_ptr<Sampler>* out) {
  LMRT_RETURN_IF_ERROR(check_float_param("typical", "p", p, kUnitRange));
  LMRT_RETURN_IF_ERROR(check_int_param("typical", "min_keep", min_keep, 1, kMaxInt32));
  *out = std::make_unique<TypicalSampler>(p, min_keep);
  return Status::Ok();
}

}  // namespace lmrt
