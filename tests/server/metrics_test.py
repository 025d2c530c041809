#!/usr/bin/env python3
"""GET /metrics and /health readiness of `lmrt serve` over real HTTP (Python standard library only).

Usage: metrics_test.py LMRT_BINARY MODEL
1. Readiness: a server whose start is held up (its --cache file is locked by this script) answers
   /health 503 {"status":"loading"} (and 503 on the API, 421 for a foreign Host) until it is ready, then 200.
2. Metrics: the Prometheus text exposition parses (every sample belongs to a family with # TYPE,
   histogram buckets are cumulative and +Inf equals _count), needs the API key like the API, follows
   the Host rule, and its counters move exactly with the requests made (statuses, tokens, latency counts);
   a client that leaves a non-streamed request mid-generation is counted under no status.
3. --prefix-cache: a restarted server loads a known prompt's state from the cache file instead of
   prefilling it (lmrt_prompt_tokens_reused_total) and answers the same.
"""
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_test as st  # noqa: E402  (shared helpers: Server, request, stream, check)

check = st.check
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$')


def parse_exposition(text):
    """{(name, labels-tuple): value} and {family: type}; raises on a malformed line."""
    samples, types = {}, {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        if line.startswith("# HELP ") or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"malformed sample line: {line!r}")
        labels = tuple(sorted(tuple(kv.split("=", 1)) for kv in m.group(3).split(","))) if m.group(3) else ()
        labels = tuple((k, v.strip('"')) for k, v in labels)
        samples[(m.group(1), labels)] = float(m.group(4))
    return samples, types


def family_of(name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return name


def well_formed(samples, types):
    if not all(family_of(name, types) in types for name, _ in samples):
        return False
    for fam, kind in types.items():
        if kind != "histogram":
            continue
        buckets = sorted(((float("inf") if dict(l)["le"] == "+Inf" else float(dict(l)["le"])), v)
                         for (n, l), v in samples.items() if n == fam + "_bucket")
        counts = [v for _, v in buckets]
        if not buckets or counts != sorted(counts) or buckets[-1][0] != float("inf"):
            return False
        if buckets[-1][1] != samples[(fam + "_count", ())]:
            return False
    return True


def metrics(port, headers):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=st.TIMEOUT)
    try:
        conn.request("GET", "/metrics", headers=headers)
        resp = conn.getresponse()
        body = resp.read().decode()
        return resp.status, resp.getheader("Content-Type", ""), body
    finally:
        conn.close()


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_readiness(binary, model):
    print("readiness: /health while the start is held up, then ready")
    folder = tempfile.mkdtemp(prefix="lmrt-ready-")
    cache = os.path.join(folder, "cache.sqlite")
    lock = sqlite3.connect(cache, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")  # the server's cache open waits for it (busy timeout 5 s)
    port = st.free_port()
    log = tempfile.NamedTemporaryFile(prefix="lmrt-serve-", suffix=".log", delete=False)
    proc = subprocess.Popen([binary, "serve", "-m", model, "--host", "127.0.0.1", "--port", str(port),
                             "--cache", cache, "--api-key", "k"], stdout=log, stderr=subprocess.STDOUT)
    try:
        first = None
        deadline = time.time() + 4
        while first is None and time.time() < deadline:
            try:
                first = st.request(port, "GET", "/health", timeout=2)
            except OSError:
                time.sleep(0.05)
        check(first is not None and first[0] == 503 and first[1] == {"status": "loading"}
              and first[2].getheader("Retry-After") == "1", f"/health is 503 loading while held up: {first and first[:2]}")
        status, body, _ = st.request(port, "GET", "/v1/models", headers={"Authorization": "Bearer k"})
        check(status == 503 and body["error"]["code"] == "loading", "the API is 503 loading meanwhile")
        status, _, _ = st.request(port, "GET", "/health", headers={"Host": "evil.example"})
        check(status == 421, "a foreign Host is 421 while loading too")
        lock.execute("ROLLBACK")
        lock.close()
        ok = st.wait_until(lambda: st.request(port, "GET", "/health", timeout=2)[0] == 200, 15)
        check(ok and st.request(port, "GET", "/health")[1]["status"] == "ok", "/health is 200 ok once ready")
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=15)
        check(proc.returncode == 0, "server stops cleanly")
        os.unlink(log.name)
        shutil.rmtree(folder, ignore_errors=True)


def test_metrics(binary, model):
    print("metrics: exposition format, auth, counters")
    srv = st.Server(binary, model, "--parallel", "2", "--api-key", "sekrit")
    auth = {"Authorization": "Bearer sekrit"}
    try:
        p = srv.port
        status, _, _ = metrics(p, {})
        check(status == 401, "/metrics needs the API key")
        status, _, _ = metrics(p, {"Host": "evil.example", **auth})
        check(status == 421, "/metrics follows the Host rule")
        status, ctype, text = metrics(p, auth)
        check(status == 200 and ctype.startswith("text/plain; version=0.0.4"), f"200 text/plain; version=0.0.4 ({ctype})")
        before, types = parse_exposition(text)
        check(well_formed(before, types), "the exposition is well formed")
        check(types.get("lmrt_requests_total") == "counter" and types.get("lmrt_time_to_first_token_seconds") ==
              "histogram" and types.get("lmrt_kv_cells_used") == "gauge", "families have their types")
        n_ctx = st.request(p, "GET", "/v1/models", headers=auth)[1]["data"][0]["context_length"]

        prompt_tokens = completion_tokens = decode_tokens = 0
        for prompt in ("Once upon a time", "The cat", "Lily and Ben"):
            status, body, _ = st.request(p, "POST", "/v1/completions",
                                         {"prompt": prompt, "max_tokens": 8, "temperature": 0}, headers=auth)
            check(status == 200, f"completion '{prompt}'")
            prompt_tokens += body["usage"]["prompt_tokens"]
            completion_tokens += body["usage"]["completion_tokens"]
            decode_tokens += max(0, body["usage"]["completion_tokens"] - 1)
        status, events, _, _ = st.stream(p, "/v1/completions",
                                         {"prompt": "A dog", "max_tokens": 6, "temperature": 0, "stream": True,
                                          "stream_options": {"include_usage": True}}, headers=auth)
        usage = [e["usage"] for e in events if isinstance(e, dict) and e.get("usage")][0]
        prompt_tokens += usage["prompt_tokens"]
        completion_tokens += usage["completion_tokens"]
        decode_tokens += max(0, usage["completion_tokens"] - 1)
        check(st.request(p, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 0}, headers=auth)[0] == 400,
              "a bad request -> 400")
        check(st.request(p, "GET", "/nowhere", headers=auth)[0] == 404, "an unknown path -> 404")

        status, _, text = metrics(p, auth)
        after, types = parse_exposition(text)
        check(well_formed(after, types), "still well formed after traffic")

        def delta(name, **labels):
            return value(after, name, **labels) - value(before, name, **labels)
        # The first scrape's own 200 went out after it was rendered: it shows in the second.
        check(delta("lmrt_requests_total", code="200") == 4 + 1 + 1,
              f"200s counted: {delta('lmrt_requests_total', code='200')} (4 completions, /v1/models, 1 scrape)")
        check(delta("lmrt_requests_total", code="400") == 1 and delta("lmrt_requests_total", code="404") == 1,
              "400 and 404 counted")
        check(value(after, "lmrt_requests_total", code="401") >= 1 and value(after, "lmrt_requests_total", code="421")
              >= 1, "refusals counted")
        check(delta("lmrt_prompt_tokens_total") == prompt_tokens, f"prompt tokens {prompt_tokens}")
        check(delta("lmrt_completion_tokens_total") == completion_tokens, f"completion tokens {completion_tokens}")
        check(delta("lmrt_generations_total") == 4, "4 generations")
        check(delta("lmrt_time_to_first_token_seconds_count") == 4, "4 time-to-first-token observations")
        check(delta("lmrt_time_per_output_token_seconds_count") == decode_tokens,
              f"{decode_tokens} per-token latency observations")
        check(delta("lmrt_time_to_first_token_seconds_sum") > 0, "time to first token adds up")
        # The gauges from later scrapes: the preparation thread counts a request until its task returns,
        # which is just after the 400 went out.
        def gauges_idle():
            now = parse_exposition(metrics(p, auth)[2])[0]
            return (value(now, "lmrt_slots_total") == 2 and value(now, "lmrt_slots_busy") == 0 and
                    value(now, "lmrt_queue_depth") == 0)
        check(st.wait_until(gauges_idle, 5), "slots and queue gauges")
        # One arena of 2 x n_ctx cells; a finished request's cells stay only as a reusable prefix.
        check(value(after, "lmrt_kv_cells_total") == 2 * n_ctx
              and 0 < value(after, "lmrt_kv_cells_used") <= value(after, "lmrt_kv_cells_total"),
              f"KV cells {value(after, 'lmrt_kv_cells_used')} of {value(after, 'lmrt_kv_cells_total')}")
    finally:
        check(srv.stop() == 0, "server stops cleanly on SIGTERM")


def test_prefix_restart(binary, model):
    print("--prefix-cache: a restarted server answers a known prompt without prefilling it")
    folder = tempfile.mkdtemp(prefix="lmrt-prefix-")
    cache = os.path.join(folder, "cache.sqlite")
    prompt = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the park "
              "with her friends. One day, she saw a big red ball under a tree.")
    runs = []
    for max_tokens in (8, 6):  # another max_tokens: the response cache has no answer the second time
        srv = st.Server(binary, model, "--cache", cache, "--prefix-cache", "8")
        try:
            status, body, _ = st.request(srv.port, "POST", "/v1/completions",
                                         {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0})
            _, _, text = metrics(srv.port, {})
            runs.append((status, body, parse_exposition(text)[0]))
        finally:
            check(srv.stop() == 0, "server stops cleanly")
    shutil.rmtree(folder, ignore_errors=True)
    (s1, b1, m1), (s2, b2, m2) = runs
    check(s1 == 200 and s2 == 200, "both answered")
    n_prompt = b1["usage"]["prompt_tokens"]
    check(value(m1, "lmrt_prompt_tokens_reused_total") == 0, "the first server evaluated the whole prompt")
    check(value(m2, "lmrt_prompt_tokens_reused_total") == n_prompt - 1,
          f"the restarted server loaded {value(m2, 'lmrt_prompt_tokens_reused_total'):.0f} of {n_prompt} prompt tokens")
    check(b1["choices"][0]["text"].startswith(b2["choices"][0]["text"]) and b2["choices"][0]["text"],
          "and generated the same text")


def test_client_gone(binary, model):
    print("metrics: clients that leave a non-streamed request are not counted as errors")
    import json
    import socket
    srv = st.Server(binary, model, "--parallel", "2", "--max-tokens-limit", "100000000")
    try:
        p = srv.port
        before, _ = parse_exposition(metrics(p, {})[2])
        # EOS banned and the context shifted: only the client's leaving ends it.
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 100000000, "context_shift": True,
                           "logit_bias": st.EOS_BAN, "temperature": 0.8, "seed": 1}).encode()
        for i in range(3):
            s = socket.create_connection(("127.0.0.1", p), timeout=10)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            busy = st.wait_until(lambda: st.health(p)["slots_busy"] == 1, 10)
            s.close()
            freed = st.wait_until(lambda: st.health(p)["slots_busy"] == 0, 10)
            check(busy and freed, f"client {i + 1} left mid-generation and its context was freed")
        time.sleep(0.5)  # an answer to a client that left would be counted on the event loop, a moment later
        after, _ = parse_exposition(metrics(p, {})[2])
        codes = {dict(k[1]).get("code") for k in after if k[0] == "lmrt_requests_total"}
        rises = {c: value(after, "lmrt_requests_total", code=c) - value(before, "lmrt_requests_total", code=c)
                 for c in codes}
        check(all(n == 0 for c, n in rises.items() if c != "200"),
              f"no status counted for the clients that left: {rises}")
    finally:
        check(srv.stop() == 0, "server stops cleanly on SIGTERM")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    t0 = time.time()
    test_readiness(sys.argv[1], sys.argv[2])
    test_metrics(sys.argv[1], sys.argv[2])
    test_client_gone(sys.argv[1], sys.argv[2])
    test_prefix_restart(sys.argv[1], sys.argv[2])
    print(f"{'FAILED' if st.FAILURES else 'PASSED'} in {time.time() - t0:.1f} s"
          + (f": {len(st.FAILURES)} failures" if st.FAILURES else ""))
    return 1 if st.FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
