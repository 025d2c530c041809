# Collects the library's sources by layer and gives each per-ISA kernel file its own flags.
# Kernel files are named *_scalar.cpp, *_avx2.cpp, *_avx2vnni.cpp, *_avx512.cpp, *_neon.cpp (see simd/README.md).
file(GLOB_RECURSE LMRT_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_SOURCE_DIR}/abi/*.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/formats/*.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/runtime/*.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/simd/*.cpp)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  set(LMRT_ARCH_X86 ON)
  add_compile_definitions(LMRT_ARCH_X86=1)
  list(FILTER LMRT_SOURCES EXCLUDE REGEX "_neon\\.cpp$")
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(LMRT_ARCH_ARM ON)
  add_compile_definitions(LMRT_ARCH_ARM=1)
  list(FILTER LMRT_SOURCES EXCLUDE REGEX "_(avx2|avx2vnni|avx512)\\.cpp$")
else()
  list(FILTER LMRT_SOURCES EXCLUDE REGEX "_(avx2|avx2vnni|avx512|neon)\\.cpp$")
endif()
if(LMRT_ARCH_X86 AND LMRT_SANITIZE)
  # The avx2vnni files compile the AVX2 sources a second time, differing only in the integer dot steps (same
  # loads, same integers: BatchInvariance.AvxVnniGivesTheBitsOfAvx2 in the Release tests). The sanitizer builds
  # instrument the plain copy only, which keeps their compile time (the quant kernels are their slowest files).
  list(FILTER LMRT_SOURCES EXCLUDE REGEX "_avx2vnni\\.cpp$")
  add_compile_definitions(LMRT_NO_AVX2VNNI=1)
endif()

function(lmrt_set_isa_flags)
  # Under ASan+UBSan the x86 quant kernels (register-tiled GEMM templates, unrolled for every weight type)
  # took GCC 7-10 minutes each, most of the sanitizer CI's time. ASan's stack instrumentation of the
  # unrolled tiles' temporaries costs most (AVX2 file, CPU s: ASan alone over 270, without stack
  # instrumentation 95; the AVX-512 file 367, from 607) and UBSan the rest (over 130 with it). So these
  # files keep ASan's heap and global checks (out-of-bounds reads of the activation and scratch buffers
  # are the bugs that matter in them), without stack instrumentation and UBSan, which check the rest.
  set(kernel_sanitize "")
  if(LMRT_SANITIZE MATCHES "address")
    list(APPEND kernel_sanitize "--param=asan-stack=0")
  endif()
  if(LMRT_SANITIZE MATCHES "undefined")
    list(APPEND kernel_sanitize "-fno-sanitize=undefined")
  endif()
  foreach(src IN LISTS LMRT_SOURCES)
    set(extra "")
    if(kernel_sanitize AND src MATCHES "/simd/quant_kernels_(avx2|avx2vnni|avx512)\\.cpp$")
      list(JOIN kernel_sanitize ";" extra)
      set(extra ";${extra}")
    endif()
    if(src MATCHES "_avx2\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c${extra}")
    elseif(src MATCHES "_avx2vnni\\.cpp$")
      # The AVX2 files again, with AVX-VNNI (simd/avx2_variant.h).
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni${extra}")
    elseif(src MATCHES "_avx512\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni${extra}")
    elseif(src MATCHES "_neon\\.cpp$")
      # Baseline ARMv8-A so the table runs on every AArch64 CPU; the SDOT kernels carry their own
      # target attribute and are chosen at run time from the CPU's hwcaps.
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8-a")
    elseif(src MATCHES "/formats/quantize[^/]*\\.cpp$")
      # The quantizers reproduce llama.cpp's bytes, which depend on every float rounding: no fused
      # multiply-adds (ggml's generic quantizers are built without them).
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
    endif()
  endforeach()
endfunction()
