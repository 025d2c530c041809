package lmrt

// #include <lmrt/lmrt.h>
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// fieldLayout is where a field of a public struct lives, as released in ABI 0 (the same values
// abi/lmrt_api.cpp pins with static_asserts).
type fieldLayout struct {
	name          string
	got, want     uintptr
	gotSz, wantSz uintptr
}

type structLayout struct {
	name    string
	size    uintptr // as cgo sees lmrt.h
	minSize uintptr // the released size; structs may only grow at their end
	fields  []fieldLayout
}

func f(name string, off, size, wantOff, wantSize uintptr) fieldLayout {
	return fieldLayout{name, off, wantOff, size, wantSize}
}

func layouts() []structLayout {
	var mp C.lmrt_model_params
	var mi C.lmrt_model_info
	var cp C.lmrt_context_params
	var ev C.lmrt_token_event
	var rq C.lmrt_generate_request
	var rs C.lmrt_generate_result
	var ep C.lmrt_engine_params
	return []structLayout{
		{"lmrt_engine_params", unsafe.Sizeof(ep), 20, []fieldLayout{
			f("struct_size", unsafe.Offsetof(ep.struct_size), unsafe.Sizeof(ep.struct_size), 0, 4),
			f("max_sequences", unsafe.Offsetof(ep.max_sequences), unsafe.Sizeof(ep.max_sequences), 4, 4),
			f("prefill_chunk", unsafe.Offsetof(ep.prefill_chunk), unsafe.Sizeof(ep.prefill_chunk), 8, 4),
			f("prefix_reuse", unsafe.Offsetof(ep.prefix_reuse), unsafe.Sizeof(ep.prefix_reuse), 12, 4),
			f("retained_sequences", unsafe.Offsetof(ep.retained_sequences), unsafe.Sizeof(ep.retained_sequences), 16, 4),
			f("reserved0", unsafe.Offsetof(ep.reserved0), unsafe.Sizeof(ep.reserved0), 20, 4),
			f("on_finish", unsafe.Offsetof(ep.on_finish), unsafe.Sizeof(ep.on_finish), 24, 8),
			f("cache", unsafe.Offsetof(ep.cache), unsafe.Sizeof(ep.cache), 32, 8),
		}},
		{"lmrt_model_params", unsafe.Sizeof(mp), 8, []fieldLayout{
			f("struct_size", unsafe.Offsetof(mp.struct_size), unsafe.Sizeof(mp.struct_size), 0, 4),
			f("use_mmap", unsafe.Offsetof(mp.use_mmap), unsafe.Sizeof(mp.use_mmap), 4, 4),
		}},
		{"lmrt_model_info", unsafe.Sizeof(mi), 280, []fieldLayout{
			f("struct_size", unsafe.Offsetof(mi.struct_size), unsafe.Sizeof(mi.struct_size), 0, 4),
			f("architecture", unsafe.Offsetof(mi.architecture), unsafe.Sizeof(mi.architecture), 4, 32),
			f("name", unsafe.Offsetof(mi.name), unsafe.Sizeof(mi.name), 36, 128),
			f("n_tensors", unsafe.Offsetof(mi.n_tensors), unsafe.Sizeof(mi.n_tensors), 164, 4),
			f("n_params", unsafe.Offsetof(mi.n_params), unsafe.Sizeof(mi.n_params), 168, 8),
			f("file_bytes", unsafe.Offsetof(mi.file_bytes), unsafe.Sizeof(mi.file_bytes), 176, 8),
			f("n_ctx_train", unsafe.Offsetof(mi.n_ctx_train), unsafe.Sizeof(mi.n_ctx_train), 184, 4),
			f("n_vocab", unsafe.Offsetof(mi.n_vocab), unsafe.Sizeof(mi.n_vocab), 188, 4),
			f("n_embd", unsafe.Offsetof(mi.n_embd), unsafe.Sizeof(mi.n_embd), 192, 4),
			f("n_layer", unsafe.Offsetof(mi.n_layer), unsafe.Sizeof(mi.n_layer), 196, 4),
			f("n_head", unsafe.Offsetof(mi.n_head), unsafe.Sizeof(mi.n_head), 200, 4),
			f("n_head_kv", unsafe.Offsetof(mi.n_head_kv), unsafe.Sizeof(mi.n_head_kv), 204, 4),
			f("n_ff", unsafe.Offsetof(mi.n_ff), unsafe.Sizeof(mi.n_ff), 208, 4),
			f("bos_token", unsafe.Offsetof(mi.bos_token), unsafe.Sizeof(mi.bos_token), 212, 4),
			f("eos_token", unsafe.Offsetof(mi.eos_token), unsafe.Sizeof(mi.eos_token), 216, 4),
			f("n_tensors_f32", unsafe.Offsetof(mi.n_tensors_f32), unsafe.Sizeof(mi.n_tensors_f32), 220, 4),
			f("n_tensors_f16", unsafe.Offsetof(mi.n_tensors_f16), unsafe.Sizeof(mi.n_tensors_f16), 224, 4),
			f("n_tensors_bf16", unsafe.Offsetof(mi.n_tensors_bf16), unsafe.Sizeof(mi.n_tensors_bf16), 228, 4),
			f("n_tensors_q8_0", unsafe.Offsetof(mi.n_tensors_q8_0), unsafe.Sizeof(mi.n_tensors_q8_0), 232, 4),
			f("n_tensors_q4_0", unsafe.Offsetof(mi.n_tensors_q4_0), unsafe.Sizeof(mi.n_tensors_q4_0), 236, 4),
			f("bytes_f32", unsafe.Offsetof(mi.bytes_f32), unsafe.Sizeof(mi.bytes_f32), 240, 8),
			f("bytes_f16", unsafe.Offsetof(mi.bytes_f16), unsafe.Sizeof(mi.bytes_f16), 248, 8),
			f("bytes_bf16", unsafe.Offsetof(mi.bytes_bf16), unsafe.Sizeof(mi.bytes_bf16), 256, 8),
			f("bytes_q8_0", unsafe.Offsetof(mi.bytes_q8_0), unsafe.Sizeof(mi.bytes_q8_0), 264, 8),
			f("bytes_q4_0", unsafe.Offsetof(mi.bytes_q4_0), unsafe.Sizeof(mi.bytes_q4_0), 272, 8),
		}},
		{"lmrt_context_params", unsafe.Sizeof(cp), 24, []fieldLayout{
			f("struct_size", unsafe.Offsetof(cp.struct_size), unsafe.Sizeof(cp.struct_size), 0, 4),
			f("n_ctx", unsafe.Offsetof(cp.n_ctx), unsafe.Sizeof(cp.n_ctx), 4, 4),
			f("n_batch", unsafe.Offsetof(cp.n_batch), unsafe.Sizeof(cp.n_batch), 8, 4),
			f("n_threads", unsafe.Offsetof(cp.n_threads), unsafe.Sizeof(cp.n_threads), 12, 4),
			f("kv_type", unsafe.Offsetof(cp.kv_type), unsafe.Sizeof(cp.kv_type), 16, 4),
			f("logits_all", unsafe.Offsetof(cp.logits_all), unsafe.Sizeof(cp.logits_all), 20, 4),
		}},
		{"lmrt_token_event", unsafe.Sizeof(ev), 32, []fieldLayout{
			f("struct_size", unsafe.Offsetof(ev.struct_size), unsafe.Sizeof(ev.struct_size), 0, 4),
			f("token", unsafe.Offsetof(ev.token), unsafe.Sizeof(ev.token), 4, 4),
			f("text", unsafe.Offsetof(ev.text), unsafe.Sizeof(ev.text), 8, 8),
			f("text_len", unsafe.Offsetof(ev.text_len), unsafe.Sizeof(ev.text_len), 16, 8),
			f("index", unsafe.Offsetof(ev.index), unsafe.Sizeof(ev.index), 24, 4),
		}},
		{"lmrt_generate_request", unsafe.Sizeof(rq), 32, []fieldLayout{
			f("struct_size", unsafe.Offsetof(rq.struct_size), unsafe.Sizeof(rq.struct_size), 0, 4),
			f("max_tokens", unsafe.Offsetof(rq.max_tokens), unsafe.Sizeof(rq.max_tokens), 4, 4),
			f("prompt", unsafe.Offsetof(rq.prompt), unsafe.Sizeof(rq.prompt), 8, 8),
			f("prompt_len", unsafe.Offsetof(rq.prompt_len), unsafe.Sizeof(rq.prompt_len), 16, 8),
			f("add_bos", unsafe.Offsetof(rq.add_bos), unsafe.Sizeof(rq.add_bos), 24, 4),
			f("parse_special", unsafe.Offsetof(rq.parse_special), unsafe.Sizeof(rq.parse_special), 28, 4),
		}},
		{"lmrt_generate_result", unsafe.Sizeof(rs), 96, []fieldLayout{
			f("struct_size", unsafe.Offsetof(rs.struct_size), unsafe.Sizeof(rs.struct_size), 0, 4),
			f("finish_reason", unsafe.Offsetof(rs.finish_reason), unsafe.Sizeof(rs.finish_reason), 4, 4),
			f("prompt_tokens", unsafe.Offsetof(rs.prompt_tokens), unsafe.Sizeof(rs.prompt_tokens), 8, 4),
			f("completion_tokens", unsafe.Offsetof(rs.completion_tokens), unsafe.Sizeof(rs.completion_tokens), 12, 4),
			f("reused_tokens", unsafe.Offsetof(rs.reused_tokens), unsafe.Sizeof(rs.reused_tokens), 16, 4),
			f("n_past", unsafe.Offsetof(rs.n_past), unsafe.Sizeof(rs.n_past), 20, 4),
			f("text", unsafe.Offsetof(rs.text), unsafe.Sizeof(rs.text), 24, 8),
			f("text_len", unsafe.Offsetof(rs.text_len), unsafe.Sizeof(rs.text_len), 32, 8),
			f("tokens", unsafe.Offsetof(rs.tokens), unsafe.Sizeof(rs.tokens), 40, 8),
			f("load_ms", unsafe.Offsetof(rs.load_ms), unsafe.Sizeof(rs.load_ms), 48, 8),
			f("prefill_ms", unsafe.Offsetof(rs.prefill_ms), unsafe.Sizeof(rs.prefill_ms), 56, 8),
			f("decode_ms", unsafe.Offsetof(rs.decode_ms), unsafe.Sizeof(rs.decode_ms), 64, 8),
			f("ttft_ms", unsafe.Offsetof(rs.ttft_ms), unsafe.Sizeof(rs.ttft_ms), 72, 8),
			f("prefill_tokens_per_s", unsafe.Offsetof(rs.prefill_tokens_per_s), unsafe.Sizeof(rs.prefill_tokens_per_s), 80, 8),
			f("decode_tokens_per_s", unsafe.Offsetof(rs.decode_tokens_per_s), unsafe.Sizeof(rs.decode_tokens_per_s), 88, 8),
		}},
	}
}

// CheckLayout compares every field of every public struct, as cgo compiled lmrt.h, with the
// released ABI 0 layout (64-bit). A struct may be larger than released (new fields at its end);
// a moved, resized or removed field is an error.
func CheckLayout() (fieldsChecked int, err error) {
	var problems []string
	for _, st := range layouts() {
		if st.size < st.minSize {
			problems = append(problems, fmt.Sprintf("%s: %d bytes, released with %d", st.name, st.size, st.minSize))
		}
		for _, fl := range st.fields {
			fieldsChecked++
			if fl.got != fl.want || fl.gotSz != fl.wantSz {
				problems = append(problems, fmt.Sprintf("%s.%s: offset %d size %d, released at offset %d size %d",
					st.name, fl.name, fl.got, fl.gotSz, fl.want, fl.wantSz))
			}
		}
	}
	if len(problems) > 0 {
		return fieldsChecked, fmt.Errorf("lmrt.h does not have the released layout:\n%s", strings.Join(problems, "\n"))
	}
	return fieldsChecked, nil
}
