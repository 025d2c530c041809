/* A failed allocation inside a C ABI call is LMRT_ERR_OUT_OF_MEMORY with a message, never an abort of the
 * calling program: under an address-space limit, tokenizing a 64 MiB text (whose pieces need far more than
 * the limit leaves) fails cleanly, and the model still works after it. Exit code 0 = pass. */
#define _POSIX_C_SOURCE 200809L
#include <lmrt/lmrt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* The process's current virtual size in bytes (from /proc/self/statm), 0 when unknown. */
static unsigned long long virtual_bytes(void) {
  unsigned long long pages = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  if (fscanf(f, "%llu", &pages) != 1) pages = 0;
  fclose(f);
  return pages * 4096ull;
}

int main(int argc, char** argv) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  (void)argc;
  (void)argv;
  printf("c_abi_out_of_memory: skipped (a sanitizer's shadow memory does not fit an address-space limit)\n");
  return 0;
#else
  char path[4096], err[512];
  lmrt_model* model = NULL;
  const size_t text_len = (size_t)64 << 20;
  char* text = malloc(text_len + 1);
  int32_t ids[16];
  size_t n = 0;
  struct rlimit limit;
  lmrt_status s;
  snprintf(path, sizeof path, "%s/stories260K.gguf", argc > 1 ? argv[1] : "../shared/models");
  if (text == NULL || lmrt_model_open(path, NULL, &model, err, sizeof err) != LMRT_OK) {
    fprintf(stderr, "FAIL: cannot set up: %s\n", text == NULL ? "no memory for the text" : err);
    return 1;
  }
  memset(text, 'a', text_len);
  text[text_len] = '\0';
  limit.rlim_cur = limit.rlim_max = virtual_bytes() + ((rlim_t)256 << 20);
  if (virtual_bytes() == 0 || setrlimit(RLIMIT_AS, &limit) != 0) {
    fprintf(stderr, "FAIL: cannot limit the address space\n");
    return 1;
  }
  s = lmrt_tokenize(model, text, text_len, 1, ids, 16, &n);
  if (s != LMRT_ERR_OUT_OF_MEMORY || strlen(lmrt_model_last_error(model)) == 0) {
    fprintf(stderr, "FAIL: tokenizing 64 MiB under the limit: status %d (%s), message '%s'\n", (int)s,
            lmrt_status_str(s), lmrt_model_last_error(model));
    return 1;
  }
  s = lmrt_tokenize(model, "Once upon a time", (size_t)-1, 1, ids, 16, &n);
  if (s != LMRT_OK || n < 2) {
    fprintf(stderr, "FAIL: the model after the failed call: status %d\n", (int)s);
    return 1;
  }
  lmrt_model_close(model);
  free(text);
  printf("c_abi_out_of_memory: passed\n");
  return 0;
#endif
}
