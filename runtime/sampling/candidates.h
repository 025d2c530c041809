// Candidate array: the token candidates a sampler chain works on, as a view over a buffer the
// chain owns. Every sampler reads and rewrites this one array in place: filters shrink `size`
// (keeping the survivors at the front), logit transforms rewrite `logit`, and a selecting sampler
// sets `selected`. The layout is plain so that the plugin ABI can hand it across as is.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/util/status.h"

namespace lmrt {

struct Candidate {
  int32_t id;
  float logit;
  // Probability. Only meaningful right after a sampler that states it computes it (dist, and the
  // probability-based filters for the survivors); a sampler that changes logits leaves it stale.
  float p;
};

struct CandidateArray {
  Candidate* data = nullptr;
  size_t size = 0;
  // True when data[0..size) is in descending logit order, ties broken by ascending id.
  bool sorted = false;
  // Index into data of the chosen token, or -1 while no sampler has chosen.
  int32_t selected = -1;
};

// A fixed amount added to one token's logit (logit_bias).
struct TokenBias {
  int32_t token;
  float bias;
};

// The one total order of candidates used everywhere: higher logit first, then lower id. A total
// order makes every sort, partial sort and selection give the same result on every platform.
inline bool candidate_before(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Sorts the whole array (no-op when already sorted) and sets `sorted`.
void sort_candidates(CandidateArray& c);

// Places the first min(k, size) candidates of the total order, sorted, at the front; the rest
// follow in unspecified order. O(size + k log k). Sets `sorted` when that covers the array.
void sort_candidate_prefix(CandidateArray& c, size_t k);

// Writes the indices into data of the first min(k, size) candidates of the total order to index[],
// in that order, without moving any candidate; returns how many. One pass, O(size + k * inserts).
size_t first_candidate_indices(const CandidateArray& c, size_t k, size_t* index);

// Index of the first candidate in the total order. Requires size > 0.
size_t argmax_candidate(const CandidateArray& c);

// Keeps the first n candidates (n <= size); keeps `sorted`.
void truncate_candidates(CandidateArray& c, size_t n);

// Largest logit. Requires size > 0.
float max_logit(const CandidateArray& c);

// Sets p = softmax(logit) over the array, in candidate order, with portable arithmetic; returns the
// sum of the unnormalized weights e^(logit - max) in *total when non-null. Error invalid_argument
// when every logit is -inf (nothing can be drawn).
Status softmax_candidates(CandidateArray& c, double* total = nullptr);

}  // namespace lmrt
