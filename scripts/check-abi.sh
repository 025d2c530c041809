#!/usr/bin/env bash
# Compares the ABI of a freshly built liblmrt.so with the committed baseline abi/lmrt.abi.
#   scripts/check-abi.sh [path/to/liblmrt.so]            check (default: build/liblmrt.so)
#   scripts/check-abi.sh --update [path/to/liblmrt.so]   rewrite abi/lmrt.abi deliberately
# Allowed without a baseline update: new lmrt_* functions, new enumerators, data members appended
# at the end of a public struct (abi/lmrt.abignore). Anything else abidiff reports (a removed or
# renamed function, a changed signature, a member inserted mid-struct or retyped, a changed
# enumerator value) fails with abidiff's report. Needs abidw/abidiff (Debian: abigail-tools) and a
# library built with LMRT_ABI_DEBUG_INFO=ON (the default), which keeps DWARF for abi/*.cpp.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
update=0
if [ "${1:-}" = "--update" ]; then
  update=1
  shift
fi
lib=${1:-$root/build/liblmrt.so}
baseline=$root/abi/lmrt.abi
suppressions=$root/abi/lmrt.abignore

for tool in abidw abidiff; do
  command -v $tool >/dev/null ||
    { echo "check-abi: $tool not found; install it with: apt-get install abigail-tools" >&2; exit 2; }
done
[ -f "$lib" ] || { echo "check-abi: no library at $lib (build the lmrt target first)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The ABI as abidw sees it: exported functions and the public types they reach, without source
# locations or build paths, so that the baseline changes only when the ABI does.
abidw --headers-dir "$root/abi/include/lmrt" --drop-private-types --exported-interfaces-only \
  --no-show-locs --no-comp-dir-path --no-corpus-path --no-elf-needed --type-id-style hash \
  "$lib" | sed "s|path='$root/|path='|" > "$tmp/current.abi"

# Every exported function must come with its DWARF description, or its signature goes unchecked.
n_symbols=$(grep -c "<elf-symbol name='lmrt_" "$tmp/current.abi" || true)
n_described=$(grep -c "<function-decl name='lmrt_" "$tmp/current.abi" || true)
if [ "$n_symbols" -eq 0 ] || [ "$n_described" -lt "$n_symbols" ]; then
  echo "check-abi: $lib exports $n_symbols lmrt_* functions but has debug info for $n_described;" \
    "define every lmrt_* function in abi/*.cpp and build with LMRT_ABI_DEBUG_INFO=ON" >&2
  exit 2
fi

if [ $update -eq 1 ]; then
  cp "$tmp/current.abi" "$baseline"
  echo "check-abi: wrote $baseline ($n_symbols functions); review and commit it"
  exit 0
fi
[ -f "$baseline" ] || { echo "check-abi: no baseline $baseline; create it with --update" >&2; exit 2; }

# --no-added-syms: a new function is compatible. abidiff's exit status is a bit mask, and it is 0
# only when no change is left after the suppressions.
set +e
abidiff --no-added-syms --suppressions "$suppressions" "$baseline" "$tmp/current.abi" > "$tmp/report"
status=$?
set -e
if [ $status -ne 0 ]; then
  cat "$tmp/report"
  echo "check-abi: FAILED (abidiff status $status): $lib is not ABI-compatible with abi/lmrt.abi." >&2
  echo "check-abi: if the change is deliberate (a new ABI major), run scripts/check-abi.sh --update." >&2
  exit 1
fi
echo "check-abi: OK: $n_symbols functions, compatible with abi/lmrt.abi"
