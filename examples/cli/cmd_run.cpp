// lmrt run: stream a completion to stdout; --json prints one object with the result at the end.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "runtime/sampling/sampler_spec.h"

namespace {

struct StreamState {
  bool json;
};

int print_piece(void* user, const lmrt_token_event* ev) {
  const auto* st = static_cast<StreamState*>(user);
  if (!st->json) {
    std::fwrite(ev->text, 1, ev->text_len, stdout);
    std::fflush(stdout);
  }
  return 0;
}

std::string piece_of(lmrt_model* model, int32_t token) {
  char buf[256];
  size_t len = 0;
  if (lmrt_token_to_piece(model, token, buf, sizeof buf, &len) != LMRT_OK) return "";
  return std::string(buf, len);
}

std::string ids_json(const int32_t* ids, size_t n) {
  std::string out = "[";
  for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

// {"token":..,"text":..,"bytes":[..],"logprob":..}; the piece of a byte-fallback token may be part of a
// character, which "text" shows as U+FFFD, so "bytes" gives the piece exactly (as OpenAI's logprobs do).
std::string logprob_json(lmrt_model* model, const lmrt_logprob& lp) {
  char num[32];
  std::snprintf(num, sizeof num, "%.6g", lp.logprob);
  const std::string piece = piece_of(model, lp.token);
  std::string bytes = "[";
  for (unsigned char c : piece) bytes += (bytes.size() > 1 ? "," : "") + std::to_string(c);
  return "{\"token\":" + std::to_string(lp.token) + ",\"text\":" + cli::json_string(piece) + ",\"bytes\":" + bytes +
         "],\"logprob\":" + num + "}";
}

std::string result_json(lmrt_model* model, const lmrt_generate_result& res) {
  char buf[1024];
  std::string out = "{\"text\":" + cli::json_string(std::string(res.text, res.text_len)) +
                    ",\"tokens\":" + ids_json(res.tokens, res.completion_tokens);
  std::snprintf(
      buf, sizeof buf,
      ",\"finish_reason\":\"%s\",\"usage\":{\"prompt_tokens\":%u,\"completion_tokens\":%u,\"total_tokens\":%u},"
      "\"timings\":{\"load_ms\":%.3f,\"prefill_ms\":%.3f,\"decode_ms\":%.3f,\"ttft_ms\":%.3f,"
      "\"prefill_tokens_per_s\":%.2f,\"decode_tokens_per_s\":%.2f},\"context_shifts\":%u,\"cache_hit\":%s,\"cache_ms\":"
      "%.3f,\"reused_tokens\":%u",
      lmrt_finish_reason_str(res.finish_reason), res.prompt_tokens, res.completion_tokens,
      res.prompt_tokens + res.completion_tokens, res.load_ms, res.prefill_ms, res.decode_ms, res.ttft_ms,
      res.prefill_tokens_per_s, res.decode_tokens_per_s, res.context_shifts, res.cache_hit ? "true" : "false",
      res.cache_ms, res.reused_tokens);
  out += buf;
  if (res.logprobs != nullptr) {
    out += ",\"logprobs\":[";
    for (uint32_t i = 0; i < res.completion_tokens; ++i) {
      const lmrt_token_logprobs& lp = res.logprobs[i];
      std::string item = logprob_json(model, lp.chosen);
      item.pop_back();
      item += ",\"top\":[";
      for (uint32_t j = 0; j < lp.n_top; ++j) item += (j ? "," : "") + logprob_json(model, lp.top[j]);
      out += (i ? "," : "") + item + "]}";
    }
    out += "]";
  }
  if (res.n_beams > 0) {
    out += ",\"beams\":[";
    for (uint32_t b = 0; b < res.n_beams; ++b) {
      const lmrt_beam& beam = res.beams[b];
      std::snprintf(buf, sizeof buf, ",\"logprob\":%.6f,\"score\":%.6f,\"finish_reason\":\"%s\"}", beam.logprob,
                    beam.score, lmrt_finish_reason_str(beam.finish_reason));
      out += std::string(b ? "," : "") + "{\"text\":" + cli::json_string(std::string(beam.text, beam.text_len)) +
             ",\"tokens\":" + ids_json(beam.tokens, beam.n_tokens) + buf;
    }
    out += "]";
  }
  return out + "}";
}

// The spec parser's number syntax (runtime/sampling/sampler_spec.h), so "--top-p X" and "top_p(X)"
// accept the same texts; the ranges are checked by the library when it builds the chain.
bool parse_float(const std::string& text, float* out) { return lmrt::parse_float_text(text, out); }

// The whole file as text; false when it cannot be read.
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
bool apply_sampling_options(const cli::Args& args, lmrt_generate_request* req, std::vector<lmrt_logit_bias>* biases,
                            std::vector<std::string>* stops, std::string* samplers) {
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
      cli::print_error("run", std::string("--") + f.name +
                                  " needs a decimal number a float can hold (or inf, -inf), got '" + args.get(f.name) +
                                  "'");
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
    if (!cli::parse_int(args.get(o.name), o.lo, o.hi, &v)) {
      cli::print_error("run", std::string("--") + o.name + " needs a whole number from " + std::to_string(o.lo) +
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
      cli::print_error("run", "--seed needs a whole number from 0 to 18446744073709551614, got '" + s + "'");
      return false;
    }
  }
  for (auto [it, last] = args.values.equal_range("logit-bias"); it != last; ++it) {
    const std::string& kv = it->second;
    const size_t eq = kv.find('=');
    long long id = 0;
    float bias = 0;
    if (eq == std::string::npos || !cli::parse_int(kv.substr(0, eq), 0, 1 << 24, &id) ||
        !(kv.substr(eq + 1) == "-inf" ? (bias = -INFINITY, true) : parse_float(kv.substr(eq + 1), &bias))) {
      cli::print_error("run", "--logit-bias needs TOKEN_ID=BIAS (BIAS may be -inf), got '" + kv + "'");
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

}  // namespace

int cmd_run(int argc, char** argv) {
  cli::Args args;
  std::string error;
  const std::vector<cli::OptionSpec> spec = {
      {"model", "m", true},
      {"prompt", "p", true},
      {"n-predict", "n", true},
      {"threads", "t", true},
      {"ctx-size", "c", true},
      {"json", "", false},
      {"no-bos", "", false},
      {"special", "", false},
      {"kv-f32", "", false},
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
      {"logprobs", "", true},
      {"beams", "", true},
      {"keep", "", true},
      {"context-shift", "", false},
      {"length-penalty", "", true},
      {"cache", "", true},
      {"prefix-cache", "", true},
      {"plugin", "", true},
      {"stop-plugin", "", true},
      {"grammar", "", true},
      {"json-schema", "", true},
      {"json-object", "", false},
  };
  if (!cli::parse_args(argc, argv, 2, spec, &args, &error)) {
    cli::print_error("run", error);
    return 2;
  }
  long long n = 256, threads = 0, n_ctx = 0;
  if (args.has("n-predict") && !cli::parse_int(args.get("n-predict"), 1, 1 << 20, &n)) {
    cli::print_error("run", "-n needs a number of tokens from 1 to 1048576");
    return 2;
  }
  if (args.has("threads") && !cli::parse_int(args.get("threads"), 1, 512, &threads)) {
    cli::print_error("run", "-t needs a thread count from 1 to 512");
    return 2;
  }
  if (args.has("ctx-size") && !cli::parse_int(args.get("ctx-size"), 1, 1 << 20, &n_ctx)) {
    cli::print_error("run", "-c needs a context size from 1 to 1048576");
    return 2;
  }
  if (!args.has("prompt")) {
    cli::print_error("run", "give a prompt with -p TEXT (-p \"\" starts from BOS alone)");
    return 2;
  }
  long long prefix_min = 0;
  if (args.has("prefix-cache") &&
      (!args.has("cache") || !cli::parse_int(args.get("prefix-cache"), 1, 1 << 20, &prefix_min))) {
    cli::print_error("run", "--prefix-cache needs --cache FILE and a minimum prompt length from 1 to 1048576 tokens");
    return 2;
  }
  lmrt_model* model = cli::open_model(cli::model_path(args));
  if (model == nullptr) return 1;

  lmrt_context_params cp;
  lmrt_context_params_init(&cp);
  cp.n_ctx = static_cast<uint32_t>(n_ctx);
  cp.n_threads = static_cast<uint32_t>(threads);
  if (args.has("kv-f32")) cp.kv_type = LMRT_KV_F32;
  lmrt_context* ctx = nullptr;
  char err[1024] = {0};
  lmrt_status s = lmrt_context_create(model, &cp, &ctx, err, sizeof err);
  if (s != LMRT_OK) {
    cli::print_error("cannot create a context", std::string(lmrt_status_str(s)) + ": " + err);
    lmrt_model_close(model);
    return 1;
  }

  // A cache that cannot be opened is a warning, never a reason not to generate.
  lmrt_cache* cache = nullptr;
  if (args.has("cache")) {
    lmrt_cache_params kp;
    lmrt_cache_params_init(&kp);
    kp.on_warning = [](void*, const char* m) { std::fprintf(stderr, "lmrt: cache: %s\n", m); };
    kp.prefix_min_tokens = static_cast<uint32_t>(prefix_min);
    char cerr[1024] = {0};
    if (lmrt_cache_open(args.get("cache").c_str(), &kp, &cache, cerr, sizeof cerr) != LMRT_OK)
      std::fprintf(stderr, "lmrt: cache: %s (generating without it)\n", cerr);
    else
      lmrt_context_set_cache(ctx, cache);
  }

  // Plugins: a host that may load exactly the files named (and $LMRT_PLUGIN_PATH's when set).
  lmrt_plugin_host* plugins = nullptr;
  if (args.has("plugin") || args.has("stop-plugin")) {
    lmrt_plugin_host_params hp;
    lmrt_plugin_host_params_init(&hp);
    hp.allow_loading = 1;
    hp.use_env_path = 1;
    char perr[1024] = {0};
    if (lmrt_plugin_host_create(&hp, &plugins, perr, sizeof perr) != LMRT_OK) {
      cli::print_error("plugins", perr);
      lmrt_context_free(ctx);
      lmrt_model_close(model);
      return 1;
    }
    for (auto [it, last] = args.values.equal_range("plugin"); it != last; ++it) {
      const lmrt_status ps = lmrt_plugin_load(plugins, it->second.c_str());
      if (ps != LMRT_OK) {
        cli::print_error("cannot load plugin '" + it->second + "'",
                         std::string(lmrt_status_str(ps)) + ": " + lmrt_plugin_host_last_error(plugins));
        lmrt_plugin_host_free(plugins);
        lmrt_context_free(ctx);
        lmrt_model_close(model);
        return 1;
      }
    }
  }

  // Constrained generation: a GBNF file, a JSON Schema file, or any JSON object.
  std::string grammar_text, schema_text;
  const int n_constraints =
      (args.has("grammar") ? 1 : 0) + (args.has("json-schema") ? 1 : 0) + (args.has("json-object") ? 1 : 0);
  std::string grammar_error;
  if (n_constraints > 1) grammar_error = "give only one of --grammar, --json-schema, --json-object";
  if (args.has("grammar") && !read_text_file(args.get("grammar"), &grammar_text))
    grammar_error = "cannot read the grammar file '" + args.get("grammar") + "'";
  if (args.has("json-schema") && !read_text_file(args.get("json-schema"), &schema_text))
    grammar_error = "cannot read the JSON Schema file '" + args.get("json-schema") + "'";
  if (args.has("json-object")) schema_text = R"({"type":"object"})";
  if (!grammar_error.empty()) {
    cli::print_error("run", grammar_error);
    if (plugins != nullptr) lmrt_plugin_host_free(plugins);
    lmrt_context_free(ctx);
    lmrt_model_close(model);
    return 2;
  }

  const std::string prompt = args.get("prompt");
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = prompt.c_str();
  req.prompt_len = prompt.size();
  req.max_tokens = static_cast<int32_t>(n);
  req.add_bos = args.has("no-bos") ? 0 : 1;
  req.parse_special = args.has("special") ? 1 : 0;
  if (args.has("grammar")) req.grammar = grammar_text.c_str();
  if (args.has("json-schema") || args.has("json-object")) req.json_schema = schema_text.c_str();
  std::vector<lmrt_logit_bias> biases;
  std::vector<std::string> stop_strings;
  std::vector<const char*> stops;
  std::string samplers;
  if (!apply_sampling_options(args, &req, &biases, &stop_strings, &samplers)) {
    lmrt_context_free(ctx);
    lmrt_model_close(model);
    return 2;
  }
  for (const std::string& st : stop_strings) stops.push_back(st.c_str());
  req.stop = stops.data();
  req.n_stop = stops.size();
  std::vector<const char*> criteria;
  for (auto [it, last] = args.values.equal_range("stop-plugin"); it != last; ++it)
    criteria.push_back(it->second.c_str());
  req.plugins = plugins;
  req.stop_criteria = criteria.data();
  req.n_stop_criteria = criteria.size();
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  StreamState st{args.has("json")};
  s = lmrt_generate(ctx, &req, print_piece, &st, &res);
  int rc = 0;
  if (s != LMRT_OK) {
    cli::print_error("generation failed", std::string(lmrt_status_str(s)) + ": " + lmrt_context_last_error(ctx));
    rc = 1;
  } else if (st.json) {
    std::printf("%s\n", result_json(model, res).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "[%s: %u prompt + %u generated tokens, prefill %.1f tok/s, decode %.1f tok/s]\n",
                 lmrt_finish_reason_str(res.finish_reason), res.prompt_tokens, res.completion_tokens,
                 res.prefill_tokens_per_s, res.decode_tokens_per_s);
  }
  lmrt_context_free(ctx);
  lmrt_cache_close(cache);
  lmrt_plugin_host_free(plugins);
  lmrt_model_close(model);
  return rc;
}
