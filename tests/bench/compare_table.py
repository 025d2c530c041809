#!/usr/bin/env python3
"""Prints the comparison table from the raw results of tests/bench/compare-llamacpp.sh.

usage: compare_table.py RESULTS.jsonl

Medians over the rounds; ratios lmrt / llama.cpp; the decode roofline fraction = decode tok/s x bytes
read per decoded token / read bandwidth with that many threads (tests/bench/read_bandwidth.cpp, best
access pattern). The host's bandwidth drifts within minutes, so each process's fraction uses the mean of
the bandwidth measured right before and right after it, and the table gives the median of those
per-process fractions (rows without a paired bandwidth fall back to the run's median bandwidth). Bytes read per token = every 2-D weight once (the embedding
table: one row) + the F16 KV rows of every layer at the mean context length of the timed decode
(P + G / 2). Peak RSS budget = file + KV arena + 64 MiB.

A second table gives lmrt on the same weights rewritten by `lmrt quantize --interleave` (Q4_0x16, the
same bytes per token), against llama.cpp on the standard file.
"""
import json
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
    print(f"read bandwidth, {t} thread(s): median {med(v):.1f} GB/s over {len(v)} samples {sorted(v)}")
keys = sorted({(r["model"], r["threads"], r["P"]) for r in rows if r["kind"] in ("lmrt", "llamacpp")})


def table(kind, title):
    """One row per (model, threads, P): lmrt rows of `kind` against llama.cpp on the standard file."""
    if not any(r["kind"] == kind for r in rows):
        return
    print()
    print(title)
    print()
    print("| model | threads | P | prefill lmrt | prefill llama.cpp | ratio | decode lmrt | decode llama.cpp | ratio "
          "| roofline lmrt | roofline llama.cpp | peak RSS lmrt MiB (budget) | RSS llama.cpp MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in keys:
        def sel(which, f):
            return [r[f] for r in rows
                    if r["kind"] == which and (r["model"], r["threads"], r["P"]) == k and r.get(f) is not None]
        if not sel(kind, "decode"):
            continue
        lp, cp = med(sel(kind, "prefill")), med(sel("llamacpp", "prefill"))
        ld, cd = med(sel(kind, "decode")), med(sel("llamacpp", "decode"))
        s = shape[k[0]]
        bytes_per_token = s["bytes_per_token"] + s.get("kv_bytes_per_position", 0) * (k[2] + s.get("gen", 128) / 2)
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


table("lmrt", "lmrt and llama.cpp on the same standard Q4_0 file:")
table("lmrt_x16", "lmrt on the file rewritten by `lmrt quantize --interleave` (Q4_0x16), llama.cpp on the standard file:")
