// CPU detection and the one dispatch point from ISA to kernel table.
#include <cstdlib>
#include <cstring>

#include "simd/kernels.h"
#include "simd/quant_kernels.h"

#if defined(LMRT_ARCH_X86)
#include <cpuid.h>
#elif defined(LMRT_ARCH_ARM)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace lmrt::simd {

namespace {

#if defined(LMRT_ARCH_X86)
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

bool cpu_has_avx2() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
  if (!osxsave || !fma || !f16c) return false;
  if ((read_xcr0() & 0x6) != 0x6) return false;  // XMM and YMM state enabled by the OS
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b >> 5) & 1;
}

bool cpu_has_avx512() {
  if (!cpu_has_avx2()) return false;
  if ((read_xcr0() & 0xE6) != 0xE6) return false;  // opmask, ZMM state
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
  const bool vnni = (c >> 11) & 1;
  return f && dq && bw && vl && vnni;
}
#elif defined(LMRT_ARCH_ARM)
// Advanced SIMD (ASIMD) is all the NEON table needs; whether the CPU also has the dot-product
// extension (HWCAP_ASIMDDP) picks the table's Q4_0 kernel inside neon_kernels().
bool cpu_has_neon() { return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0; }
#endif

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return "scalar";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
    case Isa::neon:
      return "neon";
  }
  return "?";
}

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return true;
#if defined(LMRT_ARCH_X86)
    case Isa::avx2:
      return avx2_kernels() != nullptr && cpu_has_avx2();
    case Isa::avx512:
      return avx512_kernels() != nullptr && cpu_has_avx512();
#elif defined(LMRT_ARCH_ARM)
    case Isa::neon:
      return neon_kernels() != nullptr && cpu_has_neon();
#endif
    default:
      return false;
  }
}

Isa best_isa() {
  if (const char* forced = std::getenv("LMRT_ISA")) {
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon})
      if (std::strcmp(forced, isa_name(isa)) == 0 && isa_available(isa)) return isa;
  }
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::neon})
    if (isa_available(isa)) return isa;
  return Isa::scalar;
}

const Kernels& kernels_for(Isa isa) {
  const Kernels* k = nullptr;
  if (isa_available(isa)) {
    switch (isa) {
      case Isa::avx2:
        k = avx2_kernels();
        break;
      case Isa::avx512:
        k = avx512_kernels();
        break;
      case Isa::neon:
        k = neon_kernels();
        break;
      case Isa::scalar:
        break;
    }
  }
  return k != nullptr ? *k : *scalar_kernels();
}

namespace {

// The matmuls of simd/quant_kernels.h for one ISA namespace.
#define LMRT_QUANT_MATMUL(ns)   \
  switch (type) {               \
    case TensorType::q2_k:      \
      return ns::matmul_q2_k;   \
    case TensorType::q3_k:      \
      return ns::matmul_q3_k;   \
    case TensorType::q4_k:      \
      return ns::matmul_q4_k;   \
    case TensorType::q5_k:      \
      return ns::matmul_q5_k;   \
    case TensorType::q6_k:      \
      return ns::matmul_q6_k;   \
    case TensorType::iq4_xs:    \
      return ns::matmul_iq4_xs; \
    case TensorType::q4_1:      \
      return ns::matmul_q4_1;   \
    case TensorType::q5_0:      \
      return ns::matmul_q5_0;   \
    case TensorType::q5_1:      \
      return ns::matmul_q5_1;   \
    case TensorType::iq4_nl:    \
      return ns::matmul_iq4_nl; \
    default:                    \
      return nullptr;           \
  }

MatmulFn quant_matmul(Isa isa, TensorType type) {
  switch (isa) {
#if defined(LMRT_ARCH_X86)
    case Isa::avx2:
      LMRT_QUANT_MATMUL(avx2)
    case Isa::avx512:
      LMRT_QUANT_MATMUL(avx512)
#elif defined(LMRT_ARCH_ARM)
    case Isa::neon:
      LMRT_QUANT_MATMUL(neon)
#endif
    default:
      LMRT_QUANT_MATMUL(scalar)
  }
}
#undef LMRT_QUANT_MATMUL

}  // namespace

MatmulFn matmul_for(const Kernels& k, TensorType type) {
  switch (type) {
    case TensorType::f32:
      return k.matmul_f32;
    case TensorType::f16:
      return k.matmul_f16;
    case TensorType::bf16:
      return k.matmul_bf16;
    case TensorType::q8_0:
      return k.matmul_q8_0;
    case TensorType::q4_0:
      return k.matmul_q4_0;
    case TensorType::q4_0x16:
      return k.matmul_q4_0x16;
    case TensorType::q2_k:
    case TensorType::q3_k:
    case TensorType::q4_k:
    case TensorType::q5_k:
    case TensorType::q6_k:
    case TensorType::iq4_xs:
    case TensorType::q4_1:
    case TensorType::q5_0:
    case TensorType::q5_1:
    case TensorType::iq4_nl:
      return quant_matmul(k.isa, type);
  }
  return k.matmul_f32;
}

bool takes_q8_activations(TensorType type) {
  switch (type) {
    case TensorType::q4_0:
    case TensorType::q4_0x16:
    case TensorType::q4_1:
    case TensorType::q5_0:
    case TensorType::q5_1:
    case TensorType::iq4_nl:
      return true;
    default:
      return false;
  }
}

bool takes_q8_k_activations(TensorType type) {
  switch (type) {
    case TensorType::q2_k:
    case TensorType::q3_k:
    case TensorType::q4_k:
    case TensorType::q5_k:
    case TensorType::q6_k:
    case TensorType::iq4_xs:
      return true;
    default:
      return false;
  }
}

void (*quantize_q8_k_for(const Kernels& k))(const float* x, BlockQ8_K* y, size_t n) {
  switch (k.isa) {
#if defined(LMRT_ARCH_X86)
    case Isa::avx2:
      return avx2::quantize_q8_k;
    case Isa::avx512:
      return avx512::quantize_q8_k;
#elif defined(LMRT_ARCH_ARM)
    case Isa::neon:
      return neon::quantize_q8_k;
#endif
    default:
      return scalar::quantize_q8_k;
  }
}

// Tables not compiled into this build. Each ISA file defines its own getter.
#if !defined(LMRT_ARCH_X86)
const Kernels* avx2_kernels() { return nullptr; }
const Kernels* avx512_kernels() { return nullptr; }
#endif
#if !defined(LMRT_ARCH_ARM)
const Kernels* neon_kernels() { return nullptr; }
#endif

}  // namespace lmrt::simd
