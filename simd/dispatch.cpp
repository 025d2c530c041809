// CPU detection and the one dispatch point from ISA to kernel table.
#include <cstdlib>
#include <cstring>

#include "simd/kernels.h"

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

// AVX-VNNI (VEX-encoded vpdpbusd on ymm): CPUID.(EAX=7, ECX=1):EAX bit 4.
bool cpu_has_avxvnni() {
  if (!cpu_has_avx2()) return false;
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return false;
  return (a >> 4) & 1;
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
// Zen 4: AMD family 19h with AVX-512 (Zen 3, the same family, has none; its tuning was not measured).
bool cpu_is_zen4() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
  char vendor[12];
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  if (std::memcmp(vendor, "AuthenticAMD", 12) != 0 || !__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned family = (a >> 8) & 0xf, extended = (a >> 20) & 0xff;
  return family == 0xf && family + extended == 0x19 && cpu_has_avx512();
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
    case Isa::avx2vnni:
      return "avx2vnni";
    case Isa::avx512:
      return "avx512";
    case Isa::neon:
      return "neon";
  }
  return "?";
}

const CpuTuning& cpu_tuning() {
  static const CpuTuning tuning = [] {
    CpuTuning t{.zen4_tables = false};
#if defined(LMRT_ARCH_X86)
    if (cpu_is_zen4()) t = {.zen4_tables = true};
#endif
    return t;
  }();
  return tuning;
}

bool isa_available(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return true;
#if defined(LMRT_ARCH_X86)
    case Isa::avx2:
      return avx2_kernels() != nullptr && cpu_has_avx2();
    case Isa::avx2vnni:
      return avx2vnni_kernels() != nullptr && cpu_has_avxvnni();
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
    for (Isa isa : kAllIsas)
      if (std::strcmp(forced, isa_name(isa)) == 0 && isa_available(isa)) return isa;
  }
  for (Isa isa : {Isa::avx512, Isa::avx2vnni, Isa::avx2, Isa::neon})
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
      case Isa::avx2vnni:
        k = avx2vnni_kernels();
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

const Matmul& table_entry(const MatmulTable& m, TensorType type) {
  switch (type) {
    case TensorType::f32:
      return m.f32;
    case TensorType::f16:
      return m.f16;
    case TensorType::q4_0:
      return m.q4_0;
    case TensorType::q4_1:
      return m.q4_1;
    case TensorType::q5_0:
      return m.q5_0;
    case TensorType::q5_1:
      return m.q5_1;
    case TensorType::q8_0:
      return m.q8_0;
    case TensorType::q2_k:
      return m.q2_k;
    case TensorType::q3_k:
      return m.q3_k;
    case TensorType::q4_k:
      return m.q4_k;
    case TensorType::q5_k:
      return m.q5_k;
    case TensorType::q6_k:
      return m.q6_k;
    case TensorType::iq4_nl:
      return m.iq4_nl;
    case TensorType::iq4_xs:
      return m.iq4_xs;
    case TensorType::bf16:
      return m.bf16;
    case TensorType::q4_0x16:
      return m.q4_0x16;
    case TensorType::q4_kx8:
      return m.q4_kx8;
    case TensorType::q6_kx8:
      return m.q6_kx8;
  }
  return m.f32;
}

}  // namespace

const Matmul& matmul_for(const Kernels& k, TensorType type) {
  const Matmul& own = table_entry(k.matmul, type);
  return own.fn != nullptr ? own : table_entry(scalar_kernels()->matmul, type);
}

// Tables not compiled into this build. Each ISA file defines its own getter.
#if !defined(LMRT_ARCH_X86)
const Kernels* avx2_kernels() { return nullptr; }
const Kernels* avx512_kernels() { return nullptr; }
#endif
#if !defined(LMRT_ARCH_X86) || defined(LMRT_NO_AVX2VNNI)
const Kernels* avx2vnni_kernels() { return nullptr; }
#endif
#if !defined(LMRT_ARCH_ARM)
const Kernels* neon_kernels() { return nullptr; }
#endif

}  // namespace lmrt::simd
