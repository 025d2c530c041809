/* A C99 program that uses liblmrt.so only through lmrt.h: greedy generation from BOS on
 * stories260K must reproduce the reference ids, streamed text must equal the final text, and
 * bad input must come back as status + message. Exit code 0 = pass. */
#include <lmrt/lmrt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
      fprintf(stderr, __VA_ARGS__);                              \
      fprintf(stderr, "\n");                                     \
      ++failures;                                                \
    }                                                            \
  } while (0)

struct stream {
  char text[65536];
  size_t len;
  unsigned calls;
};

static int on_token(void* user, const lmrt_token_event* ev) {
  struct stream* s = (struct stream*)user;
  if (s->len + ev->text_len < sizeof s->text) {
    memcpy(s->text + s->len, ev->text, ev->text_len);
    s->len += ev->text_len;
  }
  s->calls++;
  return 0;
}

static int read_reference(const char* path, int32_t* ids, int max) {
  FILE* f = fopen(path, "r");
  int n = 0;
  if (!f) return -1;
  if (fscanf(f, "token_ids:") != 0) {
    fclose(f);
    return -1;
  }
  while (n < max && fscanf(f, "%d", &ids[n]) == 1) n++;
  fclose(f);
  return n;
}

int main(int argc, char** argv) {
  char path[4096], err[512];
  lmrt_model* model = NULL;
  lmrt_context* ctx = NULL;
  lmrt_context_params cp;
  lmrt_generate_request req;
  lmrt_generate_result res;
  struct stream* st = calloc(1, sizeof *st);
  int32_t want[256];
  int i, n_want;
  lmrt_status s;
  const char* dir = argc > 1 ? argv[1] : "../shared/models";

  CHECK(lmrt_abi_version() == LMRT_ABI_VERSION, "ABI version %u", lmrt_abi_version());

  /* Errors come back as statuses with messages. */
  s = lmrt_model_open("/nonexistent/model.gguf", NULL, &model, err, sizeof err);
  CHECK(s == LMRT_ERR_IO && model == NULL && strstr(err, "nonexistent") != NULL, "missing file: %d %s", s, err);
  snprintf(path, sizeof path, "%s/legacy/TinyLLama-v0.ggmlv3.q4_0.bin", dir);
  s = lmrt_model_open(path, NULL, &model, err, sizeof err);
  CHECK(s == LMRT_ERR_BAD_FORMAT && strstr(err, "GGJT") != NULL, "GGJT file: %d %s", s, err);
  CHECK(lmrt_model_open(NULL, NULL, &model, NULL, 0) == LMRT_ERR_INVALID_ARGUMENT, "NULL path");
  CHECK(strcmp(lmrt_status_str((lmrt_status)999), "unknown status") == 0, "unknown status string");

  snprintf(path, sizeof path, "%s/stories260K.gguf", dir);
  s = lmrt_model_open(path, NULL, &model, err, sizeof err);
  CHECK(s == LMRT_OK, "open %s: %s", path, err);
  if (s != LMRT_OK) return 1;

  lmrt_context_params_init(&cp);
  cp.n_ctx = 512;
  cp.n_threads = 2;
  cp.kv_type = LMRT_KV_F32;
  s = lmrt_context_create(model, &cp, &ctx, err, sizeof err);
  CHECK(s == LMRT_OK, "context: %s", err);
  if (s != LMRT_OK) return 1;

  lmrt_generate_request_init(&req);
  req.prompt = "";
  req.prompt_len = 0;
  req.max_tokens = 256;
  res.struct_size = sizeof res;
  s = lmrt_generate(ctx, &req, on_token, st, &res);
  CHECK(s == LMRT_OK, "generate: %s", lmrt_context_last_error(ctx));
  snprintf(path, sizeof path, "%s/reference/stories260K.bin.greedy256.txt", dir);
  n_want = read_reference(path, want, 256);
  CHECK(n_want == 256, "reference ids: %d", n_want);
  CHECK(res.completion_tokens == 256 && res.finish_reason == LMRT_FINISH_LENGTH, "completion %u reason %d",
        res.completion_tokens, res.finish_reason);
  for (i = 0; i < 256 && i < (int)res.completion_tokens; i++)
    if (res.tokens[i] != want[i]) {
      CHECK(0, "token %d: got %d want %d", i, res.tokens[i], want[i]);
      break;
    }
  CHECK(res.text_len == st->len && memcmp(res.text, st->text, st->len) == 0, "streamed text differs from result");
  CHECK(strncmp(res.text, "Once upon a time", 16) == 0, "text starts: %.20s", res.text);
  CHECK(res.prompt_tokens == 1, "prompt tokens %u", res.prompt_tokens);

  /* A prompt too long for the context is refused and the context still works. */
  {
    static char long_prompt[8192];
    memset(long_prompt, 'a', sizeof long_prompt - 1);
    for (i = 1; i < (int)sizeof long_prompt - 1; i += 2) long_prompt[i] = ' ';
    req.prompt = long_prompt;
    req.prompt_len = (size_t)-1;
    s = lmrt_generate(ctx, &req, NULL, NULL, &res);
    CHECK(s == LMRT_ERR_CONTEXT_FULL && strlen(lmrt_context_last_error(ctx)) > 0, "long prompt: %d", s);
    req.prompt = "Once upon";
    req.max_tokens = 8;
    s = lmrt_generate(ctx, &req, NULL, NULL, &res);
    CHECK(s == LMRT_OK && res.completion_tokens == 8, "after context full: %d", s);
  }
  /* Invalid UTF-8 in the prompt. */
  req.prompt = "bad \xff byte";
  s = lmrt_generate(ctx, &req, NULL, NULL, &res);
  CHECK(s == LMRT_ERR_BAD_UTF8, "bad utf8: %d", s);

  lmrt_context_free(ctx);
  lmrt_model_close(model);
  free(st);
  if (failures == 0) printf("c_abi_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
