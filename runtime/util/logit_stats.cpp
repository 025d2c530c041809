#include "runtime/util/logit_stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace lmrt {

namespace {

// log softmax of one row, in double so that the KL divergence of nearly equal rows is not rounding noise.
void log_softmax(const float* x, size_t n, std::vector<double>& out) {
  const double mx = *std::max_element(x, x + n);
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(x[i] - mx);
  const double log_z = mx + std::log(sum);
  out.resize(n);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] - log_z;
}

}  // namespace

LogitStats compare_logits(const float* base, const float* other, size_t rows, size_t n_vocab) {
  LogitStats s;
  s.rows = rows;
  if (rows == 0 || n_vocab == 0) return s;
  double diff2 = 0.0, base2 = 0.0, kld_sum = 0.0;
  std::vector<double> lp, lq;
  for (size_t r = 0; r < rows; ++r) {
    const float* a = base + r * n_vocab;
    const float* b = other + r * n_vocab;
    s.top1_agree += (std::max_element(a, a + n_vocab) - a) == (std::max_element(b, b + n_vocab) - b);
    for (size_t i = 0; i < n_vocab; ++i) {
      const double d = static_cast<double>(b[i]) - a[i];
      diff2 += d * d;
      base2 += static_cast<double>(a[i]) * a[i];
      s.max_abs = std::max(s.max_abs, std::fabs(d));
    }
    log_softmax(a, n_vocab, lp);
    log_softmax(b, n_vocab, lq);
    double kld = 0.0;
    for (size_t i = 0; i < n_vocab; ++i) kld += std::exp(lp[i]) * (lp[i] - lq[i]);
    kld = std::max(kld, 0.0);
    kld_sum += kld;
    s.kld_max = std::max(s.kld_max, kld);
  }
  s.rms_rel = base2 > 0.0 ? std::sqrt(diff2 / base2) : (diff2 > 0.0 ? INFINITY : 0.0);
  s.kld_mean = kld_sum / static_cast<double>(rows);
  return s;
}

}  // namespace lmrt
