// mirostat: Mirostat v1 and v2 (Basu et al. 2021, "Mirostat: a neural text decoding algorithm that
// directly controls perplexity", arXiv:2007.14966), with the behaviour of llama.cpp's samplers:
//
//   both: mu starts at 2 * tau; after drawing token X from the kept candidates (renormalised),
//         surprise = -log2 p(X) and mu -= eta * (surprise - tau). reset() restores mu = 2 * tau.
//   v1 (mirostat(tau=5,eta=0.1,m=100)): over softmax of the candidates, sorted, estimate the Zipf
//         exponent s from the top m: s = sum t_i b_i / sum t_i^2, t_i = ln((i+2)/(i+1)),
//         b_i = ln(p_i / p_{i+1}), i < m-1; eps = s - 1; k = (eps 2^mu / (1 - N^-eps))^(1/s) with N the
//         vocabulary size; keep the top max(1, floor(k)).
//   v2 (mirostat_v2(tau=5,eta=0.1)): keep the candidates whose surprise -log2 p <= mu (at least one).
//
// Both select the token (they end a chain) using the host's seeded RNG: one uniform draw u per
// token, the first candidate in descending order whose cumulative probability exceeds u.
#include <lmrt/lmrt_plugin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

namespace {

struct Mirostat {
  int version = 2;
  float tau = 5.0f;
  float eta = 0.1f;
  int32_t m = 100;
  float mu = 10.0f;
  int32_t n_vocab = 0;
  const lmrt_host_api* host = nullptr;
};

bool parse_float(const char* text, float* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(v)) return false;
  *out = static_cast<float>(v);
  return true;
}

int32_t create(int version, const char* config, const lmrt_plugin_env* env, void** state, char* err, size_t err_size) {
  Mirostat s;
  s.version = version;
  s.host = env->host;
  s.n_vocab = env->n_vocab;
  const char* names[] = {"tau", "eta", "m"};
  const int n_names = version == 1 ? 3 : 2;
  const char* cursor = config;
  char key[32], value[64];
  int rc, positional = 0;
  while ((rc = lmrt_plugin_config_next(&cursor, key, sizeof key, value, sizeof value)) == 1) {
    const char* k = key;
    if (key[0] == '\0') {
      if (positional >= n_names) {
        lmrt_plugin_set_error(err, err_size, "too many positional arguments");
        return 1;
      }
      k = names[positional++];
    }
    float v = 0;
    if (!parse_float(value, &v)) {
      lmrt_plugin_set_error(err, err_size, (std::string("parameter '") + k + "' must be a finite number").c_str());
      return 1;
    }
    if (std::strcmp(k, "tau") == 0 && v > 0) {
      s.tau = v;
    } else if (std::strcmp(k, "eta") == 0 && v > 0 && v <= 1) {
      s.eta = v;
    } else if (version == 1 && std::strcmp(k, "m") == 0 && v >= 2 && v <= 1e6 && v == std::floor(v)) {
      s.m = static_cast<int32_t>(v);
    } else {
      lmrt_plugin_set_error(err, err_size,
                            (std::string("unknown parameter or value out of range: ") + k + "=" + value +
                             (version == 1 ? " (tau > 0, 0 < eta <= 1, integer m >= 2)" : " (tau > 0, 0 < eta <= 1)"))
                                .c_str());
      return 1;
    }
  }
  if (rc < 0) {
    lmrt_plugin_set_error(err, err_size, "malformed configuration");
    return 1;
  }
  s.mu = 2.0f * s.tau;
  Mirostat* p = new (std::nothrow) Mirostat(s);
  if (p == nullptr) return 1;
  *state = p;
  return 0;
}

int32_t create_v1(const char* c, const lmrt_plugin_env* e, void** s, char* err, size_t n) {
  return create(1, c, e, s, err, n);
}
int32_t create_v2(const char* c, const lmrt_plugin_env* e, void** s, char* err, size_t n) {
  return create(2, c, e, s, err, n);
}

int32_t reserve(void* state, int32_t n_vocab, char*, size_t) {
  auto* s = static_cast<Mirostat*>(state);
  if (n_vocab > s->n_vocab) s->n_vocab = n_vocab;
  return 0;
}

bool before(const lmrt_plugin_candidate& a, const lmrt_plugin_candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// Sorts (descending logit, ties by id) and sets p = softmax over data[0, size).
void softmax_sorted(lmrt_plugin_candidates* c) {
  if (!c->sorted) {
    std::sort(c->data, c->data + c->size, before);
    c->sorted = 1;
  }
  const double max = c->data[0].logit;
  double sum = 0;
  for (size_t i = 0; i < c->size; ++i) sum += std::exp(static_cast<double>(c->data[i].logit) - max);
  for (size_t i = 0; i < c->size; ++i)
    c->data[i].p = static_cast<float>(std::exp(static_cast<double>(c->data[i].logit) - max) / sum);
}

// Draws from the (normalised) p of the candidates; returns the index.
size_t draw(const Mirostat& s, const lmrt_plugin_candidates* c, lmrt_plugin_rng* rng) {
  double sum = 0;
  for (size_t i = 0; i < c->size; ++i) sum += c->data[i].p;
  const double target = s.host->rng_uniform(rng) * sum;
  double cum = 0;
  for (size_t i = 0; i < c->size; ++i) {
    cum += c->data[i].p;
    if (target < cum) return i;
  }
  return 0;
}

int32_t apply(void* state, lmrt_plugin_candidates* c, lmrt_plugin_rng* rng, char* err, size_t err_size) {
  auto* s = static_cast<Mirostat*>(state);
  if (c->size == 0) {
    lmrt_plugin_set_error(err, err_size, "no candidates");
    return 1;
  }
  if (!c->sorted) {
    std::sort(c->data, c->data + c->size, before);
    c->sorted = 1;
  }
  if (c->data[0].logit == -INFINITY) {
    lmrt_plugin_set_error(err, err_size, "every candidate is impossible (all logits are -inf)");
    return 1;
  }
  softmax_sorted(c);
  size_t keep = 1;
  if (s->version == 1) {
    double sum_tb = 0, sum_tt = 0;
    for (size_t i = 0; i + 1 < static_cast<size_t>(s->m) && i + 1 < c->size; ++i) {
      if (c->data[i + 1].p <= 0) break;  // ln(p_i / 0) is infinite: the rest is outside the estimate
      const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
      const double b = std::log(static_cast<double>(c->data[i].p) / c->data[i + 1].p);
      sum_tb += t * b;
      sum_tt += t * t;
    }
    const double s_hat = sum_tt > 0 ? sum_tb / sum_tt : 0;
    const double eps = s_hat - 1;
    const double n = s->n_vocab > 0 ? s->n_vocab : static_cast<double>(c->size);
    const double k = std::pow(eps * std::pow(2.0, s->mu) / (1 - std::pow(n, -eps)), 1 / s_hat);
    keep = std::isfinite(k) && k >= 1 ? static_cast<size_t>(std::min<double>(k, static_cast<double>(c->size))) : 1;
  } else {
    keep = 0;
    while (keep < c->size && -std::log2(static_cast<double>(c->data[keep].p)) <= s->mu) ++keep;
    if (keep == 0) keep = 1;
  }
  c->size = keep;
  softmax_sorted(c);  // renormalise over the kept candidates
  const size_t idx = draw(*s, c, rng);
  c->selected = static_cast<int32_t>(idx);
  const double surprise = -std::log2(static_cast<double>(c->data[idx].p));
  s->mu = static_cast<float>(s->mu - s->eta * (surprise - s->tau));
  return 0;
}

void reset(void* state) {
  auto* s = static_cast<Mirostat*>(state);
  s->mu = 2.0f * s->tau;
}

int32_t clone(const void* state, void** out, char*, size_t) {
  auto* copy = new (std::nothrow) Mirostat(*static_cast<const Mirostat*>(state));
  if (copy == nullptr) return 1;
  *out = copy;
  return 0;
}

void destroy(void* state) { delete static_cast<Mirostat*>(state); }

size_t canonical(const void* state, char* buf, size_t capacity) {
  const auto* s = static_cast<const Mirostat*>(state);
  const int n = s->version == 1
                    ? std::snprintf(buf, capacity, "tau=%.9g,eta=%.9g,m=%d", s->tau, s->eta, static_cast<int>(s->m))
                    : std::snprintf(buf, capacity, "tau=%.9g,eta=%.9g", s->tau, s->eta);
  return n < 0 ? 0 : static_cast<size_t>(n);
}

constexpr uint32_t kFlags = LMRT_PLUGIN_SAMPLER_DETERMINISTIC | LMRT_PLUGIN_SAMPLER_SELECTS |
                            LMRT_PLUGIN_SAMPLER_USES_RNG | LMRT_PLUGIN_SAMPLER_SETS_P;

const lmrt_plugin_sampler_def kV1 = {sizeof(lmrt_plugin_sampler_def),
                                     kFlags,
                                     "mirostat",
                                     "Mirostat v1: mirostat(tau=5,eta=0.1,m=100); selects the token",
                                     create_v1,
                                     reserve,
                                     apply,
                                     nullptr,
                                     reset,
                                     clone,
                                     destroy,
                                     canonical};
const lmrt_plugin_sampler_def kV2 = {sizeof(lmrt_plugin_sampler_def),
                                     kFlags,
                                     "mirostat_v2",
                                     "Mirostat v2: mirostat_v2(tau=5,eta=0.1); selects the token",
                                     create_v2,
                                     reserve,
                                     apply,
                                     nullptr,
                                     reset,
                                     clone,
                                     destroy,
                                     canonical};
const lmrt_plugin_sampler_def* const kSamplers[] = {&kV1, &kV2};

}  // namespace

extern "C" LMRT_PLUGIN_EXPORT int32_t lmrt_plugin_init(uint32_t host_abi_version, const lmrt_host_api*,
                                                       lmrt_plugin_descriptor* out) {
  out->abi_version = LMRT_PLUGIN_ABI_VERSION;
  if (!lmrt_plugin_abi_compatible(host_abi_version)) return 1;
  out->name = "mirostat";
  out->version = "1.0.0";
  out->description = "Mirostat v1 and v2 perplexity-controlling samplers";
  out->samplers = kSamplers;
  out->n_samplers = 2;
  return 0;
}
