#!/usr/bin/env bash
# Fails when a per-ISA kernel object (simd/*_avx2, *_avx512, *_neon) defines a weak (COMDAT) symbol
# that another object of the library also defines: the linker keeps one copy for both, so code built
# for AVX-512 could run on a CPU that has only AVX2. Inline templates compiled per ISA (xsimd's among
# them) must stay local to their file.
# usage: no_shared_weak_symbols.sh OBJECT_DIR   (the lmrt_objects target's directory)
set -euo pipefail
dir=$1
# DW.ref.* are the exception-handling personality pointers every C++ object carries: data, not code.
weak() { nm --defined-only "$1" | awk '($2 == "W" || $2 == "V" || $2 == "u") && $3 !~ /^DW\.ref\./ { print $3 }' | sort -u; }
mapfile -t isa_objs < <(find "$dir" -name '*_avx2.cpp.o' -o -name '*_avx512.cpp.o' -o -name '*_neon.cpp.o' | sort)
if [[ ${#isa_objs[@]} -eq 0 ]]; then
  echo "no per-ISA objects under $dir" >&2
  exit 1
fi
status=0
for obj in "${isa_objs[@]}"; do
  mine=$(weak "$obj")
  [[ -z $mine ]] && continue
  while IFS= read -r other; do
    [[ $other == "$obj" ]] && continue
    shared=$(comm -12 <(echo "$mine") <(weak "$other"))
    if [[ -n $shared ]]; then
      echo "$(basename "$obj") and $(basename "$other") both define:" >&2
      echo "$shared" | c++filt | head -20 >&2
      status=1
    fi
  done < <(find "$dir" -name '*.o' | sort)
done
[[ $status -eq 0 ]] && echo "checked ${#isa_objs[@]} per-ISA objects: no weak symbol shared with another object"
exit $status
