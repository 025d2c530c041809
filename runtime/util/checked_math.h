// Overflow-checked size arithmetic for everything read from untrusted files.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lmrt {

// Each returns false (and leaves *out unspecified) when the result does not fit.
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// Rounds `value` up to a multiple of `alignment`; false for alignment 0.
inline bool checked_align_up(uint64_t value, uint64_t alignment, uint64_t* out) {
  if (alignment == 0) return false;
  const uint64_t rem = value % alignment;
  if (rem == 0) {
    *out = value;
    return true;
  }
  return checked_add(value, alignment - rem, out);
}

}  // namespace lmrt
