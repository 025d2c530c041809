#include "runtime/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace lmrt {
namespace {

// Same order as candidate_before: higher logit first, then lower id.
bool before(float la, int32_t ia, float lb, int32_t ib) { return la > lb || (la == lb && ia < ib); }

}  // namespace

Status compute_logprobs(const float* logits, int32_t n_vocab, int32_t token, int32_t top_n, TokenLogprobs* out) {
  if (logits == nullptr || out == nullptr) return Error(Code::invalid_argument, "logprobs: null argument");
  if (n_vocab <= 0) return Error(Code::invalid_argument, "logprobs: n_vocab must be positive");
  if (token < 0 || token >= n_vocab) {
    return Error(Code::invalid_argument, "logprobs: token " + std::to_string(token) + " is outside the vocabulary");
  }
  if (top_n < 0 || top_n > kMaxTopLogprobs) {
    return Error(Code::invalid_argument, "logprobs: top_n must be in [0, " + std::to_string(kMaxTopLogprobs) +
                                             "], got " + std::to_string(top_n));
  }
  float max = -INFINITY;
  for (int32_t i = 0; i < n_vocab; ++i) {
    const float l = logits[i];
    if (std::isnan(l) || l == INFINITY) {
      return Error(Code::invalid_argument, "logprobs: logit of token " + std::to_string(i) + " is not finite");
    }
    if (l > max) max = l;
  }
  if (max == -INFINITY) return Error(Code::invalid_argument, "logprobs: every logit is -inf");
  double sum = 0;
  for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  const double log_sum = std::log(sum);
  auto logprob = [&](int32_t i) { return static_cast<float>((static_cast<double>(logits[i]) - max) - log_sum); };

  out->chosen = {token, logprob(token)};
  // Keep the best top_n seen so far sorted in out->top; most tokens fail the first comparison.
  const int32_t n = std::min(top_n, n_vocab);
  int32_t count = 0;
  TokenLogprob* top = out->top.data();
  for (int32_t i = 0; i < n_vocab && n > 0; ++i) {
    const float l = logits[i];
    if (count == n && !before(l, i, logits[top[n - 1].token], top[n - 1].token)) continue;
    int32_t pos = count < n ? count++ : n - 1;
    while (pos > 0 && before(l, i, logits[top[pos - 1].token], top[pos - 1].token)) {
      top[pos] = top[pos - 1];
      --pos;
    }
    top[pos] = {i, 0.0f};
  }
  for (int32_t k = 0; k < count; ++k) top[k].logprob = logprob(top[k].token);
  out->n_top = count;
  return Status::Ok();
}

}  // namespace lmrt
