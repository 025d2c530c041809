// How far two sets of logits (rows of n_vocab floats, e.g. two runtimes' or two quantizations' outputs for
// the same ids) are apart: the numbers `lmrt kld` prints and the reference tests assert on, defined as in
// the llama.cpp oracle's compare.py.
#pragma once

#include <cstddef>

namespace lmrt {

struct LogitStats {
  size_t rows = 0;
  size_t top1_agree = 0;  // rows whose argmax is the same
  double rms_rel = 0.0;   // ||other - base|| / ||base||, pooled over all rows
  double kld_mean = 0.0;  // mean over rows of KL(softmax(base) || softmax(other)), in nats
  double kld_max = 0.0;   // the largest row's KL divergence
  double max_abs = 0.0;   // largest |other - base|
};

// base and other hold `rows` rows of n_vocab floats each.
LogitStats compare_logits(const float* base, const float* other, size_t rows, size_t n_vocab);

}  // namespace lmrt
