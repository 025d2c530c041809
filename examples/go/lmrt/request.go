package lmrt

/*
#include <stdint.h>
#include <stdlib.h>
#include <lmrt/lmrt.h>
*/
import "C"

import (
	"sort"
	"strings"
	"unsafe"
)

// SeedRandom as Request.Seed asks the library to draw a seed.
const SeedRandom uint64 = C.LMRT_SEED_RANDOM

// Request is one generation: the prompt and how its tokens are picked and stopped. Its zero
// value beyond Prompt is a greedy completion of the library's default length; a zero field takes
// the library's default (TopP and TypicalP 0 mean off, as their default 1 does; RepeatPenalty 0
// means off). Samplers, when set, is a chain spec (lmrt_sampler_create's syntax, e.g.
// "top_k(k=40) temperature(t=0.8) dist") used instead of Temperature .. LogitBias.
type Request struct {
	Prompt    string
	MaxTokens int // 0: the library's default (256)

	Temperature      float32 // 0: greedy
	TopK             int
	TopP             float32
	MinP             float32
	TypicalP         float32
	RepeatPenalty    float32
	PresencePenalty  float32
	FrequencyPenalty float32
	LogitBias        map[int32]float32 // added to the tokens' logits; math.Inf(-1) bans a token
	Samplers         string
	Seed             uint64 // the sampling seed (0 is a seed like any other); SeedRandom draws one

	Stop        []string // generation ends before the first of these that appears
	Logprobs    bool     // each generated token's logprob in Completion.Logprobs
	TopLogprobs int      // with Logprobs: that many alternatives per token (0..20)

	Grammar    string // llama.cpp's GBNF (start rule root): the output follows it
	JSONSchema string // JSON Schema text: the output is JSON valid against it
}

// Logprob is a token and its natural-log probability under the model's own distribution.
type Logprob struct {
	Token   int32
	Logprob float32
}

// TokenLogprobs is a generated token's logprob and the most likely alternatives, best first.
type TokenLogprobs struct {
	Chosen Logprob
	Top    []Logprob
}

// cRequest is a Request in C memory, for as long as the library reads it.
type cRequest struct {
	req   C.lmrt_generate_request
	blobs []unsafe.Pointer
	err   error // a field that cannot be passed
}

// cstring copies s. A field the library reads as a NUL-terminated string (named by what; "" for one
// passed with its length) would be cut at a NUL inside s (a stop string "a\x00b" stopping at "a"), so
// that is refused, as the Rust wrapper does.
func (c *cRequest) cstring(s, what string) *C.char {
	if what != "" && c.err == nil && strings.IndexByte(s, 0) >= 0 {
		c.err = &Error{InvalidArgument, what + " contains a NUL byte"}
	}
	p := C.CString(s)
	c.blobs = append(c.blobs, unsafe.Pointer(p))
	return p
}

func (c *cRequest) alloc(n uintptr) unsafe.Pointer {
	p := C.calloc(1, C.size_t(n))
	c.blobs = append(c.blobs, p)
	return p
}

func (c *cRequest) free() {
	for _, p := range c.blobs {
		C.free(p)
	}
	c.blobs = nil
}

// newCRequest copies r into C memory; free it once the library is done with the request (every
// call that takes one copies what it needs before it returns). Check its err before passing it.
func newCRequest(r *Request) *cRequest {
	c := &cRequest{}
	req := &c.req
	C.lmrt_generate_request_init(req)
	req.prompt = c.cstring(r.Prompt, "") // passed with its length: NUL is text
	req.prompt_len = C.size_t(len(r.Prompt))
	if r.MaxTokens != 0 {
		req.max_tokens = C.int32_t(r.MaxTokens)
	}
	req.temperature = C.float(r.Temperature)
	req.top_k = C.int32_t(r.TopK)
	if r.TopP != 0 {
		req.top_p = C.float(r.TopP)
	}
	req.min_p = C.float(r.MinP)
	if r.TypicalP != 0 {
		req.typical_p = C.float(r.TypicalP)
	}
	if r.RepeatPenalty != 0 {
		req.repeat_penalty = C.float(r.RepeatPenalty)
	}
	req.presence_penalty = C.float(r.PresencePenalty)
	req.frequency_penalty = C.float(r.FrequencyPenalty)
	req.seed = C.uint64_t(r.Seed)
	if r.Samplers != "" {
		req.samplers = c.cstring(r.Samplers, "Samplers")
	}
	if n := len(r.LogitBias); n > 0 {
		tokens := make([]int32, 0, n)
		for t := range r.LogitBias {
			tokens = append(tokens, t)
		}
		sort.Slice(tokens, func(i, j int) bool { return tokens[i] < tokens[j] })
		bias := unsafe.Slice((*C.lmrt_logit_bias)(c.alloc(uintptr(n)*unsafe.Sizeof(C.lmrt_logit_bias{}))), n)
		for i, t := range tokens {
			bias[i] = C.lmrt_logit_bias{token: C.int32_t(t), bias: C.float(r.LogitBias[t])}
		}
		req.logit_bias = &bias[0]
		req.n_logit_bias = C.uint32_t(n)
	}
	if n := len(r.Stop); n > 0 {
		stops := unsafe.Slice((**C.char)(c.alloc(uintptr(n)*unsafe.Sizeof((*C.char)(nil)))), n)
		for i, s := range r.Stop {
			stops[i] = c.cstring(s, "a Stop string")
		}
		req.stop = &stops[0]
		req.n_stop = C.size_t(n)
	}
	if r.Logprobs {
		req.logprobs = C.int32_t(r.TopLogprobs)
	}
	if r.Grammar != "" {
		req.grammar = c.cstring(r.Grammar, "Grammar")
	}
	if r.JSONSchema != "" {
		req.json_schema = c.cstring(r.JSONSchema, "JSONSchema")
	}
	return c
}

// logprobsFrom copies a result's n per-token logprobs (nil when none were asked for).
func logprobsFrom(lp *C.lmrt_token_logprobs, n int) []TokenLogprobs {
	if lp == nil || n == 0 {
		return nil
	}
	out := make([]TokenLogprobs, n)
	for i, e := range unsafe.Slice(lp, n) {
		out[i].Chosen = Logprob{int32(e.chosen.token), float32(e.chosen.logprob)}
		for _, alt := range e.top[:e.n_top] {
			out[i].Top = append(out[i].Top, Logprob{int32(alt.token), float32(alt.logprob)})
		}
	}
	return out
}
