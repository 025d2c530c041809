#!/usr/bin/env bash
# Builds Release and ASan+UBSan and runs every test in both; after Release, an AArch64 cross build whose
# kernel and forward tests run under qemu (on x86-64 hosts), the install-tree examples (C, C++, Rust,
# Go) and the HTTP server integration test; then a TSan build runs the threaded tests; last, each
# libFuzzer target runs for a fixed time (scripts/fuzz.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
jobs=$(nproc)

run_suite() {  # name, build dir, extra cmake args...
  local name=$1 dir=$2
  shift 2
  echo "== $name build"
  # Tests on whatever the build dir was configured with before (demo.sh turns them off); a suite
  # that finds no test fails instead of passing quietly.
  cmake -S "$root" -B "$dir" -G Ninja -DLMRT_BUILD_TESTS=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "== $name tests"
  ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs"
}

run_suite Release "$root/build" -DCMAKE_BUILD_TYPE=Release

if [ "$(uname -m)" = x86_64 ]; then
  echo "== AArch64 cross build, NEON (with and without dotprod) and scalar tests under qemu"
  "$root/scripts/cross-test-aarch64.sh"
fi

echo "== install + C/C++/Rust/Go examples against the installed tree"
"$root/scripts/test-examples.sh" "$root/build"

echo "== HTTP server integration (real HTTP on 127.0.0.1, the openai npm client, a load run)"
"$root/tests/server/run.sh" "$root/build"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite "ASan+UBSan" "$root/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLMRT_SANITIZE=address,undefined

# ThreadSanitizer: only the test binary, only the tests that run threads.
echo "== TSan build"
cmake -S "$root" -B "$root/build-tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLMRT_SANITIZE=thread \
  -DLMRT_BUILD_TESTS=ON >/dev/null
cmake --build "$root/build-tsan" -j "$jobs" --target lmrt_tests
echo "== TSan tests"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  "$root/build-tsan/tests/lmrt_tests" --gtest_brief=1 \
  --gtest_filter='Threads.*:CApi.*:ThreadsAndKv/*:ThreadPool*:TailStealing.*:*BatchEngineInvariance*_stealing:Plugin*Thread*:*TwoThreads*:DecodeAlloc*:PluginGeneration.*'

echo "== fuzzing: each libFuzzer target for ${LMRT_FUZZ_SECONDS:-20} s (scripts/fuzz.sh)"
"$root/scripts/fuzz.sh" "$root/build-fuzz"
