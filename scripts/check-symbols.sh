#!/usr/bin/env bash
# Checks what liblmrt.so exports: usage: scripts/check-symbols.sh [path/to/liblmrt.so]
#   - `nm -D --defined-only` lists only lmrt_* functions, each bound to a version node LMRT_<n>
#     of abi/lmrt.map, plus those version nodes themselves (absolute symbols named LMRT_*).
#     Nothing else is allowed: no _init/_fini (a version script with `local: *` hides them),
#     no C++ or SQLite symbol, no data object.
#   - every exported lmrt_* function is declared LMRT_API in a public header, and every LMRT_API
#     function of the headers is exported (a declared but undefined function is an ABI bug too);
#   - the SONAME is liblmrt.so.<LMRT_ABI_VERSION of lmrt.h>.
# Exits non-zero, listing each offending symbol, when any of this fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lib=${1:-$root/build/liblmrt.so}
headers=("$root"/abi/include/lmrt/*.h)

[ -f "$lib" ] || { echo "check-symbols: no library at $lib (build the lmrt target first)" >&2; exit 2; }
command -v nm >/dev/null || { echo "check-symbols: nm not found (install binutils)" >&2; exit 2; }

fail=0
bad() { echo "check-symbols: $*" >&2; fail=1; }

# Lines look like "000000000000c190 T lmrt_abi_version@@LMRT_0" or "0000000000000000 A LMRT_0".
exported=()
while read -r _addr type name; do
  [ -n "$name" ] || { name=$type; type=$_addr; }  # undefined-address rows have two fields
  sym=${name%%@*}
  version=""
  [[ $name == *@* ]] && version=${name##*@}
  if [ "$type" = A ] && [[ $sym =~ ^LMRT_[0-9][0-9.]*$ ]]; then
    continue  # a version node
  fi
  if [[ ! $sym =~ ^lmrt_[a-z0-9_]+$ ]]; then
    bad "exports a symbol outside the lmrt_ namespace: $type $name"
  elif [ "$type" != T ]; then
    bad "exports $sym as symbol type '$type'; the ABI exports functions only"
  elif [[ ! $version =~ ^LMRT_[0-9][0-9.]*$ ]]; then
    bad "exports $sym without a LMRT_* version node (is abi/lmrt.map applied?)"
  else
    exported+=("$sym")
  fi
done < <(nm -D --defined-only "$lib")

# LMRT_API declarations: the function name is the first lmrt_ identifier followed by '('.
mapfile -t declared < <(grep -h 'LMRT_API' "${headers[@]}" | grep -v '#' |
  sed -nE 's/.*LMRT_API[^(]*[^A-Za-z0-9_](lmrt_[A-Za-z0-9_]+)[[:space:]]*\(.*/\1/p' | sort -u)
mapfile -t exported < <(printf '%s\n' "${exported[@]}" | sort -u)
while read -r sym; do [ -n "$sym" ] && bad "exports $sym, which no public header declares"; done \
  < <(comm -23 <(printf '%s\n' "${exported[@]}") <(printf '%s\n' "${declared[@]}"))
while read -r sym; do [ -n "$sym" ] && bad "does not export $sym, declared LMRT_API in a public header"; done \
  < <(comm -13 <(printf '%s\n' "${exported[@]}") <(printf '%s\n' "${declared[@]}"))

abi=$(sed -nE 's/^#define LMRT_ABI_VERSION ([0-9]+).*/\1/p' "$root/abi/include/lmrt/lmrt.h")
soname=$(readelf -d "$lib" | sed -nE 's/.*\(SONAME\).*\[(.*)\]/\1/p')
[ "$soname" = "liblmrt.so.$abi" ] || bad "SONAME is '$soname', expected liblmrt.so.$abi"

if [ $fail -ne 0 ]; then
  echo "check-symbols: FAILED for $lib" >&2
  exit 1
fi
echo "check-symbols: OK: ${#exported[@]} lmrt_* functions exported, all declared; SONAME $soname"
