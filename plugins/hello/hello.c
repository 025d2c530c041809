/* hello: the smallest complete lmrt plugin. It adds one sampler, `hello_ban(token=ID)`, which makes
 * one token impossible (its logit becomes -inf). Built as a shared object that includes only
 * lmrt_plugin.h; see plugins/README.md for the walk-through. */
#include <lmrt/lmrt_plugin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct hello_state {
  int32_t token; /* the banned token id */
} hello_state;

static int32_t hello_create(const char* config, const lmrt_plugin_env* env, void** state, char* err, size_t err_size) {
  char key[32], value[64];
  const char* cursor = config;
  long token = -1;
  int rc;
  while ((rc = lmrt_plugin_config_next(&cursor, key, sizeof key, value, sizeof value)) == 1) {
    char* end = NULL;
    if (key[0] != '\0' &&
        (key[0] != 't' || key[1] != 'o' || key[2] != 'k' || key[3] != 'e' || key[4] != 'n' || key[5] != '\0')) {
      lmrt_plugin_set_error(err, err_size, "hello_ban: the only parameter is 'token'");
      return 1;
    }
    token = strtol(value, &end, 10);
    if (end == value || *end != '\0' || token < 0 || token > INT32_MAX) {
      lmrt_plugin_set_error(err, err_size, "hello_ban: 'token' must be a token id >= 0");
      return 1;
    }
  }
  if (rc < 0 || token < 0) {
    lmrt_plugin_set_error(err, err_size, "hello_ban: expected hello_ban(token=ID)");
    return 1;
  }
  hello_state* s = (hello_state*)malloc(sizeof *s);
  if (s == NULL) return 1;
  s->token = (int32_t)token;
  *state = s;
  env->host->log(env->host, LMRT_PLUGIN_LOG_DEBUG, "hello_ban created");
  return 0;
}

static int32_t hello_apply(void* state, lmrt_plugin_candidates* c, lmrt_plugin_rng* rng, char* err, size_t err_size) {
  const hello_state* s = (const hello_state*)state;
  size_t i;
  (void)rng;
  (void)err;
  (void)err_size;
  for (i = 0; i < c->size; ++i) {
    if (c->data[i].id == s->token) {
      c->data[i].logit = -INFINITY;
      c->sorted = 0; /* the order may have changed */
    }
  }
  return 0;
}

static int32_t hello_clone(const void* state, void** out, char* err, size_t err_size) {
  hello_state* copy = (hello_state*)malloc(sizeof *copy);
  (void)err;
  (void)err_size;
  if (copy == NULL) return 1;
  *copy = *(const hello_state*)state;
  *out = copy;
  return 0;
}

static void hello_destroy(void* state) { free(state); }

static size_t hello_canonical(const void* state, char* buf, size_t capacity) {
  int n = snprintf(buf, capacity, "token=%d", (int)((const hello_state*)state)->token);
  return n < 0 ? 0 : (size_t)n;
}

static const lmrt_plugin_sampler_def hello_ban = {
    sizeof(lmrt_plugin_sampler_def),
    LMRT_PLUGIN_SAMPLER_DETERMINISTIC,
    "hello_ban",
    "bans one token: hello_ban(token=ID)",
    hello_create,
    NULL, /* reserve: nothing to allocate */
    hello_apply,
    NULL, /* accept: no history */
    NULL, /* reset: no history */
    hello_clone,
    hello_destroy,
    hello_canonical,
};

static const lmrt_plugin_sampler_def* const hello_samplers[] = {&hello_ban};

LMRT_PLUGIN_EXPORT int32_t lmrt_plugin_init(uint32_t host_abi_version, const lmrt_host_api* host,
                                            lmrt_plugin_descriptor* out) {
  (void)host;
  out->abi_version = LMRT_PLUGIN_ABI_VERSION;
  if (!lmrt_plugin_abi_compatible(host_abi_version)) return 1;
  out->name = "hello";
  out->version = "1.0.0";
  out->description = "the smallest complete example plugin";
  out->samplers = hello_samplers;
  out->n_samplers = 1;
  return 0;
}
