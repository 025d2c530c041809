#!/bin/bash
# Constrained decoding end to end, interleaved: for each model and thread count, lmrt unconstrained, with
# a nested JSON Schema and with llama.cpp's json_two_strings.gbnf, then llama.cpp's `oracle greedy
# --grammar` on the same file (its three runs: no grammar, grammar in the chain, argmax checked first).
#   tests/bench/grammar-e2e.sh [SCHEMA.json] [MODEL.gguf ...]   (ROUNDS=3, LMRT=build/examples/cli/lmrt,
#   ORACLE=/tmp/lmrt-oracle/oracle; models default to the 128k Llama 3 and the 32k TinyLlama shapes)
# One line per lmrt run: model, threads, mode, tokens, decode ms per token, finish reason.
root="$(cd "$(dirname "$0")/../.." && pwd)"
L=${LMRT:-$root/build/examples/cli/lmrt}
O=${ORACLE:-/tmp/lmrt-oracle/oracle}
G=$root/../shared/peers/llamacpp/oracle/json_two_strings.gbnf
S=${1:-/tmp/nested.json}
shift || true
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(/tmp/lmrt-bench/llama3-1b-q4_k_m.gguf /tmp/lmrt-bench/tinyllama-1.1b-q4_k_m.gguf)
for r in $(seq "${ROUNDS:-3}"); do
  for M in "${models[@]}"; do
    mn=$(basename "$M" .gguf)
    for t in 1 2; do
      for mode in none schema gbnf; do
        case $mode in none) extra=() ;; schema) extra=(--json-schema "$S") ;; gbnf) extra=(--grammar "$G") ;; esac
        "$L" run -m "$M" -p "Give me a person as JSON:" -n 40 -t $t "${extra[@]}" --json 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin); n = d['usage']['completion_tokens']
print('lmrt $mn t$t $mode', n, round(d['timings']['decode_ms'] / max(1, n - 1), 2), d['finish_reason'])"
      done
      "$O" greedy "$M" --prompt "Give me a person as JSON:" -n 40 --threads $t --grammar "$G" 2>&1 >/dev/null |
        grep -v "^text" | sed "s/^/llama.cpp $mn t$t: /"
    done
  done
done
