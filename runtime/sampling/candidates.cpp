#include "runtime/sampling/candidates.h"

#include <algorithm>
#include <cmath>

#include "runtime/sampling/exact_fp.h"
#include "runtime/sampling/portable_exp.h"

namespace lmrt {

void sort_candidates(CandidateArray& c) {
  if (!c.sorted) std::sort(c.data, c.data + c.size, candidate_before);
  c.sorted = true;
}

void sort_candidate_prefix(CandidateArray& c, size_t k) {
  if (c.sorted) return;
  if (k >= c.size) {
    sort_candidates(c);
    return;
  }
  if (k == 0) return;
  // nth_element is O(n) on average; sorting only the k winners keeps this O(n + k log k) rather
  // than sorting a whole vocabulary.
  std::nth_element(c.data, c.data + (k - 1), c.data + c.size, candidate_before);
  std::sort(c.data, c.data + (k - 1), candidate_before);
}

size_t first_candidate_indices(const CandidateArray& c, size_t k, size_t* index) {
  size_t n = 0;
  for (size_t i = 0; i < c.size && k > 0; ++i) {
    // Most candidates lose to the k-th best so far at the first comparison.
    if (n == k && !candidate_before(c.data[i], c.data[index[n - 1]])) continue;
    size_t at = n < k ? n++ : n - 1;
    for (; at > 0 && candidate_before(c.data[i], c.data[index[at - 1]]); --at) index[at] = index[at - 1];
    index[at] = i;
  }
  return n;
}

size_t argmax_candidate(const CandidateArray& c) {
  if (c.sorted) return 0;
  size_t best = 0;
  for (size_t i = 1; i < c.size; ++i) {
    if (candidate_before(c.data[i], c.data[best])) best = i;
  }
  return best;
}

void truncate_candidates(CandidateArray& c, size_t n) {
  if (n < c.size) c.size = n;
}

float max_logit(const CandidateArray& c) {
  if (c.sorted) return c.data[0].logit;
  float m = c.data[0].logit;
  for (size_t i = 1; i < c.size; ++i) m = std::max(m, c.data[i].logit);
  return m;
}

Status softmax_candidates(CandidateArray& c, double* total) {
  if (c.size == 0) return Error(Code::invalid_argument, "no candidates to draw from");
  const float m = max_logit(c);
  if (m == -INFINITY) {
    return Error(Code::invalid_argument, "every candidate token is excluded (all logits are -inf)");
  }
  double sum = 0;
  for (size_t i = 0; i < c.size; ++i) {
    const float w = static_cast<float>(portable_exp(static_cast<double>(c.data[i].logit) - m));
    c.data[i].p = w;
    sum += w;
  }
  const double inv = 1.0 / sum;
  for (size_t i = 0; i < c.size; ++i) c.data[i].p = static_cast<float>(c.data[i].p * inv);
  if (total != nullptr) *total = sum;
  return Status::Ok();
}

}  // namespace lmrt
