// Package lmrt is a Go binding of lmrt's C ABI through cgo. Handles are closed explicitly
// (Close); text streams to a callback; a context.Context cancels a generation between tokens.
//
// Build against an installed lmrt: PKG_CONFIG_PATH=<prefix>/lib/pkgconfig, and
// CGO_LDFLAGS=-Wl,-rpath,<prefix>/lib for running from a non-system prefix.
package lmrt

/*
#cgo pkg-config: lmrt
#include <stdint.h>
#include <stdlib.h>
#include <lmrt/lmrt.h>

lmrt_status lmrt_go_generate(lmrt_context* ctx, const lmrt_generate_request* request, uintptr_t handle,
                             lmrt_generate_result* result);
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"
)

// Status is an lmrt_status code.
type Status int

const (
	OK              Status = C.LMRT_OK
	InvalidArgument Status = C.LMRT_ERR_INVALID_ARGUMENT
	IO              Status = C.LMRT_ERR_IO
	BadFormat       Status = C.LMRT_ERR_BAD_FORMAT
)

func (s Status) String() string { return C.GoString(C.lmrt_status_str(C.lmrt_status(s))) }

// Error is a failed lmrt call: its status and the library's message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Status, e.Message) }

// ErrClosed is returned when a closed handle is used.
var ErrClosed = errors.New("lmrt: handle is closed")

// CheckABI reports an error when the loaded liblmrt has another ABI major than lmrt.h.
func CheckABI() error {
	if got := C.lmrt_abi_version(); got != C.LMRT_ABI_VERSION {
		return fmt.Errorf("liblmrt has ABI %d, this program was built for %d", got, C.LMRT_ABI_VERSION)
	}
	return nil
}

// ISA names the instruction set whose kernels a model or context made now runs: "avx512", "avx2vnni",
// "avx2", "neon" or "scalar" (the best this CPU has, or the one LMRT_ISA names when the CPU has it).
func ISA() string { return C.GoString(C.lmrt_isa()) }

// GrammarCheck checks GBNF text as Request.Grammar would take it, without a model (syntax, rule
// names, limits, left recursion, the start rule's expansion): the error a generation would give, up front.
func GrammarCheck(gbnf string) error {
	if strings.IndexByte(gbnf, 0) >= 0 {
		return &Error{InvalidArgument, "the grammar contains a NUL byte"}
	}
	c := C.CString(gbnf)
	defer C.free(unsafe.Pointer(c))
	var msg [512]C.char
	if s := C.lmrt_grammar_check(c, &msg[0], C.size_t(len(msg))); s != C.LMRT_OK {
		return &Error{Status(s), C.GoString(&msg[0])}
	}
	return nil
}

// JSONSchemaToGrammar gives the GBNF whose sentences are exactly the JSON texts Request.JSONSchema
// allows for schema, for a grammar of one's own (e.g. a tool call's arguments between markers).
func JSONSchemaToGrammar(schema string) (string, error) {
	if strings.IndexByte(schema, 0) >= 0 {
		return "", &Error{InvalidArgument, "the schema contains a NUL byte"}
	}
	c := C.CString(schema)
	defer C.free(unsafe.Pointer(c))
	var msg [512]C.char
	var n C.size_t
	s := C.lmrt_json_schema_to_grammar(c, nil, 0, &n, &msg[0], C.size_t(len(msg)))
	if s != C.LMRT_OK && s != C.LMRT_ERR_BUFFER_TOO_SMALL {
		return "", &Error{Status(s), C.GoString(&msg[0])}
	}
	buf := make([]byte, int(n)+1)
	s = C.lmrt_json_schema_to_grammar(c, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &n, &msg[0],
		C.size_t(len(msg)))
	if s != C.LMRT_OK {
		return "", &Error{Status(s), C.GoString(&msg[0])}
	}
	return string(buf[:n]), nil
}

// Model is an open model. It may be used by any number of goroutines and contexts at once; close
// it after every Context made from it is closed.
type Model struct {
	mu       sync.Mutex
	raw      *C.lmrt_model
	contexts int
}

// Open opens a GGUF model file.
func Open(path string) (*Model, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var raw *C.lmrt_model
	var msg [512]C.char
	if s := C.lmrt_model_open(cpath, nil, &raw, &msg[0], C.size_t(len(msg))); s != C.LMRT_OK {
		return nil, &Error{Status(s), C.GoString(&msg[0])}
	}
	return &Model{raw: raw}, nil
}

// Close releases the model. It fails while contexts made from it are still open. Closing twice
// is a no-op.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.raw == nil {
		return nil
	}
	if m.contexts > 0 {
		return fmt.Errorf("lmrt: %d contexts still use this model; close them first", m.contexts)
	}
	C.lmrt_model_close(m.raw)
	m.raw = nil
	return nil
}

// ContextParams sizes a context; zero values take the library's defaults.
type ContextParams struct {
	NCtx     uint32
	NThreads uint32
}

// Context holds one conversation's KV cache and threads. Its methods serialize themselves, as
// lmrt allows one thread at a time on a context.
type Context struct {
	mu    sync.Mutex
	model *Model
	raw   *C.lmrt_context
}

// NewContext creates a context on the model.
func (m *Model) NewContext(p ContextParams) (*Context, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.raw == nil {
		return nil, ErrClosed
	}
	var cp C.lmrt_context_params
	C.lmrt_context_params_init(&cp)
	cp.n_ctx = C.uint32_t(p.NCtx)
	cp.n_threads = C.uint32_t(p.NThreads)
	var raw *C.lmrt_context
	var msg [512]C.char
	if s := C.lmrt_context_create(m.raw, &cp, &raw, &msg[0], C.size_t(len(msg))); s != C.LMRT_OK {
		return nil, &Error{Status(s), C.GoString(&msg[0])}
	}
	m.contexts++
	return &Context{model: m, raw: raw}, nil
}

// Close frees the context. Closing twice is a no-op.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.raw == nil {
		return nil
	}
	C.lmrt_context_free(c.raw)
	c.raw = nil
	c.model.mu.Lock()
	c.model.contexts--
	c.model.mu.Unlock()
	return nil
}

// FinishReason says why a generation stopped.
type FinishReason int

const (
	FinishNone        FinishReason = C.LMRT_FINISH_NONE
	FinishEOS         FinishReason = C.LMRT_FINISH_EOS
	FinishStop        FinishReason = C.LMRT_FINISH_STOP
	FinishLength      FinishReason = C.LMRT_FINISH_LENGTH
	FinishCancelled   FinishReason = C.LMRT_FINISH_CANCELLED
	FinishContextFull FinishReason = C.LMRT_FINISH_CONTEXT_FULL
	FinishError       FinishReason = C.LMRT_FINISH_ERROR
)

func (r FinishReason) String() string {
	return C.GoString(C.lmrt_finish_reason_str(C.lmrt_finish_reason(r)))
}

// Completion is what Generate produced.
type Completion struct {
	Text             string
	Tokens           []int32
	FinishReason     FinishReason
	PromptTokens     int
	CompletionTokens int
	ReusedTokens     int             // prompt tokens whose KV entries were reused, not evaluated
	Logprobs         []TokenLogprobs // one per token when the request asked for them
}

// generation is the Go state the C callback reaches through a cgo.Handle.
type generation struct {
	ctx      context.Context
	onText   func(string) error
	onFinish func(FinishReason) // an engine request's, called once
	err      error              // why the callback cancelled, if it did
}

//export goOnToken
func goOnToken(handle C.uintptr_t, event *C.lmrt_token_event) C.int {
	g := cgo.Handle(handle).Value().(*generation)
	if err := g.ctx.Err(); err != nil {
		g.err = err
		return 1
	}
	if g.onText != nil {
		if err := g.onText(C.GoStringN(event.text, C.int(event.text_len))); err != nil {
			g.err = err
			return 1
		}
	}
	return 0
}

//export goOnFinish
func goOnFinish(handle C.uintptr_t, reason C.int) {
	g := cgo.Handle(handle).Value().(*generation)
	if f := g.onFinish; f != nil {
		g.onFinish = nil
		f(FinishReason(reason))
	}
}

// Generate greedily completes prompt with at most maxTokens tokens, calling onText (may be nil)
// with each complete piece of UTF-8 text. When ctx is cancelled, or onText returns an error, the
// generation stops at the next token and Generate returns the partial Completion together with
// that error (ctx.Err() or onText's).
func (c *Context) Generate(ctx context.Context, prompt string, maxTokens int, onText func(string) error) (*Completion, error) {
	return c.GenerateRequest(ctx, &Request{Prompt: prompt, MaxTokens: maxTokens}, onText)
}

// GenerateRequest runs r (sampling, stops, logprobs, a grammar) as Generate does.
func (c *Context) GenerateRequest(ctx context.Context, r *Request, onText func(string) error) (*Completion, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.raw == nil {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req := newCRequest(r)
	defer req.free()
	if req.err != nil {
		return nil, req.err
	}
	var res C.lmrt_generate_result
	res.struct_size = C.uint32_t(unsafe.Sizeof(res))

	g := &generation{ctx: ctx, onText: onText}
	h := cgo.NewHandle(g)
	defer h.Delete()
	if s := C.lmrt_go_generate(c.raw, &req.req, C.uintptr_t(h), &res); s != C.LMRT_OK {
		return nil, &Error{Status(s), C.GoString(C.lmrt_context_last_error(c.raw))}
	}
	done := completionFrom(&res)
	return done, g.err
}

// completionFrom copies a result's text and tokens out of the library.
func completionFrom(res *C.lmrt_generate_result) *Completion {
	done := &Completion{
		Text:             C.GoStringN(res.text, C.int(res.text_len)),
		FinishReason:     FinishReason(res.finish_reason),
		PromptTokens:     int(res.prompt_tokens),
		CompletionTokens: int(res.completion_tokens),
		ReusedTokens:     int(res.reused_tokens),
		Logprobs:         logprobsFrom(res.logprobs, int(res.completion_tokens)),
	}
	if res.completion_tokens > 0 && res.tokens != nil {
		ids := unsafe.Slice((*int32)(unsafe.Pointer(res.tokens)), int(res.completion_tokens))
		done.Tokens = append([]int32(nil), ids...)
	}
	return done
}
