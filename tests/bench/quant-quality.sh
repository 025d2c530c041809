#!/usr/bin/env bash
# Quality of `lmrt quantize` against llama.cpp's quantizer: for every file type, lmrt quantizes the F16
# reference models of ../shared/models/quant (base-f16, w320-f16), llama.cpp's logits of both its own
# quantization (base-TYPE.gguf, made by llama_model_quantize) and lmrt's are taken by the oracle
# (`oracle logits ... --all --repack 0`, llama.cpp's plain kernels, so only the weights differ), and each
# is compared with the F16 model's logits (`oracle logits F16 --all --fa off --kv f32`) by the mean KL
# divergence KL(P_f16 || P_quant) over the 64 positions of ids.txt. Prints a Markdown table: the two
# KLs, their ratio (the target is <= 1.05), top-1 agreement with F16, and whether lmrt's tensor data
# is byte-identical to llama.cpp's file.
#
# usage: tests/bench/quant-quality.sh [LMRT_BINARY]
# env:   ORACLE (default: built by ../shared/peers/llamacpp/oracle/build.sh)   WORK (default /tmp/lmrt-quant-quality)
#        THREADS (quantize threads, default 2)   LMRT_SHARED_DIR (default ../shared beside the repository)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
lmrt=${1:-$repo/build/examples/cli/lmrt}
shared=${LMRT_SHARED_DIR:-$(cd "$repo/.." && pwd)/shared}
quant=$shared/models/quant
work=${WORK:-/tmp/lmrt-quant-quality}
threads=${THREADS:-2}
py=/usr/bin/python3
[[ -x $lmrt ]] || { echo "no lmrt binary at $lmrt (build it: ninja -C build lmrt_cli)" >&2; exit 1; }
oracle=${ORACLE:-$("$shared/peers/llamacpp/oracle/build.sh" | tail -1)/oracle}
mkdir -p "$work"
ids=$(cat "$quant/ids.txt")

logits() {  # logits MODEL OUT [oracle options]
  local model=$1 out=$2
  shift 2
  "$oracle" logits "$model" --ids "$ids" --all -o "$out" "$@" > /dev/null 2>&1 ||
    { echo "oracle logits failed on $model" >&2; exit 1; }
}

rows=()
for base in base w320; do
  logits "$quant/$base-f16.gguf" "$work/$base-f16.f32" --fa off --kv f32
  for f in "$quant/$base"-*.gguf; do
    type=${f##*/$base-}
    type=${type%.gguf}
    [[ $type == f16 ]] && continue
    mine=$work/$base-$type.gguf
    "$lmrt" quantize -m "$quant/$base-f16.gguf" -o "$mine" "$type" -t "$threads" > /dev/null
    logits "$f" "$work/$base-$type.llamacpp.f32" --repack 0
    logits "$mine" "$work/$base-$type.lmrt.f32" --repack 0
    rows+=("$base $type $f $mine")
  done
done

"$py" - "$work" "${rows[@]}" <<'PY'
import sys
import numpy as np

work = sys.argv[1]


def logp(path):
    x = np.fromfile(path, dtype=np.float32).reshape(-1, 512).astype(np.float64)
    x -= x.max(axis=1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


def tensor_data(path):
    """name -> raw tensor bytes, for any GGUF (numpy only: gguf-py is not installed)."""
    b = open(path, "rb").read()
    pos = 0

    def get(fmt, n):
        nonlocal pos
        v = np.frombuffer(b, dtype=fmt, count=1, offset=pos)[0]
        pos += n
        return int(v) if fmt != "<f4" else v

    def string():
        nonlocal pos
        n = get("<u8", 8)
        s = b[pos:pos + n].decode()
        pos += n
        return s

    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def skip(t):
        nonlocal pos
        if t == 8:
            string()
        elif t == 9:
            et, n = get("<u4", 4), get("<u8", 8)
            for _ in range(n):
                skip(et)
        else:
            pos += sizes[t]

    pos = 8
    nt, nkv = get("<u8", 8), get("<u8", 8)
    align = 32
    for _ in range(nkv):
        k, t = string(), get("<u4", 4)
        if k == "general.alignment" and t == 4:
            align = get("<u4", 4)
        else:
            skip(t)
    infos = []
    for _ in range(nt):
        name, nd = string(), get("<u4", 4)
        for _ in range(nd):
            get("<u8", 8)
        t, off = get("<u4", 4), get("<u8", 8)
        infos.append((name, off))
    data = (pos + align - 1) // align * align
    offs = sorted(o for _, o in infos) + [len(b) - data]
    nxt = {o: offs[i + 1] for i, o in enumerate(offs[:-1])}
    return {n: b[data + o:data + nxt[o]] for n, o in infos}


print("| model | type | KL llama.cpp | KL lmrt | lmrt / llama.cpp | top-1 = F16 (llama.cpp / lmrt) | tensor data |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for row in sys.argv[2:]:
    base, typ, ref_file, mine_file = row.split()
    f16 = logp(f"{work}/{base}-f16.f32")
    res = []
    for who in ("llamacpp", "lmrt"):
        q = logp(f"{work}/{base}-{typ}.{who}.f32")
        kl = float((np.exp(f16) * (f16 - q)).sum(axis=1).mean())
        top1 = int((f16.argmax(axis=1) == q.argmax(axis=1)).sum())
        res.append((kl, top1))
    a, m = tensor_data(ref_file), tensor_data(mine_file)
    same = sum(1 for n in a if m.get(n) == a[n])
    data = "identical" if same == len(a) == len(m) else f"{same}/{len(a)} tensors identical"
    ratio = res[1][0] / res[0][0] if res[0][0] > 0 else float("nan")
    print(f"| {base} | {typ} | {res[0][0]:.5f} | {res[1][0]:.5f} | {ratio:.3f} | {res[0][1]}/64 / {res[1][1]}/64 | {data} |")
PY
