#include "runtime/sampling/sampler_chain.h"

#include <cmath>
#include <utility>

#include "runtime/sampling/builtin_samplers.h"
#include "runtime/sampling/logit_scan.h"
#include "runtime/sampling/sampler_spec.h"

namespace lmrt {

Status SamplerChain::parse(std::string_view spec, const SamplerRegistry& registry, uint64_t seed,
                           std::unique_ptr<SamplerChain>* out) {
  std::vector<SamplerSpec> items;
  LMRT_RETURN_IF_ERROR(parse_chain_spec(spec, &items));
  std::vector<std::unique_ptr<Sampler>> samplers;
  samplers.reserve(items.size() + 1);
  for (const SamplerSpec& item : items) {
    std::unique_ptr<Sampler> s;
    LMRT_RETURN_IF_ERROR(registry.create(item, &s));
    samplers.push_back(std::move(s));
  }
  return create(std::move(samplers), seed, out);
}

Status SamplerChain::create(std::vector<std::unique_ptr<Sampler>> samplers, uint64_t seed,
                            std::unique_ptr<SamplerChain>* out) {
  for (size_t i = 0; i < samplers.size(); ++i) {
    if (samplers[i] == nullptr) return Error(Code::invalid_argument, "sampler chain: null sampler");
    if (samplers[i]->always_selects() && i + 1 < samplers.size()) {
      return Error(Code::invalid_argument, "sampler chain: '" + std::string(samplers[i + 1]->name()) +
                                               "' comes after '" + std::string(samplers[i]->name()) +
                                               "', which always selects the token, so it would never run");
    }
  }
  if (samplers.empty() || !samplers.back()->always_selects()) {
    std::unique_ptr<Sampler> dist;
    LMRT_RETURN_IF_ERROR(make_dist_sampler(&dist));
    samplers.push_back(std::move(dist));
  }
  std::unique_ptr<SamplerChain> chain(new SamplerChain());
  chain->samplers_ = std::move(samplers);
  chain->seed_ = seed;
  chain->rng_.reseed(seed);
  for (const auto& s : chain->samplers_) {
    if (!chain->canonical_.empty()) chain->canonical_ += ' ';
    chain->canonical_ += s->canonical_text();
  }
  *out = std::move(chain);
  return Status::Ok();
}

Status SamplerChain::reserve(int32_t n_vocab) {
  if (n_vocab <= 0) return Error(Code::invalid_argument, "sampler chain: n_vocab must be positive");
  for (const auto& s : samplers_) LMRT_RETURN_IF_ERROR(s->reserve(n_vocab));
  if (buffer_.size() < static_cast<size_t>(n_vocab)) buffer_.resize(static_cast<size_t>(n_vocab));
  if (n_vocab > n_vocab_) n_vocab_ = n_vocab;
  return Status::Ok();
}

Status SamplerChain::sample(const float* logits, int32_t n_vocab, int32_t* token) {
  if (logits == nullptr || token == nullptr) return Error(Code::invalid_argument, "sample: null logits or token");
  if (n_vocab <= 0) return Error(Code::invalid_argument, "sample: n_vocab must be positive");
  if (n_vocab > n_vocab_) LMRT_RETURN_IF_ERROR(reserve(n_vocab));
  if (const size_t i = first_nan_or_inf(logits, static_cast<size_t>(n_vocab)); i < static_cast<size_t>(n_vocab))
    return Error(Code::invalid_argument,
                 "sample: logit of token " + std::to_string(i) + " is " + (std::isnan(logits[i]) ? "NaN" : "+inf"));
  if (picks_best_of_biased_logits()) return pick_best(logits, n_vocab, token);
  if (filter_checked_last()) {
    // The filter only removes candidates and the rest judge each on its own, so the token they pick
    // from the whole vocabulary, when the filter keeps it, is the one they would pick from the
    // filtered candidates (greedy), or a draw from the filtered distribution (dist: a draw that
    // lands on an allowed token has the filtered distribution; a refused one is drawn again below
    // from the filtered candidates). The filter then checks one token instead of the vocabulary.
    // A refused draw must not be reused: given that it was refused, it is not uniform over the
    // filtered candidates. A filter that cannot tell (-1) leaves the Rng as if nothing happened.
    const Rng before = rng_;
    CandidateArray c = fill(logits, n_vocab);
    LMRT_RETURN_IF_ERROR(run(c, 1));
    const int keep = samplers_[0]->keeps_token(c.data[c.selected].id);
    if (keep == 1) {
      ++filter_stats_.checked;
      last_ = c;
      *token = c.data[c.selected].id;
      return Status::Ok();
    }
    if (keep == 0) {
      ++filter_stats_.refused;
      bool found = false;
      LMRT_RETURN_IF_ERROR(repick_checked(c, &found));
      if (found) {
        ++filter_stats_.repicked;
        last_ = c;
        *token = c.data[c.selected].id;
        return Status::Ok();
      }
    } else {
      rng_ = before;  // mask first as written
    }
  }
  CandidateArray c = fill(logits, n_vocab);
  LMRT_RETURN_IF_ERROR(run(c, 0));
  last_ = c;
  *token = c.data[c.selected].id;
  return Status::Ok();
}

bool SamplerChain::picks_best_of_biased_logits() const {
  if (samplers_.empty() || !samplers_.back()->selects_best()) return false;
  size_t biasing = 0;
  for (size_t i = 0; i + 1 < samplers_.size(); ++i) {
    if (samplers_[i]->added_biases().empty()) return false;
    ++biasing;
  }
  return biasing <= 1;
}

namespace {

// The first token of [from, to) with the highest logit (candidate_before's order), from to when empty.
int32_t best_in(const float* logits, int32_t from, int32_t to) {
  if (from >= to) return to;
  // Only the value matters here (a -0 and +0 compare equal below), the first token holding it is found after.
  const float best = max_logit(logits + from, static_cast<size_t>(to - from));
  int32_t i = from;
  while (logits[i] != best) ++i;
  return i;
}

}  // namespace

// Greedy after at most one logit_bias: the best of the biased logits in candidate_before's order, found
// in the logits themselves (the unbiased stretches between the biased tokens, then each biased token
// with its bias added as logit_bias adds it), without building the candidate array.
Status SamplerChain::pick_best(const float* logits, int32_t n_vocab, int32_t* token) {
  const std::span<const TokenBias> biases =
      samplers_.size() > 1 ? samplers_[0]->added_biases() : std::span<const TokenBias>();
  int32_t best = -1;
  float best_logit = -INFINITY;
  auto consider = [&](int32_t t, float l) {
    if (best < 0 || candidate_before(Candidate{t, l, 0.0f}, Candidate{best, best_logit, 0.0f})) {
      best = t;
      best_logit = l;
    }
  };
  int32_t from = 0;
  for (const TokenBias& b : biases) {
    if (b.token >= n_vocab) break;  // reserve() refused these; a smaller n_vocab leaves them out
    if (const int32_t t = best_in(logits, from, b.token); t < b.token) consider(t, logits[t]);
    float l = logits[b.token];
    l += b.bias;
    consider(b.token, l);
    from = b.token + 1;
  }
  if (const int32_t t = best_in(logits, from, n_vocab); t < n_vocab) consider(t, logits[t]);
  // Every token banned: there is nothing to choose, as greedy finds.
  if (best_logit == -INFINITY)
    return Error(Code::invalid_argument, "every candidate token is excluded (all logits are -inf)");
  buffer_[0] = Candidate{best, best_logit, 0.0f};
  last_ = CandidateArray{buffer_.data(), 1, true, 0};
  *token = best;
  return Status::Ok();
}

CandidateArray SamplerChain::fill(const float* logits, int32_t n_vocab) {
  Candidate* data = buffer_.data();
  for (int32_t i = 0; i < n_vocab; ++i) data[i] = Candidate{i, logits[i], 0.0f};
  return CandidateArray{data, static_cast<size_t>(n_vocab), false, -1};
}

Status SamplerChain::run(CandidateArray& c, size_t first) {
  const Candidate* data = c.data;
  for (size_t i = first; i < samplers_.size(); ++i) {
    Sampler& s = *samplers_[i];
    const size_t before = c.size;
    LMRT_RETURN_IF_ERROR(s.apply(c, rng_));
    // Checks that protect the chain from a misbehaving (plugin) sampler.
    if (c.data != data || c.size == 0 || c.size > before) {
      return Error(Code::internal, "sampler '" + std::string(s.name()) + "' left an invalid candidate array");
    }
    if (c.selected >= 0) {
      if (static_cast<size_t>(c.selected) >= c.size) {
        return Error(Code::internal, "sampler '" + std::string(s.name()) + "' selected an index out of range");
      }
      return Status::Ok();
    }
  }
  return Error(Code::internal, "sampler chain ended without selecting a token");
}

// The filter refused the chain's pick from the whole vocabulary; c is the chain's candidates after
// samplers 1.. (per-candidate, so an allowed token's logit is what it would be after masking).
// Greedy over the allowed tokens picks the first allowed one in candidate order, so the next few
// in that order are checked one by one. dist draws again from the same distribution: a draw that
// the filter keeps is distributed as the masked draw (rejection sampling), and when none of a few is
// kept the caller's mask-first draw is still the masked one. Either way usually a few checks of
// ~1 us instead of a vocabulary mask, which misses its cache inside strings (up to ~20 ms at 128k).
Status SamplerChain::repick_checked(CandidateArray& c, bool* found) {
  constexpr size_t kChecked = 32;  // candidates checked in order (greedy)
  constexpr int kRedraws = 4;      // draws again (dist)
  *found = false;
  Sampler& filter = *samplers_[0];
  Sampler& last = *samplers_.back();
  if (last.selects_best()) {
    size_t index[kChecked];
    const size_t n = first_candidate_indices(c, kChecked, index);
    for (size_t i = 0; i < n; ++i) {
      const Candidate& x = c.data[index[i]];
      if (x.logit == -INFINITY) return Status::Ok();  // the mask-first path says what greedy says then
      if (static_cast<int32_t>(index[i]) == c.selected) continue;
      const int keep = filter.keeps_token(x.id);
      if (keep < 0) return Status::Ok();
      if (keep == 1) {
        c.selected = static_cast<int32_t>(index[i]);
        *found = true;
        return Status::Ok();
      }
    }
    return Status::Ok();
  }
  if (!last.uses_rng()) return Status::Ok();
  for (int r = 0; r < kRedraws; ++r) {
    c.selected = -1;
    LMRT_RETURN_IF_ERROR(run(c, samplers_.size() - 1));
    const int keep = filter.keeps_token(c.data[c.selected].id);
    if (keep < 0) return Status::Ok();
    if (keep == 1) {
      *found = true;
      return Status::Ok();
    }
  }
  return Status::Ok();
}

bool SamplerChain::filter_checked_last() const {
  if (!filter_last_ || samplers_.size() < 2 || samplers_[0]->name() != "grammar") return false;
  for (size_t i = 1; i < samplers_.size(); ++i)
    if (!samplers_[i]->per_candidate()) return false;
  return true;
}

Status SamplerChain::accept(int32_t token) {
  if (token < 0 || (n_vocab_ > 0 && token >= n_vocab_)) {
    return Error(Code::invalid_argument, "accept: token " + std::to_string(token) + " is outside the vocabulary");
  }
  for (const auto& s : samplers_) LMRT_RETURN_IF_ERROR(s->accept(token));
  return Status::Ok();
}

Status SamplerChain::accept_prompt(int32_t token) {
  if (token < 0 || (n_vocab_ > 0 && token >= n_vocab_)) {
    return Error(Code::invalid_argument, "accept: token " + std::to_string(token) + " is outside the vocabulary");
  }
  for (const auto& s : samplers_)
    if (s->learns_prompt()) LMRT_RETURN_IF_ERROR(s->accept(token));
  return Status::Ok();
}

Status SamplerChain::insert_front(std::unique_ptr<Sampler> first) {
  if (first == nullptr) return Error(Code::invalid_argument, "sampler chain: null sampler");
  if (first->always_selects())
    return Error(Code::invalid_argument, "sampler chain: a selecting sampler cannot go first");
  if (n_vocab_ > 0) LMRT_RETURN_IF_ERROR(first->reserve(n_vocab_));
  canonical_ = first->canonical_text() + (canonical_.empty() ? "" : " ") + canonical_;
  samplers_.insert(samplers_.begin(), std::move(first));
  return Status::Ok();
}

bool SamplerChain::contains(std::string_view name) const {
  for (const auto& s : samplers_)
    if (s->name() == name) return true;
  return false;
}

void SamplerChain::reset() {
  for (const auto& s : samplers_) s->reset();
  rng_.reseed(seed_);
}

void SamplerChain::set_seed(uint64_t seed) {
  seed_ = seed;
  rng_.reseed(seed);
}

Status SamplerChain::clone(std::unique_ptr<SamplerChain>* out) const {
  std::unique_ptr<SamplerChain> copy(new SamplerChain());
  copy->samplers_.reserve(samplers_.size());
  for (const auto& s : samplers_) {
    std::unique_ptr<Sampler> c;
    LMRT_RETURN_IF_ERROR(s->clone(&c));
    if (c == nullptr) return Error(Code::internal, "sampler '" + std::string(s->name()) + "' failed to clone");
    copy->samplers_.push_back(std::move(c));
  }
  copy->rng_ = rng_;
  copy->seed_ = seed_;
  copy->canonical_ = canonical_;
  copy->filter_last_ = filter_last_;
  if (n_vocab_ > 0) LMRT_RETURN_IF_ERROR(copy->reserve(n_vocab_));
  *out = std::move(copy);
  return Status::Ok();
}

bool SamplerChain::deterministic() const {
  for (const auto& s : samplers_) {
    if (!s->deterministic()) return false;
  }
  return true;
}

bool SamplerChain::uses_rng() const {
  for (const auto& s : samplers_) {
    if (s->uses_rng()) return true;
  }
  return false;
}

}  // namespace lmrt
