#!/usr/bin/env bash
# Builds everything twice, Release and ASan+UBSan, and runs every test in both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
jobs=$(nproc)

run_suite() {  # name, build dir, extra cmake args...
  local name=$1 dir=$2
  shift 2
  echo "== $name build"
  cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  echo "== $name tests"
  ctest --test-dir "$dir" --output-on-failure -j "$jobs"
}

run_suite Release "$root/build" -DCMAKE_BUILD_TYPE=Release
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_suite "ASan+UBSan" "$root/build-asan" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLMRT_SANITIZE=address,undefined
