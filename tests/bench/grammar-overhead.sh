#!/bin/bash
# Constrained decoding overhead, the issue-18 benchmark: the greedy decode step with a nested-object JSON
# Schema against the unconstrained one, on each model (default: the 1.1B shape with the 32k Llama 2
# vocabulary and the Llama 3.2 1B shape with the 128k Llama 3 vocabulary), interleaved in the same minutes
# (ROUNDS rounds; each round runs every model, constrained and unconstrained in alternating order, then
# llama.cpp's `oracle greedy --grammar` on the same file and the same grammar), then one table of medians.
# Also the schema's compile time and the mask/check costs on each vocabulary (lmrt_grammar_mask_bench), and
# the grammar's share of the step measured in one process on the same logits (lmrt_grammar_step_bench, 3 runs).
#   tests/bench/grammar-overhead.sh [MODEL.gguf ...]
#   env: ROUNDS=5 THREADS=1 TOKENS=48 SCHEMA=tests/bench/nested-schema.json BUILD=build
#        ORACLE=/tmp/lmrt-oracle/oracle (skipped when absent)
# Needs a build with the lmrt_cli, lmrt_grammar_mask_bench and lmrt_grammar_step_bench targets. ~4 minutes with the defaults.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build=${BUILD:-$root/build}
lmrt=$build/examples/cli/lmrt
mask_bench=$build/tests/lmrt_grammar_mask_bench
step_bench=$build/tests/lmrt_grammar_step_bench
oracle=${ORACLE:-/tmp/lmrt-oracle/oracle}
schema=${SCHEMA:-$root/tests/bench/nested-schema.json}
rounds=${ROUNDS:-5}
threads=${THREADS:-1}
tokens=${TOKENS:-48}
prompt="Give me a customer record as JSON:"
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(/tmp/lmrt-bench/tinyllama-1.1b-q4_0.gguf /tmp/lmrt-bench/llama3-1b-q4_k_m.gguf)
for f in "$lmrt" "$mask_bench" "$step_bench" "$schema" "${models[@]}"; do
  [ -e "$f" ] || { echo "grammar-overhead: $f not found" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=$tmp/raw.txt

# The same grammar for llama.cpp: lmrt's translation of the schema (lmrt_json_schema_to_grammar).
python3 - "$build/liblmrt.so" "$schema" "$tmp/schema.gbnf" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
text = open(sys.argv[2], "rb").read()
n = ctypes.c_size_t(0)
buf = ctypes.create_string_buffer(1 << 20)
err = ctypes.create_string_buffer(512)
rc = lib.lmrt_json_schema_to_grammar(text, buf, ctypes.c_size_t(len(buf)), ctypes.byref(n), err, ctypes.c_size_t(512))
if rc != 0:
    sys.exit("lmrt_json_schema_to_grammar: " + err.value.decode())
open(sys.argv[3], "wb").write(buf.raw[: n.value])
PY

echo "load $(cut -d' ' -f1-3 /proc/loadavg) start" >>"$raw"
for M in "${models[@]}"; do
  # A valid document for the mask bench: the schema's own example is in the bench source; any schema
  # given here is timed for compilation on the model's vocabulary with that built-in document when it
  # is the default schema.
  "$mask_bench" "$M" "$schema" >"$tmp/mask.txt" 2>&1 || true
  sed "s|^|mask $(basename "$M" .gguf) |" "$tmp/mask.txt" >>"$raw"
  # The same overhead measured in one process on the same logits (the forward pass's noise cancels).
  for r in 1 2 3; do
    "$step_bench" "$M" "$schema" -n "$tokens" -t "$threads" -p "$prompt" >"$tmp/step.txt" 2>&1 || true
    sed "s|^|mask $(basename "$M" .gguf) |" "$tmp/step.txt" >>"$raw"
  done
done
for r in $(seq "$rounds"); do
  for M in "${models[@]}"; do
    mn=$(basename "$M" .gguf)
    if [ $((r % 2)) -eq 1 ]; then order="none schema"; else order="schema none"; fi
    for mode in $order; do
      extra=()
      [ "$mode" = schema ] && extra=(--json-schema "$schema")
      "$lmrt" run -m "$M" -p "$prompt" -n "$tokens" -t "$threads" --temp 0 "${extra[@]}" --json 2>/dev/null |
        python3 -c "
import json, sys
d = json.load(sys.stdin); n = d['usage']['completion_tokens']
print('lmrt $mn $mode $r', n, d['timings']['decode_ms'] / max(1, n - 1), d['finish_reason'])" >>"$raw"
    done
    if [ -x "$oracle" ]; then
      "$oracle" greedy "$M" --prompt "$prompt" -n "$tokens" --threads "$threads" --grammar "$tmp/schema.gbnf" \
        2>&1 >/dev/null | sed -n "s/^ *\(no grammar\|grammar + greedy\|argmax checked\)/llama.cpp $mn $r &/p" >>"$raw"
    fi
  done
  echo "load $(cut -d' ' -f1-3 /proc/loadavg) round $r" >>"$raw"
done
[ -n "${KEEP_RAW:-}" ] && cp "$raw" "$KEEP_RAW"
python3 - "$raw" "$threads" "$tokens" <<'PY'
import re, statistics as st, sys
raw, threads, tokens = sys.argv[1], sys.argv[2], sys.argv[3]
lm, ll, mask, loads = {}, {}, {}, []
for line in open(raw):
    f = line.split()
    if not f:
        continue
    if f[0] == "load":
        loads.append(float(f[1]))
    elif f[0] == "lmrt":
        model, mode, rnd, n, ms, why = f[1], f[2], int(f[3]), int(f[4]), float(f[5]), f[6]
        lm.setdefault(model, {}).setdefault(mode, {})[rnd] = (ms, n, why)
    elif f[0] == "llama.cpp":
        model, rnd = f[1], int(f[2])
        nums = re.findall(r"[-+]?\d+\.\d+", line)
        kind = "none" if "no grammar" in line else ("chain" if "one sampler chain" in line else "first")
        ll.setdefault(model, {}).setdefault(kind, {})[rnd] = float(nums[-1])  # total ms per token
    elif f[0] == "mask":
        mask.setdefault(f[1], []).append(" ".join(f[2:]))
med = lambda xs: st.median(xs) if xs else float("nan")
print(f"threads {threads}, up to {tokens} tokens, load average (1 min) {min(loads):.1f}-{max(loads):.1f} over the run")
print("| model | lmrt unconstrained ms/token | lmrt schema ms/token | overhead (ratio of medians) | same-round ratios (median, min-max) | tokens, finish | llama.cpp none / grammar chain / argmax first ms/token | llama.cpp overhead chain / first |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for model in lm:
    a, b = lm[model].get("none", {}), lm[model].get("schema", {})
    na, nb = med([v[0] for v in a.values()]), med([v[0] for v in b.values()])
    ratios = [b[r][0] / a[r][0] for r in a if r in b]
    fin = sorted({f"{v[1]} {v[2]}" for v in b.values()})
    o = ll.get(model, {})
    on, oc, of = (med(list(o.get(k, {}).values())) for k in ("none", "chain", "first"))
    print(f"| {model} | {na:.2f} | {nb:.2f} | {100 * (nb / na - 1):+.1f} % | {100 * (med(ratios) - 1):+.1f} % "
          f"({100 * (min(ratios) - 1):+.1f} to {100 * (max(ratios) - 1):+.1f} %), n={len(ratios)} | {', '.join(fin)} "
          f"| {on:.2f} / {oc:.2f} / {of:.2f} | {100 * (oc / on - 1):+.1f} % / {100 * (of / on - 1):+.1f} % |")
for model, lines in mask.items():
    for l in lines:
        print(f"{model}: {l}")
PY
