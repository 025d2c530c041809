/*
 * lmrt_plugin.h — the ABI between lmrt and plugin shared objects that add samplers and stop criteria.
 *
 * A plugin includes only this header and never links liblmrt. It exports one function,
 *
 *   LMRT_PLUGIN_EXPORT int32_t lmrt_plugin_init(uint32_t host_abi_version, const lmrt_host_api* host,
 *                                               lmrt_plugin_descriptor* out);
 *
 * which the host calls once per load. The plugin checks the host's ABI major (the helper
 * lmrt_plugin_abi_compatible() does it), fills *out (name, version, its samplers and stop criteria)
 * and returns 0; any other value refuses the load (out->message may then point to a static reason).
 *
 * Rules (the plugin ABI contract, same discipline as lmrt.h):
 *  - Versions: LMRT_PLUGIN_ABI_VERSION is (major << 16) | minor. The host refuses a plugin of
 *    another major. Within a major, structs only grow at their end and carry struct_size first:
 *    the host's lmrt_host_api may be longer than the plugin knows (read only what your header
 *    declares, after checking host->struct_size), and the host reads only the first struct_size
 *    bytes of the plugin's structs. Definitions are listed by pointer, so they may grow too.
 *  - Every string the plugin hands over in its descriptor and definitions is static: it must stay
 *    valid while the library is loaded. The host keeps the library loaded while any instance lives.
 *  - No global mutable state in a plugin: all state lives in the instance (`void* state`) that
 *    create() returns. The host uses one instance from one thread at a time, but different
 *    instances of the same plugin run on different threads at once.
 *  - Functions returning int32_t return 0 for success; on failure they return non-zero and may
 *    write a NUL-terminated message to (err, err_size) (err_size may be 0).
 *  - Nothing may unwind across this boundary: a C++ plugin catches every exception itself.
 *  - Randomness comes only from the host's RNG draws (rng_uniform / rng_next_u64) during apply():
 *    they come from the chain's seeded generator, so a seeded chain stays reproducible.
 *  - Text is UTF-8 bytes and is not NUL-terminated unless stated.
 */
#ifndef LMRT_LMRT_PLUGIN_H
#define LMRT_LMRT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define LMRT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define LMRT_PLUGIN_EXPORT
#endif

#define LMRT_PLUGIN_ABI_MAJOR 1
#define LMRT_PLUGIN_ABI_MINOR 0
#define LMRT_PLUGIN_ABI_VERSION ((uint32_t)((LMRT_PLUGIN_ABI_MAJOR << 16) | LMRT_PLUGIN_ABI_MINOR))
#define LMRT_PLUGIN_ABI_MAJOR_OF(v) ((uint32_t)(v) >> 16)
#define LMRT_PLUGIN_ABI_MINOR_OF(v) ((uint32_t)(v)&0xFFFFu)

/* The name of the one exported symbol. */
#define LMRT_PLUGIN_INIT_SYMBOL "lmrt_plugin_init"

/* ---- what the host gives a plugin --------------------------------------------------------- */

/* The chain's random number generator, valid only during the apply() call that received it. */
typedef struct lmrt_plugin_rng lmrt_plugin_rng;
/* A vocabulary (token id -> text), valid for the lifetime of the instance it was given to. */
typedef struct lmrt_plugin_vocab lmrt_plugin_vocab;

#define LMRT_PLUGIN_LOG_DEBUG 0
#define LMRT_PLUGIN_LOG_INFO 1
#define LMRT_PLUGIN_LOG_WARN 2
#define LMRT_PLUGIN_LOG_ERROR 3

/* Host functions. Only ever grows at its end: check struct_size before using a later member. */
typedef struct lmrt_host_api {
  uint32_t struct_size;
  uint32_t abi_version; /* the host's LMRT_PLUGIN_ABI_VERSION */
  /* Writes a line to the application's plugin log (message is NUL-terminated). `host` is the
   * pointer lmrt_plugin_init received. Thread-safe. */
  void (*log)(const struct lmrt_host_api* host, int32_t level, const char* message);
  /* 64 uniformly random bits from the chain's seeded generator. */
  uint64_t (*rng_next_u64)(lmrt_plugin_rng* rng);
  /* A uniform double in [0, 1) (53 random bits) from the chain's seeded generator. */
  double (*rng_uniform)(lmrt_plugin_rng* rng);
  /* The bytes of `token`: writes up to `capacity` bytes to buf and the length to *len. Returns 0;
   * 1 when the buffer is too small (*len = the needed length); -1 for a token out of range or a
   * NULL vocabulary. */
  int32_t (*token_text)(const lmrt_plugin_vocab* vocab, int32_t token, char* buf, size_t capacity, size_t* len);
} lmrt_host_api;

/* Given to create(): where an instance lives. */
typedef struct lmrt_plugin_env {
  uint32_t struct_size;
  int32_t n_vocab;                /* vocabulary size, or 0 when not known yet (see reserve) */
  const lmrt_host_api* host;      /* the same table lmrt_plugin_init received */
  const lmrt_plugin_vocab* vocab; /* NULL when the instance is created without a vocabulary */
} lmrt_plugin_env;

/* ---- samplers ----------------------------------------------------------------------------- */

/* Same layout as lmrt's internal candidate, handed across without copying. */
typedef struct lmrt_plugin_candidate {
  int32_t id;  /* token id */
  float logit; /* may be -inf (impossible token); never NaN or +inf */
  float p;     /* probability; meaningful only after a sampler that computes it */
} lmrt_plugin_candidate;

/* The candidates of one step, worked on in place:
 *  - a filter shrinks `size` (never below 1, never above what it received), keeping the survivors
 *    at the front; it must not change `data`;
 *  - `sorted` != 0 promises data[0, size) is in descending logit order, ties by ascending id (the
 *    host checks the promise); clear it when you break the order;
 *  - a selecting sampler sets `selected` to an index in [0, size); -1 means nothing chosen yet. */
typedef struct lmrt_plugin_candidates {
  lmrt_plugin_candidate* data;
  size_t size;
  uint32_t sorted;
  int32_t selected;
} lmrt_plugin_candidates;

/* Sampler flags. */
#define LMRT_PLUGIN_SAMPLER_DETERMINISTIC 1u /* same input + history + RNG draws -> same output */
#define LMRT_PLUGIN_SAMPLER_SELECTS 2u       /* apply() always sets `selected`: it ends a chain */
#define LMRT_PLUGIN_SAMPLER_USES_RNG 4u      /* apply() draws from the RNG */
#define LMRT_PLUGIN_SAMPLER_SETS_P 8u        /* apply() leaves p = normalised probabilities (sum 1) */

typedef struct lmrt_plugin_sampler_def {
  uint32_t struct_size; /* sizeof(lmrt_plugin_sampler_def) */
  uint32_t flags;       /* LMRT_PLUGIN_SAMPLER_* */
  const char* name;     /* used in chain specs: [A-Za-z_][A-Za-z0-9_.:-]* */
  const char* description;
  /* Builds an instance from its configuration text, the arguments of the chain-spec item in the
   * spec's own syntax, e.g. `tau=5,eta=0.1` or `"a,b",3` (read it with lmrt_plugin_config_next).
   * Refuse a bad configuration with a message. */
  int32_t (*create)(const char* config, const lmrt_plugin_env* env, void** state, char* err, size_t err_size);
  /* Optional (may be NULL): allocate for vocabularies up to n_vocab tokens; called before the first
   * apply() and whenever the vocabulary grows. */
  int32_t (*reserve)(void* state, int32_t n_vocab, char* err, size_t err_size);
  /* One step. `rng` is valid during this call only. */
  int32_t (*apply)(void* state, lmrt_plugin_candidates* candidates, lmrt_plugin_rng* rng, char* err, size_t err_size);
  /* Optional: records a token that became part of the sequence. */
  int32_t (*accept)(void* state, int32_t token, char* err, size_t err_size);
  /* Optional: forgets the history. */
  void (*reset)(void* state);
  /* An independent copy with the same configuration and history. */
  int32_t (*clone)(const void* state, void** out, char* err, size_t err_size);
  void (*destroy)(void* state);
  /* Optional: the configuration in one normal form (every parameter named, e.g. "tau=5,eta=0.1"), so
   * equivalent specs give equal text (response-cache keys rely on it). Writes up to capacity bytes
   * (NUL-terminated when room) and returns the full length. NULL: the host uses the text as written. */
  size_t (*canonical_config)(const void* state, char* buf, size_t capacity);
} lmrt_plugin_sampler_def;

/* ---- stop criteria ------------------------------------------------------------------------ */

#define LMRT_PLUGIN_STOP_CONTINUE 0u /* emit the text */
#define LMRT_PLUGIN_STOP_STOP 1u     /* stop: keep text[0, bytes), drop the rest */
#define LMRT_PLUGIN_STOP_HOLD 2u     /* go on, but do not emit the last `bytes` bytes yet */

typedef struct lmrt_plugin_stop_result {
  uint32_t action; /* LMRT_PLUGIN_STOP_* */
  size_t bytes;
} lmrt_plugin_stop_result;

typedef struct lmrt_plugin_stop_def {
  uint32_t struct_size; /* sizeof(lmrt_plugin_stop_def) */
  uint32_t flags;       /* none defined yet; 0 */
  const char* name;
  const char* description;
  int32_t (*create)(const char* config, const lmrt_plugin_env* env, void** state, char* err, size_t err_size);
  /* text[0, len) is everything generated so far; it only grows between reset() calls. */
  int32_t (*check)(void* state, const char* text, size_t len, int32_t last_token, lmrt_plugin_stop_result* out,
                   char* err, size_t err_size);
  void (*reset)(void* state);
  /* Optional: an independent copy (NULL: instances cannot be cloned). */
  int32_t (*clone)(const void* state, void** out, char* err, size_t err_size);
  void (*destroy)(void* state);
} lmrt_plugin_stop_def;

/* ---- the descriptor lmrt_plugin_init fills ------------------------------------------------ */

typedef struct lmrt_plugin_descriptor {
  uint32_t struct_size; /* set by the host: write only members that fit in it */
  uint32_t abi_version; /* the plugin's LMRT_PLUGIN_ABI_VERSION */
  const char* name;     /* the plugin's name, e.g. "mirostat" */
  const char* version;  /* the plugin's own version, e.g. "1.0.0" */
  const char* description;
  const lmrt_plugin_sampler_def* const* samplers; /* n_samplers pointers */
  uint32_t n_samplers;
  uint32_t n_stop_criteria;
  const lmrt_plugin_stop_def* const* stop_criteria; /* n_stop_criteria pointers */
  const char* message;                              /* why init refused, when it returns non-zero (static text) */
} lmrt_plugin_descriptor;

typedef int32_t (*lmrt_plugin_init_fn)(uint32_t host_abi_version, const lmrt_host_api* host,
                                       lmrt_plugin_descriptor* out);

/* ---- helpers for plugin authors (header-only) --------------------------------------------- */

/* True when a host of version `host_abi_version` can load a plugin built with this header. */
static inline int lmrt_plugin_abi_compatible(uint32_t host_abi_version) {
  return LMRT_PLUGIN_ABI_MAJOR_OF(host_abi_version) == LMRT_PLUGIN_ABI_MAJOR;
}

/* Reads the next argument of a configuration text: `key=value` or a positional `value`, separated
 * by commas; a value may be "quoted" with \" and \\ escapes. *cursor starts at the text and advances.
 * Copies the key (empty for positional) and the unquoted value, NUL-terminated, into the buffers.
 * Returns 1 for an argument, 0 at the end, -1 for malformed text or a buffer too small. */
static inline int lmrt_plugin_config_next(const char** cursor, char* key, size_t key_cap, char* value,
                                          size_t value_cap) {
  const char* s = *cursor;
  size_t k = 0, v = 0;
  int has_key = 0;
  if (s == NULL || key_cap == 0 || value_cap == 0) return -1;
  while (*s == ' ') ++s;
  if (*s == '\0') return 0;
  key[0] = '\0';
  /* A bare run up to '=' is the key; otherwise it is the value. */
  {
    const char* t = s;
    while (*t != '\0' && *t != ',' && *t != '=' && *t != '"') ++t;
    if (*t == '=') {
      if (t == s || (size_t)(t - s) >= key_cap) return -1;
      for (; s < t; ++s) key[k++] = *s;
      key[k] = '\0';
      ++s;
      has_key = 1;
    }
  }
  (void)has_key;
  if (*s == '"') {
    ++s;
    for (;;) {
      char c = *s++;
      if (c == '\0') return -1;
      if (c == '"') break;
      if (c == '\\') {
        c = *s++;
        if (c != '"' && c != '\\') return -1;
      }
      if (v + 1 >= value_cap) return -1;
      value[v++] = c;
    }
  } else {
    while (*s != '\0' && *s != ',') {
      if (*s == '"' || *s == '=' || v + 1 >= value_cap) return -1;
      value[v++] = *s++;
    }
    while (v > 0 && value[v - 1] == ' ') --v;
  }
  value[v] = '\0';
  while (*s == ' ') ++s;
  if (*s == ',') {
    ++s;
    while (*s == ' ') ++s;
    if (*s == '\0') return -1;
  } else if (*s != '\0') {
    return -1;
  }
  *cursor = s;
  return 1;
}

/* Writes a NUL-terminated message to (err, err_size) when there is room for one. */
static inline void lmrt_plugin_set_error(char* err, size_t err_size, const char* message) {
  size_t i = 0;
  if (err == NULL || err_size == 0) return;
  for (; message != NULL && message[i] != '\0' && i + 1 < err_size; ++i) err[i] = message[i];
  err[i] = '\0';
}

/* The entry point every plugin defines. */
LMRT_PLUGIN_EXPORT int32_t lmrt_plugin_init(uint32_t host_abi_version, const lmrt_host_api* host,
                                            lmrt_plugin_descriptor* out);

#ifdef __cplusplus
}
#endif

#endif /* LMRT_LMRT_PLUGIN_H */
