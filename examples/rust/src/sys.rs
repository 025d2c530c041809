//! The raw C ABI of lmrt.h, declared by hand. Every `#[repr(C)]` struct here is checked field by
//! field against the C compiler's view of the installed header (see `layout`), so a mistake here
//! or a layout change in the header fails the build's tests instead of corrupting memory.
//! build.rs reads this file to list the fields to check: keep one field per line.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

pub type lmrt_status = c_int;
pub const LMRT_OK: lmrt_status = 0;
pub const LMRT_ERR_INVALID_ARGUMENT: lmrt_status = 1;
pub const LMRT_ERR_IO: lmrt_status = 2;
pub const LMRT_ERR_BAD_FORMAT: lmrt_status = 3;
pub const LMRT_ERR_INTERNAL: lmrt_status = 11;
pub const LMRT_ERR_BUFFER_TOO_SMALL: lmrt_status = 12;

pub const LMRT_ABI_VERSION: u32 = 0;

pub const LMRT_FINISH_NONE: u32 = 0;
pub const LMRT_FINISH_EOS: u32 = 1;
pub const LMRT_FINISH_STOP: u32 = 2;
pub const LMRT_FINISH_LENGTH: u32 = 3;
pub const LMRT_FINISH_CANCELLED: u32 = 4;
pub const LMRT_FINISH_CONTEXT_FULL: u32 = 5;
pub const LMRT_FINISH_ERROR: u32 = 6;

pub const LMRT_TOKENIZE_ADD_BOS: u32 = 1;

#[repr(C)]
pub struct lmrt_model {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct lmrt_context {
    _opaque: [u8; 0],
}

#[repr(C)]
pub struct lmrt_engine {
    _opaque: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct lmrt_model_params {
    pub struct_size: u32,
    pub use_mmap: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct lmrt_model_info {
    pub struct_size: u32,
    pub architecture: [c_char; 32],
    pub name: [c_char; 128],
    pub n_tensors: u32,
    pub n_params: u64,
    pub file_bytes: u64,
    pub n_ctx_train: u32,
    pub n_vocab: u32,
    pub n_embd: u32,
    pub n_layer: u32,
    pub n_head: u32,
    pub n_head_kv: u32,
    pub n_ff: u32,
    pub bos_token: i32,
    pub eos_token: i32,
    pub n_tensors_f32: u32,
    pub n_tensors_f16: u32,
    pub n_tensors_bf16: u32,
    pub n_tensors_q8_0: u32,
    pub n_tensors_q4_0: u32,
    pub bytes_f32: u64,
    pub bytes_f16: u64,
    pub bytes_bf16: u64,
    pub bytes_q8_0: u64,
    pub bytes_q4_0: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct lmrt_context_params {
    pub struct_size: u32,
    pub n_ctx: u32,
    pub n_batch: u32,
    pub n_threads: u32,
    pub kv_type: u32,
    pub logits_all: u32,
}

#[repr(C)]
pub struct lmrt_token_event {
    pub struct_size: u32,
    pub token: i32,
    pub text: *const c_char,
    pub text_len: usize,
    pub index: u32,
}

#[repr(C)]
pub struct lmrt_generate_request {
    pub struct_size: u32,
    pub max_tokens: i32,
    pub prompt: *const c_char,
    pub prompt_len: usize,
    pub add_bos: u32,
    pub parse_special: u32,
    pub sampler: *const c_void,
    pub samplers: *const c_char,
    pub seed: u64,
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub typical_p: f32,
    pub repeat_penalty: f32,
    pub repeat_last_n: i32,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
    pub n_logit_bias: u32,
    pub logit_bias: *const lmrt_logit_bias,
    pub stop: *const *const c_char,
    pub n_stop: usize,
    pub logprobs: i32,
    pub context_shift: u32,
    pub n_keep: u32,
    pub n_beams: u32,
    pub length_penalty: f32,
    pub cache: *mut c_void,
    pub plugins: *const c_void,
    pub stop_criteria: *const *const c_char,
    pub n_stop_criteria: usize,
    pub prompt_tokens: *const i32,
    pub n_prompt_tokens: usize,
    pub grammar: *const c_char,
    pub json_schema: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct lmrt_logit_bias {
    pub token: i32,
    pub bias: f32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct lmrt_logprob {
    pub token: i32,
    pub logprob: f32,
}

pub const LMRT_MAX_TOP_LOGPROBS: usize = 20;
pub const LMRT_SEED_RANDOM: u64 = u64::MAX;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct lmrt_token_logprobs {
    pub chosen: lmrt_logprob,
    pub n_top: u32,
    pub top: [lmrt_logprob; LMRT_MAX_TOP_LOGPROBS],
}

#[repr(C)]
pub struct lmrt_generate_result {
    pub struct_size: u32,
    pub finish_reason: u32,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub reused_tokens: u32,
    pub n_past: u32,
    pub text: *const c_char,
    pub text_len: usize,
    pub tokens: *const i32,
    pub load_ms: f64,
    pub prefill_ms: f64,
    pub decode_ms: f64,
    pub ttft_ms: f64,
    pub prefill_tokens_per_s: f64,
    pub decode_tokens_per_s: f64,
    pub logprobs: *const lmrt_token_logprobs,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct lmrt_engine_params {
    pub struct_size: u32,
    pub max_sequences: u32,
    pub prefill_chunk: u32,
    pub prefix_reuse: u32,
    pub retained_sequences: u32,
    pub reserved0: u32,
    pub on_finish: lmrt_engine_finish_callback,
    pub cache: *mut c_void,
}

pub type lmrt_engine_finish_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, request_id: u64, finish_reason: c_int)>;

#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct lmrt_engine_stats {
    pub struct_size: u32,
    pub n_queued: u32,
    pub n_running: u32,
    pub max_sequences: u32,
    pub n_cells: u32,
    pub n_cells_used: u32,
    pub started: u32,
    pub n_cached: u32,
}

pub type lmrt_token_callback =
    Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const lmrt_token_event) -> c_int>;

extern "C" {
    pub fn lmrt_abi_version() -> u32;
    pub fn lmrt_version_string() -> *const c_char;
    pub fn lmrt_isa() -> *const c_char;
    pub fn lmrt_json_schema_to_grammar(
        schema_json: *const c_char,
        buf: *mut c_char,
        capacity: usize,
        len: *mut usize,
        err: *mut c_char,
        err_size: usize,
    ) -> lmrt_status;
    pub fn lmrt_grammar_check(
        gbnf: *const c_char,
        err: *mut c_char,
        err_size: usize,
    ) -> lmrt_status;
    pub fn lmrt_status_str(status: lmrt_status) -> *const c_char;
    pub fn lmrt_finish_reason_str(reason: u32) -> *const c_char;

    // The header's lmrt_model_params_init(p) is an inline wrapper of this with sizeof *p.
    pub fn lmrt_model_params_init_sized(
        params: *mut lmrt_model_params,
        struct_size: usize,
    ) -> lmrt_status;
    pub fn lmrt_model_open(
        path: *const c_char,
        params: *const lmrt_model_params,
        out_model: *mut *mut lmrt_model,
        err: *mut c_char,
        err_size: usize,
    ) -> lmrt_status;
    pub fn lmrt_model_close(model: *mut lmrt_model) -> lmrt_status;
    pub fn lmrt_model_last_error(model: *const lmrt_model) -> *const c_char;
    pub fn lmrt_model_get_info(model: *const lmrt_model, info: *mut lmrt_model_info)
        -> lmrt_status;
    pub fn lmrt_tokenize(
        model: *const lmrt_model,
        text: *const c_char,
        text_len: usize,
        flags: u32,
        tokens: *mut i32,
        capacity: usize,
        n_tokens: *mut usize,
    ) -> lmrt_status;

    // The header's lmrt_context_params_init(p) is an inline wrapper of this with sizeof *p.
    pub fn lmrt_context_params_init_sized(
        params: *mut lmrt_context_params,
        struct_size: usize,
    ) -> lmrt_status;
    pub fn lmrt_context_create(
        model: *mut lmrt_model,
        params: *const lmrt_context_params,
        out_ctx: *mut *mut lmrt_context,
        err: *mut c_char,
        err_size: usize,
    ) -> lmrt_status;
    pub fn lmrt_context_free(ctx: *mut lmrt_context) -> lmrt_status;
    pub fn lmrt_context_last_error(ctx: *const lmrt_context) -> *const c_char;

    // The header's lmrt_generate_request_init(p) is an inline wrapper of this with sizeof *p.
    pub fn lmrt_generate_request_init_sized(
        request: *mut lmrt_generate_request,
        struct_size: usize,
    ) -> lmrt_status;
    pub fn lmrt_generate(
        ctx: *mut lmrt_context,
        request: *const lmrt_generate_request,
        on_token: lmrt_token_callback,
        user_data: *mut c_void,
        result: *mut lmrt_generate_result,
    ) -> lmrt_status;

    // The header's lmrt_engine_params_init(p) is an inline wrapper of this with sizeof *p.
    pub fn lmrt_engine_params_init_sized(
        params: *mut lmrt_engine_params,
        struct_size: usize,
    ) -> lmrt_status;
    pub fn lmrt_engine_create(
        ctx: *mut lmrt_context,
        params: *const lmrt_engine_params,
        out_engine: *mut *mut lmrt_engine,
        err: *mut c_char,
        err_size: usize,
    ) -> lmrt_status;
    pub fn lmrt_engine_free(engine: *mut lmrt_engine) -> lmrt_status;
    pub fn lmrt_engine_last_error(engine: *const lmrt_engine) -> *const c_char;
    pub fn lmrt_engine_submit(
        engine: *mut lmrt_engine,
        request: *const lmrt_generate_request,
        on_token: lmrt_token_callback,
        user_data: *mut c_void,
        request_id: *mut u64,
    ) -> lmrt_status;
    pub fn lmrt_engine_cancel(engine: *mut lmrt_engine, request_id: u64) -> lmrt_status;
    pub fn lmrt_engine_step(engine: *mut lmrt_engine, n_unfinished: *mut u32) -> lmrt_status;
    pub fn lmrt_engine_run(engine: *mut lmrt_engine) -> lmrt_status;
    pub fn lmrt_engine_result(
        engine: *mut lmrt_engine,
        request_id: u64,
        result: *mut lmrt_generate_result,
    ) -> lmrt_status;
    pub fn lmrt_engine_release(engine: *mut lmrt_engine, request_id: u64) -> lmrt_status;
    pub fn lmrt_engine_start(engine: *mut lmrt_engine) -> lmrt_status;
    pub fn lmrt_engine_stop(engine: *mut lmrt_engine) -> lmrt_status;
    pub fn lmrt_engine_wait(
        engine: *mut lmrt_engine,
        request_id: u64,
        timeout_ms: i64,
        finished: *mut c_int,
    ) -> lmrt_status;
    pub fn lmrt_engine_get_stats(
        engine: *mut lmrt_engine,
        stats: *mut lmrt_engine_stats,
    ) -> lmrt_status;
}
