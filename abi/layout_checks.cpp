// The public header's numbers and layouts, pinned: any change here is a deliberate ABI change.
#include <cstddef>

#include "lmrt/lmrt.h"
#include "runtime/util/status.h"

using lmrt::Code;

static_assert(LMRT_OK == static_cast<int>(Code::ok));
static_assert(LMRT_ERR_INVALID_ARGUMENT == static_cast<int>(Code::invalid_argument));
static_assert(LMRT_ERR_IO == static_cast<int>(Code::io));
static_assert(LMRT_ERR_BAD_FORMAT == static_cast<int>(Code::bad_format));
static_assert(LMRT_ERR_UNSUPPORTED == static_cast<int>(Code::unsupported));
static_assert(LMRT_ERR_OUT_OF_MEMORY == static_cast<int>(Code::out_of_memory));
static_assert(LMRT_ERR_CONTEXT_FULL == static_cast<int>(Code::context_full));
static_assert(LMRT_ERR_CANCELLED == static_cast<int>(Code::cancelled));
static_assert(LMRT_ERR_BAD_UTF8 == static_cast<int>(Code::bad_utf8));
static_assert(LMRT_ERR_PLUGIN == static_cast<int>(Code::plugin));
static_assert(LMRT_ERR_CACHE == static_cast<int>(Code::cache));
static_assert(LMRT_ERR_INTERNAL == static_cast<int>(Code::internal));
static_assert(LMRT_ERR_BUFFER_TOO_SMALL == static_cast<int>(Code::buffer_too_small));

// Public struct layouts are part of the ABI: any change here is deliberate.
static_assert(sizeof(lmrt_model_params) == 8);
static_assert(sizeof(lmrt_chat_template_params) == 56 && offsetof(lmrt_chat_template_params, template_text) == 8 &&
              offsetof(lmrt_chat_template_params, eos_token) == 48);
static_assert(sizeof(lmrt_context_params) == 24 && offsetof(lmrt_context_params, logits_all) == 20);
static_assert(offsetof(lmrt_model_info, n_params) == 168 && offsetof(lmrt_model_info, n_tensors_f32) == 220 &&
              offsetof(lmrt_model_info, bytes_f32) == 240 && sizeof(lmrt_model_info) == 280);
static_assert(sizeof(lmrt_model_arch) == 64 && offsetof(lmrt_model_arch, rope_freq_base) == 16 &&
              offsetof(lmrt_model_arch, flags) == 32 && offsetof(lmrt_model_arch, final_softcap) == 60);
static_assert(sizeof(lmrt_tokenizer_info) == 164 && offsetof(lmrt_tokenizer_info, bos_token) == 68 &&
              offsetof(lmrt_tokenizer_info, n_eog_tokens) == 96 && offsetof(lmrt_tokenizer_info, eog_tokens) == 100);
static_assert(sizeof(lmrt_token_event) == 48 && offsetof(lmrt_token_event, text) == 8 &&
              offsetof(lmrt_token_event, index) == 24 && offsetof(lmrt_token_event, logprobs) == 40);
static_assert(sizeof(lmrt_token_logprobs) == 172 && offsetof(lmrt_token_logprobs, top) == 12);
static_assert(sizeof(lmrt_generate_request) == 208 && offsetof(lmrt_generate_request, prompt_tokens) == 176 &&
              offsetof(lmrt_generate_request, n_prompt_tokens) == 184 &&
              offsetof(lmrt_generate_request, grammar) == 192 && offsetof(lmrt_generate_request, json_schema) == 200 &&
              offsetof(lmrt_generate_request, cache) == 144 && offsetof(lmrt_generate_request, plugins) == 152 &&
              offsetof(lmrt_generate_request, n_stop_criteria) == 168 && offsetof(lmrt_generate_request, prompt) == 8 &&
              offsetof(lmrt_generate_request, parse_special) == 28 && offsetof(lmrt_generate_request, seed) == 48 &&
              offsetof(lmrt_generate_request, logit_bias) == 96 && offsetof(lmrt_generate_request, logprobs) == 120 &&
              offsetof(lmrt_generate_request, length_penalty) == 136);
static_assert(sizeof(lmrt_beam) == 56 && offsetof(lmrt_beam, finish_reason) == 48);
static_assert(sizeof(lmrt_generate_result) == 136 && offsetof(lmrt_generate_result, cache_ms) == 128 &&
              offsetof(lmrt_generate_result, text) == 24 && offsetof(lmrt_generate_result, decode_tokens_per_s) == 88 &&
              offsetof(lmrt_generate_result, logprobs) == 96 && offsetof(lmrt_generate_result, beams) == 112);
static_assert(sizeof(lmrt_cache_params) == 64 && offsetof(lmrt_cache_params, on_warning) == 40 &&
              offsetof(lmrt_cache_params, prefix_min_tokens) == 56);
static_assert(sizeof(lmrt_cache_stats) == 64 && offsetof(lmrt_cache_stats, bytes) == 56);
static_assert(sizeof(lmrt_engine_params) == 40 && offsetof(lmrt_engine_params, prefill_chunk) == 8 &&
              offsetof(lmrt_engine_params, prefix_reuse) == 12 &&
              offsetof(lmrt_engine_params, retained_sequences) == 16 && offsetof(lmrt_engine_params, on_finish) == 24 &&
              offsetof(lmrt_engine_params, cache) == 32);
static_assert(sizeof(lmrt_engine_stats) == 32 && offsetof(lmrt_engine_stats, started) == 24 &&
              offsetof(lmrt_engine_stats, n_cached) == 28);
