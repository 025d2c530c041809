package lmrt

/*
#include <stdint.h>
#include <lmrt/lmrt.h>

lmrt_status lmrt_go_engine_submit(lmrt_engine* engine, const lmrt_generate_request* request, uintptr_t handle,
                                  uint64_t* request_id);
void lmrt_go_engine_params_notify(lmrt_engine_params* params);
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// Engine runs many requests together on one context (lmrt_engine_*): every step is one
// forward pass over the next token of each, and each gets the tokens Generate gives it alone. The
// context is the engine's while it is open: do not use it otherwise. Methods serialize themselves.
// Start runs the steps on a thread of the engine's own (then onText runs there, and must not call
// the Engine's methods); Wait blocks until one request has finished.
type Engine struct {
	mu      sync.Mutex
	ctx     *Context
	raw     *C.lmrt_engine
	handles map[uint64]cgo.Handle // each request's callback state, until Release or Close
}

// EngineParams is how an engine runs (lmrt_engine_params); DefaultEngineParams gives the
// library's defaults.
type EngineParams struct {
	MaxSequences      uint32 // requests decoding at once, 1..16; more wait in a queue
	PrefillChunk      uint32 // prompt tokens of one request per step
	PrefixReuse       bool   // a prompt starts from the longest prefix of it the arena holds
	RetainedSequences uint32 // finished requests' sequences kept as cached prefixes, 0..16
}

// DefaultEngineParams is the library's defaults.
func DefaultEngineParams() EngineParams {
	var p C.lmrt_engine_params
	C.lmrt_engine_params_init(&p)
	return EngineParams{uint32(p.max_sequences), uint32(p.prefill_chunk), p.prefix_reuse != 0, uint32(p.retained_sequences)}
}

// NewEngine creates an engine on c running up to maxSequences requests at once (1..16), prompts
// fed prefillChunk tokens per step.
func (c *Context) NewEngine(maxSequences, prefillChunk uint32) (*Engine, error) {
	p := DefaultEngineParams()
	p.MaxSequences, p.PrefillChunk = maxSequences, prefillChunk
	return c.NewEngineWithParams(p)
}

// NewEngineWithParams creates an engine on c with all of params.
func (c *Context) NewEngineWithParams(params EngineParams) (*Engine, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.raw == nil {
		return nil, ErrClosed
	}
	var p C.lmrt_engine_params
	C.lmrt_engine_params_init(&p)
	p.max_sequences = C.uint32_t(params.MaxSequences)
	p.prefill_chunk = C.uint32_t(params.PrefillChunk)
	p.prefix_reuse = 0
	if params.PrefixReuse {
		p.prefix_reuse = 1
	}
	p.retained_sequences = C.uint32_t(params.RetainedSequences)
	C.lmrt_go_engine_params_notify(&p) // calls a request's own onFinish, where it has one
	var raw *C.lmrt_engine
	var msg [512]C.char
	if s := C.lmrt_engine_create(c.raw, &p, &raw, &msg[0], C.size_t(len(msg))); s != C.LMRT_OK {
		return nil, &Error{Status(s), C.GoString(&msg[0])}
	}
	return &Engine{ctx: c, raw: raw, handles: map[uint64]cgo.Handle{}}, nil
}

// EngineStats is what an engine holds at one moment (lmrt_engine_get_stats).
type EngineStats struct {
	Queued, Running, MaxSequences, Cells, CellsUsed, Cached uint32
	Started                                                 bool
}

// Stats reports what the engine holds now.
func (e *Engine) Stats() (EngineStats, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return EngineStats{}, ErrClosed
	}
	var st C.lmrt_engine_stats
	st.struct_size = C.uint32_t(unsafe.Sizeof(st))
	if s := C.lmrt_engine_get_stats(e.raw, &st); s != C.LMRT_OK {
		return EngineStats{}, e.lastError(s)
	}
	return EngineStats{uint32(st.n_queued), uint32(st.n_running), uint32(st.max_sequences), uint32(st.n_cells),
		uint32(st.n_cells_used), uint32(st.n_cached), st.started != 0}, nil
}

func (e *Engine) lastError(s C.lmrt_status) error {
	return &Error{Status(s), C.GoString(C.lmrt_engine_last_error(e.raw))}
}

// Submit queues a greedy completion of prompt; onText (may be nil) receives its pieces during
// Step/Run, and an error it returns, or ctx's cancellation, cancels the request. Returns its id.
func (e *Engine) Submit(ctx context.Context, prompt string, maxTokens int, onText func(string) error) (uint64, error) {
	return e.SubmitRequest(ctx, &Request{Prompt: prompt, MaxTokens: maxTokens}, onText)
}

// SubmitRequest queues r (its own sampling, seed, stops, logprobs, grammar) as Submit does; a
// seeded request gets the tokens GenerateRequest gives it alone.
func (e *Engine) SubmitRequest(ctx context.Context, r *Request, onText func(string) error) (uint64, error) {
	return e.SubmitRequestWithFinish(ctx, r, onText, nil)
}

// SubmitRequestWithFinish is SubmitRequest, and onFinish (may be nil) is called once with the
// finish reason when the request finishes, however it ends (eos, stop, length, cancelled, context
// full, failed), after its last onText and on the goroutine that steps (the engine's own thread once
// started). Like onText it must return quickly and must not call the Engine's methods. A request
// that Close drops unfinished never calls it.
func (e *Engine) SubmitRequestWithFinish(ctx context.Context, r *Request, onText func(string) error,
	onFinish func(FinishReason)) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return 0, ErrClosed
	}
	req := newCRequest(r)
	defer req.free()
	if req.err != nil {
		return 0, req.err
	}
	h := cgo.NewHandle(&generation{ctx: ctx, onText: onText, onFinish: onFinish})
	var id C.uint64_t
	if s := C.lmrt_go_engine_submit(e.raw, &req.req, C.uintptr_t(h), &id); s != C.LMRT_OK {
		h.Delete()
		return 0, e.lastError(s)
	}
	e.handles[uint64(id)] = h
	return uint64(id), nil
}

// Cancel makes a request finish as FinishCancelled at the next step.
func (e *Engine) Cancel(id uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return ErrClosed
	}
	if s := C.lmrt_engine_cancel(e.raw, C.uint64_t(id)); s != C.LMRT_OK {
		return e.lastError(s)
	}
	return nil
}

// Step runs one forward pass over every running request and returns how many are still queued
// or running.
func (e *Engine) Step() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return 0, ErrClosed
	}
	var n C.uint32_t
	if s := C.lmrt_engine_step(e.raw, &n); s != C.LMRT_OK {
		return 0, e.lastError(s)
	}
	return int(n), nil
}

// Run steps until every request has finished.
func (e *Engine) Run() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return ErrClosed
	}
	if s := C.lmrt_engine_run(e.raw); s != C.LMRT_OK {
		return e.lastError(s)
	}
	return nil
}

// Result is a request's completion so far (FinishNone while it runs).
func (e *Engine) Result(id uint64) (*Completion, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return nil, ErrClosed
	}
	var res C.lmrt_generate_result
	res.struct_size = C.uint32_t(unsafe.Sizeof(res))
	if s := C.lmrt_engine_result(e.raw, C.uint64_t(id), &res); s != C.LMRT_OK {
		return nil, e.lastError(s)
	}
	return completionFrom(&res), nil
}

// Release forgets a finished request.
func (e *Engine) Release(id uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return ErrClosed
	}
	if s := C.lmrt_engine_release(e.raw, C.uint64_t(id)); s != C.LMRT_OK {
		return e.lastError(s)
	}
	if h, ok := e.handles[id]; ok {
		h.Delete()
		delete(e.handles, id)
	}
	return nil
}

// Start runs the engine on a thread of its own (lmrt_engine_start): it steps while requests are
// queued or running and sleeps otherwise. Submit, Cancel, Wait, Result and Release may be called
// from any goroutine meanwhile; Step and Run are refused until Stop.
func (e *Engine) Start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return ErrClosed
	}
	if s := C.lmrt_engine_start(e.raw); s != C.LMRT_OK {
		return e.lastError(s)
	}
	return nil
}

// Stop ends the engine's thread after the step under way; requests keep their state (Start or
// Run goes on with them).
func (e *Engine) Stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return ErrClosed
	}
	if s := C.lmrt_engine_stop(e.raw); s != C.LMRT_OK {
		return e.lastError(s)
	}
	return nil
}

// Wait blocks until request id has finished (true), timeout has passed (a negative timeout waits
// without limit) or the engine's thread stopped (false). It holds no lock of the Engine meanwhile,
// so other goroutines go on submitting; do not Close the Engine while a Wait runs.
func (e *Engine) Wait(id uint64, timeout time.Duration) (bool, error) {
	e.mu.Lock()
	raw := e.raw
	e.mu.Unlock()
	if raw == nil {
		return false, ErrClosed
	}
	ms := int64(-1)
	if timeout >= 0 {
		ms = timeout.Milliseconds()
	}
	var finished C.int
	if s := C.lmrt_engine_wait(raw, C.uint64_t(id), C.int64_t(ms), &finished); s != C.LMRT_OK {
		return false, &Error{Status(s), C.GoString(C.lmrt_engine_last_error(raw))}
	}
	return finished != 0, nil
}

// Close stops the engine's thread if it runs and frees the engine and its requests; the context
// is free for other use again. Closing twice is a no-op.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.raw == nil {
		return nil
	}
	C.lmrt_engine_stop(e.raw)
	C.lmrt_engine_free(e.raw)
	e.raw = nil
	for _, h := range e.handles {
		h.Delete()
	}
	e.handles = nil
	return nil
}
