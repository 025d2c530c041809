// Sampler: one step of a sampler chain. Built-in samplers and samplers from dlopen-loaded plugins
// implement the same interface, so the chain never knows which it runs.
//
// Contract for implementations:
// - apply() works in place on the candidate array (see candidates.h). It may reorder, drop (shrink
//   `size`, never below 1), rewrite logits, and select (set `selected`). It must not allocate per
//   call: buffers belong in reserve().
// - The order it leaves must depend only on its input (e.g. sorted by candidate_before, or the
//   input order kept), never on unspecified internals of a library algorithm such as the order
//   nth_element leaves behind: dist walks the array in order, so a seeded draw would otherwise
//   differ between standard libraries.
// - A sampler with `deterministic() == true` gives the same output for the same input, history and
//   Rng state; it draws randomness only from the Rng it is given.
// - canonical_text() returns the text that rebuilds an equal sampler through the registry, with
//   every parameter named and written in one normal form, e.g. "top_k(k=40)", "top_p(p=0.9,min_keep=1)",
//   "greedy". Equivalent specs therefore produce identical text (response cache keys rely on it).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "runtime/sampling/candidates.h"
#include "runtime/sampling/rng.h"
#include "runtime/util/status.h"

namespace lmrt {

class Sampler {
 public:
  virtual ~Sampler() = default;

  virtual std::string_view name() const = 0;
  virtual std::string canonical_text() const = 0;
  virtual bool deterministic() const { return true; }
  // True when apply() always selects a token: such a sampler ends a chain.
  virtual bool always_selects() const { return false; }
  // True when the output depends on the Rng (so a cache key must include the seed).
  virtual bool uses_rng() const { return false; }

  // Allocates whatever apply()/accept() need for vocabularies up to n_vocab tokens and checks
  // parameters that depend on it (e.g. token ids). Called by the chain before the first apply().
  virtual Status reserve(int32_t n_vocab) {
    (void)n_vocab;
    return Status::Ok();
  }
  virtual Status apply(CandidateArray& candidates, Rng& rng) = 0;
  // Records a token that became part of the sequence (prompt or generated).
  virtual Status accept(int32_t token) {
    (void)token;
    return Status::Ok();
  }
  // True when apply() judges each candidate on its own: it keeps every candidate (or selects one)
  // and a token's new logit depends only on that token and the history, never on which other
  // candidates are present (temperature > 0, logit_bias, penalties, greedy, dist; not the
  // truncations top_k, top_p, min_p, typical). A grammar ahead of only such samplers may be checked
  // after them, on the one token they pick (SamplerChain::sample).
  virtual bool per_candidate() const { return false; }
  // For a sampler that only removes candidates (a grammar): whether apply() would keep `token`
  // now, as 1 or 0; -1 when it cannot answer for a single token.
  virtual int keeps_token(int32_t token) {
    (void)token;
    return -1;
  }
  // False for a sampler that follows only the generated text (a grammar): prompt tokens are then
  // not accepted into it (SamplerChain::accept_prompt).
  virtual bool learns_prompt() const { return true; }
  // For a sampler whose apply() only adds these biases (sorted by token, unique) to those tokens'
  // logits, whatever the history (logit_bias); empty for every other sampler.
  virtual std::span<const TokenBias> added_biases() const { return {}; }
  // True when apply() selects the best candidate by candidate_before and does nothing else (greedy).
  // A chain of such a sampler after only bias-adding ones picks its token straight from the logits.
  virtual bool selects_best() const { return false; }
  // Forgets the accepted history.
  virtual void reset() {}
  // An independent copy with the same parameters and the same history.
  virtual Status clone(std::unique_ptr<Sampler>* out) const = 0;
};

}  // namespace lmrt
