/* Streams a greedy completion to stdout through lmrt's C API.
 * usage: lmrt-stream MODEL [PROMPT] [MAX_TOKENS]
 * Build against an installed lmrt with pkg-config (see Makefile). */
#include <lmrt/lmrt.h>
#include <stdio.h>
#include <stdlib.h>

static int print_piece(void* user_data, const lmrt_token_event* event) {
  (void)user_data;
  fwrite(event->text, 1, event->text_len, stdout);
  fflush(stdout);
  return 0; /* non-zero would cancel */
}

int main(int argc, char** argv) {
  const char* prompt = argc > 2 ? argv[2] : "Once upon a time";
  const int max_tokens = argc > 3 ? atoi(argv[3]) : 128;
  char err[512] = {0};
  lmrt_model* model = NULL;
  lmrt_context* ctx = NULL;
  lmrt_context_params cp;
  lmrt_generate_request req;
  lmrt_generate_result res;
  lmrt_status s;

  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL [PROMPT] [MAX_TOKENS]\n", argv[0]);
    return 2;
  }
  if (lmrt_abi_version() != LMRT_ABI_VERSION) {
    fprintf(stderr, "liblmrt has ABI %u, this program was built for %u\n", lmrt_abi_version(), LMRT_ABI_VERSION);
    return 1;
  }
  s = lmrt_model_open(argv[1], NULL, &model, err, sizeof err);
  if (s != LMRT_OK) {
    fprintf(stderr, "cannot open %s: %s: %s\n", argv[1], lmrt_status_str(s), err);
    return 1;
  }
  lmrt_context_params_init(&cp);
  cp.n_ctx = 256;
  cp.n_threads = 2;
  s = lmrt_context_create(model, &cp, &ctx, err, sizeof err);
  if (s != LMRT_OK) {
    fprintf(stderr, "cannot create a context: %s: %s\n", lmrt_status_str(s), err);
    lmrt_model_close(model);
    return 1;
  }
  lmrt_generate_request_init(&req);
  req.prompt = prompt;
  req.prompt_len = (size_t)-1; /* NUL-terminated */
  req.max_tokens = max_tokens;
  res.struct_size = sizeof res;
  s = lmrt_generate(ctx, &req, print_piece, NULL, &res);
  if (s != LMRT_OK) {
    fprintf(stderr, "generation failed: %s: %s\n", lmrt_status_str(s), lmrt_context_last_error(ctx));
  } else {
    printf("\n");
    fprintf(stderr, "[%s: %u prompt + %u generated tokens]\n", lmrt_finish_reason_str(res.finish_reason),
            res.prompt_tokens, res.completion_tokens);
  }
  lmrt_context_free(ctx);
  lmrt_model_close(model);
  return s == LMRT_OK ? 0 : 1;
}
