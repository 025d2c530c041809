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
#include "sampling_options.h"

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

}  // namespace

int cmd_run(int argc, char** argv) {
  cli::Args args;
  std::string error;
  std::vector<cli::OptionSpec> spec = {
      {"model", "m", true},         {"prompt", "p", true},        {"n-predict", "n", true}, {"threads", "t", true},
      {"ctx-size", "c", true},      {"json", "", false},          {"no-bos", "", false},    {"special", "", false},
      {"kv-f32", "", false},        {"logprobs", "", true},       {"beams", "", true},      {"keep", "", true},
      {"context-shift", "", false}, {"length-penalty", "", true}, {"cache", "", true},      {"prefix-cache", "", true},
      {"plugin", "", true},         {"stop-plugin", "", true},    {"grammar", "", true},    {"json-schema", "", true},
      {"json-object", "", false},
  };
  spec.insert(spec.end(), cli::kSamplingOptions.begin(), cli::kSamplingOptions.end());
  if (!cli::parse_args(argc, argv, 2, spec, &args, &error)) {
    cli::print_error("run", error);
    return 2;
  }
  cli::GenerationSizes sizes{256};
  if (!cli::parse_generation_sizes("run", args, &sizes)) return 2;
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

  lmrt_context* ctx = cli::create_context(model, sizes, args.has("kv-f32"));
  if (ctx == nullptr) {
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
  if (args.has("grammar") && !cli::read_text_file(args.get("grammar"), &grammar_text))
    grammar_error = "cannot read the grammar file '" + args.get("grammar") + "'";
  if (args.has("json-schema") && !cli::read_text_file(args.get("json-schema"), &schema_text))
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
  req.max_tokens = static_cast<int32_t>(sizes.n_predict);
  req.add_bos = args.has("no-bos") ? 0 : 1;
  req.parse_special = args.has("special") ? 1 : 0;
  if (args.has("grammar")) req.grammar = grammar_text.c_str();
  if (args.has("json-schema") || args.has("json-object")) req.json_schema = schema_text.c_str();
  std::vector<lmrt_logit_bias> biases;
  std::vector<std::string> stop_strings;
  std::vector<const char*> stops;
  std::string samplers;
  if (!cli::apply_sampling_options("run", args, &req, &biases, &stop_strings, &samplers)) {
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
  const lmrt_status s = lmrt_generate(ctx, &req, print_piece, &st, &res);
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
