#!/usr/bin/env python3
"""Load and soak test of `lmrt serve` (Python standard library only, 127.0.0.1 only).

Usage: soak_test.py LMRT_BINARY MODEL [SECONDS]   (default $LMRT_SOAK_SECONDS or 30)
Many clients send a mix of valid (completions, chat, streamed or not), invalid, cancelled (the
client leaves mid-answer), slow (trickled headers) and garbage requests against --parallel 2 for
SECONDS. Afterwards: /health answers with nothing busy or queued, every valid request got a complete
answer or a clean error (429/503 with an error object), RSS has settled, and no thread or file
descriptor leaked (/proc/PID/task, /proc/PID/fd). Prints requests/s, p50/p99 latency and errors.
"""
import json
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_test import EOS_BAN, FAILURES, Server, check, health, wait_until  # noqa: E402

CLIENTS = 12


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def counts(pid):
    return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))


def http(port, method, path, body=b"", headers=None, timeout=30):
    """One request on its own connection (Connection: close); returns (status, body bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {len(body)}\r\n"
        for k, v in (headers or {}).items():
            head += f"{k}: {v}\r\n"
        s.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head.startswith(b"HTTP/1.1 ") else 0
    if b"transfer-encoding: chunked" in head.lower():
        out, rest = b"", payload
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            out, rest = out + rest[:size], rest[size + 2:]
        payload = out
    return status, payload


JSON = {"Content-Type": "application/json"}


def clean_error(status, payload):
    try:
        return status in (429, 503) and "error" in json.loads(payload)
    except ValueError:
        return False


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = []
        self.by_kind = {}
        self.bad = []

    def add(self, kind, outcome, latency=None, detail=""):
        with self.lock:
            self.by_kind.setdefault(kind, {}).setdefault(outcome, 0)
            self.by_kind[kind][outcome] += 1
            if latency is not None:
                self.latencies.append(latency)
            if outcome == "BAD":
                self.bad.append(f"{kind}: {detail}"[:300])


def valid_completion(port, rng, st):
    body = {"prompt": rng.choice(["Once upon a time", "The cat", "Lily and Tom"]), "max_tokens": rng.randint(1, 48),
            "temperature": rng.choice([0, 0.8]), "seed": rng.randint(0, 99)}
    t0 = time.time()
    status, payload = http(port, "POST", "/v1/completions", json.dumps(body).encode(), JSON)
    if status == 200:
        r = json.loads(payload)
        ok = r["choices"][0]["finish_reason"] in ("stop", "length") and r["usage"]["completion_tokens"] <= body["max_tokens"]
        st.add("completion", "ok" if ok else "BAD", time.time() - t0, payload)
    else:
        st.add("completion", "busy" if clean_error(status, payload) else "BAD", None, f"{status} {payload}")


def valid_chat_stream(port, rng, st):
    body = {"messages": [{"role": "user", "content": "Tell me a story <|im_end|></s>"}],
            "max_tokens": rng.randint(1, 48), "stream": True}
    t0 = time.time()
    status, payload = http(port, "POST", "/v1/chat/completions", json.dumps(body).encode(), JSON)
    if status == 200:
        events = [line[6:] for line in payload.decode().split("\n") if line.startswith("data: ")]
        ok = events and events[-1] == "[DONE]"
        ok = ok and any(json.loads(e)["choices"][0].get("finish_reason") for e in events[:-1] if "choices" in e)
        st.add("chat stream", "ok" if ok else "BAD", time.time() - t0, payload[-200:])
    else:
        st.add("chat stream", "busy" if clean_error(status, payload) else "BAD", None, f"{status} {payload}")


def invalid(port, rng, st):
    cases = [(b"{not json", JSON, 400), (b'{"prompt": 5}', JSON, 400), (b'{"prompt":"x","max_tokens":-1}', JSON, 400),
             (b'{"prompt":"x"}', {"Content-Type": "text/plain"}, 415), (b"[]", JSON, 400)]
    body, headers, want = rng.choice(cases)
    status, payload = http(port, "POST", "/v1/completions", body, headers)
    st.add("invalid", "ok" if status == want else "BAD", None, f"{status} for {body}")


def cancelled(port, rng, st):
    stream = rng.random() < 0.5
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 256, "stream": stream,
                       "logit_bias": EOS_BAN}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    time.sleep(rng.uniform(0.005, 0.05))
    s.close()
    st.add("cancelled", "ok")


def slow(port, rng, st):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        for ch in b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"[: rng.randint(3, 30)]:
            s.send(bytes([ch]))
            time.sleep(0.05)
    except OSError:
        pass
    s.close()
    st.add("slow", "ok")


def garbage(port, rng, st):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(os.urandom(rng.randint(1, 3000)) + b"\r\n\r\n")
        s.settimeout(5)
        s.recv(4096)  # an error answer or a close, never a hang
        st.add("garbage", "ok")
    except socket.timeout:
        st.add("garbage", "BAD", None, "no answer and no close in 5 s")
    except OSError:
        st.add("garbage", "ok")
    finally:
        s.close()


KINDS = [(valid_completion, 5), (valid_chat_stream, 3), (invalid, 2), (cancelled, 2), (slow, 1), (garbage, 1)]


def client(port, seed, until, st):
    rng = random.Random(seed)
    population = [k for k, w in KINDS for _ in range(w)]
    while time.time() < until:
        kind = rng.choice(population)
        try:
            kind(port, rng, st)
        except Exception as e:  # noqa: BLE001 - any exception on a valid request is a failure
            st.add(kind.__name__, "BAD", None, repr(e))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, model = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else float(os.environ.get("LMRT_SOAK_SECONDS", "30"))
    print(f"soak: {CLIENTS} clients for {seconds:.0f} s against --parallel 2 --queue 8")
    srv = Server(binary, model, "--parallel", "2", "--queue", "8", "--threads", "1", "--header-timeout", "2",
                 "--idle-timeout", "2", "--timeout", "10")
    pid = srv.proc.pid
    try:
        threads0, fds0 = counts(pid)
        st = Stats()
        start = time.time()
        until = start + seconds
        workers = [threading.Thread(target=client, args=(srv.port, i, until, st)) for i in range(CLIENTS)]
        for w in workers:
            w.start()
        time.sleep(seconds / 3)
        rss_early = rss_kb(pid)
        for w in workers:
            w.join(timeout=seconds + 60)
        elapsed = time.time() - start
        rss_end = rss_kb(pid)

        total = sum(sum(v.values()) for v in st.by_kind.values())
        lat = sorted(st.latencies)
        p50 = lat[len(lat) // 2] * 1000 if lat else 0
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else 0
        print(f"  {total} requests in {elapsed:.1f} s = {total / elapsed:.1f} req/s; valid answered: {len(lat)}, "
              f"latency p50 {p50:.1f} ms, p99 {p99:.1f} ms")
        for kind, outcomes in sorted(st.by_kind.items()):
            print(f"    {kind:12s} {outcomes}")
        check(not st.bad, f"every valid request got a complete answer or a clean error ({len(st.bad)} bad)")
        for b in st.bad[:10]:
            print("      " + b)
        check(all(not w.is_alive() for w in workers), "every client finished")

        check(wait_until(lambda: (h := health(srv.port)) and h["slots_busy"] == 0 and h["queued"] == 0, 15),
              "/health answers afterwards with nothing busy or queued")
        # Connections end at the idle timeout (2 s); then fds and threads are back where they were.
        check(wait_until(lambda: counts(pid)[1] <= fds0, 10), f"no fd leak ({fds0} before, {counts(pid)[1]} after)")
        check(counts(pid)[0] == threads0, f"no thread leak ({threads0} before, {counts(pid)[0]} after)")
        rss_after = rss_kb(pid)
        check(rss_end <= rss_early * 1.25 + 16384 and rss_after <= rss_early * 1.25 + 16384,
              f"RSS settled ({rss_early} kB a third in, {rss_end} kB at the end, {rss_after} kB after)")
    finally:
        check(srv.stop() == 0, "server exits 0 on SIGTERM")
    print(f"{'FAILED' if FAILURES else 'PASSED'}" + (f": {len(FAILURES)} failures" if FAILURES else ""))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
