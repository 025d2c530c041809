#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ with Debian's clang (ASan + UBSan) and runs each for a
# fixed time from its seed corpus (tests/fuzz/seeds/<target>/, plus stories260K.gguf for the GGUF
# reader when ../shared is there). Targets: the GGUF reader, both tokenizers (SentencePiece and
# byte-level BPE), the sampler spec parser, the plugin config parser, the chat template renderer, the
# server's request parsing and the saved context state reader. Prints executions and coverage per target; a crash, leak or
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
  -I"$root" -I"$root/abi/include")

# The library sources each target reaches (compiled once, with fuzzer instrumentation).
reader=(runtime/model/gguf_file.cpp runtime/util/mapped_file.cpp runtime/tokenizer/vocab.cpp
  runtime/tokenizer/tokenizer.cpp runtime/tokenizer/spm_tokenizer.cpp runtime/tokenizer/bpe_tokenizer.cpp
  runtime/tokenizer/bpe_pretokenizer.cpp runtime/tokenizer/byte_level.cpp runtime/util/utf8.cpp
  runtime/tokenizer/token_index.cpp runtime/tokenizer/bpe_merge_table.cpp)
# The type table (formats/tensor_type.cpp) and the row functions it names (formats/*.cpp).
formats=()
for f in "$root"/formats/*.cpp; do formats+=("formats/$(basename "$f")"); done
spec=(runtime/sampling/sampler_spec.cpp runtime/plugins/plugin_config.cpp)
chat=()
for f in "$root"/runtime/chat/*.cpp; do chat+=("runtime/chat/$(basename "$f")"); done
declare -A sources=(
  [fuzz_gguf]="${reader[*]} ${formats[*]}"
  [fuzz_spm_tokenizer]="${reader[*]} ${formats[*]}"
  [fuzz_bpe_tokenizer]="${reader[*]} ${formats[*]}"
  [fuzz_sampler_spec]="${spec[*]}"
  [fuzz_plugin_config]=""
  [fuzz_chat_template]="${chat[*]} ${reader[*]} ${formats[*]}"
  [fuzz_server_request]="examples/server/api_request.cpp examples/server/bounded_json.cpp examples/server/chat_template.cpp examples/server/prompt_tokens.cpp
    examples/server/tool_call_grammar.cpp examples/server/tool_calls.cpp"
  [fuzz_context_state]="runtime/generate/state_blob.cpp runtime/cache/sha256.cpp"
)
# Targets built from another target's source, with their own data file.
declare -A source_of=([fuzz_spm_tokenizer]=fuzz_tokenizer [fuzz_bpe_tokenizer]=fuzz_tokenizer)
declare -A model_of=([fuzz_bpe_tokenizer]="$shared/vocab/llama-bpe.gguf" [fuzz_chat_template]="$shared/vocab/qwen2.gguf")
declare -A seeds_of=([fuzz_spm_tokenizer]=fuzz_tokenizer [fuzz_bpe_tokenizer]=fuzz_tokenizer)
# The server's request parser calls the C API (lmrt_sampler_create): it links the Release library that
# scripts/test.sh builds first (uninstrumented; the parser itself is instrumented).
lib=${LMRT_FUZZ_LIB:-$root/build/liblmrt.so}
declare -A extra_of=([fuzz_server_request]="-I$root/examples/server $lib -Wl,-rpath,$(dirname "$lib")")
pcre=$(pkg-config --libs libpcre2-8)

object() {  # source -> object path, rebuilt when the source or any header is newer
  local src=$1 obj="$out/obj/$(echo "$1" | tr / _).o"
  if [ ! -f "$obj" ] || [ "$root/$src" -nt "$obj" ] ||
    [ -n "$(find "$root/runtime" "$root/formats" "$root/abi/include" "$root/examples/server" -name '*.h' -newer "$obj" | head -1)" ]; then
    "$cxx" "${flags[@]}" -I"$root/examples/server" -fsanitize=fuzzer-no-link -c "$root/$src" -o "$obj"
  fi
  echo "$obj"
}

targets=(fuzz_gguf fuzz_spm_tokenizer fuzz_bpe_tokenizer fuzz_sampler_spec fuzz_plugin_config fuzz_chat_template
  fuzz_server_request fuzz_context_state)
[ -f "$lib" ] || { echo "fuzz.sh: $lib is missing (build the Release library first, or set LMRT_FUZZ_LIB)" >&2; exit 1; }
echo "== fuzz build ($cxx) into $out"
for t in "${targets[@]}"; do
  objs=()
  for src in ${sources[$t]}; do objs+=("$(object "$src")"); done
  model=${model_of[$t]:-$shared/models/stories260K.gguf}
  # shellcheck disable=SC2086
  "$cxx" "${flags[@]}" -DLMRT_FUZZ_DEFAULT_MODEL="\"$model\"" -fsanitize=fuzzer \
    "$root/tests/fuzz/${source_of[$t]:-$t}.cpp" "${objs[@]}" ${extra_of[$t]:-} $pcre -o "$out/$t"
done

status=0
printf '%-20s %12s %8s %8s %s\n' target executions cov features result
for t in "${targets[@]}"; do
  corpus="$out/corpus/$t"
  mkdir -p "$corpus"
  seeds=("$root/tests/fuzz/seeds/${seeds_of[$t]:-$t}")
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
