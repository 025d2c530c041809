// dry: "Don't Repeat Yourself" (DRY), the n-gram repetition sampler proposed by p-e-w for
// text-generation-webui (PR #5677) and adopted by llama.cpp and koboldcpp.
//
//   dry(multiplier=0.8, base=1.75, allowed_length=2, penalty_last_n=-1, breaker="...", breaker_id=N)
//
// Over the history window (the last penalty_last_n accepted tokens; -1 = all, 0 = off), for every
// earlier occurrence i of the last token, the token that followed it (h[i+1]) would continue a
// repetition. Its match length is how far the tokens before i agree with the tokens at the end of the
// history: 1 + the number of further agreeing positions, stopping at a sequence breaker. When the
// last token or the continuation is a breaker, nothing is penalised through it. Each continuation
// token gets its longest match length L; when L >= allowed_length its logit drops by
//   multiplier * base^(L - allowed_length).
// Sequence breakers: token ids given with breaker_id=N (repeatable), and tokens whose text contains
// any breaker string (breaker="..." repeatable; defaults "\n", ":", "\"", "*" as in llama.cpp; needs
// the host's vocabulary; breaker="" with nothing else disables text breakers).
#include <lmrt/lmrt_plugin.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

namespace {

struct Dry {
  float multiplier = 0.8f;
  float base = 1.75f;
  int32_t allowed_length = 2;
  int32_t penalty_last_n = -1;
  std::vector<std::string> breakers;
  std::vector<int32_t> breaker_ids;
  const lmrt_host_api* host = nullptr;
  const lmrt_plugin_vocab* vocab = nullptr;
  std::vector<int32_t> history;
  // Per token id: 0 unknown, 1 breaker, 2 not a breaker (filled lazily from token text).
  std::vector<uint8_t> breaker_cache;
  // Per token id: the longest match length found in this apply(); touched lists the ids to clear.
  std::vector<int32_t> match;
  std::vector<int32_t> touched;
};

bool parse_number(const char* text, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

int32_t fail(char* err, size_t err_size, const std::string& message) {
  lmrt_plugin_set_error(err, err_size, message.c_str());
  return 1;
}

int32_t create(const char* config, const lmrt_plugin_env* env, void** state, char* err, size_t err_size) {
  try {
    Dry s;
    s.host = env->host;
    s.vocab = env->vocab;
    bool breakers_given = false;
    const char* names[] = {"multiplier", "base", "allowed_length", "penalty_last_n"};
    int positional = 0, rc;
    char key[32], value[256];
    const char* cursor = config;
    while ((rc = lmrt_plugin_config_next(&cursor, key, sizeof key, value, sizeof value)) == 1) {
      std::string k = key;
      if (k.empty()) {
        if (positional >= 4) return fail(err, err_size, "too many positional arguments");
        k = names[positional++];
      }
      if (k == "breaker") {
        breakers_given = true;
        if (value[0] != '\0') s.breakers.emplace_back(value);
        continue;
      }
      double v = 0;
      if (!parse_number(value, &v)) return fail(err, err_size, "parameter '" + k + "' must be a number");
      const bool integer = v == std::floor(v);
      if (k == "multiplier" && v >= 0) {
        s.multiplier = static_cast<float>(v);
      } else if (k == "base" && v >= 1) {
        s.base = static_cast<float>(v);
      } else if (k == "allowed_length" && integer && v >= 1 && v <= 1e6) {
        s.allowed_length = static_cast<int32_t>(v);
      } else if (k == "penalty_last_n" && integer && v >= -1 && v <= 1e8) {
        s.penalty_last_n = static_cast<int32_t>(v);
      } else if (k == "breaker_id" && integer && v >= 0 && v <= std::numeric_limits<int32_t>::max()) {
        s.breaker_ids.push_back(static_cast<int32_t>(v));
      } else {
        return fail(err, err_size,
                    "unknown parameter or value out of range: " + k + "=" + value +
                        " (multiplier >= 0, base >= 1, integer allowed_length >= 1, "
                        "integer penalty_last_n >= -1, breaker=TEXT, breaker_id=TOKEN)");
      }
    }
    if (rc < 0) return fail(err, err_size, "malformed configuration");
    if (!breakers_given) s.breakers = {"\n", ":", "\"", "*"};
    Dry* p = new Dry(std::move(s));
    *state = p;
    return 0;
  } catch (...) {
    return fail(err, err_size, "out of memory");
  }
}

int32_t reserve(void* state, int32_t n_vocab, char* err, size_t err_size) {
  auto* s = static_cast<Dry*>(state);
  try {
    if (s->match.size() < static_cast<size_t>(n_vocab)) {
      s->match.assign(static_cast<size_t>(n_vocab), 0);
      s->breaker_cache.resize(static_cast<size_t>(n_vocab), 0);
      s->touched.reserve(static_cast<size_t>(n_vocab));
    }
    return 0;
  } catch (...) {
    return fail(err, err_size, "out of memory");
  }
}

bool is_breaker(Dry& s, int32_t token) {
  if (std::find(s.breaker_ids.begin(), s.breaker_ids.end(), token) != s.breaker_ids.end()) return true;
  if (s.breakers.empty() || s.vocab == nullptr || token < 0) return false;
  if (static_cast<size_t>(token) < s.breaker_cache.size() && s.breaker_cache[token] != 0)
    return s.breaker_cache[token] == 1;
  char buf[256];
  size_t len = 0;
  bool breaker = false;
  if (s.host->token_text(s.vocab, token, buf, sizeof buf, &len) == 0) {
    const std::string_view text(buf, len);
    for (const std::string& b : s.breakers) breaker = breaker || text.find(b) != std::string_view::npos;
  }
  if (static_cast<size_t>(token) < s.breaker_cache.size()) s.breaker_cache[token] = breaker ? 1 : 2;
  return breaker;
}

int32_t apply(void* state, lmrt_plugin_candidates* c, lmrt_plugin_rng*, char*, size_t) {
  auto* s = static_cast<Dry*>(state);
  if (s->multiplier == 0 || s->penalty_last_n == 0) return 0;
  const size_t total = s->history.size();
  const size_t window = s->penalty_last_n < 0 ? total : std::min<size_t>(total, s->penalty_last_n);
  if (window < 2) return 0;
  const int32_t* h = s->history.data() + (total - window);
  const size_t n = window;
  const int32_t last = h[n - 1];
  if (is_breaker(*s, last)) return 0;
  for (size_t i = n - 1; i-- > 0;) {
    if (h[i] != last) continue;
    const int32_t next = h[i + 1];
    if (next < 0 || static_cast<size_t>(next) >= s->match.size() || is_breaker(*s, next)) continue;
    size_t len = 1;
    // Extend backwards while the tokens before i agree with the tokens before the end.
    while (len <= i) {
      const int32_t prev = h[n - 1 - len];
      if (h[i - len] != prev || is_breaker(*s, prev)) break;
      ++len;
    }
    int32_t& m = s->match[static_cast<size_t>(next)];
    if (m == 0) s->touched.push_back(next);
    m = std::max<int32_t>(m, static_cast<int32_t>(std::min<size_t>(len, 1u << 30)));
  }
  bool changed = false;
  for (size_t i = 0; i < c->size; ++i) {
    const int32_t id = c->data[i].id;
    if (id < 0 || static_cast<size_t>(id) >= s->match.size()) continue;
    const int32_t len = s->match[static_cast<size_t>(id)];
    if (len < s->allowed_length || c->data[i].logit == -INFINITY) continue;
    double penalty = s->multiplier * std::pow(static_cast<double>(s->base), len - s->allowed_length);
    // A very long repetition: clamp so the logit stays finite (it is still the lowest by far).
    const double logit = std::max<double>(c->data[i].logit - penalty, -std::numeric_limits<float>::max());
    c->data[i].logit = static_cast<float>(logit);
    changed = true;
  }
  for (int32_t id : s->touched) s->match[static_cast<size_t>(id)] = 0;
  s->touched.clear();
  if (changed) c->sorted = 0;
  return 0;
}

int32_t accept(void* state, int32_t token, char* err, size_t err_size) {
  auto* s = static_cast<Dry*>(state);
  try {
    s->history.push_back(token);
    // Keep the history bounded when a window is set (twice the window, trimmed in one move).
    if (s->penalty_last_n > 0 && s->history.size() > 2 * static_cast<size_t>(s->penalty_last_n)) {
      s->history.erase(s->history.begin(), s->history.end() - s->penalty_last_n);
    }
    return 0;
  } catch (...) {
    return fail(err, err_size, "out of memory");
  }
}

void reset(void* state) { static_cast<Dry*>(state)->history.clear(); }

int32_t clone(const void* state, void** out, char* err, size_t err_size) {
  try {
    *out = new Dry(*static_cast<const Dry*>(state));
    return 0;
  } catch (...) {
    return fail(err, err_size, "out of memory");
  }
}

void destroy(void* state) { delete static_cast<Dry*>(state); }

size_t canonical(const void* state, char* buf, size_t capacity) {
  const auto* s = static_cast<const Dry*>(state);
  char head[160];
  std::snprintf(head, sizeof head, "multiplier=%.9g,base=%.9g,allowed_length=%d,penalty_last_n=%d", s->multiplier,
                s->base, static_cast<int>(s->allowed_length), static_cast<int>(s->penalty_last_n));
  std::string text = head;
  for (const std::string& b : s->breakers) {
    text += ",breaker=\"";
    for (char ch : b) {
      if (ch == '"' || ch == '\\') text += '\\';
      text += ch;
    }
    text += '"';
  }
  if (s->breakers.empty()) text += ",breaker=\"\"";
  for (int32_t id : s->breaker_ids) text += ",breaker_id=" + std::to_string(id);
  if (capacity > 0) {
    const size_t n = std::min(text.size(), capacity - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  return text.size();
}

const lmrt_plugin_sampler_def kDry = {
    sizeof(lmrt_plugin_sampler_def),
    LMRT_PLUGIN_SAMPLER_DETERMINISTIC,
    "dry",
    "DRY n-gram repetition penalty: dry(multiplier=0.8,base=1.75,allowed_length=2,penalty_last_n=-1,breaker=...)",
    create,
    reserve,
    apply,
    accept,
    reset,
    clone,
    destroy,
    canonical};
const lmrt_plugin_sampler_def* const kSamplers[] = {&kDry};

}  // namespace

extern "C" LMRT_PLUGIN_EXPORT int32_t lmrt_plugin_init(uint32_t host_abi_version, const lmrt_host_api*,
                                                       lmrt_plugin_descriptor* out) {
  out->abi_version = LMRT_PLUGIN_ABI_VERSION;
  if (!lmrt_plugin_abi_compatible(host_abi_version)) return 1;
  out->name = "dry";
  out->version = "1.0.0";
  out->description = "DRY (don't repeat yourself) n-gram repetition sampler";
  out->samplers = kSamplers;
  out->n_samplers = 1;
  return 0;
}
