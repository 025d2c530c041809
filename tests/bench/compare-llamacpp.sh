#!/usr/bin/env bash
# Compares lmrt with llama.cpp (../shared/peers/llamacpp/run) on the same synthetic Q4_0 files, in one run:
# for each model, threads 1 and 2, P = 128 and 512, G = 128, the two engines alternate ROUNDS times
# (one process each time), and the script prints medians, the ratios lmrt / llama.cpp and the decode
# roofline fraction (decode tok/s x bytes read per token / read bandwidth with that many threads,
# measured in the same run by tests/bench/read_bandwidth.cpp); tests/bench/compare_table.py makes the
# table and says exactly what is counted.
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
  # The same weights in lmrt's interleaved layout (lmrt only: llama.cpp cannot read it).
  x16=$models_dir/$m-q4_0x16.gguf
  [[ -f $x16 && $x16 -nt $f ]] || "$lmrt" quantize --interleave -m "$f" -o "$x16" >&2
done

# The host's bandwidth drifts by tens of percent within minutes (other tenants), so each engine's sample is
# paired with the read bandwidth measured right before and right after it (their mean), and the roofline
# fraction is taken per sample; compare_table.py prints the median of those fractions.
: > "$out"
measure_bw() {  # measure_bw THREADS: one median read bandwidth in GB/s into $bw_after, and a JSON line
  bw_after=$("$bw" "$1" 1024 5 | sed -E 's/.*median ([0-9.]+) GB.*/\1/')
  echo "{\"kind\":\"bandwidth\",\"threads\":$1,\"gbs\":$bw_after}" >> "$out"
}
# run_engine KIND THREADS BW_BEFORE CMD...: runs one bench process, appends its JSON line with the paired
# bandwidth, and leaves the bandwidth measured after it in $bw_after.
run_engine() {
  local kind=$1 t=$2 before=$3 json
  shift 3
  json=$("$@")
  measure_bw "$t"
  jq -c --arg kind "$kind" --arg m "$m" --argjson b "$before" --argjson a "$bw_after" \
    '{kind:$kind, model:$m, threads, P, prefill:.prefill_tps_median, decode:.decode_tps_median,
      rss:(.peak_rss_mib // .rss_mib), file_mib, kv_mib, bw:(($b + $a) / 2)}' <<< "$json" >> "$out"
}
peer_json() { "$peer" "$@" --reps 1 --json 2>/dev/null | sed -n -e "s/^RESULT //" -e "/^{/p"; }

for r in $(seq 1 "$rounds"); do
  for m in $models; do
    f=$models_dir/$m-q4_0.gguf
    for t in $threads_list; do
      for p in $prompts; do
        echo "round $r/$rounds: $m threads=$t P=$p" >&2
        measure_bw "$t"
        run_engine lmrt "$t" "$bw_after" "$lmrt" bench -m "$f" -t "$t" -p "$p" -n "$gen" --reps 1 --json
        run_engine lmrt_x16 "$t" "$bw_after" \
          "$lmrt" bench -m "$models_dir/$m-q4_0x16.gguf" -t "$t" -p "$p" -n "$gen" --reps 1 --json
        run_engine llamacpp "$t" "$bw_after" peer_json "$f" "$t" "$p" "$gen"
      done
    done
  done
done

# Bytes read per decoded token: every 2-D weight once, except the embedding table (one row), plus the KV
# rows of every layer for each position in the context (compare_table.py).
for m in $models; do
  "$lmrt" info -m "$models_dir/$m-q4_0.gguf" --json |
    jq -c --arg m "$m" --argjson g "$gen" '{kind:"shape", model:$m, gen:$g,
      bytes_per_token: (([.tensor_types[].bytes] | add) - (.n_vocab * .n_embd / 32 * 18) + (.n_embd / 32 * 18)),
      kv_bytes_per_position: (2 * .n_layer * (.n_embd / .n_head * .n_head_kv) * 2)}' >> "$out"
done

python3 "$repo/tests/bench/compare_table.py" "$out"
