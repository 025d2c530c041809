#!/usr/bin/env python3
"""Load run of `lmrt serve` (a benchmark, not a test): concurrent streaming clients against each
--parallel value, in the same run, on the same model.

Usage: server_load.py LMRT_BINARY MODEL [--parallel 1,16] [--clients 16] [--requests 64]
                      [--max-tokens 64] [--threads 2] [--json]
For each --parallel value it starts a server, warms it up with one request, then runs --clients
threads that each stream completions (greedy, a different prompt each, stream_options.include_usage)
until --requests have been sent in all, and reports requests/s, generated tokens/s (the usage
chunks' completion_tokens over the wall time) and the p50/p99 time to first token (from sending the
request to the first piece of text, queueing included). Python standard library only.
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
from server_test import sse_payloads  # noqa: E402  (the event-stream reader the server tests use)

PROMPTS = ["Once upon a time", "The little dog", "Lily wanted to", "One day, a bird", "Tom and Sue went",
           "The sun was", "A big red ball", "In the forest"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, model, parallel, threads, queue):
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="lmrt-load-", suffix=".log", delete=False)
    proc = subprocess.Popen([binary, "serve", "-m", model, "--host", "127.0.0.1", "--port", str(port), "--parallel",
                             str(parallel), "--threads", str(threads), "--queue", str(queue)],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(open(log.name).read())
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/health")
            if conn.getresponse().status == 200:
                return proc, port, log.name
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the server did not come up")


def stream_one(port, prompt, max_tokens):
    """(time to first token s, completion tokens, total s) of one streamed completion."""
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    t0 = time.time()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"status {resp.status}: {resp.read()[:200]}")
        ttft, tokens = None, 0
        for payload in sse_payloads(resp):
            if payload == "[DONE]":
                continue
            ev = json.loads(payload)
            if ev.get("usage"):
                tokens = ev["usage"]["completion_tokens"]
            if ttft is None and ev.get("choices") and ev["choices"][0].get("text"):
                ttft = time.time() - t0
        return ttft, tokens, time.time() - t0
    finally:
        conn.close()


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))]


def run(binary, model, parallel, args):
    proc, port, log = start_server(binary, model, parallel, args.threads, max(64, args.requests))
    try:
        stream_one(port, "Warm up", 4)
        lock = threading.Lock()
        next_request = [0]
        ttfts, tokens, errors = [], [0], []

        def client():
            while True:
                with lock:
                    i = next_request[0]
                    if i >= args.requests:
                        return
                    next_request[0] += 1
                try:
                    ttft, n, _ = stream_one(port, PROMPTS[i % len(PROMPTS)], args.max_tokens)
                    with lock:
                        ttfts.append(ttft if ttft is not None else float("nan"))
                        tokens[0] += n
                except Exception as e:  # noqa: BLE001 - reported, not fatal
                    with lock:
                        errors.append(repr(e))

        t0 = time.time()
        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.time() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.unlink(log)
    ok = [t for t in ttfts if t == t]
    return {"parallel": parallel, "clients": args.clients, "requests": len(ttfts), "errors": len(errors),
            "wall_s": wall, "requests_per_s": len(ttfts) / wall, "generated_tokens_per_s": tokens[0] / wall,
            "generated_tokens": tokens[0], "ttft_p50_ms": statistics.median(ok) * 1000 if ok else None,
            "ttft_p99_ms": percentile(ok, 0.99) * 1000 if ok else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("--parallel", default="1,16")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = [run(args.binary, args.model, int(p), args) for p in args.parallel.split(",")]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"{args.clients} streaming clients, {args.requests} requests of up to {args.max_tokens} tokens, "
          f"{args.threads} threads, {os.path.basename(args.model)}")
    print("| --parallel | requests | errors | requests/s | generated tokens/s | TTFT p50 ms | TTFT p99 ms |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['parallel']} | {r['requests']} | {r['errors']} | {r['requests_per_s']:.2f} | "
              f"{r['generated_tokens_per_s']:.1f} | {r['ttft_p50_ms']:.0f} | {r['ttft_p99_ms']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
