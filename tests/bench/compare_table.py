#!/usr/bin/env python3
"""Prints the comparison tables from the raw results of tests/bench/compare-llamacpp.sh.

usage: compare_table.py RESULTS.jsonl

Medians over the rounds; ratios lmrt / llama.cpp (the native oracle `bench`: persistent thread pool, weight
repacking, its best ISA on this CPU; older result files: the node-llama-cpp `run`); the decode roofline
fraction = decode tok/s x bytes read per decoded token / read bandwidth with that many threads
(tests/bench/read_bandwidth.cpp, best access pattern). The host's bandwidth drifts within minutes, so each
process's fraction uses the mean of the bandwidth measured right before and right after it, and the table
gives the median of those per-process fractions (rows without a paired bandwidth fall back to the run's
median bandwidth). Bytes read per token = every 2-D weight once (the embedding table: one row, or all of it
when it is also the output matrix) + the F16 KV rows each layer attends to at the mean context length of
the timed decode (P + G / 2; a sliding-window layer reads at most its window). Peak RSS budget = file + KV
arena + 64 MiB.

One table per lmrt variant, each against llama.cpp on the standard file: lmrt at the best ISA this CPU runs,
lmrt forced to another ISA (`LMRT_ISA=avx2`: kind lmrt_avx2), and lmrt on the same weights rewritten by
`lmrt quantize --interleave` (Q4_0x16, the same bytes per token).
"""
import json
import os
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
med = statistics.median
bw = {}
for r in rows:
    if r["kind"] == "bandwidth":
        bw.setdefault(r["threads"], []).append(r["gbs"])
shape = {r["model"]: r for r in rows if r["kind"] == "shape"}
for t, v in sorted(bw.items()):
    print(f"read bandwidth, {t} thread(s): median {med(v):.1f} GB/s over {len(v)} samples, "
          f"{min(v):.1f}–{max(v):.1f}")
for m, s in shape.items():
    if "types" in s:
        print(f"{m}: {', '.join(s['types'])}; {s['bytes_per_token'] / 2**20:.0f} MiB of weights per token")
keys = sorted({(r["model"], r["threads"], r["P"]) for r in rows if r["kind"] == "llamacpp"})


def kv_bytes_per_token(s, context):
    """F16 K and V rows read by one decode step at `context` positions (old files: one per-position figure)."""
    if "kv_bytes_per_position_per_layer" not in s:
        return s.get("kv_bytes_per_position", 0) * context
    windowed = s.get("n_windowed_layers", 0)
    window = s.get("sliding_window") or context
    return s["kv_bytes_per_position_per_layer"] * ((s["n_layer"] - windowed) * context + windowed * min(context, window))


def ran(kind):
    """The kernels lmrt reported running for `kind` (bench --json "isa"; older files: none)."""
    isas = sorted({r["isa"] for r in rows if r["kind"] == kind and r.get("isa")})
    return f" Kernels run: {', '.join(i.upper() for i in isas)}." if isas else ""


def table(kind, title):
    """One row per (model, threads, P): lmrt rows of `kind` against llama.cpp on the standard file."""
    if not any(r["kind"] == kind for r in rows):
        return
    print()
    print(title + ran(kind))
    print()
    print("| model | threads | P | prefill lmrt | prefill llama.cpp | ratio | decode lmrt | decode llama.cpp | ratio "
          "| roofline lmrt | roofline llama.cpp | peak RSS lmrt MiB (budget) | RSS llama.cpp MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in keys:
        def sel(which, f):
            return [r[f] for r in rows
                    if r["kind"] == which and (r["model"], r["threads"], r["P"]) == k and r.get(f) is not None]
        if not sel(kind, "decode") or not sel("llamacpp", "decode"):
            continue
        lp, cp = med(sel(kind, "prefill")), med(sel("llamacpp", "prefill"))
        ld, cd = med(sel(kind, "decode")), med(sel("llamacpp", "decode"))
        s = shape[k[0]]
        bytes_per_token = s["bytes_per_token"] + kv_bytes_per_token(s, k[2] + s.get("gen", 128) / 2)
        run_bw = med(bw[k[1]])

        def roof(which):
            return med([r["decode"] * bytes_per_token / (r.get("bw") or run_bw) / 1e9 for r in rows
                        if r["kind"] == which and (r["model"], r["threads"], r["P"]) == k
                        and r.get("decode") is not None])
        lr = [r for r in rows if r["kind"] == kind and (r["model"], r["threads"], r["P"]) == k]
        budget = lr[0]["file_mib"] + lr[0]["kv_mib"] + 64
        print(f"| {k[0]} | {k[1]} | {k[2]} | {lp:.1f} | {cp:.1f} | {lp/cp:.2f} | {ld:.1f} | {cd:.1f} | {ld/cd:.2f} | "
              f"{roof(kind):.0%} | {roof('llamacpp'):.0%} | {max(sel(kind, 'rss')):.0f} ({budget:.0f}) | "
              f"{max(sel('llamacpp', 'rss')):.0f} |")


# PEER_ISA (set by compare-llamacpp.sh): which of llama.cpp's CPU builds ran.
peer_isa = os.environ.get("PEER_ISA", "native")
peer = "llama.cpp (its best)" if peer_isa == "native" else f"llama.cpp (its {peer_isa.upper()} build)"
table("lmrt", f"lmrt (the best ISA this CPU runs) and {peer} on the same file:")
for kind in sorted({r["kind"] for r in rows if r["kind"].startswith("lmrt_") and r["kind"] != "lmrt_x16"}):
    isa = kind[len("lmrt_"):]
    table(kind, f"lmrt forced to {isa.upper()} (`LMRT_ISA={isa}`), {peer}, same file:")
table("lmrt_x16", "lmrt on the file rewritten by `lmrt quantize --interleave` (Q4_0x16), llama.cpp on the standard file:")
