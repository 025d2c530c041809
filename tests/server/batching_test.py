#!/usr/bin/env python3
"""`lmrt serve --parallel N` runs N sequences of one context through the batch engine.

Usage: batching_test.py LMRT_BINARY MODEL
1. Two streams progress at the same time in one context (the arena of 2 x n_ctx cells, both
   sequences busy at once, the pieces of each arrive while the other is running); with --parallel 1
   the second waits in the queue and starts only as the first ends (the pieces of A still on their way
   through A's handoff may arrive after B's first: at most the handoff's 64 entries, not the ~500 of an
   interleaved run).
2. A client that goes away cancels its request: its sequence is free long before the generation
   could have ended, and it generated far fewer tokens than asked.
3. Seeded sampling (n = 2 included) and greedy requests sent at once to --parallel 4 give the
   texts of --parallel 1 and of the contexts path (--cache with --prefix-cache: lmrt_generate on a
   context of its own).
4. --cache with --parallel 2 keeps one context of two sequences (the batch engine): the first
   round of requests stores every choice, the second is answered from the cache (nothing new
   stored, every entry used again) with the same texts.
"""
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import server_test as st  # noqa: E402  (shared helpers: Server, request, stream, check)
from server_test import EOS_BAN, check  # noqa: E402


def timed_stream(port, body, out):
    """Streams body; out gets (status, [(arrival time, text)], events)."""
    import http.client
    import json
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=st.TIMEOUT)
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        pieces, events = [], []
        for payload in st.sse_payloads(resp):
            if payload == "[DONE]":
                continue
            ev = json.loads(payload)
            events.append(ev)
            text = st.piece_text(ev["choices"][0]) if ev.get("choices") else ""
            if text:
                pieces.append((time.time(), text))
        out.extend([resp.status, pieces, events])
    finally:
        conn.close()


def two_streams(port, max_tokens):
    """Starts stream A, waits for its first piece, starts stream B; returns both results, the most
    sequences /health saw busy at once and the most requests it saw queued."""
    a, b = [], []
    body = lambda p: {"prompt": p, "max_tokens": max_tokens, "temperature": 0, "stream": True, "logit_bias": EOS_BAN}
    ta = threading.Thread(target=timed_stream, args=(port, body("Once upon a time"), a))
    ta.start()
    most_busy = most_queued = 0
    deadline = time.time() + st.TIMEOUT
    while time.time() < deadline and not (len(a) == 3 or st.health(port).get("slots_busy", 0) > 0):
        time.sleep(0.002)
    tb = threading.Thread(target=timed_stream, args=(port, body("The little dog"), b))
    tb.start()
    while ta.is_alive() or tb.is_alive():
        h = st.health(port)
        most_busy = max(most_busy, h.get("sequences_busy", 0))
        most_queued = max(most_queued, h.get("queued", 0))
        time.sleep(0.005)
    ta.join()
    tb.join()
    return a, b, most_busy, most_queued


def test_concurrent_streams(binary, model):
    print("two streams progress together in one context (--parallel 2), one after the other with --parallel 1")
    srv = st.Server(binary, model, "--parallel", "2")
    try:
        p = srv.port
        n_ctx = st.request(p, "GET", "/v1/models")[1]["data"][0]["context_length"]
        h = st.health(p)
        check(h.get("sequences") == 2 and h.get("kv_cells") == 2 * n_ctx,
              f"one arena of 2 x {n_ctx} cells for 2 sequences ({h})")
        max_tokens = n_ctx - 16
        a, b, most_busy, _ = two_streams(p, max_tokens)
        check(a[0] == 200 and b[0] == 200 and len(a[1]) > 100 and len(b[1]) > 100, "both streams answered")
        a_first, a_last = a[1][0][0], a[1][-1][0]
        b_first, b_last = b[1][0][0], b[1][-1][0]
        overlap = sum(1 for t, _ in a[1] if b_first <= t <= b_last)
        check(b_first < a_last and overlap > 10,
              f"B streamed while A was streaming ({overlap} pieces of A arrived during B)")
        check(most_busy == 2, f"both sequences busy at once ({most_busy})")
    finally:
        check(srv.stop() == 0, "server stops cleanly")
    srv = st.Server(binary, model, "--parallel", "1")
    try:
        a, b, most_busy, most_queued = two_streams(srv.port, max_tokens)
        check(a[0] == 200 and b[0] == 200 and len(a[1]) > 100 and len(b[1]) > 100, "both streams answered")
        check(most_busy == 1 and most_queued == 1, f"with --parallel 1, one sequence busy ({most_busy}) and B queued "
              f"({most_queued})")
        # Arrival times are the client's: A's worker may still be writing its last handed-off pieces
        # when B's first arrives, never more than the handoff holds.
        late = sum(1 for t, _ in a[1] if t > b[1][0][0])
        check(late <= 64, f"with --parallel 1, B started as A ended ({late} of A's {len(a[1])} pieces arrived "
              "after B's first)")
    finally:
        check(srv.stop() == 0, "server stops cleanly")


def test_disconnect_cancels(binary, model):
    print("a client that goes away cancels its request")
    srv = st.Server(binary, model, "--parallel", "2", "--ctx-size", "8192", "--max-tokens-limit", "1000000")
    try:
        p = srv.port
        import metrics_test as mt
        _, _, text = mt.metrics(p, {})
        before = mt.value(mt.parse_exposition(text)[0], "lmrt_completion_tokens_total")
        asked = 8000
        s = st.OpenStream(p, {"prompt": "Once upon a time", "max_tokens": asked, "temperature": 0, "stream": True,
                              "logit_bias": EOS_BAN})
        got = s.wait_for_data()
        check(b"data: " in got, "the stream started")
        check(st.health(p)["sequences_busy"] == 1, "its sequence is busy")
        t0 = time.time()
        s.close()
        freed = st.wait_until(lambda: st.health(p)["sequences_busy"] == 0, 5)
        check(freed, f"the sequence is free after the client left ({time.time() - t0:.3f} s)")
        # The request's thread records its tokens after the engine freed the sequence: wait for it.
        generated_now = lambda: mt.value(mt.parse_exposition(mt.metrics(p, {})[2])[0],
                                         "lmrt_completion_tokens_total") - before
        st.wait_until(lambda: generated_now() > 0, 5)
        generated = generated_now()
        check(0 < generated < asked / 2, f"it generated {generated:.0f} of the {asked} tokens asked for")
        status, body, _ = st.request(p, "POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 8, "temperature": 0})
        check(status == 200, "the next request is served")
    finally:
        check(srv.stop() == 0, "server stops cleanly")


BODIES = [
    {"prompt": "The cat", "max_tokens": 24, "temperature": 0.9, "seed": 5, "n": 2},
    {"prompt": "Once upon a time", "max_tokens": 40, "temperature": 0},
    {"prompt": "Lily wanted", "max_tokens": 32, "temperature": 0.8, "top_k": 20, "seed": 11, "stop": ["."]},
    {"prompt": "The sun", "max_tokens": 30, "temperature": 1.0, "seed": 3, "logprobs": 2},
    {"prompt": "A big dog", "max_tokens": 36, "temperature": 0.7, "seed": 99, "stream": True, "n": 2},
]


def answers(port, concurrently):
    """{body index: ({choice: text}, {choice: finish})} for every body of BODIES."""
    out = {}

    def one(i):
        body = BODIES[i]
        if body.get("stream"):
            status, events, _, _ = st.stream(port, "/v1/completions", body)
            out[i] = st.stream_texts(events) if status == 200 else status
        else:
            status, resp, _ = st.request(port, "POST", "/v1/completions", body)
            out[i] = ({c["index"]: c["text"] for c in resp["choices"]},
                      {c["index"]: c["finish_reason"] for c in resp["choices"]}) if status == 200 else status
    if concurrently:
        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(BODIES))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    else:
        for i in range(len(BODIES)):
            one(i)
    return out


def test_same_outputs(binary, model):
    print("seeded outputs: --parallel 4 (at once) == --parallel 1 == the contexts path (--cache)")
    results = {}
    tmp = tempfile.mkdtemp(prefix="lmrt-batching-")
    try:
        for name, args, concurrently in (("parallel 4", ["--parallel", "4"], True),
                                          ("parallel 1", ["--parallel", "1"], False),
                                          ("contexts", ["--parallel", "2", "--cache", os.path.join(tmp, "c.sqlite"),
                                                        "--prefix-cache", "64"], True)):
            srv = st.Server(binary, model, *args)
            try:
                results[name] = answers(srv.port, concurrently)
            finally:
                check(srv.stop() == 0, f"{name}: server stops cleanly")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ref = results["parallel 1"]
    check(len(ref) == len(BODIES) and all(isinstance(v, tuple) for v in ref.values()), "every request answered")
    check(ref[0][0][0] != ref[0][0][1], "the two seeded choices of a request differ")
    for name in ("parallel 4", "contexts"):
        for i in range(len(BODIES)):
            check(results[name].get(i) == ref.get(i), f"{name}: request {i} as with --parallel 1")
    return ref


def cache_entries(path):
    """(entries, the latest last_used) of a response cache file."""
    db = sqlite3.connect(path, timeout=5)
    try:
        return db.execute("SELECT count(*), max(last_used) FROM entries").fetchone()
    finally:
        db.close()


def test_cache_batched(binary, model, ref):
    print("--cache with --parallel 2: one context of two sequences, the second round from the cache")
    tmp = tempfile.mkdtemp(prefix="lmrt-batching-cache-")
    path = os.path.join(tmp, "c.sqlite")
    try:
        srv = st.Server(binary, model, "--parallel", "2", "--cache", path)
        try:
            h = st.health(srv.port)
            check(h.get("sequences") == 2 and h.get("slots_idle", 0) + h.get("slots_busy", 0) == 2,
                  f"one context whose engine has two sequences: {h}")
            first = answers(srv.port, True)
            stored = cache_entries(path)
            time.sleep(0.01)  # last_used is in milliseconds
            second = answers(srv.port, True)
            again = cache_entries(path)
        finally:
            check(srv.stop() == 0, "server stops cleanly")
        n_choices = sum(b.get("n", 1) for b in BODIES)
        check(stored[0] == n_choices, f"the first round stored every choice: {stored[0]} of {n_choices}")
        check(again[0] == stored[0] and again[1] > stored[1],
              f"the second round stored nothing new and used the entries again: {stored} then {again}")
        for i in range(len(BODIES)):
            check(first.get(i) == ref.get(i), f"first round: request {i} as with --parallel 1")
            check(second.get(i) == ref.get(i), f"from the cache: request {i} as with --parallel 1")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, model = sys.argv[1], sys.argv[2]
    t0 = time.time()
    test_concurrent_streams(binary, model)
    test_disconnect_cancels(binary, model)
    ref = test_same_outputs(binary, model)
    test_cache_batched(binary, model, ref)
    print(f"{'FAILED' if st.FAILURES else 'PASSED'} in {time.time() - t0:.1f} s"
          + (f": {len(st.FAILURES)} failures" if st.FAILURES else ""))
    return 1 if st.FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
