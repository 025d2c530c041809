#!/usr/bin/env bash
# Cross-builds lmrt for AArch64 and runs the SIMD kernel tests and the exact-output forward tests
# under qemu-aarch64, three times:
#   1. a CPU with the dot-product extension (qemu -cpu neoverse-n1), LMRT_ISA=neon: the SDOT Q4_0 path;
#   2. a plain ARMv8.0 CPU (qemu -cpu cortex-a53), LMRT_ISA=neon: the widening-multiply Q4_0 path;
#   3. the scalar table (LMRT_ISA=scalar).
# It installs what it needs (as root, with apt-get) and builds, in <root>/build-aarch64, only the
# library and one small test binary made of tests/unit/simd_kernels_test.cpp, quant_kernels_test.cpp,
# forward_test.cpp, the weight format tests (quant_formats_test.cpp, quant_reference_test.cpp: every llama.cpp
# type against llama.cpp), arch_test.cpp (every architecture against llama.cpp) and batch_invariance_test.cpp
# (which prints the NEON matmuls whose bits depend on the batch).
# Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-aarch64"
triple=aarch64-linux-gnu
jobs=${LMRT_CROSS_JOBS:-2}
start=$SECONDS

# ---- packages -------------------------------------------------------------------------------------
host_packages=(cmake ninja-build libxsimd-dev "g++-$triple" qemu-user)
arm64_packages=(libgtest-dev:arm64 libsqlite3-dev:arm64 libpcre2-dev:arm64)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=()
for p in "${host_packages[@]}" "${arm64_packages[@]}"; do installed "$p" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== aarch64: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "aarch64: run as root, or first: sudo dpkg --add-architecture arm64 && sudo apt-get update &&" \
      "sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ---- build ----------------------------------------------------------------------------------------
# A wrapper project: the whole library through add_subdirectory (its tests off), plus one test binary
# of the suites that matter here; the full lmrt_tests would triple the build time under CI.
wrapper="$build/cross-test-project"
# A build directory configured from another source tree (say, the plain project) is started afresh.
if [ -f "$build/CMakeCache.txt" ] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$wrapper" "$build/CMakeCache.txt"; then
  rm -rf "$build"
fi
mkdir -p "$wrapper"
cat >"$wrapper/CMakeLists.txt.new" <<EOF
cmake_minimum_required(VERSION 3.25)
project(lmrt_cross_test LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 20)  # the tests include lmrt's C++20 headers (formats/tensor_type.h: std::span)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(LMRT_BUILD_TESTS OFF CACHE BOOL "" FORCE)
set(LMRT_ABI_DEBUG_INFO OFF CACHE BOOL "" FORCE)
add_subdirectory("$root" lmrt)
find_package(GTest REQUIRED)
add_executable(lmrt_arm_tests "$root/tests/unit/simd_kernels_test.cpp" "$root/tests/unit/forward_test.cpp"
  "$root/tests/unit/quant_kernels_test.cpp" "$root/tests/unit/quant_formats_test.cpp"
  "$root/tests/unit/quant_reference_test.cpp" "$root/tests/unit/arch_test.cpp"
  "$root/tests/unit/batch_invariance_test.cpp" "$root/tests/test_support.cpp")
target_link_libraries(lmrt_arm_tests PRIVATE lmrt_tools lmrt_static GTest::gtest GTest::gtest_main)
target_include_directories(lmrt_arm_tests PRIVATE "$root" "$root/tests")
target_compile_definitions(lmrt_arm_tests PRIVATE LMRT_DEFAULT_SHARED_DIR="$(cd "$root/.." && pwd)/shared")
EOF
# Rewritten only when it changes, so a rerun does not reconfigure.
cmp -s "$wrapper/CMakeLists.txt.new" "$wrapper/CMakeLists.txt" || mv "$wrapper/CMakeLists.txt.new" "$wrapper/CMakeLists.txt"
rm -f "$wrapper/CMakeLists.txt.new"

echo "== aarch64 build ($triple-g++, Release, -j$jobs) into $build"
cmake -S "$wrapper" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  --toolchain "$root/toolchains/$triple.cmake" >/dev/null
cmake --build "$build" -j "$jobs" --target lmrt_arm_tests
echo "   built in $((SECONDS - start)) s"

# ---- runs -----------------------------------------------------------------------------------------
binary="$build/lmrt_arm_tests"
qemu=(qemu-aarch64 -L "/usr/$triple" -E "LD_LIBRARY_PATH=/usr/$triple/lib")
# Every Stories260K / TinyStories656K test in forward_test.cpp except the other ISAs' instances.
forward='ThreadsAndKv/Stories260KGreedy.*:Stories260K.*:TinyStories656K.*:Context.*'
# The weight formats: the type table, dequantizers against the F16 source, every ISA's matmul of every type.
formats='TensorTypeTable.*:KernelTable.*:Dequantize.*'
# The quant matmuls of every type (simd/quant_kernels.h): scalar against the reference, NEON against scalar.
quant='Types/QuantKernels.*:QuantizeQ8K.*'
failed=()

# name, qemu cpu, LMRT_ISA, expect dotprod (yes|no|any), gtest filter
run() {
  local name=$1 cpu=$2 isa=$3 want_dotprod=$4 filter=$5
  echo "== aarch64 run: $name (qemu -cpu $cpu, LMRT_ISA=$isa)"
  # The hwcaps the guest sees: bit 1 ASIMD, bit 20 ASIMDDP (arch/arm64/include/uapi/asm/hwcap.h).
  local hwcap
  hwcap=$("${qemu[@]}" -cpu "$cpu" -E LD_SHOW_AUXV=1 "$binary" --gtest_list_tests 2>/dev/null |
    awk '$1 == "AT_HWCAP:" { print $2 }')
  if [ -z "$hwcap" ]; then
    echo "   FAILED: the binary does not start under qemu-aarch64 -cpu $cpu" >&2
    failed+=("$name")
    return
  fi
  local asimd=$(((0x$hwcap >> 1) & 1)) dotprod=$(((0x$hwcap >> 20) & 1))
  echo "   guest AT_HWCAP=0x$hwcap: asimd=$asimd asimddp=$dotprod"
  if [ "$want_dotprod" != any ] && [ "$dotprod" != "$([ "$want_dotprod" = yes ] && echo 1 || echo 0)" ]; then
    echo "   FAILED: expected asimddp $want_dotprod on $cpu" >&2
    failed+=("$name")
    return
  fi
  echo "   tests: $filter"
  local t0=$SECONDS
  if LMRT_ISA=$isa LMRT_SHARED_DIR="${LMRT_SHARED_DIR:-$root/../shared}" \
    "${qemu[@]}" -cpu "$cpu" "$binary" --gtest_brief=1 --gtest_filter="$filter"; then
    echo "   ok ($((SECONDS - t0)) s)"
  else
    echo "   FAILED: $name" >&2
    failed+=("$name")
  fi
}

# Every architecture's logits against llama.cpp's (tests/unit/arch_test.cpp), on NEON.
arch='ArchIsa/ArchLogits.*_neon:ArchConfig.*'
# The batch-invariance audit of every type on NEON (and scalar), with and without dotprod.
run "NEON with dotprod" neoverse-n1 neon yes \
  "Isas/SimdKernels.*/neon:Isas/Stories260KGreedyIsa.*/neon:$forward:$formats:$quant:Isas/QuantReference.*/neon:$arch:BatchInvariance.*"
run "NEON without dotprod" cortex-a53 neon no \
  "Isas/SimdKernels.*/neon:Isas/Stories260KGreedyIsa.*/neon:$forward:$quant:Isas/QuantReference.*/neon:$arch:BatchInvariance.*"
run "scalar" cortex-a53 scalar any "Isas/Stories260KGreedyIsa.*/scalar:$forward:Isas/QuantReference.*/scalar"

echo "== aarch64 done in $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "aarch64: FAILED runs: ${failed[*]}" >&2
  exit 1
fi
echo "aarch64: all 3 runs passed (dotprod NEON, plain NEON, scalar)"
