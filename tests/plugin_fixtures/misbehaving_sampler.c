/* A plugin whose one sampler misbehaves in the way FIXTURE_MODE says, for the host's tests:
 *   1 create_fails  create() refuses with a message
 *   2 bad_token     apply() writes a token id outside the vocabulary
 *   3 nan_logit     apply() writes a NaN logit
 *   4 dup_name      the sampler is called "top_k", a built-in's name */
#include <lmrt/lmrt_plugin.h>
#include <math.h>
#include <stdlib.h>

#ifndef FIXTURE_MODE
#error FIXTURE_MODE must be set
#endif

#if FIXTURE_MODE == 1
#define FIXTURE_NAME "create_fails"
#elif FIXTURE_MODE == 2
#define FIXTURE_NAME "bad_token"
#elif FIXTURE_MODE == 3
#define FIXTURE_NAME "nan_logit"
#else
#define FIXTURE_NAME "dup_name"
#endif

static int32_t fx_create(const char* config, const lmrt_plugin_env* env, void** state, char* err, size_t err_size) {
  (void)config;
  (void)env;
  if (FIXTURE_MODE == 1) {
    lmrt_plugin_set_error(err, err_size, "the fixture always refuses to be created");
    return 7;
  }
  *state = malloc(1);
  return *state == NULL;
}

static int32_t fx_apply(void* state, lmrt_plugin_candidates* c, lmrt_plugin_rng* rng, char* err, size_t err_size) {
  (void)state;
  (void)rng;
  (void)err;
  (void)err_size;
  if (FIXTURE_MODE == 2) c->data[0].id = 1 << 30;
  if (FIXTURE_MODE == 3) c->data[c->size - 1].logit = NAN;
  c->sorted = 0;
  return 0;
}

static int32_t fx_clone(const void* state, void** out, char* err, size_t err_size) {
  (void)state;
  (void)err;
  (void)err_size;
  *out = malloc(1);
  return *out == NULL;
}

static void fx_destroy(void* state) { free(state); }

static const lmrt_plugin_sampler_def fx_sampler = {
    sizeof(lmrt_plugin_sampler_def),
    LMRT_PLUGIN_SAMPLER_DETERMINISTIC,
    FIXTURE_MODE == 4 ? "top_k" : FIXTURE_NAME,
    "a misbehaving sampler for tests",
    fx_create,
    NULL,
    fx_apply,
    NULL,
    NULL,
    fx_clone,
    fx_destroy,
    NULL,
};
static const lmrt_plugin_sampler_def* const fx_samplers[] = {&fx_sampler};

LMRT_PLUGIN_EXPORT int32_t lmrt_plugin_init(uint32_t host_abi_version, const lmrt_host_api* host,
                                            lmrt_plugin_descriptor* out) {
  (void)host;
  out->abi_version = LMRT_PLUGIN_ABI_VERSION;
  if (!lmrt_plugin_abi_compatible(host_abi_version)) return 1;
  out->name = "fixture_" FIXTURE_NAME;
  out->version = "0.0.1";
  out->samplers = fx_samplers;
  out->n_samplers = 1;
  return 0;
}
