// Software prefetch of the x86 kernels: one request per 64-byte cache line of a span.
//
// Included by the x86 kernel files; everything sits in an anonymous namespace, so each file gets its
// own copy and code compiled for different ISAs is never merged at link time.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace lmrt::simd {
namespace {

// Where a kernel's stream prefetches (hint) and how many of its layout's units ahead: a per-CPU choice of the tables
// (simd::CpuTuning).
struct PrefetchPlan {
  _mm_hint hint;
  size_t units;
};

// Requests p, p + 64, ... below p + bytes (every line of the span when p is line-aligned) into the
// cache kHint names.
template <_mm_hint kHint = _MM_HINT_T0>
[[gnu::always_inline]] inline void prefetch_lines(const void* p, size_t bytes) {
  for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(static_cast<const char*>(p) + o, kHint);
}

// prefetch_lines for a span of kBytes known at compile time, written out: a loop of prefetches inside a
// kernel's long unrolled body ran the AVX-512 Q6_Kx8 8-token kernel 1.6-2.6x slower at some link addresses
// (BENCHMARKS.md, "A code-layout hazard in the AVX-512 Q6_Kx8 8-token kernel, and its fix").
template <size_t kBytes, _mm_hint kHint = _MM_HINT_T0>
[[gnu::always_inline]] inline void prefetch_lines_written_out(const void* p) {
  static_assert(kBytes <= 64 * 64, "a span of at most 64 lines");
#pragma GCC unroll 64
  for (size_t o = 0; o < kBytes; o += 64) _mm_prefetch(static_cast<const char*>(p) + o, kHint);
}

// Requests p, p + 64, ... up to p + kBytes: every line that the kBytes bytes from p touch, aligned or not.
template <size_t kBytes, _mm_hint kHint = _MM_HINT_T0>
[[gnu::always_inline]] inline void prefetch_span(const void* p) {
  prefetch_lines<kHint>(p, kBytes + 1);
}

}  // namespace
}  // namespace lmrt::simd
