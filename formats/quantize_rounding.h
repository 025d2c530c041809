// Rounding helpers shared by the quantizers (formats/quantize_*.cpp), each the exact float behaviour
// llama.cpp's quantizers rely on, so that both write the same bytes.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace lmrt::quant {

// Round to nearest, ties to even, for |x| < 2^22: adding 1.5 * 2^23 leaves the rounded integer in the
// low mantissa bits (ggml's nearest_int; std::lrint would depend on the current rounding mode).
inline int nearest_int(float x) {
  const float shifted = x + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// The value of largest magnitude, with its sign (the first of equal magnitudes); *amax gets |value|.
// The symmetric types map it to their most negative code, which gains one level on that side.
inline float signed_absmax(const float* x, int n, float* amax) {
  float max = 0;
  *amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > *amax) {
      *amax = ax;
      max = x[i];
    }
  }
  return max;
}

// The index of the grid value nearest x in an ascending table of n int8 values (ties to the lower).
inline int nearest_grid_index(int n, const int8_t* grid, float x) {
  if (x <= grid[0]) return 0;
  if (x >= grid[n - 1]) return n - 1;
  int lo = 0, hi = n - 1;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < grid[mid])
      hi = mid;
    else
      lo = mid;
  }
  return x - grid[hi - 1] < grid[hi] - x ? hi - 1 : hi;
}

}  // namespace lmrt::quant
