// SamplerChain: turns one step's logits into one token by running samplers in order over a
// candidate array, e.g. the default chain
//
//   penalties top_k(40) top_p(0.95) min_p(0.05) temperature(0.8) dist
//
// Order matters and is the order written. The default: penalties first (they need raw logits and
// the identity order), then the cheap top_k cut so the later filters see at most 40 candidates, then
// top_p and min_p on the untempered distribution, then temperature, then dist draws. Its penalties
// are neutral (repeat=1); a request turns them on with e.g. penalties(repeat=1.1,last_n=64).
//
// Rules:
// - The chain ends at the first sampler that selects a token. A sampler that always selects
//   (greedy, dist) must be last: a spec with anything after it is refused. A chain that does not
//   end with an always-selecting sampler gets `dist` appended (so "" means plain sampling at T=1,
//   "top_k(40) temperature(0.7)" means "... dist", and canonical_text() shows the `dist`).
// - Seeded sampling: the chain owns one Rng (rng.h), seeded at creation; dist draws one number per
//   token. Same seed + same logits + same accepted tokens -> same tokens, on every platform, at
//   any thread count (the chain itself is single-threaded; the Rng is its own, not global).
//   reset() restores the state right after creation (history cleared, Rng reseeded).
// - Memory: reserve(n_vocab) (or the first sample()) allocates every buffer; after that sample()
//   and accept() allocate nothing.
// - One thread at a time per chain; clone() gives an independent chain that continues identically.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/sampling/candidates.h"
#include "runtime/sampling/rng.h"
#include "runtime/sampling/sampler.h"
#include "runtime/sampling/sampler_registry.h"
#include "runtime/util/status.h"

namespace lmrt {

inline constexpr std::string_view kDefaultSamplerChain =
    "penalties top_k(40) top_p(0.95) min_p(0.05) temperature(0.8) dist";

class SamplerChain {
 public:
  // Builds a chain from spec text (grammar in sampler_spec.h) with samplers from `registry`.
  // Errors are invalid_argument with the offending offset/name/parameter.
  static Status parse(std::string_view spec, const SamplerRegistry& registry, uint64_t seed,
                      std::unique_ptr<SamplerChain>* out);
  // Builds a chain from samplers made with the typed constructors (the C API's path).
  static Status create(std::vector<std::unique_ptr<Sampler>> samplers, uint64_t seed,
                       std::unique_ptr<SamplerChain>* out);

  // Allocates buffers for vocabularies up to n_vocab and lets each sampler check and allocate.
  Status reserve(int32_t n_vocab);
  // Samples one token from logits[0..n_vocab). logits may be -inf (token impossible) but not NaN
  // or +inf. Does not accept the token: call accept() for it.
  // A grammar first in a chain whose other samplers are all per_candidate() (e.g. "grammar greedy",
  // "grammar temperature(0.7) dist") is checked last, on the picked token only, and masks the
  // vocabulary only when it refuses that token and the next few candidates (greedy) or draws
  // (dist) too: the same token as masking first for greedy, the same distribution for dist (a
  // refused draw is drawn again, so the Rng advances more than once). A chain
  // with a truncation (top_k, top_p, min_p, typical) or a plugin masks first, as written.
  Status sample(const float* logits, int32_t n_vocab, int32_t* token);
  // Records a token of the sequence (prompt tokens too, if they should count for penalties).
  Status accept(int32_t token);
  // Records a prompt token: like accept() for the samplers that learn the prompt (learns_prompt()).
  Status accept_prompt(int32_t token);
  // Puts `first` at the front of the chain (a grammar sampler given with a request).
  Status insert_front(std::unique_ptr<Sampler> first);
  // True when a sampler with this name is in the chain.
  bool contains(std::string_view name) const;
  // Clears history and reseeds the Rng with seed(): the chain then behaves as freshly created.
  void reset();
  // Sets a new seed and restarts the Rng stream from it (history is kept).
  void set_seed(uint64_t seed);
  // An independent chain with the same samplers, history and Rng state.
  Status clone(std::unique_ptr<SamplerChain>* out) const;

  // Space-separated canonical texts of the samplers, including an appended dist, e.g.
  // "top_k(k=40) top_p(p=0.9,min_keep=1) dist". Equal for equivalent specs; excludes the seed.
  const std::string& canonical_text() const { return canonical_; }
  // True when every sampler is deterministic given the seed (a plugin may say it is not).
  bool deterministic() const;
  // True when the result depends on the seed (a response-cache key must then include it).
  bool uses_rng() const;
  uint64_t seed() const { return seed_; }
  size_t size() const { return samplers_.size(); }
  const Sampler& sampler(size_t i) const { return *samplers_[i]; }
  int32_t reserved_vocab() const { return n_vocab_; }
  // The candidates as the selecting sampler left them in the last sample() (its `selected` is
  // the token's index; greedy after at most one logit_bias leaves only its pick); valid until the
  // next sample().
  const CandidateArray& last_candidates() const { return last_; }

  // How often the grammar was checked on the picked token alone (and kept it) or refused it, and
  // how many refused steps then found their token by checking more candidates (repick_checked)
  // instead of masking the vocabulary.
  struct FilterStats {
    uint64_t checked = 0;
    uint64_t refused = 0;
    uint64_t repicked = 0;
  };
  const FilterStats& filter_stats() const { return filter_stats_; }
  // Whether a grammar may be checked last (default true); false masks first on every step.
  void set_filter_checked_last(bool on) { filter_last_ = on; }

 private:
  SamplerChain() = default;
  CandidateArray fill(const float* logits, int32_t n_vocab);
  // Runs samplers_[first..] over c until one selects.
  Status run(CandidateArray& c, size_t first);
  bool filter_checked_last() const;
  Status repick_checked(CandidateArray& c, bool* found);
  // True for greedy after at most one sampler that only adds biases (logit_bias): pick_best applies.
  bool picks_best_of_biased_logits() const;
  Status pick_best(const float* logits, int32_t n_vocab, int32_t* token);

  std::vector<std::unique_ptr<Sampler>> samplers_;
  std::vector<Candidate> buffer_;
  CandidateArray last_;
  Rng rng_;
  uint64_t seed_ = 0;
  int32_t n_vocab_ = 0;
  std::string canonical_;
  FilterStats filter_stats_;
  bool filter_last_ = true;
};

}  // namespace lmrt
