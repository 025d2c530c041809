// Whole-vocabulary scans of a logit row that every sampled token pays for (the NaN / +inf check and
// greedy's maximum), written over the floats' bit patterns so that they vectorize in the baseline build
// (SSE2, NEON): the same loops over float comparisons compile to one scalar compare per logit (the
// compiler keeps their floating-point exception semantics).
#pragma once

#include <cstddef>

namespace lmrt {

// The index of the first of x[0, n) that is NaN or +inf, or n when there is none.
size_t first_nan_or_inf(const float* x, size_t n);

// The largest of x[0, n) (n > 0, no NaN among them); -0 and +0 may come back as either.
float max_logit(const float* x, size_t n);

}  // namespace lmrt
