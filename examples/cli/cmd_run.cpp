// lmrt run: stream a completion to stdout; --json prints one object with the result at the end.
#include <cstdio>
#include <string>

#include "cli_common.h"

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

}  // namespace

int cmd_run(int argc, char** argv) {
  cli::Args args;
  std::string error;
  const std::vector<cli::OptionSpec> spec = {
      {"model", "m", true},   {"prompt", "p", true},   {"n-predict", "n", true},
      {"threads", "t", true}, {"ctx-size", "c", true}, {"json", "", false},
      {"no-bos", "", false},  {"special", "", false},  {"kv-f32", "", false},
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

  const std::string prompt = args.get("prompt");
  lmrt_generate_request req;
  lmrt_generate_request_init(&req);
  req.prompt = prompt.c_str();
  req.prompt_len = prompt.size();
  req.max_tokens = static_cast<int32_t>(n);
  req.add_bos = args.has("no-bos") ? 0 : 1;
  req.parse_special = args.has("special") ? 1 : 0;
  lmrt_generate_result res;
  res.struct_size = sizeof res;
  StreamState st{args.has("json")};
  s = lmrt_generate(ctx, &req, print_piece, &st, &res);
  int rc = 0;
  if (s != LMRT_OK) {
    cli::print_error("generation failed", std::string(lmrt_status_str(s)) + ": " + lmrt_context_last_error(ctx));
    rc = 1;
  } else if (st.json) {
    std::string tokens;
    for (uint32_t i = 0; i < res.completion_tokens; ++i) tokens += (i ? "," : "") + std::to_string(res.tokens[i]);
    std::printf(
        "{\"text\":%s,\"tokens\":[%s],\"finish_reason\":\"%s\","
        "\"usage\":{\"prompt_tokens\":%u,\"completion_tokens\":%u,\"total_tokens\":%u},"
        "\"timings\":{\"load_ms\":%.3f,\"prefill_ms\":%.3f,\"decode_ms\":%.3f,\"ttft_ms\":%.3f,"
        "\"prefill_tokens_per_s\":%.2f,\"decode_tokens_per_s\":%.2f}}\n",
        cli::json_string(std::string(res.text, res.text_len)).c_str(), tokens.c_str(),
        lmrt_finish_reason_str(res.finish_reason), res.prompt_tokens, res.completion_tokens,
        res.prompt_tokens + res.completion_tokens, res.load_ms, res.prefill_ms, res.decode_ms, res.ttft_ms,
        res.prefill_tokens_per_s, res.decode_tokens_per_s);
  } else {
    std::printf("\n");
    std::fprintf(stderr, "[%s: %u prompt + %u generated tokens, prefill %.1f tok/s, decode %.1f tok/s]\n",
                 lmrt_finish_reason_str(res.finish_reason), res.prompt_tokens, res.completion_tokens,
                 res.prefill_tokens_per_s, res.decode_tokens_per_s);
  }
  lmrt_context_free(ctx);
  lmrt_model_close(model);
  return rc;
}
