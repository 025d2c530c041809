/*
 * lmrt.h — the public C API of lmrt, an embeddable LLM inference runtime for CPUs.
 *
 * Rules that hold for every function here (they are the ABI contract):
 *  - Every function returns an lmrt_status; results come back through pointers. LMRT_OK is 0.
 *    lmrt_status_str() names any status. Functions that fail on a handle also leave a message that
 *    lmrt_context_last_error() / lmrt_model_last_error() return; functions that create a handle take
 *    an optional caller buffer (err, err_size) for the message, because no handle exists yet.
 *  - No function aborts, exits, asserts or lets a C++ exception escape, whatever the input.
 *  - Parameter and result structs start with `uint32_t struct_size`, which the caller sets to
 *    sizeof(the struct) as its header declares it (the *_init() functions do this and fill the
 *    defaults). Structs only ever grow at their end; the library reads and writes only the first
 *    struct_size bytes, so programs built against an older header keep working.
 *  - Each X_init(p) is an inline wrapper of the exported X_init_sized(p, sizeof *p): the library
 *    writes defaults into the first struct_size bytes only, so a program built against an older,
 *    smaller struct is never overrun. Bindings in other languages call X_init_sized with their size.
 *  - Handles are opaque. An lmrt_model is immutable once opened and may be used by any number of
 *    threads and contexts at once. An lmrt_context is used by one thread at a time (different
 *    contexts may run in parallel on different threads); it owns its KV arena, scratch buffers and
 *    thread pool, allocated when it is created.
 *  - Strings are UTF-8. Text pointers given to callbacks are valid only during the callback.
 *  - An err/err_size buffer is written only on failure. Functions whose documentation lists no
 *    errors can still return INVALID_ARGUMENT for a NULL handle or pointer.
 *  - Structs the library fills for a callback (lmrt_token_event) carry the library's struct_size:
 *    a reader checks it before reading fields newer than its header.
 *  - Enum-typed fields have the size of a C int (4 bytes) on every supported platform.
 *  - LMRT_ERR_CANCELLED is reserved: a cancelled generation returns LMRT_OK with
 *    LMRT_FINISH_CANCELLED.
 *  - A behaviour change arrives as a new function (name_v2), never as a changed signature.
 */
#ifndef LMRT_LMRT_H
#define LMRT_LMRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define LMRT_API __attribute__((visibility("default")))
#else
#define LMRT_API
#endif

/* ---- versions ---------------------------------------------------------------------------- */

#define LMRT_VERSION_MAJOR 0
#define LMRT_VERSION_MINOR 1
#define LMRT_VERSION_PATCH 0
/* major * 1000000 + minor * 1000 + patch */
#define LMRT_VERSION_NUMBER 1000
/* The ABI major: the library's SONAME is liblmrt.so.<LMRT_ABI_VERSION>. */
#define LMRT_ABI_VERSION 0

/* The ABI major of the loaded library; compare with LMRT_ABI_VERSION to detect a mismatch. */
LMRT_API uint32_t lmrt_abi_version(void);
/* The library's LMRT_VERSION_NUMBER. */
LMRT_API uint32_t lmrt_version_number(void);
/* The library's version as "major.minor.patch"; a static string. */
LMRT_API const char* lmrt_version_string(void);
/* The instruction set whose kernels a model or context created now runs on this CPU: "avx512",
 * "avx2vnni", "avx2", "neon" or "scalar". It is the best this CPU has, or the one the environment
 * variable LMRT_ISA names when this CPU has it (an unknown or unavailable LMRT_ISA is ignored, so
 * compare the two to tell). A static string, never NULL. */
LMRT_API const char* lmrt_isa(void);

/* ---- status codes -------------------------------------------------------------------------- */

typedef enum lmrt_status {
  LMRT_OK = 0,
  LMRT_ERR_INVALID_ARGUMENT = 1, /* a NULL handle, a bad parameter value, a struct_size too small */
  LMRT_ERR_IO = 2,               /* a file could not be opened, mapped or read */
  LMRT_ERR_BAD_FORMAT = 3,       /* a malformed, damaged or foreign model file */
  LMRT_ERR_UNSUPPORTED = 4,      /* a valid file using something lmrt does not implement */
  LMRT_ERR_OUT_OF_MEMORY = 5,
  LMRT_ERR_CONTEXT_FULL = 6, /* the tokens do not fit the context; the context is left as it was */
  LMRT_ERR_CANCELLED = 7,
  LMRT_ERR_BAD_UTF8 = 8, /* text that is not valid UTF-8 */
  LMRT_ERR_PLUGIN = 9,
  LMRT_ERR_CACHE = 10,
  LMRT_ERR_INTERNAL = 11,        /* a bug in lmrt; the message says where */
  LMRT_ERR_BUFFER_TOO_SMALL = 12 /* an output buffer is too small; the needed size is returned */
} lmrt_status;

/* A static, never-NULL description of a status ("unknown status" for values not listed). */
LMRT_API const char* lmrt_status_str(lmrt_status status);

/* ---- models ------------------------------------------------------------------------------ */

typedef struct lmrt_model lmrt_model;

typedef struct lmrt_model_params {
  uint32_t struct_size;
  uint32_t use_mmap; /* 1 (default): map the file (privately: it is never written); 0: read it into memory */
} lmrt_model_params;

/* Fills *params with defaults and sets struct_size. Error: INVALID_ARGUMENT for NULL. */
LMRT_API lmrt_status lmrt_model_params_init_sized(lmrt_model_params* params, size_t struct_size);
static inline lmrt_status lmrt_model_params_init(lmrt_model_params* params) {
  return lmrt_model_params_init_sized(params, sizeof *params);
}

/* Opens a GGUF model: architectures llama, qwen2, qwen3, phi3, gemma2, gemma3; tensors F32, F16, BF16,
 * Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS in any mix (README.md). Where
 * the CPU's kernels read some types faster in an interleaved layout, those matrices are copied into it
 * while the model opens, on up to 8 short-lived threads; the file is never written. Any thread may open
 * models, several at once.
 * path: file name. params: NULL for defaults. *out_model receives the handle (NULL on failure);
 * free it with lmrt_model_close once no context uses it any more. err/err_size: optional buffer
 * that receives a NUL-terminated message on failure (may be NULL/0).
 * Errors: INVALID_ARGUMENT, IO, BAD_FORMAT (not GGUF, legacy GGUF v1/GGJT, damaged), UNSUPPORTED
 * (another architecture or tensor type), OUT_OF_MEMORY. */
LMRT_API lmrt_status lmrt_model_open(const char* path, const lmrt_model_params* params, lmrt_model** out_model,
                                     char* err, size_t err_size);

/* Releases a model. Every context created from it must have been freed first. NULL is a no-op.
 * Always returns LMRT_OK. May be called from any thread once no other thread uses the model. */
LMRT_API lmrt_status lmrt_model_close(lmrt_model* model);

/* The message of the calling thread's last failed call on `model` ("" if none). Valid until that
 * thread's next call on the model. Never NULL (a static "" for a NULL model). */
LMRT_API const char* lmrt_model_last_error(const lmrt_model* model);

typedef struct lmrt_model_info {
  uint32_t struct_size;
  char architecture[32]; /* general.architecture, NUL-terminated (truncated if longer) */
  char name[128];        /* general.name, or ""; truncated to 127 bytes */
  uint32_t n_tensors;
  uint64_t n_params; /* number of weights */
  uint64_t file_bytes;
  uint32_t n_ctx_train; /* training context length */
  uint32_t n_vocab;
  uint32_t n_embd;
  uint32_t n_layer;
  uint32_t n_head;
  uint32_t n_head_kv;
  uint32_t n_ff;
  int32_t bos_token; /* -1 when the vocabulary has none */
  int32_t eos_token;
  /* Tensor type mix of the five types lmrt first read: how many tensors, and how many bytes, of each.
   * The Q4_0 counts include tensors in lmrt's interleaved Q4_0x16 layout (`lmrt quantize --interleave`):
   * the same blocks. Every type, these and the others (K-quants, IQ4, ...): lmrt_model_tensor_types. */
  uint32_t n_tensors_f32, n_tensors_f16, n_tensors_bf16, n_tensors_q8_0, n_tensors_q4_0;
  uint64_t bytes_f32, bytes_f16, bytes_bf16, bytes_q8_0, bytes_q4_0;
} lmrt_model_info;

/* Fills *info. The caller sets info->struct_size (sizeof(lmrt_model_info)); only that many bytes
 * are written. Errors: INVALID_ARGUMENT. */
LMRT_API lmrt_status lmrt_model_get_info(const lmrt_model* model, lmrt_model_info* info);

/* One tensor type present in a model. */
typedef struct lmrt_tensor_type_info {
  uint32_t struct_size;
  char name[16];       /* as ggml spells it: "F32", "Q4_K", "IQ4_XS"; lmrt's own "Q4_0x16" */
  uint32_t ggml_type;  /* the GGUF tensor type id (Q4_0x16: 4098, outside ggml's range) */
  uint32_t n_tensors;  /* tensors of this type */
  uint64_t n_elements; /* their elements (weights) */
  uint64_t n_bytes;    /* their bytes in the file */
} lmrt_tensor_type_info;

/* The tensor type mix of a model, one type at a time, without a field per type: the types present, in
 * ascending ggml_type order, are numbered 0 to n - 1. *n_types (optional, may be NULL) receives n. info
 * (optional, may be NULL to ask for n alone; the caller sets info->struct_size, only that many bytes are
 * written) receives type `index`.
 * Errors: INVALID_ARGUMENT (NULL model, struct_size too small, index >= n when info is given). */
LMRT_API lmrt_status lmrt_model_tensor_types(const lmrt_model* model, uint32_t index, lmrt_tensor_type_info* info,
                                             uint32_t* n_types);

/* The network as lmrt runs it (the architecture's fields, from its GGUF keys and tensors). */
#define LMRT_ROPE_ADJACENT 0u        /* RoPE turns pairs (x[2i], x[2i+1]) of each head (GGUF llama) */
#define LMRT_ROPE_NEOX 1u            /* RoPE turns pairs (x[i], x[i + rope_dim / 2]) (qwen2, qwen3, phi3, gemma) */
#define LMRT_ACTIVATION_SWIGLU 0u    /* FFN: silu(gate) * up */
#define LMRT_ACTIVATION_GELU_TANH 1u /* FFN: gelu(gate) * up, GELU's tanh approximation */
/* lmrt_model_arch.flags */
#define LMRT_ARCH_POST_ATTN_NORM 1u /* RMSNorm of the attention output before the residual add */
#define LMRT_ARCH_POST_FFN_NORM 2u  /* RMSNorm of the FFN output before the residual add */
#define LMRT_ARCH_QK_NORM 4u        /* per-head RMSNorm of Q and K before RoPE */
#define LMRT_ARCH_QKV_BIAS 8u       /* Q, K and V biases */
#define LMRT_ARCH_OUTPUT_BIAS 16u   /* attention output projection bias */
#define LMRT_ARCH_FUSED_QKV 32u     /* one attn_qkv tensor (read as row views, not copied) */
#define LMRT_ARCH_FUSED_GATE_UP 64u /* ffn_up holds gate and up rows */
#define LMRT_ARCH_TIED_OUTPUT 128u  /* the classifier is the token embedding */
#define LMRT_ARCH_ROPE_FACTORS 256u /* RoPE frequency factors (rope_freqs, LongRoPE short/long) */

typedef struct lmrt_model_arch {
  uint32_t struct_size;
  uint32_t head_dim;          /* per attention head; may differ from n_embd / n_head */
  uint32_t rope_dim;          /* leading dimensions of each head that RoPE turns */
  uint32_t rope_style;        /* LMRT_ROPE_* */
  float rope_freq_base;       /* of the layers that attend to every position */
  float rope_freq_base_local; /* of windowed layers with their own base (gemma3); 0: rope_freq_base */
  float rope_freq_scale;      /* linear RoPE scaling: 1 / factor (1: none) */
  uint32_t activation;        /* LMRT_ACTIVATION_* */
  uint32_t flags;             /* LMRT_ARCH_* */
  uint32_t sliding_window;    /* positions a windowed layer attends to; 0: none */
  uint32_t n_windowed_layers; /* how many layers attend over the window only */
  float rms_eps;              /* of every RMSNorm */
  float embd_scale;           /* the token embedding is multiplied by this (1: none) */
  float attn_scale;           /* q . k is multiplied by this */
  float attn_softcap;         /* attention scores -> c tanh(scores / c); 0: none */
  float final_softcap;        /* logits -> c tanh(logits / c); 0: none */
} lmrt_model_arch;

/* Fills *arch. The caller sets arch->struct_size (sizeof(lmrt_model_arch)); only that many bytes are
 * written. Errors: INVALID_ARGUMENT. */
LMRT_API lmrt_status lmrt_model_get_arch(const lmrt_model* model, lmrt_model_arch* arch);

/* ---- tokens ------------------------------------------------------------------------------ */

/* Flags for lmrt_tokenize. */
#define LMRT_TOKENIZE_ADD_BOS 1u       /* prepend BOS (append EOS) when the vocabulary asks for it */
#define LMRT_TOKENIZE_PARSE_SPECIAL 2u /* "<s>"-style control token texts become their ids */

/* Tokenizes text[0, text_len) into tokens[0, capacity); text_len (size_t)-1 means text is
 * NUL-terminated (as for lmrt_generate_request.prompt_len). text may be NULL when text_len is 0. Flag
 * bits other than LMRT_TOKENIZE_* are reserved (ignored; pass 0). *n_tokens receives the number of tokens;
 * when capacity is too small it receives the needed count and BUFFER_TOO_SMALL is returned (call
 * again with a bigger buffer; tokens may be NULL when capacity is 0).
 * Errors: INVALID_ARGUMENT, BAD_UTF8 (the message gives the byte offset), BUFFER_TOO_SMALL. */
LMRT_API lmrt_status lmrt_tokenize(const lmrt_model* model, const char* text, size_t text_len, uint32_t flags,
                                   int32_t* tokens, size_t capacity, size_t* n_tokens);

/* The bytes token `token` stands for (a byte-fallback token is one byte, which may be part of a
 * UTF-8 character; control tokens are empty). Writes up to `capacity` bytes to buf (not
 * NUL-terminated) and the length to *len; BUFFER_TOO_SMALL with the needed length otherwise (buf
 * may be NULL when capacity is 0, to ask for the length).
 * Errors: INVALID_ARGUMENT (token out of range), BUFFER_TOO_SMALL. */
LMRT_API lmrt_status lmrt_token_to_piece(const lmrt_model* model, int32_t token, char* buf, size_t capacity,
                                         size_t* len);

/* What the model's tokenizer is and which special tokens it uses (from the GGUF vocabulary, with
 * llama.cpp's defaults where the file says nothing). */
typedef struct lmrt_tokenizer_info {
  uint32_t struct_size;
  char model[16];    /* tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE) */
  char pre[48];      /* tokenizer.ggml.pre (BPE pre-tokenizer), or ""; truncated to 47 bytes */
  int32_t bos_token; /* -1 when the vocabulary has none; likewise the four below */
  int32_t eos_token;
  int32_t eot_token; /* end of turn */
  int32_t eom_token; /* end of message */
  int32_t unk_token;
  uint32_t add_bos;       /* 1: LMRT_TOKENIZE_ADD_BOS and generation prepend BOS (tokenizer.ggml.add_bos_token) */
  uint32_t add_eos;       /* 1: they append EOS (tokenizer.ggml.add_eos_token) */
  uint32_t n_eog_tokens;  /* tokens that end generation (EOS, EOT, EOM, end-of-turn control tokens) */
  int32_t eog_tokens[16]; /* the first min(n_eog_tokens, 16) of them */
} lmrt_tokenizer_info;

/* Fills *info. The caller sets info->struct_size (sizeof(lmrt_tokenizer_info)); only that many
 * bytes are written. Errors: INVALID_ARGUMENT. */
LMRT_API lmrt_status lmrt_model_get_tokenizer_info(const lmrt_model* model, lmrt_tokenizer_info* info);

/* Whether `token` ends generation (*is_eog = 1) or not (0). Errors: INVALID_ARGUMENT (token out of
 * range, NULL pointer). */
LMRT_API lmrt_status lmrt_token_is_eog(const lmrt_model* model, int32_t token, int* is_eog);

/* ---- model metadata ---------------------------------------------------------------------- */

/* Read access to the GGUF metadata of a model's file (every key/value, tokenizer.chat_template
 * included). Value types, numbered as in the GGUF format: */
typedef enum lmrt_meta_type {
  LMRT_META_NONE = -1, /* no such key */
  LMRT_META_U8 = 0,
  LMRT_META_I8 = 1,
  LMRT_META_U16 = 2,
  LMRT_META_I16 = 3,
  LMRT_META_U32 = 4,
  LMRT_META_I32 = 5,
  LMRT_META_F32 = 6,
  LMRT_META_BOOL = 7,
  LMRT_META_STRING = 8,
  LMRT_META_ARRAY = 9,
  LMRT_META_U64 = 10,
  LMRT_META_I64 = 11,
  LMRT_META_F64 = 12
} lmrt_meta_type;

/* Strings come back the way lmrt_model_meta_key describes: copied NUL-terminated into buf[0, size)
 * when they fit (size > length), with *len (optional, may be NULL) receiving the length without
 * the NUL; otherwise BUFFER_TOO_SMALL, *len still set (buf may be NULL when size is 0). A GGUF
 * string may itself hold NUL bytes: *len is authoritative. Keys are NUL-terminated UTF-8. Missing
 * keys and values of another type are INVALID_ARGUMENT with a message naming the key and its type. */

/* *count receives the number of metadata keys. */
LMRT_API lmrt_status lmrt_model_meta_count(const lmrt_model* model, size_t* count);

/* The key at `index` (0 <= index < count, in file order). Errors: INVALID_ARGUMENT (index out of
 * range), BUFFER_TOO_SMALL. */
LMRT_API lmrt_status lmrt_model_meta_key(const lmrt_model* model, size_t index, char* buf, size_t size, size_t* len);

/* *type receives the lmrt_meta_type of `key`'s value (LMRT_META_NONE, with LMRT_OK, when the key
 * is absent); for an array, *elem_type (optional) its element type, else LMRT_META_NONE. */
LMRT_API lmrt_status lmrt_model_meta_type(const lmrt_model* model, const char* key, int32_t* type, int32_t* elem_type);

/* A string value. Errors: INVALID_ARGUMENT (missing key, not a string), BUFFER_TOO_SMALL. */
LMRT_API lmrt_status lmrt_model_meta_str(const lmrt_model* model, const char* key, char* buf, size_t size, size_t* len);

/* An integer or bool value (bool as 0/1). Errors: INVALID_ARGUMENT (missing key, not an integer,
 * a u64 above INT64_MAX). */
LMRT_API lmrt_status lmrt_model_meta_int(const lmrt_model* model, const char* key, int64_t* value);

/* A float value (f32 or f64). Errors: INVALID_ARGUMENT (missing key, not a float). */
LMRT_API lmrt_status lmrt_model_meta_float(const lmrt_model* model, const char* key, double* value);

/* The number of elements of an array value. Errors: INVALID_ARGUMENT (missing key, not an array). */
LMRT_API lmrt_status lmrt_model_meta_array_len(const lmrt_model* model, const char* key, size_t* len);

/* Element `index` of an array of strings / of integers (or bools) / of floats, as the scalar
 * accessors above. Errors: INVALID_ARGUMENT (missing key, not an array of that type, index out of
 * range), BUFFER_TOO_SMALL. */
LMRT_API lmrt_status lmrt_model_meta_array_str(const lmrt_model* model, const char* key, size_t index, char* buf,
                                               size_t size, size_t* len);
LMRT_API lmrt_status lmrt_model_meta_array_int(const lmrt_model* model, const char* key, size_t index, int64_t* value);
LMRT_API lmrt_status lmrt_model_meta_array_float(const lmrt_model* model, const char* key, size_t index, double* value);

/* ---- contexts ---------------------------------------------------------------------------- */

typedef struct lmrt_context lmrt_context;

/* KV cache entry types. */
#define LMRT_KV_F16 0u
#define LMRT_KV_F32 1u

typedef struct lmrt_context_params {
  uint32_t struct_size;
  uint32_t n_ctx;      /* tokens the KV arena holds; 0 (default) = the model's training context; a
                          larger value is allowed (quality past the training length is the model's),
                          up to 2^20 (INVALID_ARGUMENT above, or when 0 means more) */
  uint32_t n_batch;    /* most tokens evaluated in one pass; 0 (default) = min(512, n_ctx); clamped to n_ctx */
  uint32_t n_threads;  /* worker threads; 0 (default) = the number of online CPUs */
  uint32_t kv_type;    /* LMRT_KV_F16 (default) or LMRT_KV_F32 */
  uint32_t logits_all; /* 1: keep the logits of every token of the last lmrt_eval's last batch (all of its
                          tokens when it had at most n_batch; set n_batch = n_ctx to keep every one);
                          0 (default): the last token's */
} lmrt_context_params;

/* Fills *params with defaults and sets struct_size. Error: INVALID_ARGUMENT for NULL. */
LMRT_API lmrt_status lmrt_context_params_init_sized(lmrt_context_params* params, size_t struct_size);
static inline lmrt_status lmrt_context_params_init(lmrt_context_params* params) {
  return lmrt_context_params_init_sized(params, sizeof *params);
}

/* Creates a context on `model` and allocates everything it will need (KV arena of n_ctx tokens,
 * scratch for n_batch tokens, logits, thread pool). The model must outlive the context.
 * params: NULL for defaults. err/err_size: optional message buffer.
 * Errors: INVALID_ARGUMENT, OUT_OF_MEMORY. */
LMRT_API lmrt_status lmrt_context_create(lmrt_model* model, const lmrt_context_params* params, lmrt_context** out_ctx,
                                         char* err, size_t err_size);

/* Frees a context and its arena and threads. NULL is a no-op. Always returns LMRT_OK. A context an
 * engine still runs on is freed by that engine's lmrt_engine_free instead (the engine works until then;
 * the context handle must not be used again either way). */
LMRT_API lmrt_status lmrt_context_free(lmrt_context* ctx);

/* The message of the last failed call on ctx ("" if none or ctx is NULL); valid until the next call
 * on ctx. */
LMRT_API const char* lmrt_context_last_error(const lmrt_context* ctx);

/* The context's effective parameters after defaults were applied; the caller sets out->struct_size. */
LMRT_API lmrt_status lmrt_context_get_params(const lmrt_context* ctx, lmrt_context_params* out);

/* Forgets every token in the KV arena (the last generation's result stays readable). */
LMRT_API lmrt_status lmrt_context_reset(lmrt_context* ctx);

/* How many tokens the KV arena holds now. */
LMRT_API lmrt_status lmrt_context_n_past(const lmrt_context* ctx, uint32_t* n_past);

/* Evaluates tokens[0, n_tokens) after the tokens already in the context (in batches of n_batch)
 * and keeps their logits. Errors: INVALID_ARGUMENT (token out of range, n_tokens 0),
 * CONTEXT_FULL (they do not fit; nothing was evaluated and the context is unchanged). */
LMRT_API lmrt_status lmrt_eval(lmrt_context* ctx, const int32_t* tokens, size_t n_tokens);

/* Logits of the i-th token of the last lmrt_eval call (i = n_tokens - 1 for the last; other values
 * only with logits_all, for the tokens of the call's last batch of n_batch). *logits points to n_vocab floats owned by
 * the context, valid until the next call that evaluates. Errors: INVALID_ARGUMENT (nothing evaluated yet, i out of
 * range). */
LMRT_API lmrt_status lmrt_get_logits(lmrt_context* ctx, size_t i, const float** logits, size_t* n_vocab);

/* ---- saved context state ------------------------------------------------------------------ */

/* A context's state is the tokens it holds and their KV entries (positions [0, n_past) only), as one
 * versioned, checksummed blob tied to the model (its fingerprint), the KV type and the layer
 * geometry. Loading it into a context of the same model, KV type and geometry with n_ctx >= the
 * saved tokens makes that context hold them exactly as if it had evaluated them: lmrt_generate and
 * lmrt_eval go on from there with the same tokens and logits bits (the last evaluation's logits are
 * not part of the state: lmrt_get_logits needs a new evaluation). Blobs move between processes and
 * little-endian machines running the same lmrt. */

/* *size receives the bytes lmrt_context_state_save needs now. */
LMRT_API lmrt_status lmrt_context_state_size(const lmrt_context* ctx, size_t* size);

/* Writes the state into buf[0, capacity) and its length to *written; BUFFER_TOO_SMALL with the needed
 * length in *written otherwise (buf may be NULL when capacity is 0). Errors: INVALID_ARGUMENT,
 * BUFFER_TOO_SMALL. */
LMRT_API lmrt_status lmrt_context_state_save(lmrt_context* ctx, void* buf, size_t capacity, size_t* written);

/* Replaces the context's tokens and KV entries by those of a saved state. Everything is checked
 * before anything changes: on any error the context is exactly as it was. Errors: INVALID_ARGUMENT
 * (another model, KV type or geometry; NULL), BAD_FORMAT (not a state, truncated, damaged: checksum),
 * UNSUPPORTED (a newer state format), CONTEXT_FULL (more tokens than this context's n_ctx). */
LMRT_API lmrt_status lmrt_context_state_load(lmrt_context* ctx, const void* buf, size_t len);

/* The same through a file. Saving writes "<path>.tmp" (which must not exist) and renames it to path,
 * so path is always a whole state; an existing path is replaced only when it is a regular file that
 * holds an lmrt context state (any other file is refused with INVALID_ARGUMENT and left alone).
 * Errors: as above, IO. */
LMRT_API lmrt_status lmrt_context_state_save_file(lmrt_context* ctx, const char* path);
LMRT_API lmrt_status lmrt_context_state_load_file(lmrt_context* ctx, const char* path);

/* ---- response cache ----------------------------------------------------------------------- */

/* A persistent cache of deterministic completions (greedy, or seeded with a deterministic chain)
 * in one SQLite file that any number of threads and processes may share. Its key covers the model
 * (a fingerprint of its header, metadata, tensor table and sampled weights), lmrt's version, the
 * prompt tokens, the canonical sampler chain, seed, max_tokens, stop strings, logprobs and the
 * context options that change the output. A hit is replayed through the same callback, piece by
 * piece. The cache never makes a generation fail: a damaged file is renamed
 * "<path>.damaged-<time>" and replaced (with a warning), an unwritable file or folder gives
 * read-only use, and errors while looking up or storing become warnings. */
typedef struct lmrt_cache lmrt_cache;

/* Receives a warning of the cache (a damaged file set aside, read-only use, an ignored error). */
typedef void (*lmrt_warning_callback)(void* user_data, const char* message);

typedef struct lmrt_cache_params {
  uint32_t struct_size;
  uint32_t read_only;       /* 1: look up only, never store */
  uint64_t max_bytes;       /* cap on stored bytes, least recently used evicted first; default 256 MiB; 0 = none */
  uint64_t max_entries;     /* default 100000; 0 = none */
  int64_t ttl_seconds;      /* an entry expires this long after it was stored; 0 (default) = never */
  uint32_t busy_timeout_ms; /* how long to wait for another process's lock; default 5000 */
  uint32_t check_on_open;   /* 1 (default): check the file's integrity when opening */
  lmrt_warning_callback on_warning; /* may be NULL; called on the thread using the cache */
  void* warning_user_data;
  /* Prompt-prefix states (0, the default: off). With N > 0, every lmrt_generate on a context using
   * this cache whose prompt has more than N tokens stores the context state of its prompt but the last
   * token (the tokens and their KV entries, as lmrt_context_state_save writes them) in the same file,
   * under the same caps; and a later request (in any process sharing the file) whose prompt starts
   * with a stored prefix longer than what the context already holds loads that state instead of
   * evaluating those tokens: result->reused_tokens counts them, and the output is the same. A state is
   * tied to the model, lmrt's version and the KV type and geometry. Both directions also run for
   * requests that the response cache cannot answer (sampled ones). States are evicted in the order
   * they were stored (a load does not mark one used). A 1,000-token prefix of a 1B-class model
   * (22 layers, 4 KV heads of 64, F16) takes about 22 MiB. */
  uint32_t prefix_min_tokens;
} lmrt_cache_params;

typedef struct lmrt_cache_stats {
  uint32_t struct_size;
  uint32_t read_only;
  uint64_t hits, misses, stores, evictions, expirations; /* this handle's, since it was opened */
  uint64_t entries, bytes;                               /* the whole file, now */
} lmrt_cache_stats;

/* Fills *params with defaults and sets struct_size. */
LMRT_API lmrt_status lmrt_cache_params_init_sized(lmrt_cache_params* params, size_t struct_size);
static inline lmrt_status lmrt_cache_params_init(lmrt_cache_params* params) {
  return lmrt_cache_params_init_sized(params, sizeof *params);
}
/* Opens or creates the cache file at path. params: NULL for defaults. The handle may be used by
 * several threads and contexts at once; it must outlive every context it is attached to.
 * Errors: INVALID_ARGUMENT, CACHE (no usable cache: locked by another process beyond the timeout,
 * another application's database, written by a newer lmrt, cannot be created) — the caller then
 * simply generates without a cache. */
LMRT_API lmrt_status lmrt_cache_open(const char* path, const lmrt_cache_params* params, lmrt_cache** out_cache,
                                     char* err, size_t err_size);
/* Closes the cache. NULL is a no-op. */
LMRT_API lmrt_status lmrt_cache_close(lmrt_cache* cache);
/* The message of the calling thread's last failed call on cache, or its last warning ("" if none). */
LMRT_API const char* lmrt_cache_last_error(const lmrt_cache* cache);
/* Statistics; the caller sets stats->struct_size. */
LMRT_API lmrt_status lmrt_cache_get_stats(lmrt_cache* cache, lmrt_cache_stats* stats);
/* Removes every entry. Errors: CACHE (read-only, locked). */
LMRT_API lmrt_status lmrt_cache_clear(lmrt_cache* cache);
/* Rebuilds the file to reclaim free space. Errors: CACHE. */
LMRT_API lmrt_status lmrt_cache_vacuum(lmrt_cache* cache);
/* Attaches a cache to a context for every later request (NULL detaches). */
LMRT_API lmrt_status lmrt_context_set_cache(lmrt_context* ctx, lmrt_cache* cache);

/* ---- generation -------------------------------------------------------------------------- */

typedef enum lmrt_finish_reason {
  LMRT_FINISH_NONE = 0,
  LMRT_FINISH_EOS = 1,          /* an end-of-generation token */
  LMRT_FINISH_STOP = 2,         /* a stop sequence */
  LMRT_FINISH_LENGTH = 3,       /* max_tokens reached */
  LMRT_FINISH_CANCELLED = 4,    /* the callback returned non-zero */
  LMRT_FINISH_CONTEXT_FULL = 5, /* the context filled up */
  LMRT_FINISH_ERROR = 6
} lmrt_finish_reason;

/* Names a finish reason: "eos", "stop", "length", "cancelled", "context_full", "error"; "none" for
 * LMRT_FINISH_NONE and for values this library does not know. Static, never NULL. */
LMRT_API const char* lmrt_finish_reason_str(lmrt_finish_reason reason);

/* Log-probabilities (natural log) of a generated token and of the most likely alternatives, under
 * the model's own distribution (the raw logits, before any sampler changed them). Under a grammar
 * or JSON Schema too: the alternatives may be tokens the grammar forbids, and the chosen token's
 * logprob is not the probability it was drawn with (that one is renormalized over the tokens the
 * grammar allows); computing them never needs the grammar's mask of the vocabulary. */
#define LMRT_MAX_TOP_LOGPROBS 20

typedef struct lmrt_logprob {
  int32_t token;
  float logprob;
} lmrt_logprob;

typedef struct lmrt_token_logprobs {
  lmrt_logprob chosen;                     /* the generated token */
  uint32_t n_top;                          /* alternatives in top[], most likely first */
  lmrt_logprob top[LMRT_MAX_TOP_LOGPROBS]; /* ties in ascending token order */
} lmrt_token_logprobs;

/* One streamed piece of text. */
typedef struct lmrt_token_event {
  uint32_t struct_size;
  int32_t token;    /* the last token that contributed to this text */
  const char* text; /* complete UTF-8 characters, never part of a stop string; not NUL-terminated;
                       may be empty on the last event of a generation */
  size_t text_len;
  uint32_t index;                      /* tokens generated so far */
  uint32_t n_tokens;                   /* tokens generated since the previous event (text held back for UTF-8 or a
                                          possible stop string is released together with later tokens) */
  const int32_t* tokens;               /* those n_tokens ids */
  const lmrt_token_logprobs* logprobs; /* n_tokens entries when the request asked for logprobs, else NULL */
} lmrt_token_event;

/* Called for each piece of generated text. Return 0 to go on, non-zero to cancel (the generation
 * then finishes with LMRT_FINISH_CANCELLED). Called on the thread that called lmrt_generate; it must
 * not call lmrt functions on the same context. */
typedef int (*lmrt_token_callback)(void* user_data, const lmrt_token_event* event);

/* ---- sampler chains ----------------------------------------------------------------------- */

/* A sampler chain turns logits into a token by running samplers in order, e.g.
 *   "penalties(repeat=1.1,last_n=64) top_k(40) top_p(0.9) temperature(0.7) dist"
 * Built-ins: greedy, dist, temperature(t), top_k(k), top_p(p, min_keep), min_p(p),
 * typical(p, min_keep), penalties(repeat, last_n, presence, frequency), logit_bias(TOKEN=BIAS, ...).
 * A chain that does not end in greedy or dist gets dist appended; nothing may follow them.
 * LMRT_DEFAULT_SAMPLERS is the documented default. Same seed and same inputs give the same tokens
 * on every platform and at any thread count. One thread at a time per chain. */
#define LMRT_DEFAULT_SAMPLERS "penalties top_k(40) top_p(0.95) min_p(0.05) temperature(0.8) dist"
/* Seed value that asks lmrt to draw a random seed. */
#define LMRT_SEED_RANDOM UINT64_MAX

typedef struct lmrt_sampler lmrt_sampler;
struct lmrt_plugin_host; /* see the plugin block at the end */

/* Creates a chain from spec text (NULL or "" = an empty chain, to which lmrt_sampler_append adds)
 * seeded with seed (LMRT_SEED_RANDOM draws one). err/err_size: optional message buffer.
 * Errors: INVALID_ARGUMENT naming the unknown sampler, parameter or bad value and its offset. */
LMRT_API lmrt_status lmrt_sampler_create(const char* spec, uint64_t seed, lmrt_sampler** out_sampler, char* err,
                                         size_t err_size);
/* Like lmrt_sampler_create, with the samplers of a plugin host usable by name too (e.g.
 * "top_k(40) mirostat_v2(tau=5,eta=0.1)"); model gives plugins token text (may be NULL for plugins
 * that need none). host and model must outlive the chain. */
LMRT_API lmrt_status lmrt_sampler_create_v2(const struct lmrt_plugin_host* host, const lmrt_model* model,
                                            const char* spec, uint64_t seed, lmrt_sampler** out_sampler, char* err,
                                            size_t err_size);
/* Appends samplers written as spec text, e.g. "top_k(40)". The chain restarts (history cleared). */
LMRT_API lmrt_status lmrt_sampler_append(lmrt_sampler* sampler, const char* spec);
/* Frees a chain. NULL is a no-op. */
LMRT_API lmrt_status lmrt_sampler_free(lmrt_sampler* sampler);
/* The chain's canonical text (every parameter named; equal for equivalent chains), NUL-terminated
 * in buf; *len receives its length. BUFFER_TOO_SMALL with the needed length otherwise. */
LMRT_API lmrt_status lmrt_sampler_describe(const lmrt_sampler* sampler, char* buf, size_t capacity, size_t* len);
/* Samples a token from logits[0, n_vocab) (does not accept it). Errors: INVALID_ARGUMENT (NaN/+inf). */
LMRT_API lmrt_status lmrt_sampler_sample(lmrt_sampler* sampler, const float* logits, size_t n_vocab, int32_t* token);
/* Records a token of the sequence (for penalties). */
LMRT_API lmrt_status lmrt_sampler_accept(lmrt_sampler* sampler, int32_t token);
/* Clears the history and restarts the random stream from the seed. */
LMRT_API lmrt_status lmrt_sampler_reset(lmrt_sampler* sampler);
/* The message of the last failed call on sampler ("" if none). */
LMRT_API const char* lmrt_sampler_last_error(const lmrt_sampler* sampler);

/* ---- generation requests ------------------------------------------------------------------ */

typedef struct lmrt_logit_bias {
  int32_t token;
  float bias; /* added to the token's logit; -INFINITY bans it */
} lmrt_logit_bias;

typedef struct lmrt_generate_request {
  uint32_t struct_size;
  int32_t max_tokens;     /* most tokens to generate, >= 1 (else INVALID_ARGUMENT); default 256 */
  const char* prompt;     /* UTF-8; may be NULL or "" to start from BOS alone */
  size_t prompt_len;      /* bytes of prompt; (size_t)-1 (the default) = NUL-terminated */
  uint32_t add_bos;       /* 1 (default): prepend BOS when the vocabulary asks for it */
  uint32_t parse_special; /* 0 (default): special token texts in the prompt are plain text */
  /* How tokens are picked, first match wins:
   * 1. sampler: a chain of the caller's; each request works on a fresh copy of it, so the same
   *    request gives the same tokens every time (the caller's chain is not changed).
   * 2. samplers: chain spec text (see lmrt_sampler_create), seeded with `seed`.
   * 3. the fields temperature .. frequency_penalty: the chain
   *    "logit_bias penalties top_k top_p min_p typical temperature dist" with the samplers that are
   *    switched on; temperature <= 0 (the default) picks the most likely token instead (greedy)
   *    after logit_bias and penalties. */
  const lmrt_sampler* sampler;
  const char* samplers;
  uint64_t seed;           /* LMRT_SEED_RANDOM (default) draws one */
  float temperature;       /* default 0: greedy */
  int32_t top_k;           /* 0 (default): off */
  float top_p;             /* 1 (default): off */
  float min_p;             /* 0 (default): off */
  float typical_p;         /* 1 (default): off */
  float repeat_penalty;    /* 1 (default): off; over the last repeat_last_n tokens, prompt included */
  int32_t repeat_last_n;   /* default 64 */
  float presence_penalty;  /* 0 (default): off (OpenAI's definition, over repeat_last_n tokens) */
  float frequency_penalty; /* 0 (default): off */
  uint32_t n_logit_bias;
  const lmrt_logit_bias* logit_bias; /* n_logit_bias entries (used with the fields, not with sampler/samplers) */
  const char* const* stop;           /* n_stop stop strings: generation ends before the first one that appears */
  size_t n_stop;
  int32_t logprobs; /* -1 (default): none; 0..LMRT_MAX_TOP_LOGPROBS: each token's logprob and that many alternatives */
  uint32_t context_shift; /* 0 (default): a full context finishes with LMRT_FINISH_CONTEXT_FULL;
                             1: keep the first n_keep tokens, drop the oldest half of the rest, go on */
  uint32_t n_keep;
  uint32_t n_beams;         /* 0 (default): no beam search; k in 1..16: beam search of width k (deterministic;
                               the sampler fields are ignored; k = 1 gives the greedy tokens); the k best
                               sequences are in result->beams; above 16: INVALID_ARGUMENT */
  float length_penalty;     /* beam score = sum of logprobs / n_tokens^length_penalty; default 1; must be
                               finite (INVALID_ARGUMENT otherwise) */
  struct lmrt_cache* cache; /* response cache for this request; NULL (default): the context's, if any */
  /* Plugins: names in `samplers` and in stop_criteria resolve through this host too (NULL: built-ins
   * only). stop_criteria are spec items of the host's stop criteria, e.g. regex(pattern="\n\n");
   * each is consulted after every token with all the text generated so far. */
  const struct lmrt_plugin_host* plugins;
  const char* const* stop_criteria;
  size_t n_stop_criteria;
  /* The prompt as token ids (n_prompt_tokens > 0): used instead of prompt, add_bos and
   * parse_special, e.g. a chat prompt tokenized piece by piece so that only the template's own
   * markers are control tokens while message text stays text. Ids must be in [0, n_vocab). */
  const int32_t* prompt_tokens;
  size_t n_prompt_tokens;
  /* Constrained generation (at most one of the two; NULL (default): none). The output follows
   * `grammar`, llama.cpp's GBNF (start rule `root`), or is JSON valid against `json_schema` (JSON
   * Schema text; "{\"type\":\"object\"}" asks for any JSON object). End of generation comes only
   * where the grammar is complete. The grammar sampler goes first in the chain, or where the
   * `samplers` spec names `grammar`. A grammar the parser refuses is INVALID_ARGUMENT with line:col;
   * not with beam search. */
  const char* grammar;
  const char* json_schema;
} lmrt_generate_request;

/* Fills *request with defaults (greedy, max_tokens 256, no stop strings, no logprobs) and sets
 * struct_size. */
LMRT_API lmrt_status lmrt_generate_request_init_sized(lmrt_generate_request* request, size_t struct_size);
static inline lmrt_status lmrt_generate_request_init(lmrt_generate_request* request) {
  return lmrt_generate_request_init_sized(request, sizeof *request);
}

/* One finished beam of a beam search. Owned by the context like the result's text. */
typedef struct lmrt_beam {
  const int32_t* tokens;
  size_t n_tokens;
  const char* text; /* NUL-terminated */
  size_t text_len;
  double logprob; /* sum of the tokens' logprobs */
  double score;   /* logprob / n_tokens^length_penalty: beams are ordered by it */
  lmrt_finish_reason finish_reason;
} lmrt_beam;

typedef struct lmrt_generate_result {
  uint32_t struct_size;
  lmrt_finish_reason finish_reason;
  uint32_t prompt_tokens;     /* tokens in the prompt (BOS included) */
  uint32_t completion_tokens; /* tokens generated */
  uint32_t reused_tokens;     /* prompt tokens whose KV entries were reused from the previous request or
                                 loaded from the cache's prompt-prefix states (prefix_min_tokens) */
  uint32_t n_past;            /* tokens the context holds afterwards */
  const char* text;           /* the whole generated text, NUL-terminated; owned by the context,
                                 valid until its next lmrt_generate / free */
  size_t text_len;
  const int32_t* tokens; /* the completion_tokens generated ids, owned like text */
  double load_ms;        /* time the model took to open (the same for every request on it) */
  double prefill_ms;     /* prompt evaluation */
  double decode_ms;      /* every generated token after the first */
  double ttft_ms;        /* from the call to the first generated token */
  double prefill_tokens_per_s;
  double decode_tokens_per_s;
  const lmrt_token_logprobs* logprobs; /* completion_tokens entries when asked for, else NULL */
  uint32_t context_shifts;             /* how often the context was shifted */
  uint32_t n_beams;                    /* beams in beams[] (beam search only), best first */
  const struct lmrt_beam* beams;
  uint32_t cache_hit;       /* 1: replayed from the response cache (no inference ran) */
  uint32_t cache_consulted; /* 1: the request was deterministic and a cache was in use */
  double cache_ms;          /* looking the request up (and replaying a hit, or loading a prompt-prefix state) */
} lmrt_generate_result;

/* Generates a completion of request->prompt: tokenizes it, reuses the longest prefix of tokens
 * already in the context (whether they came from lmrt_generate or lmrt_eval), evaluates the rest, then decodes until
 * EOS, max_tokens, a full context or cancellation, calling on_token (may be NULL) with each complete piece of UTF-8
 * text. result (may be NULL): the caller sets struct_size; receives the finish reason, text, tokens, usage and timings.
 * A cancelled or context-full generation still returns LMRT_OK with that finish reason. Afterwards the context holds
 * the prompt and the generated tokens that were fed back through the model (the last one sampled is not, unless EOS
 * followed it), so lmrt_eval and lmrt_get_logits go on from there. Errors: INVALID_ARGUMENT, BAD_UTF8 (prompt),
 * CONTEXT_FULL (the prompt alone does not fit; the context is unchanged), PLUGIN (a plugin sampler or stop criterion
 * misbehaved). */
LMRT_API lmrt_status lmrt_generate(lmrt_context* ctx, const lmrt_generate_request* request,
                                   lmrt_token_callback on_token, void* user_data, lmrt_generate_result* result);

/* ---- plugins (begin of the plugin block) ---------------------------------------------------
 * Samplers and stop criteria from shared objects (written against lmrt_plugin.h). Plugins are loaded
 * into a host object the application creates; there is no global plugin table. Loading runs code
 * from a file, so it is off until the application enables it (allow_loading = 1). A plugin stays
 * loaded while anything made from it lives, even after the host is freed.
 * A host may be used from several threads at once. */

typedef struct lmrt_plugin_host lmrt_plugin_host;

/* Receives plugin log lines: level (LMRT_PLUGIN_LOG_* of lmrt_plugin.h: 0 debug .. 3 error), the
 * plugin's name and the message (NUL-terminated, valid during the call). Called from any thread. */
typedef void (*lmrt_plugin_log_callback)(void* user_data, int32_t level, const char* plugin, const char* message);

typedef struct lmrt_plugin_host_params {
  uint32_t struct_size;
  uint32_t allow_loading;       /* 0 (default): every load is refused with LMRT_ERR_PLUGIN; 1: allowed */
  uint32_t use_env_path;        /* 1: also search the ':'-separated directories of $LMRT_PLUGIN_PATH (default 0) */
  uint32_t reserved0;           /* 0 (INVALID_ARGUMENT otherwise) */
  const char* search_path;      /* ':'-separated directories searched for a plugin named without a '/'; NULL: none */
  lmrt_plugin_log_callback log; /* NULL (default): plugin log lines are dropped */
  void* log_user_data;
} lmrt_plugin_host_params;

/* Fills *params with defaults and sets struct_size. Error: INVALID_ARGUMENT for NULL. */
LMRT_API lmrt_status lmrt_plugin_host_params_init_sized(lmrt_plugin_host_params* params, size_t struct_size);
static inline lmrt_status lmrt_plugin_host_params_init(lmrt_plugin_host_params* params) {
  return lmrt_plugin_host_params_init_sized(params, sizeof *params);
}

/* Creates a plugin host with no plugins. params: NULL for defaults (loading disabled).
 * err/err_size: optional message buffer. Errors: INVALID_ARGUMENT, OUT_OF_MEMORY. */
LMRT_API lmrt_status lmrt_plugin_host_create(const lmrt_plugin_host_params* params, lmrt_plugin_host** out_host,
                                             char* err, size_t err_size);

/* Frees a host (plugins stay loaded while samplers made from them live). NULL is a no-op. */
LMRT_API lmrt_status lmrt_plugin_host_free(lmrt_plugin_host* host);

/* The message of the calling thread's last failed call on host ("" if none). Never NULL. */
LMRT_API const char* lmrt_plugin_host_last_error(const lmrt_plugin_host* host);

/* Loads one plugin: a path (containing '/') or a bare name looked up in the search directories as
 * NAME, NAME.so and lmrt-NAME.so. Nothing changes on failure.
 * Errors: PLUGIN (loading disabled; not a shared object; no lmrt_plugin_init; another plugin-ABI
 * major; init refused; malformed descriptor; plugin or sampler/stop-criterion name already taken),
 * IO (file not found), INVALID_ARGUMENT. The message names the file and the reason. */
LMRT_API lmrt_status lmrt_plugin_load(lmrt_plugin_host* host, const char* path_or_name);

/* Loads every *.so of the search directories (in name order); stops at the first failure.
 * *n_loaded (may be NULL) receives how many were loaded. Errors: as lmrt_plugin_load. */
LMRT_API lmrt_status lmrt_plugin_load_search_path(lmrt_plugin_host* host, uint32_t* n_loaded);

#define LMRT_PLUGIN_ENTRY_SAMPLER 0u
#define LMRT_PLUGIN_ENTRY_STOP_CRITERION 1u

/* Flags of an entry (samplers; the same values as lmrt_plugin.h's LMRT_PLUGIN_SAMPLER_*). */
#define LMRT_PLUGIN_ENTRY_DETERMINISTIC 1u
#define LMRT_PLUGIN_ENTRY_SELECTS 2u
#define LMRT_PLUGIN_ENTRY_USES_RNG 4u

/* One name usable in a chain spec or as a stop criterion. */
typedef struct lmrt_plugin_entry {
  uint32_t struct_size;
  uint32_t kind;           /* LMRT_PLUGIN_ENTRY_SAMPLER or _STOP_CRITERION */
  const char* name;        /* e.g. "mirostat_v2" */
  const char* plugin;      /* the plugin's name; "" for a built-in */
  const char* version;     /* the plugin's version; lmrt's version for a built-in */
  const char* path;        /* the plugin file; "" for a built-in */
  const char* description; /* one line; may be "" */
  uint32_t flags;          /* LMRT_PLUGIN_ENTRY_* */
} lmrt_plugin_entry;

/* How many entries the host offers now: the built-in samplers, then each loaded plugin's samplers
 * and stop criteria in load order. */
LMRT_API lmrt_status lmrt_plugin_host_entry_count(lmrt_plugin_host* host, size_t* count);

/* Fills *entry (caller sets struct_size) with entry i. Its strings belong to the host and stay valid
 * until the next load on it or its free. Errors: INVALID_ARGUMENT (i out of range). */
LMRT_API lmrt_status lmrt_plugin_host_get_entry(lmrt_plugin_host* host, size_t i, lmrt_plugin_entry* entry);

/* ---- (end of the plugin block) ------------------------------------------------------------- */

/* ---- chat templates ------------------------------------------------------------------------ */

/* How lmrt_chat_apply_template renders. Strings are NUL-terminated UTF-8; NULL means "not given". */
typedef struct lmrt_chat_template_params {
  uint32_t struct_size;
  uint32_t add_generation_prompt; /* 1 (default): end with the opening of the assistant's turn */
  /* The Jinja template to render. NULL: the model's, from GGUF key tokenizer.chat_template, or
   * tokenizer.chat_template.NAME when template_name is set (e.g. "tool_use"). */
  const char* template_text;
  const char* template_name;
  const char* tools_json; /* OpenAI "tools" array (JSON text); NULL: the template sees tools = none */
  /* A JSON object of further template variables (e.g. {"enable_thinking": false}); NULL: none.
   * They may override bos_token and eos_token. */
  const char* extra_json;
  /* Texts of the bos_token / eos_token variables. NULL: the model vocabulary's BOS / EOS token text
   * (undefined in the template when there is no model or the vocabulary has none). */
  const char* bos_token;
  const char* eos_token;
} lmrt_chat_template_params;

/* Fills *params with defaults and sets struct_size. Error: INVALID_ARGUMENT for NULL. */
LMRT_API lmrt_status lmrt_chat_template_params_init_sized(lmrt_chat_template_params* params, size_t struct_size);
static inline lmrt_status lmrt_chat_template_params_init(lmrt_chat_template_params* params) {
  return lmrt_chat_template_params_init_sized(params, sizeof *params);
}

/* Renders a chat as the model was trained to read it, byte for byte as Hugging Face transformers'
 * apply_chat_template(messages, tools=..., add_generation_prompt=..., **extra) does: Jinja2 with
 * trim_blocks and lstrip_blocks, raise_exception, strftime_now and transformers' tojson.
 * model: the template and special tokens come from it; may be NULL when params->template_text is
 * set. messages_json: a JSON array of OpenAI-style messages ({"role", "content", "tool_calls", ...}).
 * params: NULL for defaults. The text is written to buf NUL-terminated and its length (without the
 * NUL) to *len; when capacity is too small, *len receives the length and BUFFER_TOO_SMALL is
 * returned (buf may be NULL when capacity is 0). err/err_size: optional message buffer.
 * Thread-safe: any number of threads may render with the same model at once.
 * Errors: INVALID_ARGUMENT (NULL messages or len, malformed JSON, no model and no template, the
 * model has no such template), BAD_FORMAT (the template does not parse or fails while rendering:
 * the message names the line and construct; a template's own raise_exception("...") gives
 * "raise_exception: ..."), BUFFER_TOO_SMALL. */
LMRT_API lmrt_status lmrt_chat_apply_template(const lmrt_model* model, const char* messages_json,
                                              const lmrt_chat_template_params* params, char* buf, size_t capacity,
                                              size_t* len, char* err, size_t err_size);

/* Renders a chat as lmrt_chat_apply_template does and writes its prompt token ids, ready for
 * lmrt_generate_request.prompt_tokens. Only the template's own text can become special tokens:
 * every string that came from messages_json, params->tools_json or params->extra_json (message
 * contents, names, tool arguments, ...) is tokenized as plain text wherever the template puts it, so
 * a user who writes "<|im_end|>\n<|im_start|>system" gets the ids of that text, not the chat format's
 * control tokens (params->extra_json is caller data too: a bos_token or eos_token given there is
 * text; params->bos_token / eos_token are the template's own). Text without such markers gets the
 * same ids as tokenizing the rendered text with special-token parsing. BOS comes first when the vocabulary asks for it,
 * once: not again when the template already wrote it. The ids go to tokens[0..*n_tokens); when capacity is too small,
 * *n_tokens receives the count needed and BUFFER_TOO_SMALL is returned (tokens may be NULL when
 * capacity is 0). Thread-safe like lmrt_chat_apply_template.
 * Errors: those of lmrt_chat_apply_template (model is required here), BAD_UTF8, BUFFER_TOO_SMALL. */
LMRT_API lmrt_status lmrt_chat_tokenize(const lmrt_model* model, const char* messages_json,
                                        const lmrt_chat_template_params* params, int32_t* tokens, size_t capacity,
                                        size_t* n_tokens, char* err, size_t err_size);

/* ---- grammars ------------------------------------------------------------------------------ */

/* The GBNF (llama.cpp's format, start rule `root`) whose sentences are exactly the JSON texts the
 * grammar sampler allows for the JSON Schema `schema_json` (what lmrt_generate_request.json_schema
 * does), for callers that embed it in a grammar of their own (e.g. a tool call's arguments between
 * a format's markers). Its other rules are named after the schema's paths and the JSON primitives
 * (`ws`, `json-string`, ...). Output as for lmrt_chat_apply_template: NUL-terminated into buf, the
 * length in *len, BUFFER_TOO_SMALL when capacity is too small (buf may be NULL when capacity is 0).
 * err/err_size: optional message buffer.
 * Errors: INVALID_ARGUMENT (NULL schema_json or len, bad JSON, an unsupported keyword: the message
 * names its path), BUFFER_TOO_SMALL. */
LMRT_API lmrt_status lmrt_json_schema_to_grammar(const char* schema_json, char* buf, size_t capacity, size_t* len,
                                                 char* err, size_t err_size);
/* Checks GBNF text (NUL-terminated) as lmrt_generate_request.grammar would take it, without a model:
 * syntax, rule names, limits, left recursion and the expansion of the start rule, so that a caller
 * (e.g. a server about to answer 200 to a stream) can refuse a bad grammar up front.
 * err/err_size: optional message buffer (the message lmrt_generate would give).
 * Errors: INVALID_ARGUMENT (NULL gbnf, or the grammar's error with line:col). */
LMRT_API lmrt_status lmrt_grammar_check(const char* gbnf, char* err, size_t err_size);

/* ---- many requests at once: the batch engine ---------------------------------------------------
 * An engine runs many generation requests on one context: each request is a sequence of the
 * context's KV arena, and every step is one forward pass over the next tokens of all of them, so
 * the weights are read once per step however many requests decode (a CPU's decode speed is bound by
 * reading the weights). Prompts are evaluated in chunks (prefill_chunk tokens of each per step)
 * between the running requests' decode steps, so a long prompt does not stall the streams. Each
 * request keeps its own sampler chain, stop strings, logprobs and callback, and gets exactly the
 * tokens lmrt_generate gives it alone on a fresh context. A request that needs a KV cell when the
 * arena has none left finishes with LMRT_FINISH_CONTEXT_FULL; the others go on.
 *
 * Threads: the engine steps either on the caller's thread (lmrt_engine_step/_run) or on a thread of
 * its own (lmrt_engine_start until lmrt_engine_stop), which sleeps while no request is left. Every
 * lmrt_engine_* function but _create and _free may be called from any thread at any time: the
 * engine serialises them with a lock that a running step holds, so a call waits at most for the
 * step under way. Callbacks run on the stepping thread with that lock held and may call
 * lmrt_engine_cancel, nothing else of the engine (the others return INVALID_ARGUMENT from a
 * callback). lmrt_engine_last_error is kept per calling thread. The context is the engine's while
 * the engine lives: lmrt_eval, lmrt_get_logits, lmrt_generate, lmrt_context_reset, the
 * lmrt_context_state_* functions and a second lmrt_engine_create on it return INVALID_ARGUMENT until
 * lmrt_engine_free. */
typedef struct lmrt_engine lmrt_engine;

/* Tells that a request finished, so that a thread waiting for it needs no polling: called exactly
 * once for every request lmrt_engine_submit accepted, whatever the reason (eos, stop, length,
 * context full, cancelled, failed, replayed from the response cache), with the user_data given to
 * lmrt_engine_submit for it, its id and its finish reason. It comes on the thread that steps (the
 * engine's own thread once started), after the request's last on_token call, with the engine's
 * lock held: like on_token it may call lmrt_engine_cancel and nothing else of the engine, and should
 * return quickly (e.g. wake the thread that then reads the result: lmrt_engine_wait already reports
 * the request finished, lmrt_engine_result waits for the step to end). It is not called for requests that
 * lmrt_engine_free drops unfinished, nor when the engine's thread stops on an internal failure (lmrt_engine_wait then
 * returns with *finished 0). */
typedef void (*lmrt_engine_finish_callback)(void* user_data, uint64_t request_id, lmrt_finish_reason finish_reason);

typedef struct lmrt_engine_params {
  uint32_t struct_size;
  uint32_t max_sequences; /* requests decoding at once, 1..16 (default 4); more wait in a queue */
  uint32_t prefill_chunk; /* prompt tokens of one request per step (default 64; a last chunk takes up to 3 more) */
  /* Prefix reuse (1, the default; 0: off): a prompt starts from the longest prefix of it that the
   * arena holds (a running request's prompt and evaluated tokens, or a finished request's kept
   * below), sharing those cells rather than evaluating them again (result reused_tokens counts
   * them; the tokens are the same as without). A queued prompt waits while a running one is still
   * computing more of its prefix, so a shared system prompt is computed once. */
  uint32_t prefix_reuse;
  /* Finished requests' sequences kept as cached prefixes, 0..16 (default 4); the least recently used
   * gives up its cells whenever a request needs them, so they never make a request wait or fail. */
  uint32_t retained_sequences;
  uint32_t reserved0;                    /* 0 (INVALID_ARGUMENT otherwise) */
  lmrt_engine_finish_callback on_finish; /* NULL (default): no finish notification */
  /* The response cache for the engine's requests (NULL, the default: none; a request's own
   * `cache` field overrides it), with lmrt_generate's key and rules: a deterministic request
   * (greedy or seeded) is looked up when it is submitted, and a hit is replayed through its
   * callback at the next step without taking a sequence (result cache_hit 1); a miss that ends by
   * eos, stop or length is stored when it finishes (context_full is not: in a shared arena it
   * depends on the other requests). The key counts the arena's n_ctx. The cache's prompt-prefix
   * states (prefix_min_tokens) do not apply: the engine's prefix reuse keeps prefixes in the arena.
   * The cache must outlive the engine. */
  struct lmrt_cache* cache;
} lmrt_engine_params;

/* Fills *params with defaults and sets struct_size. Error: INVALID_ARGUMENT for NULL. */
LMRT_API lmrt_status lmrt_engine_params_init_sized(lmrt_engine_params* params, size_t struct_size);
static inline lmrt_status lmrt_engine_params_init(lmrt_engine_params* params) {
  return lmrt_engine_params_init_sized(params, sizeof *params);
}

/* Creates an engine on ctx, whose KV arena (n_ctx cells shared by all requests), batch size
 * (n_batch: tokens per step), threads and KV type it uses. The context forgets the tokens it held and
 * must not be used while the engine lives (lmrt_context_free meanwhile leaves freeing it to
 * lmrt_engine_free). params: NULL for defaults.
 * err/err_size: optional message buffer. Errors: INVALID_ARGUMENT (max_sequences outside 1..16,
 * prefill_chunk 0, ctx already has an engine), OUT_OF_MEMORY. */
LMRT_API lmrt_status lmrt_engine_create(lmrt_context* ctx, const lmrt_engine_params* params, lmrt_engine** out_engine,
                                        char* err, size_t err_size);
/* Frees an engine and every request it holds (finished or not; their callbacks are not called),
 * stopping its thread first if it was started. NULL is a no-op. Returns LMRT_OK, except when called
 * from one of the engine's own callbacks (INVALID_ARGUMENT; the engine is left as it was). */
LMRT_API lmrt_status lmrt_engine_free(lmrt_engine* engine);
/* The message of the last failed call on engine ("" if none or engine is NULL). */
LMRT_API const char* lmrt_engine_last_error(const lmrt_engine* engine);

/* Queues a request (the fields of lmrt_generate_request as for lmrt_generate, except n_beams and
 * context_shift, which must be left at their defaults; cache: see lmrt_engine_params.cache). Everything the request
 * points to is read or copied before this returns. on_token (may be NULL) receives the request's pieces of text during
 * lmrt_engine_step/_run, with user_data. *request_id names the request (never 0). Errors: INVALID_ARGUMENT, BAD_UTF8
 * (prompt or stop), CONTEXT_FULL (the prompt alone is larger than the arena), PLUGIN. */
LMRT_API lmrt_status lmrt_engine_submit(lmrt_engine* engine, const lmrt_generate_request* request,
                                        lmrt_token_callback on_token, void* user_data, uint64_t* request_id);
/* Cancels a request: it finishes with LMRT_FINISH_CANCELLED at the next step (a queued one without
 * running). A finished request is left as it is. Errors: INVALID_ARGUMENT (unknown id). */
LMRT_API lmrt_status lmrt_engine_cancel(lmrt_engine* engine, uint64_t request_id);
/* Runs one step: admits queued requests while sequences and cells are free, then one forward pass
 * over a token of every decoding request and a chunk of prompts; calls back with the text it
 * completes. *n_unfinished (may be NULL) receives the requests still queued or running afterwards.
 * A request's own failure (a plugin sampler's) finishes it with LMRT_FINISH_ERROR and does not fail
 * the step. Errors: INVALID_ARGUMENT, INTERNAL. */
LMRT_API lmrt_status lmrt_engine_step(lmrt_engine* engine, uint32_t* n_unfinished);
/* Steps on the calling thread until every request has finished. lmrt_engine_start is refused while it
 * runs. */
LMRT_API lmrt_status lmrt_engine_run(lmrt_engine* engine);
/* A request's result so far (finish_reason LMRT_FINISH_NONE while it runs): text, tokens, logprobs,
 * usage and timings (ttft_ms counts from lmrt_engine_submit; reused_tokens counts the prompt tokens
 * taken from the arena's prefixes; n_past is 0, there are no beams; cache_hit, cache_consulted and
 * cache_ms as for lmrt_generate). The pointers are
 * owned by the engine, valid until the request is released or the engine freed, and change while the
 * request runs: while the engine's own thread runs, read them only once the request has finished
 * (lmrt_engine_wait). result->struct_size must be set. Returns the request's
 * own error (with its message) when it finished with LMRT_FINISH_ERROR, the result filled all the
 * same. Errors: INVALID_ARGUMENT (unknown id). */
LMRT_API lmrt_status lmrt_engine_result(lmrt_engine* engine, uint64_t request_id, lmrt_generate_result* result);
/* Forgets a finished request and its result. Errors: INVALID_ARGUMENT (unknown id, not finished). */
LMRT_API lmrt_status lmrt_engine_release(lmrt_engine* engine, uint64_t request_id);

/* Starts the engine's own thread: it steps while requests are queued or running and sleeps (no busy
 * wait) while none is, waking at the next submit. lmrt_engine_step/_run are refused until
 * lmrt_engine_stop. Errors: INVALID_ARGUMENT (already started, lmrt_engine_run stepping it on another
 * thread, called from a callback). */
LMRT_API lmrt_status lmrt_engine_start(lmrt_engine* engine);
/* Stops the engine's thread after the step under way and waits for it to end. Requests keep their
 * state (queued, half-generated or finished): a later lmrt_engine_start or lmrt_engine_step goes on
 * with them, lmrt_engine_free drops them. Stopping a stopped engine does nothing. Errors:
 * INVALID_ARGUMENT (called from a callback); the failure that stopped the thread by itself, if any
 * (INTERNAL, OUT_OF_MEMORY: the step's status, with its message). */
LMRT_API lmrt_status lmrt_engine_stop(lmrt_engine* engine);
/* Waits until request_id has finished (*finished = 1), timeout_ms milliseconds have passed (a
 * negative timeout_ms waits without limit; a request another thread released meanwhile counts as
 * finished) or the engine's thread stopped (*finished = 0); on an
 * engine that is not started it returns at once. Errors: INVALID_ARGUMENT (unknown id, NULL
 * finished, called from a callback). */
LMRT_API lmrt_status lmrt_engine_wait(lmrt_engine* engine, uint64_t request_id, int64_t timeout_ms, int* finished);

/* What an engine holds at one moment (for a server's metrics). */
typedef struct lmrt_engine_stats {
  uint32_t struct_size;
  uint32_t n_queued;      /* requests waiting for a sequence */
  uint32_t n_running;     /* requests prefilling or decoding (busy sequences) */
  uint32_t max_sequences; /* the engine's lmrt_engine_params.max_sequences */
  uint32_t n_cells;       /* KV cells of the arena */
  uint32_t n_cells_used;  /* cells held: by running requests and by kept prefixes (n_cached) */
  uint32_t started;       /* 1 while the engine's own thread runs */
  uint32_t n_cached;      /* finished requests' sequences kept for prefix reuse (their cells are
                           * taken back whenever a request needs them) */
} lmrt_engine_stats;
/* Fills *stats (stats->struct_size must be set). Errors: INVALID_ARGUMENT (NULL, struct_size not
 * set, called from a callback). */
LMRT_API lmrt_status lmrt_engine_get_stats(lmrt_engine* engine, lmrt_engine_stats* stats);

#ifdef __cplusplus
}
#endif

#endif /* LMRT_LMRT_H */
