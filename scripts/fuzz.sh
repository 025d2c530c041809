#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with Debian's clang (ASan + UBSan) and runs each for a
# fixed time from its seed corpus (tests/fuzz/seeds/<target>/, plus stories260K.gguf for the GGUF
# reader when ../shared is there). Prints executions and coverage per target; a crash, leak or
# sanitizer report fails the script and leaves the input in the build folder (turn it into a
# regression test in tests/unit/, then add it to the seeds).
# Usage: scripts/fuzz.sh [BUILD_DIR]   (LMRT_FUZZ_SECONDS per target, default 20; CLANGXX, default clang++)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build-fuzz}
seconds=${LMRT_FUZZ_SECONDS:-20}
cxx=${CLANGXX:-clang++}
shared=${LMRT_SHARED_DIR:-$root/../shared}
mkdir -p "$out/obj"

flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  -I"$root" -I"$root/abi/include" -DLMRT_FUZZ_DEFAULT_MODEL="\"$shared/models/stories260K.gguf\"")

# The library sources each target reaches (compiled once, with fuzzer instrumentation).
reader=(runtime/model/gguf_file.cpp runtime/util/mapped_file.cpp formats/tensor_type.cpp runtime/tokenizer/vocab.cpp
  runtime/tokenizer/spm_tokenizer.cpp runtime/util/utf8.cpp)
spec=(runtime/sampling/sampler_spec.cpp runtime/plugins/plugin_config.cpp)
declare -A sources=(
  [fuzz_gguf]="${reader[*]}"
  [fuzz_spm_tokenizer]="${reader[*]}"
  [fuzz_sampler_spec]="${spec[*]}"
  [fuzz_plugin_config]=""
)

object() {  # source -> object path, rebuilt when the source or any header is newer
  local src=$1 obj="$out/obj/$(echo "$1" | tr / _).o"
  if [ ! -f "$obj" ] || [ "$root/$src" -nt "$obj" ] ||
    [ -n "$(find "$root/runtime" "$root/formats" "$root/abi/include" -name '*.h' -newer "$obj" | head -1)" ]; then
    "$cxx" "${flags[@]}" -fsanitize=fuzzer-no-link -c "$root/$src" -o "$obj"
  fi
  echo "$obj"
}

targets=(fuzz_gguf fuzz_spm_tokenizer fuzz_sampler_spec fuzz_plugin_config)
echo "== fuzz build ($cxx) into $out"
for t in "${targets[@]}"; do
  objs=()
  for src in ${sources[$t]}; do objs+=("$(object "$src")"); done
  "$cxx" "${flags[@]}" -fsanitize=fuzzer "$root/tests/fuzz/$t.cpp" "${objs[@]}" -o "$out/$t"
done

status=0
printf '%-20s %12s %8s %8s %s\n' target executions cov features result
for t in "${targets[@]}"; do
  corpus="$out/corpus/$t"
  mkdir -p "$corpus"
  seeds=("$root/tests/fuzz/seeds/$t")
  if [ "$t" = fuzz_gguf ] && [ -f "$shared/models/stories260K.gguf" ]; then
    mkdir -p "$out/seeds-gguf" && cp "$shared/models/stories260K.gguf" "$out/seeds-gguf/"
    seeds+=("$out/seeds-gguf")
  fi
  log="$out/$t.log"
  result=ok
  if ! "$out/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$out/$t-" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    result="FAILED (see $log)"
    status=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
  printf '%-20s %12s %8s %8s %s\n' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$result"
done
exit $status
