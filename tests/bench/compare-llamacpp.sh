#!/usr/bin/env bash
# Compares lmrt with llama.cpp at its best (the native `bench` of ../shared/peers/llamacpp/oracle: llama-bench's
# persistent thread pool and weight repacking) on the same files, in one run: for each model, threads 1 and 2,
# P = 128 and 512, G = 128, the engines alternate ROUNDS times (one process each time), and the script prints
# medians, the ratios lmrt / llama.cpp, peak RSS against lmrt's budget and the decode roofline fraction
# (decode tok/s x bytes read per token / read bandwidth with that many threads, measured in the same run by
# tests/bench/read_bandwidth.cpp); tests/bench/compare_table.py makes the tables and says what is counted.
#
# A model is SHAPE-TYPE. Shapes (synthetic weights, real shapes; make_synth.py writes the F16 source):
#   110m            llama, dim 768, 12 layers, 12 heads, 12 KV heads, ffn 2048, vocab 32000 (Llama 2 SPM)
#   tinyllama-1.1b  llama, dim 2048, 22 layers, 32 heads, 4 KV heads, ffn 5632, vocab 32000
#   qwen2-1.5b      qwen2 (Qwen2.5-1.5B): dim 1536, 28 layers, 12 heads, 2 KV heads, ffn 8960, Q/K/V biases,
#                   tied output, vocab 151936 (Qwen's)
#   gemma3-1b       gemma3 (Gemma-3-1B): dim 1152, 26 layers, 4 heads, 1 KV head, head_dim 256, ffn 6912,
#                   sliding window 512 on 5 layers of 6, tied output, vocab 32000 (make_synth has no Gemma vocab)
# TYPE is a llama.cpp type (q4_k_m, q6_k, ...): `oracle quantize` of the F16 source. The llama shapes in q4_0
# are lmrt's own synthetic Q4_0 files instead (`lmrt bench --synthetic`, Q4_0 output too: the history tables).
# A name without a type (110m) means q4_0.
#
# usage: tests/bench/compare-llamacpp.sh [LMRT_BINARY]
# env:   MODELS_DIR (default /tmp/lmrt-bench) where the models are written if missing
#        MODELS     (default "110m-q4_0 tinyllama-1.1b-q4_0 110m-q4_k_m tinyllama-1.1b-q4_k_m qwen2-1.5b-q4_k_m
#                   gemma3-1b-q4_k_m")
#        ISAS       (default "native avx2") one lmrt row set per entry: native = the best this CPU runs,
#                   anything else is passed as LMRT_ISA (lmrt forced to that ISA; llama.cpp keeps its best)
#        INTERLEAVED (default 1) also lmrt on the `lmrt quantize --interleave` copy (Q4_0x16) of Q4_0 models
#        THREADS (default "1 2")   PROMPTS (default "128 512")   GEN (128)   ROUNDS (3)
#        PEER_ISA   (default native) llama.cpp's CPU variant: native = the best its loader picks for this CPU;
#                   avx2 = its `haswell` build only (AVX2/FMA/F16C), for an AVX2-against-AVX2 table on a
#                   machine that has AVX-512 (use with ISAS=avx2); avx2vnni = its `alderlake` build only
#                   (AVX2 + AVX-VNNI; use with ISAS=avx2vnni on a CPU that has AVX-VNNI)
#        LMRT_SHARED_DIR (default: ../shared beside the repository)
#        OUT        (default $MODELS_DIR/results.jsonl) raw per-process results
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
lmrt=${1:-$repo/build/examples/cli/lmrt}
shared=${LMRT_SHARED_DIR:-$(cd "$repo/.." && pwd)/shared}
models_dir=${MODELS_DIR:-/tmp/lmrt-bench}
models=${MODELS:-110m-q4_0 tinyllama-1.1b-q4_0 110m-q4_k_m tinyllama-1.1b-q4_k_m qwen2-1.5b-q4_k_m gemma3-1b-q4_k_m}
isas=${ISAS:-native avx2}
interleaved=${INTERLEAVED:-1}
threads_list=${THREADS:-1 2}
prompts=${PROMPTS:-128 512}
gen=${GEN:-128}
rounds=${ROUNDS:-3}
out=${OUT:-$models_dir/results.jsonl}
py=/usr/bin/python3  # make_synth.py needs numpy
oracle_dir=$shared/peers/llamacpp/oracle
mkdir -p "$models_dir"
[[ -x $lmrt ]] || { echo "no lmrt binary at $lmrt (build it: ninja -C build lmrt_cli)" >&2; exit 1; }
oracle_bin=$("$oracle_dir/build.sh" | tail -1)  # builds oracle and bench if missing (a no-op otherwise)
peer_bench=$oracle_bin/bench
peer_isa=${PEER_ISA:-native}
if [[ $peer_isa != native ]]; then
  # The npm package ships one CPU library per x86 level and its loader takes the best one found in the bench's
  # compiled-in directory: a second bench whose directory holds only the wanted variant runs that one.
  declare -A peer_variant=([avx2]=haswell [avx2vnni]=alderlake)
  variant=${peer_variant[$peer_isa]:?PEER_ISA must be native, avx2 or avx2vnni}
  bins=${LMRT_PEER_CACHE:-$HOME/.cache/lmrt-peers}/llamacpp/nlc/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
  only=$oracle_bin/$peer_isa-bins
  mkdir -p "$only"
  ln -sf "$bins/libggml-cpu-$variant.so" "$only/"
  peer_bench=$oracle_bin/bench-$peer_isa
  if [[ ! -x $peer_bench || $oracle_dir/bench.c -nt $peer_bench ]]; then
    gcc -O2 -std=gnu11 -I"$oracle_bin/include" -DBINS_DIR="\"$only\"" "$oracle_dir/bench.c" -o "$peer_bench" \
      -L"$bins" -l:"$(cd "$bins" && ls libllama.v*.so | head -1)" -l:"$(cd "$bins" && ls libggml.v*.so | head -1)" \
      -l:libggml-base.so -lm -Wl,-rpath,"$bins"
  fi
fi

bw=$models_dir/read_bandwidth
if [[ ! -x $bw || $bw -ot $repo/tests/bench/read_bandwidth.cpp ]]; then
  g++ -O2 -mavx2 -pthread "$repo/tests/bench/read_bandwidth.cpp" -o "$bw"
fi

# make_synth.py arguments of each shape (see the header).
synth_args() {
  case $1 in
    110m) echo "--arch llama --dim 768 --layers 12 --heads 12 --kv-heads 12 --ffn 2048 --ctx 2048 --untied" ;;
    tinyllama-1.1b) echo "--arch llama --dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632 --ctx 2048 --untied" ;;
    qwen2-1.5b) echo "--arch qwen2 --dim 1536 --layers 28 --heads 12 --kv-heads 2 --ffn 8960 --ctx 4096" ;;
    gemma3-1b) echo "--arch gemma3 --dim 1152 --layers 26 --heads 4 --kv-heads 1 --head-dim 256 --ffn 6912 --ctx 4096" ;;
    *) echo "unknown shape '$1' (known: 110m tinyllama-1.1b qwen2-1.5b gemma3-1b)" >&2; return 1 ;;
  esac
}
# Writes $models_dir/NAME.gguf if missing (NAME = SHAPE-TYPE).
make_model() {
  local shape=${1%-*} type=${1##*-} f=$models_dir/$1.gguf
  [[ -f $f ]] && return 0
  if [[ $type == q4_0 && ($shape == 110m || $shape == tinyllama-1.1b) ]]; then
    "$lmrt" bench --synthetic "$shape" -o "$f" --tokenizer "$shared/models/llama2-tokenizer.bin"
    return
  fi
  local src=$models_dir/$shape-f16.gguf args
  args=$(synth_args "$shape")
  if [[ ! -f $src ]]; then
    "$py" -c 'import numpy' 2>/dev/null || { echo "make_synth.py needs numpy: apt-get install python3-numpy" >&2; exit 1; }
    # shellcheck disable=SC2086  # the arguments are words
    "$py" "$oracle_dir/make_synth.py" $args -o "$src.tmp" >&2 && mv "$src.tmp" "$src"
  fi
  "$oracle_bin/oracle" quantize "$src" "$f.tmp" "${type^^}" --threads 2 >&2 && mv "$f.tmp" "$f"
}

names=()
for m in $models; do
  case $m in 110m | tinyllama-1.1b) m=$m-q4_0 ;; esac
  names+=("$m")
  make_model "$m"
  # The same weights in lmrt's interleaved layout (lmrt only: llama.cpp cannot read it).
  x16=$models_dir/$m-x16.gguf
  if [[ $interleaved == 1 && $m == *-q4_0 && ! ($x16 -nt $models_dir/$m.gguf) ]]; then
    "$lmrt" quantize --interleave -m "$models_dir/$m.gguf" -o "$x16" >&2
  fi
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
    '{kind:$kind, model:$m, threads, P, isa, prefill:.prefill_tps_median, decode:.decode_tps_median,
      rss:(.peak_rss_mib // .rss_mib), file_mib, kv_mib, bw:(($b + $a) / 2)}' <<< "$json" >> "$out"
}
# lmrt_json ISA FILE ARGS...: one `lmrt bench --json` process, forced to ISA unless it is "native".
lmrt_json() {
  local isa=$1
  shift
  if [[ $isa == native ]]; then "$lmrt" bench -m "$@" --reps 1 --json; else LMRT_ISA=$isa "$lmrt" bench -m "$@" --reps 1 --json; fi
}
# peer_json FILE THREADS P G: one native llama.cpp bench process, its RESULT line in lmrt's field names, with
# the peak RSS from GNU time.
peer_json() {
  local rss_file=$models_dir/peer-rss.txt result
  result=$(/usr/bin/time -f %M -o "$rss_file" "$peer_bench" "$@" --reps 1 2>/dev/null | sed -n 's/^RESULT //p')
  jq -c --argjson rss_kib "$(tail -1 "$rss_file")" \
    '{threads, P, prefill_tps_median:.prefill_tps, decode_tps_median:.decode_tps, peak_rss_mib:($rss_kib / 1024)}' \
    <<< "$result"
}

for r in $(seq 1 "$rounds"); do
  for m in "${names[@]}"; do
    f=$models_dir/$m.gguf
    for t in $threads_list; do
      for p in $prompts; do
        echo "round $r/$rounds: $m threads=$t P=$p" >&2
        measure_bw "$t"
        for isa in $isas; do
          kind=lmrt
          [[ $isa == native ]] || kind=lmrt_$isa
          run_engine "$kind" "$t" "$bw_after" lmrt_json "$isa" "$f" -t "$t" -p "$p" -n "$gen"
        done
        if [[ $interleaved == 1 && $m == *-q4_0 ]]; then
          run_engine lmrt_x16 "$t" "$bw_after" lmrt_json native "$models_dir/$m-x16.gguf" -t "$t" -p "$p" -n "$gen"
        fi
        run_engine llamacpp "$t" "$bw_after" peer_json "$f" "$t" "$p" "$gen"
      done
    done
  done
done

# Bytes read per decoded token: every 2-D weight once, except the embedding table (one row; all of it when
# it is also the output), plus the KV rows of every layer for each position it attends to (compare_table.py).
for m in "${names[@]}"; do
  f=$models_dir/$m.gguf
  tensors=$("$oracle_bin/oracle" info "$f" --tensors 1 2>/dev/null |
    awk '$1 == "tensor" { if ($4 ~ /,$/) { r = $5; gsub(/]/, "", r); print $2, $(NF - 1), 2, r } else print $2, $(NF - 1), 1, 1 }' |
    jq -R -s -c '[split("\n")[] | select(length > 0) | split(" ") |
      {name:.[0], bytes:(.[1] | tonumber), dims:(.[2] | tonumber), rows:(.[3] | tonumber)}]')
  "$lmrt" info -m "$f" --json |
    jq -c --arg m "$m" --argjson g "$gen" --argjson t "$tensors" --arg cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)" '
      ($t | map(select(.name == "token_embd.weight"))[0]) as $e |
      ($t | any(.name == "output.weight")) as $untied |
      {kind:"shape", model:$m, gen:$g, cpu:($cpu | ltrimstr(" ")), types:(.tensor_types | keys),
       bytes_per_token: (([$t[] | select(.dims == 2) | .bytes] | add) - (if $untied then $e.bytes else 0 end)
                         + ($e.bytes / $e.rows)),
       kv_bytes_per_position_per_layer: (2 * .arch.head_dim * .n_head_kv * 2), n_layer,
       n_windowed_layers:.arch.n_windowed_layers, sliding_window:.arch.sliding_window}' >> "$out"
done

PEER_ISA=$peer_isa python3 "$repo/tests/bench/compare_table.py" "$out"
