// avx512 kernel table: not written yet; dispatch falls back to the scalar reference.
#include "simd/kernels.h"

namespace lmrt::simd {

const Kernels* avx512_kernels() { return nullptr; }

}  // namespace lmrt::simd
