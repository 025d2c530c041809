//! A safe wrapper over lmrt's C ABI: handles are freed by `Drop`, text streams through a closure,
//! and every failure is an `Error` carrying the status and the library's message.
//!
//! ```no_run
//! let model = lmrt::Model::open("model.gguf")?;
//! let mut ctx = lmrt::Context::new(&model, lmrt::ContextParams { n_ctx: 256, n_threads: 2 })?;
//! let done = ctx.generate("Once upon a time", 64, |piece| {
//!     print!("{piece}");
//!     std::ops::ControlFlow::Continue(())
//! })?;
//! println!("\n[{:?}]", done.finish_reason);
//! # Ok::<(), lmrt::Error>(())
//! ```
pub mod layout;
pub mod sys;

use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::ops::ControlFlow;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};

/// A failed lmrt call: the C status code and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub status: i32,
    pub message: String,
}

impl Error {
    fn new(status: sys::lmrt_status, message: String) -> Self {
        Error { status, message }
    }
    /// The library's name for the status, e.g. "I/O error".
    pub fn status_name(&self) -> String {
        // SAFETY: lmrt_status_str returns a static, never-NULL string for any value.
        unsafe { cstr(sys::lmrt_status_str(self.status)) }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status_name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Copies a C string the library owns; NULL becomes "".
unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

fn message_from(buf: &[c_char]) -> String {
    // SAFETY: the library NUL-terminates the message inside the buffer (which starts zeroed).
    unsafe { cstr(buf.as_ptr()) }
}

/// Checks that the loaded library speaks the ABI these bindings were written for.
pub fn check_abi() -> Result<()> {
    // SAFETY: no arguments.
    let loaded = unsafe { sys::lmrt_abi_version() };
    if loaded != sys::LMRT_ABI_VERSION {
        return Err(Error::new(
            sys::LMRT_ERR_INVALID_ARGUMENT,
            format!(
                "liblmrt has ABI {loaded}, these bindings expect {}",
                sys::LMRT_ABI_VERSION
            ),
        ));
    }
    Ok(())
}

/// The library's version, "major.minor.patch".
pub fn version() -> String {
    // SAFETY: a static string.
    unsafe { cstr(sys::lmrt_version_string()) }
}

/// The instruction set whose kernels a model or context made now runs: "avx512", "avx2vnni", "avx2",
/// "neon" or "scalar" (the best this CPU has, or the one `LMRT_ISA` names when the CPU has it).
pub fn isa() -> String {
    // SAFETY: a static string.
    unsafe { cstr(sys::lmrt_isa()) }
}

fn nul_free(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::new(
            sys::LMRT_ERR_INVALID_ARGUMENT,
            format!("{what} contains a NUL byte"),
        )
    })
}

/// Checks GBNF text as `Request::grammar` would take it, without a model (syntax, rule names,
/// limits, left recursion, the start rule's expansion): the error a generation would give, up front.
pub fn grammar_check(gbnf: &str) -> Result<()> {
    let c = nul_free(gbnf, "the grammar")?;
    let mut err = [0 as c_char; 512];
    // SAFETY: a NUL-terminated grammar and a message buffer of err.len() bytes.
    let s = unsafe { sys::lmrt_grammar_check(c.as_ptr(), err.as_mut_ptr(), err.len()) };
    if s != sys::LMRT_OK {
        return Err(Error::new(s, message_from(&err)));
    }
    Ok(())
}

/// The GBNF whose sentences are exactly the JSON texts `Request::json_schema` allows for `schema`,
/// for a grammar of one's own (e.g. a tool call's arguments between a format's markers).
pub fn json_schema_to_grammar(schema: &str) -> Result<String> {
    let c = nul_free(schema, "the schema")?;
    let mut err = [0 as c_char; 512];
    let mut len = 0usize;
    // SAFETY: capacity 0 with a NULL buffer asks for the length; err has err.len() bytes.
    let s = unsafe {
        sys::lmrt_json_schema_to_grammar(
            c.as_ptr(),
            ptr::null_mut(),
            0,
            &mut len,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if s != sys::LMRT_OK && s != sys::LMRT_ERR_BUFFER_TOO_SMALL {
        return Err(Error::new(s, message_from(&err)));
    }
    let mut buf = vec![0u8; len + 1];
    // SAFETY: buf has len + 1 bytes, room for the text and its NUL.
    let s = unsafe {
        sys::lmrt_json_schema_to_grammar(
            c.as_ptr(),
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
            &mut len,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if s != sys::LMRT_OK {
        return Err(Error::new(s, message_from(&err)));
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| {
        Error::new(
            sys::LMRT_ERR_INTERNAL,
            "the grammar is not UTF-8".to_string(),
        )
    })
}

/// An open model. Immutable and shareable: any number of threads and contexts may use it at once.
pub struct Model {
    raw: NonNull<sys::lmrt_model>,
}

// SAFETY: lmrt.h: "An lmrt_model is immutable once opened and may be used by any number of
// threads and contexts at once."
unsafe impl Send for Model {}
unsafe impl Sync for Model {}

/// A few facts about a model.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    pub architecture: String,
    pub name: String,
    pub n_vocab: u32,
    pub n_layer: u32,
    pub n_ctx_train: u32,
    pub n_params: u64,
}

impl Model {
    /// Opens a GGUF model file.
    pub fn open(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        let c_path = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
            Error::new(
                sys::LMRT_ERR_INVALID_ARGUMENT,
                format!("{} contains a NUL byte", path.display()),
            )
        })?;
        let mut raw = ptr::null_mut();
        let mut err = [0 as c_char; 512];
        // SAFETY: valid NUL-terminated path, out pointer and message buffer of err.len() bytes.
        let s = unsafe {
            sys::lmrt_model_open(
                c_path.as_ptr(),
                ptr::null(),
                &mut raw,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if s != sys::LMRT_OK {
            return Err(Error::new(s, message_from(&err)));
        }
        NonNull::new(raw).map(|raw| Model { raw }).ok_or_else(|| {
            Error::new(
                sys::LMRT_ERR_INVALID_ARGUMENT,
                "lmrt_model_open returned no model".into(),
            )
        })
    }

    fn last_error(&self, status: sys::lmrt_status) -> Error {
        // SAFETY: a live model; the message is copied before any other call on it.
        Error::new(status, unsafe {
            cstr(sys::lmrt_model_last_error(self.raw.as_ptr()))
        })
    }

    pub fn info(&self) -> Result<ModelInfo> {
        // SAFETY: an all-zero lmrt_model_info is valid (integers and char arrays).
        let mut info: sys::lmrt_model_info = unsafe { std::mem::zeroed() };
        info.struct_size = std::mem::size_of::<sys::lmrt_model_info>() as u32;
        // SAFETY: a live model and a struct of struct_size bytes.
        let s = unsafe { sys::lmrt_model_get_info(self.raw.as_ptr(), &mut info) };
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        Ok(ModelInfo {
            architecture: message_from(&info.architecture),
            name: message_from(&info.name),
            n_vocab: info.n_vocab,
            n_layer: info.n_layer,
            n_ctx_train: info.n_ctx_train,
            n_params: info.n_params,
        })
    }

    /// Token ids of `text`, with BOS first when `add_bos` and the vocabulary asks for it.
    pub fn tokenize(&self, text: &str, add_bos: bool) -> Result<Vec<i32>> {
        let flags = if add_bos {
            sys::LMRT_TOKENIZE_ADD_BOS
        } else {
            0
        };
        let mut tokens = vec![0i32; text.len() + 2];
        loop {
            let mut n = 0usize;
            // SAFETY: text is text.len() bytes; tokens has tokens.len() slots.
            let s = unsafe {
                sys::lmrt_tokenize(
                    self.raw.as_ptr(),
                    text.as_ptr().cast(),
                    text.len(),
                    flags,
                    tokens.as_mut_ptr(),
                    tokens.len(),
                    &mut n,
                )
            };
            if s == sys::LMRT_OK {
                tokens.truncate(n);
                return Ok(tokens);
            }
            if n > tokens.len() {
                tokens.resize(n, 0); // BUFFER_TOO_SMALL: n is the needed count
                continue;
            }
            return Err(self.last_error(s));
        }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: every Context borrows the Model, so none is left when it drops.
        unsafe { sys::lmrt_model_close(self.raw.as_ptr()) };
    }
}

/// How big a context is; 0 means the library's default.
#[derive(Debug, Clone, Copy, Default)]
pub struct ContextParams {
    pub n_ctx: u32,
    pub n_threads: u32,
}

/// Why a generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    None,
    Eos,
    Stop,
    Length,
    Cancelled,
    ContextFull,
    Error,
    /// A reason newer than these bindings.
    Other(u32),
}

impl FinishReason {
    fn from_raw(raw: u32) -> Self {
        match raw {
            sys::LMRT_FINISH_NONE => FinishReason::None,
            sys::LMRT_FINISH_EOS => FinishReason::Eos,
            sys::LMRT_FINISH_STOP => FinishReason::Stop,
            sys::LMRT_FINISH_LENGTH => FinishReason::Length,
            sys::LMRT_FINISH_CANCELLED => FinishReason::Cancelled,
            sys::LMRT_FINISH_CONTEXT_FULL => FinishReason::ContextFull,
            sys::LMRT_FINISH_ERROR => FinishReason::Error,
            other => FinishReason::Other(other),
        }
    }
}

/// The outcome of `Context::generate`.
#[derive(Debug, Clone)]
pub struct Completion {
    pub text: String,
    pub tokens: Vec<i32>,
    pub finish_reason: FinishReason,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// Prompt tokens whose KV entries were reused rather than evaluated.
    pub reused_tokens: u32,
    /// One per generated token when the request asked for logprobs, else empty.
    pub logprobs: Vec<TokenLogprobs>,
}

/// A token and its natural-log probability under the model's own distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Logprob {
    pub token: i32,
    pub logprob: f32,
}

/// A generated token's logprob and the most likely alternatives, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprobs {
    pub chosen: Logprob,
    pub top: Vec<Logprob>,
}

/// One generation: the prompt and how its tokens are picked and stopped. `Request::new(prompt)`
/// is a greedy completion of the library's default length; set the fields to sample
/// (`temperature` > 0, with `seed`), stop, ask for logprobs or constrain the output. `samplers`,
/// when set, is a chain spec (lmrt_sampler_create's syntax) used instead of `temperature` ..
/// `logit_bias`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub prompt: String,
    pub max_tokens: i32,
    pub temperature: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub typical_p: f32,
    pub repeat_penalty: f32,
    pub presence_penalty: f32,
    pub frequency_penalty: f32,
    /// (token, bias added to its logit); `f32::NEG_INFINITY` bans the token.
    pub logit_bias: Vec<(i32, f32)>,
    pub samplers: Option<String>,
    /// The sampling seed; `None` draws one.
    pub seed: Option<u64>,
    /// Generation ends before the first of these that appears.
    pub stop: Vec<String>,
    /// `Some(n)`: each token's logprob and `n` alternatives (0..=20).
    pub logprobs: Option<u32>,
    /// llama.cpp's GBNF (start rule `root`): the output follows it.
    pub grammar: Option<String>,
    /// JSON Schema text: the output is JSON valid against it.
    pub json_schema: Option<String>,
}

/// A request struct holding the library's defaults (lmrt_generate_request_init).
fn default_request() -> sys::lmrt_generate_request {
    // SAFETY: all-zero is valid for the request; _init fills it.
    let mut r: sys::lmrt_generate_request = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer and its size.
    unsafe {
        sys::lmrt_generate_request_init_sized(
            &mut r,
            std::mem::size_of::<sys::lmrt_generate_request>(),
        )
    };
    r
}

impl Request {
    /// A greedy completion of `prompt` with the library's defaults.
    pub fn new(prompt: &str) -> Request {
        let r = default_request();
        Request {
            prompt: prompt.to_string(),
            max_tokens: r.max_tokens,
            temperature: r.temperature,
            top_k: r.top_k,
            top_p: r.top_p,
            min_p: r.min_p,
            typical_p: r.typical_p,
            repeat_penalty: r.repeat_penalty,
            presence_penalty: r.presence_penalty,
            frequency_penalty: r.frequency_penalty,
            logit_bias: Vec::new(),
            samplers: None,
            seed: None,
            stop: Vec::new(),
            logprobs: None,
            grammar: None,
            json_schema: None,
        }
    }
}

/// A `Request` laid out for the library: the C struct and the memory its pointers reach, which
/// lives as long as this value (every call that takes a request copies it before returning).
struct RawRequest {
    req: sys::lmrt_generate_request,
    _strings: Vec<CString>,
    _stop: Vec<*const c_char>,
    _bias: Vec<sys::lmrt_logit_bias>,
}

impl RawRequest {
    fn new(r: &Request) -> Result<RawRequest> {
        let mut req = default_request();
        let mut strings = Vec::new();
        let mut keep = |c: CString| {
            let p = c.as_ptr();
            strings.push(c);
            p
        };
        req.prompt = r.prompt.as_ptr().cast();
        req.prompt_len = r.prompt.len();
        req.max_tokens = r.max_tokens;
        req.temperature = r.temperature;
        req.top_k = r.top_k;
        req.top_p = r.top_p;
        req.min_p = r.min_p;
        req.typical_p = r.typical_p;
        req.repeat_penalty = r.repeat_penalty;
        req.presence_penalty = r.presence_penalty;
        req.frequency_penalty = r.frequency_penalty;
        req.seed = r.seed.unwrap_or(sys::LMRT_SEED_RANDOM);
        if let Some(spec) = &r.samplers {
            req.samplers = keep(nul_free(spec, "samplers")?);
        }
        if let Some(g) = &r.grammar {
            req.grammar = keep(nul_free(g, "grammar")?);
        }
        if let Some(js) = &r.json_schema {
            req.json_schema = keep(nul_free(js, "json_schema")?);
        }
        let mut stop = Vec::with_capacity(r.stop.len());
        for s in &r.stop {
            stop.push(keep(nul_free(s, "a stop string")?));
        }
        let bias: Vec<_> = r
            .logit_bias
            .iter()
            .map(|&(token, bias)| sys::lmrt_logit_bias { token, bias })
            .collect();
        if !stop.is_empty() {
            req.stop = stop.as_ptr();
            req.n_stop = stop.len();
        }
        if !bias.is_empty() {
            req.logit_bias = bias.as_ptr();
            req.n_logit_bias = bias.len() as u32;
        }
        req.logprobs = r.logprobs.map_or(-1, |n| n as i32);
        // The vectors' heap buffers do not move when the vectors move into the struct.
        Ok(RawRequest {
            req,
            _strings: strings,
            _stop: stop,
            _bias: bias,
        })
    }
}

/// A generation context on a model: its own KV cache and threads. It borrows the model, so the
/// model cannot be dropped first; `&mut self` methods keep it to one thread at a time.
pub struct Context<'m> {
    raw: NonNull<sys::lmrt_context>,
    _model: PhantomData<&'m Model>,
}

// SAFETY: a context may move between threads; it is used by one thread at a time (no Sync).
unsafe impl Send for Context<'_> {}

/// What the streaming trampoline needs: the caller's closure and a panic it raised, if any.
struct Stream<'f> {
    on_text: &'f mut dyn FnMut(&str) -> ControlFlow<()>,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

unsafe extern "C" fn on_token(
    user_data: *mut c_void,
    event: *const sys::lmrt_token_event,
) -> c_int {
    // SAFETY: user_data is the &mut Stream given to lmrt_generate, alive for the whole call.
    let stream = &mut *(user_data as *mut Stream<'_>);
    let event = &*event;
    let bytes = std::slice::from_raw_parts(event.text.cast::<u8>(), event.text_len);
    let text = String::from_utf8_lossy(bytes); // complete UTF-8 characters by contract
                                               // A panic must not unwind into C: catch it, cancel, and resume it after lmrt_generate.
    match panic::catch_unwind(AssertUnwindSafe(|| (stream.on_text)(&text))) {
        Ok(ControlFlow::Continue(())) => 0,
        Ok(ControlFlow::Break(())) => 1,
        Err(payload) => {
            stream.panic = Some(payload);
            1
        }
    }
}

impl<'m> Context<'m> {
    pub fn new(model: &'m Model, params: ContextParams) -> Result<Context<'m>> {
        // SAFETY: an all-zero params struct is valid; _init fills it.
        let mut p: sys::lmrt_context_params = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer.
        unsafe {
            sys::lmrt_context_params_init_sized(
                &mut p,
                std::mem::size_of::<sys::lmrt_context_params>(),
            )
        };
        p.n_ctx = params.n_ctx;
        p.n_threads = params.n_threads;
        let mut raw = ptr::null_mut();
        let mut err = [0 as c_char; 512];
        // SAFETY: a live model; out pointer and message buffer of err.len() bytes.
        let s = unsafe {
            sys::lmrt_context_create(
                model.raw.as_ptr(),
                &p,
                &mut raw,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if s != sys::LMRT_OK {
            return Err(Error::new(s, message_from(&err)));
        }
        NonNull::new(raw)
            .map(|raw| Context {
                raw,
                _model: PhantomData,
            })
            .ok_or_else(|| {
                Error::new(
                    sys::LMRT_ERR_INVALID_ARGUMENT,
                    "lmrt_context_create returned no context".into(),
                )
            })
    }

    /// Greedily completes `prompt`, calling `on_text` with each complete piece of UTF-8 text;
    /// `on_text` returns `ControlFlow::Break(())` to cancel (the result then says `Cancelled`).
    pub fn generate<F>(&mut self, prompt: &str, max_tokens: i32, on_text: F) -> Result<Completion>
    where
        F: FnMut(&str) -> ControlFlow<()>,
    {
        let mut r = Request::new(prompt);
        r.max_tokens = max_tokens;
        self.generate_request(&r, on_text)
    }

    /// Runs `request` (sampling, stops, logprobs, a grammar) as `generate` does.
    pub fn generate_request<F>(&mut self, request: &Request, mut on_text: F) -> Result<Completion>
    where
        F: FnMut(&str) -> ControlFlow<()>,
    {
        let raw = RawRequest::new(request)?;
        // SAFETY: all-zero is valid for the result (integers and NULL pointers).
        let mut res: sys::lmrt_generate_result = unsafe { std::mem::zeroed() };
        res.struct_size = std::mem::size_of::<sys::lmrt_generate_result>() as u32;
        let mut stream = Stream {
            on_text: &mut on_text,
            panic: None,
        };
        // SAFETY: a live context used by this thread only (&mut self); raw's pointers reach memory
        // it owns; `stream` outlives the call, which is the only place it is used.
        let s = unsafe {
            sys::lmrt_generate(
                self.raw.as_ptr(),
                &raw.req,
                Some(on_token),
                (&mut stream as *mut Stream<'_>).cast(),
                &mut res,
            )
        };
        if let Some(payload) = stream.panic.take() {
            panic::resume_unwind(payload);
        }
        if s != sys::LMRT_OK {
            // SAFETY: a live context; the message is copied at once.
            return Err(Error::new(s, unsafe {
                cstr(sys::lmrt_context_last_error(self.raw.as_ptr()))
            }));
        }
        // SAFETY: text, tokens and logprobs are owned by the context and valid until its next
        // generate; they are copied here, while &mut self is still held.
        Ok(unsafe { completion_from(&res) })
    }
}

/// Copies a result's text and tokens out of the library.
///
/// # Safety
/// res.text, res.tokens and res.logprobs must be NULL or point to text_len bytes and
/// completion_tokens ids and entries.
unsafe fn completion_from(res: &sys::lmrt_generate_result) -> Completion {
    let text = if res.text.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts(res.text.cast::<u8>(), res.text_len).to_vec()
    };
    let tokens = if res.tokens.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts(res.tokens, res.completion_tokens as usize).to_vec()
    };
    Completion {
        text: String::from_utf8_lossy(&text).into_owned(),
        tokens,
        finish_reason: FinishReason::from_raw(res.finish_reason),
        prompt_tokens: res.prompt_tokens,
        completion_tokens: res.completion_tokens,
        reused_tokens: res.reused_tokens,
        logprobs: if res.logprobs.is_null() {
            Vec::new()
        } else {
            std::slice::from_raw_parts(res.logprobs, res.completion_tokens as usize)
                .iter()
                .map(|e| TokenLogprobs {
                    chosen: Logprob {
                        token: e.chosen.token,
                        logprob: e.chosen.logprob,
                    },
                    top: e.top[..(e.n_top as usize).min(sys::LMRT_MAX_TOP_LOGPROBS)]
                        .iter()
                        .map(|t| Logprob {
                            token: t.token,
                            logprob: t.logprob,
                        })
                        .collect(),
                })
                .collect()
        },
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        // SAFETY: the context is live and no borrow of its results outlives &mut self.
        unsafe { sys::lmrt_context_free(self.raw.as_ptr()) };
    }
}

/// How an `Engine` runs (lmrt_engine_params); `Default` is the library's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineParams {
    /// Requests decoding at once, 1..=16; more wait in a queue.
    pub max_sequences: u32,
    /// Prompt tokens of one request per step.
    pub prefill_chunk: u32,
    /// A prompt starts from the longest prefix of it that the arena holds (computed once).
    pub prefix_reuse: bool,
    /// Finished requests' sequences kept as cached prefixes, 0..=16.
    pub retained_sequences: u32,
}

impl Default for EngineParams {
    fn default() -> Self {
        // SAFETY: an all-zero params struct is valid; _init fills it.
        let mut p: sys::lmrt_engine_params = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer and its size.
        unsafe {
            sys::lmrt_engine_params_init_sized(
                &mut p,
                std::mem::size_of::<sys::lmrt_engine_params>(),
            )
        };
        EngineParams {
            max_sequences: p.max_sequences,
            prefill_chunk: p.prefill_chunk,
            prefix_reuse: p.prefix_reuse != 0,
            retained_sequences: p.retained_sequences,
        }
    }
}

/// What an engine holds at one moment (lmrt_engine_get_stats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineStats {
    pub queued: u32,
    pub running: u32,
    pub max_sequences: u32,
    pub cells: u32,
    pub cells_used: u32,
    pub started: bool,
    pub cached: u32,
}

/// Many requests decoded together on one context (lmrt_engine_*): every step is one forward
/// pass over the next token of each, and each gets the tokens `Context::generate` gives it alone.
/// The engine holds the context's `&mut` borrow, since the context is the engine's while it lives.
/// It steps on the caller's thread (`step`, `run`) or, between `start` and `stop`, on a thread of
/// its own: the closures then run there (so they are `Send`), and `wait` blocks until a request
/// has finished. A panic in a closure cancels its request and resumes in `step`, `run` or `stop`.
pub struct Engine<'c> {
    raw: NonNull<sys::lmrt_engine>,
    // Each request's closure, boxed so that its address (the callback's user_data) never moves.
    streams: std::collections::HashMap<u64, Box<EngineStream<'c>>>,
    _ctx: PhantomData<&'c mut ()>,
}

type OnText<'c> = Box<dyn FnMut(&str) -> ControlFlow<()> + Send + 'c>;
type OnFinish<'c> = Box<dyn FnOnce(FinishReason) + Send + 'c>;

struct EngineStream<'c> {
    on_text: OnText<'c>,
    on_finish: Option<OnFinish<'c>>,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

unsafe extern "C" fn on_engine_token(
    user_data: *mut c_void,
    event: *const sys::lmrt_token_event,
) -> c_int {
    // SAFETY: user_data is the boxed EngineStream of this request, alive while the engine holds it.
    let stream = &mut *(user_data as *mut EngineStream<'_>);
    let event = &*event;
    let bytes = std::slice::from_raw_parts(event.text.cast::<u8>(), event.text_len);
    let text = String::from_utf8_lossy(bytes);
    // A panic must not unwind into C: catch it, cancel the request, resume it after the step.
    match panic::catch_unwind(AssertUnwindSafe(|| (stream.on_text)(&text))) {
        Ok(ControlFlow::Continue(())) => 0,
        Ok(ControlFlow::Break(())) => 1,
        Err(payload) => {
            stream.panic = Some(payload);
            1
        }
    }
}

unsafe extern "C" fn on_engine_finish(user_data: *mut c_void, _request_id: u64, reason: c_int) {
    // SAFETY: user_data is the boxed EngineStream of this request, alive while the engine holds it.
    let stream = &mut *(user_data as *mut EngineStream<'_>);
    if let Some(on_finish) = stream.on_finish.take() {
        let reason = FinishReason::from_raw(reason as u32);
        // A panic must not unwind into C: it resumes after the step, as on_text's do.
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| on_finish(reason))) {
            stream.panic.get_or_insert(payload);
        }
    }
}

impl<'c> Engine<'c> {
    /// An engine on `ctx` running up to `max_sequences` requests at once (1..=16), prompts fed
    /// `prefill_chunk` tokens per step.
    pub fn new<'m>(
        ctx: &'c mut Context<'m>,
        max_sequences: u32,
        prefill_chunk: u32,
    ) -> Result<Engine<'c>> {
        let params = EngineParams {
            max_sequences,
            prefill_chunk,
            ..EngineParams::default()
        };
        Engine::with_params(ctx, &params)
    }

    /// An engine on `ctx` with all of `params`.
    pub fn with_params<'m>(ctx: &'c mut Context<'m>, params: &EngineParams) -> Result<Engine<'c>> {
        // SAFETY: an all-zero params struct is valid; _init fills it.
        let mut p: sys::lmrt_engine_params = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer.
        unsafe {
            sys::lmrt_engine_params_init_sized(
                &mut p,
                std::mem::size_of::<sys::lmrt_engine_params>(),
            )
        };
        p.max_sequences = params.max_sequences;
        p.prefill_chunk = params.prefill_chunk;
        p.prefix_reuse = u32::from(params.prefix_reuse);
        p.retained_sequences = params.retained_sequences;
        p.on_finish = Some(on_engine_finish); // calls a request's own on_finish, where it has one
        let mut raw = ptr::null_mut();
        let mut err = [0 as c_char; 512];
        // SAFETY: a live context, borrowed mutably for the engine's life; buffers of their sizes.
        let s = unsafe {
            sys::lmrt_engine_create(ctx.raw.as_ptr(), &p, &mut raw, err.as_mut_ptr(), err.len())
        };
        if s != sys::LMRT_OK {
            return Err(Error::new(s, message_from(&err)));
        }
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::new(
                sys::LMRT_ERR_INVALID_ARGUMENT,
                "lmrt_engine_create returned no engine".into(),
            )
        })?;
        Ok(Engine {
            raw,
            streams: std::collections::HashMap::new(),
            _ctx: PhantomData,
        })
    }

    fn last_error(&self, s: sys::lmrt_status) -> Error {
        // SAFETY: a live engine; the message is copied at once.
        Error::new(s, unsafe {
            cstr(sys::lmrt_engine_last_error(self.raw.as_ptr()))
        })
    }

    /// Queues a greedy completion of `prompt`; `on_text` receives its pieces of text during
    /// `step`/`run` and returns `ControlFlow::Break(())` to cancel it. Returns the request's id.
    pub fn submit<F>(&mut self, prompt: &str, max_tokens: i32, on_text: F) -> Result<u64>
    where
        F: FnMut(&str) -> ControlFlow<()> + Send + 'c,
    {
        let mut r = Request::new(prompt);
        r.max_tokens = max_tokens;
        self.submit_request(&r, on_text)
    }

    /// Queues `request` (its own sampling, seed, stops, logprobs, grammar) as `submit` does; a
    /// seeded request gets the tokens `Context::generate_request` gives it alone.
    pub fn submit_request<F>(&mut self, request: &Request, on_text: F) -> Result<u64>
    where
        F: FnMut(&str) -> ControlFlow<()> + Send + 'c,
    {
        self.submit_stream(request, Box::new(on_text), None)
    }

    /// `submit_request`, and `on_finish` is called once with the finish reason when the request
    /// finishes (after its last `on_text`, on the thread that steps), however it ends: eos, stop,
    /// length, cancelled, context full or failed. A request the engine drops unfinished (the engine
    /// freed first) never calls it.
    pub fn submit_request_with_finish<F, G>(
        &mut self,
        request: &Request,
        on_text: F,
        on_finish: G,
    ) -> Result<u64>
    where
        F: FnMut(&str) -> ControlFlow<()> + Send + 'c,
        G: FnOnce(FinishReason) + Send + 'c,
    {
        self.submit_stream(request, Box::new(on_text), Some(Box::new(on_finish)))
    }

    fn submit_stream(
        &mut self,
        request: &Request,
        on_text: OnText<'c>,
        on_finish: Option<OnFinish<'c>>,
    ) -> Result<u64> {
        let raw = RawRequest::new(request)?;
        let mut stream = Box::new(EngineStream {
            on_text,
            on_finish,
            panic: None,
        });
        let mut id = 0u64;
        // SAFETY: a live engine; the request is read before the call returns; the boxed stream is
        // kept in self.streams (so at the same address) for as long as the engine may call it.
        let s = unsafe {
            sys::lmrt_engine_submit(
                self.raw.as_ptr(),
                &raw.req,
                Some(on_engine_token),
                (&mut *stream as *mut EngineStream<'c>).cast(),
                &mut id,
            )
        };
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        self.streams.insert(id, stream);
        Ok(id)
    }

    /// Cancels a request: it finishes as `Cancelled` at the next step.
    pub fn cancel(&mut self, id: u64) -> Result<()> {
        // SAFETY: a live engine.
        let s = unsafe { sys::lmrt_engine_cancel(self.raw.as_ptr(), id) };
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        Ok(())
    }

    fn resume_panics(&mut self) {
        for stream in self.streams.values_mut() {
            if let Some(payload) = stream.panic.take() {
                panic::resume_unwind(payload);
            }
        }
    }

    /// One forward pass over every running request; returns how many are still queued or running.
    pub fn step(&mut self) -> Result<u32> {
        let mut unfinished = 0u32;
        // SAFETY: a live engine used by this thread only (&mut self).
        let s = unsafe { sys::lmrt_engine_step(self.raw.as_ptr(), &mut unfinished) };
        self.resume_panics();
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        Ok(unfinished)
    }

    /// Steps until every request has finished.
    pub fn run(&mut self) -> Result<()> {
        // SAFETY: a live engine used by this thread only (&mut self).
        let s = unsafe { sys::lmrt_engine_run(self.raw.as_ptr()) };
        self.resume_panics();
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        Ok(())
    }

    /// A request's completion so far (`FinishReason::None` while it runs).
    pub fn result(&mut self, id: u64) -> Result<Completion> {
        // SAFETY: all-zero is valid for the result; struct_size is set below.
        let mut res: sys::lmrt_generate_result = unsafe { std::mem::zeroed() };
        res.struct_size = std::mem::size_of::<sys::lmrt_generate_result>() as u32;
        // SAFETY: a live engine and a result struct of struct_size bytes.
        let s = unsafe { sys::lmrt_engine_result(self.raw.as_ptr(), id, &mut res) };
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        // SAFETY: text and tokens are the engine's, valid until the request is released; copied
        // here while &mut self is held.
        Ok(unsafe { completion_from(&res) })
    }

    /// Forgets a finished request (and drops its closure).
    pub fn release(&mut self, id: u64) -> Result<()> {
        // SAFETY: a live engine.
        let s = unsafe { sys::lmrt_engine_release(self.raw.as_ptr(), id) };
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        self.streams.remove(&id);
        Ok(())
    }

    /// Runs the steps on the engine's own thread until `stop` (it sleeps while no request is
    /// left); `step` and `run` are refused meanwhile.
    pub fn start(&mut self) -> Result<()> {
        // SAFETY: a live engine; the closures it will call from its thread are Send and stay in
        // self.streams until released (finished) or the engine is freed (its thread stopped first).
        let s = unsafe { sys::lmrt_engine_start(self.raw.as_ptr()) };
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        Ok(())
    }

    /// Stops the engine's thread after the step under way; requests keep their state (`start` or
    /// `run` goes on with them). Stopping a stopped engine does nothing.
    pub fn stop(&mut self) -> Result<()> {
        // SAFETY: a live engine; after this returns its thread no longer runs any closure.
        let s = unsafe { sys::lmrt_engine_stop(self.raw.as_ptr()) };
        self.resume_panics();
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        Ok(())
    }

    /// Waits until request `id` has finished (`true`), `timeout` has passed (`None`: no limit) or
    /// the engine's thread stopped (`false`); returns at once on an engine that is not started.
    pub fn wait(&mut self, id: u64, timeout: Option<std::time::Duration>) -> Result<bool> {
        let ms = timeout.map_or(-1, |t| i64::try_from(t.as_millis()).unwrap_or(i64::MAX));
        let mut finished: c_int = 0;
        // SAFETY: a live engine and a valid out pointer.
        let s = unsafe { sys::lmrt_engine_wait(self.raw.as_ptr(), id, ms, &mut finished) };
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        Ok(finished != 0)
    }

    /// What the engine holds now.
    pub fn stats(&mut self) -> Result<EngineStats> {
        let mut st = sys::lmrt_engine_stats {
            struct_size: std::mem::size_of::<sys::lmrt_engine_stats>() as u32,
            ..Default::default()
        };
        // SAFETY: a live engine and a stats struct of struct_size bytes.
        let s = unsafe { sys::lmrt_engine_get_stats(self.raw.as_ptr(), &mut st) };
        if s != sys::LMRT_OK {
            return Err(self.last_error(s));
        }
        Ok(EngineStats {
            queued: st.n_queued,
            running: st.n_running,
            max_sequences: st.max_sequences,
            cells: st.n_cells,
            cells_used: st.n_cells_used,
            started: st.started != 0,
            cached: st.n_cached,
        })
    }
}

impl Drop for Engine<'_> {
    fn drop(&mut self) {
        // SAFETY: the engine is live; its requests' closures (self.streams) drop after it.
        unsafe { sys::lmrt_engine_free(self.raw.as_ptr()) };
    }
}
