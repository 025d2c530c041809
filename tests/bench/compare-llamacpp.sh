#!/usr/bin/env bash
# Compares lmrt with llama.cpp (../shared/peers/llamacpp/run) on the same synthetic Q4_0 files, in one run:
# for each model, threads 1 and 2, P = 128 and 512, G = 128, the two engines alternate ROUNDS times
# (one process each time), and the script prints medians, the ratios lmrt / llama.cpp and the decode
# roofline fraction (decode tok/s x weight bytes read per token / read bandwidth with that many threads,
# measured in the same run by tests/bench/read_bandwidth.cpp).
#
# usage: tests/bench/compare-llamacpp.sh [LMRT_BINARY]
# env:   MODELS_DIR (default /tmp/lmrt-bench) where the synthetic models are written if missing
#        MODELS     (default "110m tinyllama-1.1b")   THREADS (default "1 2")   PROMPTS (default "128 512")
#        GEN (128)  ROUNDS (3)  LMRT_SHARED_DIR (default: ../shared beside the repository)
#        OUT        (default $MODELS_DIR/results.jsonl) raw per-process results
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
lmrt=${1:-$repo/build/examples/cli/lmrt}
shared=${LMRT_SHARED_DIR:-$(cd "$repo/.." && pwd)/shared}
models_dir=${MODELS_DIR:-/tmp/lmrt-bench}
models=${MODELS:-110m tinyllama-1.1b}
threads_list=${THREADS:-1 2}
prompts=${PROMPTS:-128 512}
gen=${GEN:-128}
rounds=${ROUNDS:-3}
out=${OUT:-$models_dir/results.jsonl}
peer=$shared/peers/llamacpp/run
mkdir -p "$models_dir"
[[ -x $lmrt ]] || { echo "no lmrt binary at $lmrt (build it: ninja -C build lmrt_cli)" >&2; exit 1; }

bw=$models_dir/read_bandwidth
if [[ ! -x $bw || $bw -ot $repo/tests/bench/read_bandwidth.cpp ]]; then
  g++ -O2 -mavx2 -pthread "$repo/tests/bench/read_bandwidth.cpp" -o "$bw"
fi

for m in $models; do
  f=$models_dir/$m-q4_0.gguf
  [[ -f $f ]] || "$lmrt" bench --synthetic "$m" -o "$f" --tokenizer "$shared/models/llama2-tokenizer.bin"
done

: > "$out"
declare -A bandwidth
measure_bw() {  # appends one bandwidth sample per thread count
  for t in $threads_list; do
    local g
    g=$("$bw" "$t" 1024 7 | sed -E 's/.*median ([0-9.]+) GB.*/\1/')
    echo "{\"kind\":\"bandwidth\",\"threads\":$t,\"gbs\":$g}" >> "$out"
  done
}

measure_bw
for r in $(seq 1 "$rounds"); do
  for m in $models; do
    f=$models_dir/$m-q4_0.gguf
    for t in $threads_list; do
      for p in $prompts; do
        echo "round $r/$rounds: $m threads=$t P=$p" >&2
        "$lmrt" bench -m "$f" -t "$t" -p "$p" -n "$gen" --reps 1 --json |
          jq -c --arg m "$m" '{kind:"lmrt", model:$m, threads, P, prefill:.prefill_tps_median, decode:.decode_tps_median, rss:.peak_rss_mib, file_mib, kv_mib}' >> "$out"
        "$peer" "$f" "$t" "$p" "$gen" --reps 1 --json 2>/dev/null | sed -n -e "s/^RESULT //" -e "/^{/p" |
          jq -c --arg m "$m" '{kind:"llamacpp", model:$m, threads, P, prefill:.prefill_tps_median, decode:.decode_tps_median, rss:.rss_mib}' >> "$out"
      done
    done
  done
  measure_bw
done

# Weight bytes read per decoded token: every 2-D weight once, except the embedding table (one row).
for m in $models; do
  "$lmrt" info -m "$models_dir/$m-q4_0.gguf" --json |
    jq -c --arg m "$m" '{kind:"shape", model:$m, bytes_per_token: (([.tensor_types[].bytes] | add) - (.n_vocab * .n_embd / 32 * 18) + (.n_embd / 32 * 18))}' >> "$out"
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = statistics.median
bw = {}
for r in rows:
    if r["kind"] == "bandwidth": bw.setdefault(r["threads"], []).append(r["gbs"])
bpt = {r["model"]: r["bytes_per_token"] for r in rows if r["kind"] == "shape"}
for t, v in sorted(bw.items()):
    print(f"read bandwidth, {t} thread(s): median {med(v):.1f} GB/s over {len(v)} samples {sorted(v)}")
print()
print("| model | threads | P | prefill lmrt | prefill llama.cpp | ratio | decode lmrt | decode llama.cpp | ratio | roofline lmrt | roofline llama.cpp | peak RSS lmrt MiB (budget) | RSS llama.cpp MiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
keys = sorted({(r["model"], r["threads"], r["P"]) for r in rows if r["kind"] in ("lmrt", "llamacpp")})
for k in keys:
    def sel(kind, f): return [r[f] for r in rows if r["kind"] == kind and (r["model"], r["threads"], r["P"]) == k and r.get(f) is not None]
    lp, cp, ld, cd = med(sel("lmrt", "prefill")), med(sel("llamacpp", "prefill")), med(sel("lmrt", "decode")), med(sel("llamacpp", "decode"))
    b = med(bw[k[1]]) * 1e9
    roof = lambda d: d * bpt[k[0]] / b
    lr = [r for r in rows if r["kind"] == "lmrt" and (r["model"], r["threads"], r["P"]) == k]
    budget = lr[0]["file_mib"] + lr[0]["kv_mib"] + 64
    print(f"| {k[0]} | {k[1]} | {k[2]} | {lp:.1f} | {cp:.1f} | {lp/cp:.2f} | {ld:.1f} | {cd:.1f} | {ld/cd:.2f} | "
          f"{roof(ld):.0%} | {roof(cd):.0%} | {max(sel('lmrt','rss')):.0f} ({budget:.0f}) | {max(sel('llamacpp','rss')):.0f} |")
PY
