// The AVX2 kernel files are compiled twice: as themselves (AVX2 + FMA + F16C, every AVX2 CPU: Isa::avx2) and
// through the *_avx2vnni.cpp files, which define LMRT_AVX2_VNNI and include them with AVX-VNNI added
// (Isa::avx2vnni: Alder Lake and later, Zen 5). One source, two tables, as gemma.cpp compiles its ops per target;
// vnni256_x86.h picks the dot steps. This header names the copy's namespace, ISA and table getter.
#pragma once

#if defined(LMRT_AVX2_VNNI)
#if !defined(__AVXVNNI__)
#error "the avx2vnni copies are built with -mavxvnni (cmake/LmrtSources.cmake)"
#endif
#define LMRT_AVX2_NS avx2vnni
#define LMRT_AVX2_ISA Isa::avx2vnni
#define LMRT_AVX2_GETTER avx2vnni_kernels
#else
#define LMRT_AVX2_NS avx2
#define LMRT_AVX2_ISA Isa::avx2
#define LMRT_AVX2_GETTER avx2_kernels
#endif
