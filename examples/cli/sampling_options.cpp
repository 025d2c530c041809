// The sampling and stop options of `run` and `chat`, read into a generate request.
#include "sampling_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/sampling/sampler_spec.h"

namespace cli {

const std::vector<OptionSpec> kSamplingOptions = {
    {"temp", "", true},
    {"top-k", "", true},
    {"top-p", "", true},
    {"min-p", "", true},
    {"typical", "", true},
    {"repeat-penalty", "", true},
    {"repeat-last-n", "", true},
    {"presence-penalty", "", true},
    {"frequency-penalty", "", true},
    {"logit-bias", "", true},
    {"seed", "", true},
    {"samplers", "", true},
    {"stop", "", true},
};

// The spec parser's number syntax (runtime/sampling/sampler_spec.h), so "--top-p X" and "top_p(X)"
// accept the same texts; the ranges are checked by the library when it builds the chain.
namespace {

bool parse_float(const std::string& text, float* out) { return lmrt::parse_float_text(text, out); }

}  // namespace

bool read_text_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return !in.bad();
}

// Fills the sampling, stop, logprob, beam and context-shift fields from the options; prints the
// error and returns false for a bad value.
bool apply_sampling_options(const char* command, const Args& args, lmrt_generate_request* req,
                            std::vector<lmrt_logit_bias>* biases, std::vector<std::string>* stops,
                            std::string* samplers) {
  struct FloatOpt {
    const char* name;
    float* field;
  } floats[] = {{"temp", &req->temperature},
                {"top-p", &req->top_p},
                {"min-p", &req->min_p},
                {"typical", &req->typical_p},
                {"repeat-penalty", &req->repeat_penalty},
                {"presence-penalty", &req->presence_penalty},
                {"frequency-penalty", &req->frequency_penalty},
                {"length-penalty", &req->length_penalty}};
  for (const FloatOpt& f : floats)
    if (args.has(f.name) && !parse_float(args.get(f.name), f.field)) {
      cli::print_error(command, std::string("--") + f.name +
                                    " needs a decimal number a float can hold (or inf, -inf), got '" +
                                    args.get(f.name) + "'");
      return false;
    }
  long long v = 0;
  struct IntOpt {
    const char* name;
    long long lo, hi;
  } ints[] = {{"top-k", 0, 1 << 24},
              {"repeat-last-n", 0, 1 << 20},
              {"logprobs", 0, LMRT_MAX_TOP_LOGPROBS},
              {"beams", 1, 16},
              {"keep", 0, 1 << 20}};
  for (const IntOpt& o : ints) {
    if (!args.has(o.name)) continue;
    if (!parse_int(args.get(o.name), o.lo, o.hi, &v)) {
      cli::print_error(command, std::string("--") + o.name + " needs a whole number from " + std::to_string(o.lo) +
                                    " to " + std::to_string(o.hi));
      return false;
    }
    const std::string n = o.name;
    if (n == "top-k") req->top_k = static_cast<int32_t>(v);
    if (n == "repeat-last-n") req->repeat_last_n = static_cast<int32_t>(v);
    if (n == "logprobs") req->logprobs = static_cast<int32_t>(v);
    if (n == "beams") req->n_beams = static_cast<uint32_t>(v);
    if (n == "keep") req->n_keep = static_cast<uint32_t>(v);
  }
  if (args.has("seed")) {
    // strtoull alone would turn an overflow into ULLONG_MAX (LMRT_SEED_RANDOM) and accept "-1".
    char* end = nullptr;
    const std::string s = args.get("seed");
    errno = 0;
    req->seed = std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || req->seed == LMRT_SEED_RANDOM) {
      cli::print_error(command, "--seed needs a whole number from 0 to 18446744073709551614, got '" + s + "'");
      return false;
    }
  }
  for (auto [it, last] = args.values.equal_range("logit-bias"); it != last; ++it) {
    const std::string& kv = it->second;
    const size_t eq = kv.find('=');
    long long id = 0;
    float bias = 0;
    if (eq == std::string::npos || !parse_int(kv.substr(0, eq), 0, 1 << 24, &id) ||
        !(kv.substr(eq + 1) == "-inf" ? (bias = -INFINITY, true) : parse_float(kv.substr(eq + 1), &bias))) {
      cli::print_error(command, "--logit-bias needs TOKEN_ID=BIAS (BIAS may be -inf), got '" + kv + "'");
      return false;
    }
    biases->push_back({static_cast<int32_t>(id), bias});
  }
  req->logit_bias = biases->data();
  req->n_logit_bias = static_cast<uint32_t>(biases->size());
  for (auto [it, last] = args.values.equal_range("stop"); it != last; ++it) stops->push_back(it->second);
  if (args.has("samplers")) {
    *samplers = args.get("samplers");
    req->samplers = samplers->c_str();
  }
  req->context_shift = args.has("context-shift") ? 1 : 0;
  return true;
}

bool parse_generation_sizes(const char* command, const Args& args, GenerationSizes* sizes) {
  if (args.has("n-predict") && !parse_int(args.get("n-predict"), 1, 1 << 20, &sizes->n_predict)) {
    print_error(command, "-n needs a number of tokens from 1 to 1048576");
    return false;
  }
  if (args.has("threads") && !parse_int(args.get("threads"), 1, 512, &sizes->threads)) {
    print_error(command, "-t needs a thread count from 1 to 512");
    return false;
  }
  if (args.has("ctx-size") && !parse_int(args.get("ctx-size"), 1, 1 << 20, &sizes->n_ctx)) {
    print_error(command, "-c needs a context size from 1 to 1048576");
    return false;
  }
  return true;
}

lmrt_context* create_context(lmrt_model* model, const GenerationSizes& sizes, bool kv_f32) {
  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = static_cast<uint32_t>(sizes.n_ctx);
  cp.n_threads = static_cast<uint32_t>(sizes.threads);
  if (kv_f32) cp.kv_type = LMRT_KV_F32;
  lmrt_context* ctx = nullptr;
  char err[1024] = {0};
  const lmrt_status s = lmrt_context_create(model, &cp, &ctx, err, sizeof err);
  if (s != LMRT_OK) {
    print_error("cannot create a context", std::string(lmrt_status_str(s)) + ": " + err);
    return nullptr;
  }
  return ctx;
}

}  // namespace cli
