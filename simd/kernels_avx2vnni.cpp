// kernels_avx2.cpp built with AVX-VNNI (simd/avx2_variant.h).
#define LMRT_AVX2_VNNI 1
#include "simd/kernels_avx2.cpp"
