// avx2 kernel table: not written yet; dispatch falls back to the scalar reference.
#include "simd/kernels.h"

namespace lmrt::simd {

const Kernels* avx2_kernels() { return nullptr; }

}  // namespace lmrt::simd
