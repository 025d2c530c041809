#!/usr/bin/env python3
"""Integration test of `lmrt serve` over real HTTP on 127.0.0.1 (Python standard library only).

Usage: server_test.py LMRT_BINARY MODEL [--skip-npm]
Starts servers on free loopback ports, checks completions, chat, streaming, stop strings, usage,
logprobs, n=2, logit_bias, cancellation on disconnect, response_format (outputs validated with
python3-jsonschema), the queue limit, the API key and every error status, tool calls forced by
tool_choice with real Qwen2.5, Llama 3.1 and Mistral Nemo templates (tests/chat/templates), runs the
official `openai` npm client against the server (installed into a temporary folder), its
tool-calling flow included, and a load run (4 clients x 25 streamed requests against --parallel 2).
Every wait is bounded.
"""
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT = 30  # seconds for any single HTTP exchange
FAILURES = []


def check(cond, what):
    if cond:
        print(f"  ok   {what}")
    else:
        print(f"  FAIL {what}")
        FAILURES.append(what)
    return cond


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, model, *extra, env=None):
        # free_port()'s port is free when asked, not necessarily when the server binds it: another process
        # on the machine may take it in between, so a refused listen is tried again on another port.
        for attempt in range(3):
            self.port = free_port()
            self.log = tempfile.NamedTemporaryFile(prefix="lmrt-serve-", suffix=".log", delete=False)
            self.proc = subprocess.Popen([binary, "serve", "-m", model, "--host", "127.0.0.1", "--port",
                                          str(self.port), *extra], stdout=self.log, stderr=subprocess.STDOUT, env=env)
            self.log.close()  # the server writes through its own copy of the descriptor
            if self._wait_up(last=attempt == 2):
                return

    def _wait_up(self, last):
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                with open(self.log.name, errors="replace") as f:
                    text = f.read()
                if not last and "cannot listen" in text:
                    os.unlink(self.log.name)
                    return False
                raise RuntimeError(f"server exited early: {text}")
            try:
                if request(self.port, "GET", "/health", timeout=2)[0] == 200:
                    return True
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("server did not come up in 20 s")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        code = self.proc.returncode
        if code != 0:  # say why, for a failure seen only on another machine
            with open(self.log.name, errors="replace") as f:
                print(f"  server exited {code}; the end of its log:\n" + "".join(f.readlines()[-15:]))
        if os.path.exists(self.log.name):  # stop() may run twice (a test's own, then its finally's)
            os.unlink(self.log.name)
        return code


def request(port, method, path, body=None, headers=None, timeout=TIMEOUT, raw=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        payload = resp.read()
        try:
            parsed = json.loads(payload) if payload else None
        except ValueError:
            parsed = None
        return resp.status, parsed, resp
    finally:
        conn.close()


def sse_payloads(resp):
    """The data payloads of an event stream in order, '[DONE]' included; blank lines are skipped and any
    other line is an error."""
    for _ in range(100000):
        line = resp.readline()
        if not line:
            return
        line = line.decode().rstrip("\r\n")
        if line == "":
            continue
        assert line.startswith("data: "), line
        yield line[6:]


def stream(port, path, body, headers=None, on_first=None):
    """Returns (status, events, ttft_s, total_s); events are parsed JSON objects, then the string '[DONE]'."""
    start = time.time()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json", **(headers or {})})
        resp = conn.getresponse()
        if resp.status != 200:
            return resp.status, [json.loads(resp.read() or b"null")], None, time.time() - start
        assert resp.getheader("Content-Type", "").startswith("text/event-stream"), resp.getheader("Content-Type")
        events, ttft, pending = [], None, None
        for payload in sse_payloads(resp):
            if payload == "[DONE]":
                events.append("[DONE]")
                continue
            ev = json.loads(payload)
            if ttft is None and ev.get("choices") and piece_text(ev.get("choices")[0]):
                ttft = time.time() - start
            events.append(ev)
        return 200, events, ttft, time.time() - start
    finally:
        conn.close()


def piece_text(choice):
    if "delta" in choice:
        return choice["delta"].get("content") or ""
    return choice.get("text") or ""


def stream_texts(events):
    texts, finishes = {}, {}
    for ev in events:
        if ev == "[DONE]":
            continue
        for ch in ev["choices"]:
            texts[ch["index"]] = texts.get(ch["index"], "") + piece_text(ch)
            if ch["finish_reason"] is not None:
                finishes[ch["index"]] = ch["finish_reason"]
    return texts, finishes


def well_formed_stream(events, n_choices=1):
    if not events or events[-1] != "[DONE]" or "[DONE]" in events[:-1]:
        return False
    texts, finishes = stream_texts(events)
    return len(finishes) == n_choices and all(isinstance(e, dict) and "id" in e for e in events[:-1])


class OpenStream:
    """A streamed request whose connection the test closes itself (to simulate a client going away)."""

    def __init__(self, port, body, headers=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
        data = json.dumps(body).encode()
        head = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n")
        for k, v in (headers or {}).items():
            head += f"{k}: {v}\r\n"
        self.sock.sendall(head.encode() + b"\r\n" + data)

    def wait_for_data(self, min_bytes=600):
        got = b""
        deadline = time.time() + TIMEOUT
        while len(got) < min_bytes and time.time() < deadline:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            got += chunk
        return got

    def close(self):
        self.sock.close()


# The TinyStories models' </s> banned: a generation runs to max_tokens (unbanned, endless_body()'s story
# ends by itself after 281 tokens, some 50 ms).
EOS_BAN = {"2": -100}


def endless_body():
    # EOS banned and the context shifted: only the client's leaving ends it.
    return {"prompt": "Once upon a time", "max_tokens": 1000000, "temperature": 0.8, "seed": 7,
            "context_shift": True, "stream": True, "logit_bias": EOS_BAN}


def wait_until(pred, limit_s):
    deadline = time.time() + limit_s
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def health(port, headers=None):
    return request(port, "GET", "/health", headers=headers, timeout=5)[1]


# ---- checks ------------------------------------------------------------------------------------

def test_basics(port, model_id):
    print("basics")
    status, body, _ = request(port, "GET", "/health")
    check(status == 200 and body["status"] == "ok", "GET /health")
    status, body, _ = request(port, "GET", "/v1/models")
    check(status == 200 and body["object"] == "list" and body["data"][0]["id"] == model_id, "GET /v1/models")


def test_completions(port):
    print("completions")
    base = {"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0}
    status, full, _ = request(port, "POST", "/v1/completions", base)
    check(status == 200 and full["object"] == "text_completion", "non-streamed completion: 200, text_completion")
    text = full["choices"][0]["text"]
    usage = full["usage"]
    check(len(text) > 0 and full["choices"][0]["finish_reason"] in ("length", "stop"), "completion has text and finish")
    check(usage["completion_tokens"] == 24 or full["choices"][0]["finish_reason"] == "stop",
          "usage.completion_tokens == max_tokens when finish is length")
    check(usage["prompt_tokens"] >= 4 and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"],
          "usage.prompt_tokens plausible, total = prompt + completion")

    status, events, _, _ = stream(port, "/v1/completions", {**base, "stream": True,
                                                            "stream_options": {"include_usage": True}})
    texts, finishes = stream_texts(events)
    check(status == 200 and well_formed_stream(events), "streamed completion: chunks, finish_reason, [DONE]")
    check(texts.get(0) == text, "streamed text == non-streamed text (greedy)")
    check(finishes.get(0) == full["choices"][0]["finish_reason"], "streamed finish_reason == non-streamed")
    usage_events = [e for e in events if e != "[DONE]" and "usage" in e]
    check(len(usage_events) == 1 and usage_events[0]["usage"] == usage, "stream_options.include_usage chunk == usage")

    # Same seed, same sampled text.
    sampled = {"prompt": "The dog", "max_tokens": 16, "temperature": 1.0, "seed": 1234}
    a = request(port, "POST", "/v1/completions", sampled)[1]["choices"][0]["text"]
    b = request(port, "POST", "/v1/completions", sampled)[1]["choices"][0]["text"]
    check(a == b, "same seed gives the same sampled text")
    return text


def test_stop(port, text):
    print("stop strings")
    words = [w for w in text.split(" ") if len(w) >= 3]
    stop_word = None
    for w in words:
        i = text.find(w)
        if i > 0:
            stop_word = w
            break
    if not check(stop_word is not None, "found a stop word in the greedy text"):
        return
    expected = text[:text.find(stop_word)]
    for stop in (stop_word, [stop_word, "zzzz-never"]):
        status, body, _ = request(port, "POST", "/v1/completions",
                                  {"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0, "stop": stop})
        check(status == 200 and body["choices"][0]["text"] == expected and body["choices"][0]["finish_reason"] == "stop",
              f"stop {stop!r}: text ends before it, finish_reason stop")
    status, events, _, _ = stream(port, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 24,
                                                           "temperature": 0, "stop": [stop_word], "stream": True})
    texts, finishes = stream_texts(events)
    check(texts.get(0) == expected and finishes.get(0) == "stop", "streamed stop: same text, finish_reason stop")


def test_chat(port):
    print("chat completions")
    base = {"model": "whatever", "messages": [{"role": "system", "content": "You tell stories."},
                                               {"role": "user", "content": "Tell me about a cat."}],
            "max_tokens": 20, "temperature": 0}
    status, full, _ = request(port, "POST", "/v1/chat/completions", base)
    check(status == 200 and full["object"] == "chat.completion", "chat: 200, chat.completion")
    msg = full["choices"][0]["message"]
    check(msg["role"] == "assistant" and isinstance(msg["content"], str) and msg["content"], "chat: assistant message")
    check(full["usage"]["total_tokens"] == full["usage"]["prompt_tokens"] + full["usage"]["completion_tokens"],
          "chat usage adds up")
    status, events, _, _ = stream(port, "/v1/chat/completions", {**base, "stream": True})
    texts, finishes = stream_texts(events)
    check(status == 200 and well_formed_stream(events), "streamed chat: chunks, finish_reason, [DONE]")
    check(events[0]["object"] == "chat.completion.chunk" and events[0]["choices"][0]["delta"].get("role") == "assistant",
          "first chat chunk carries the assistant role")
    check(texts.get(0) == msg["content"], "streamed chat text == non-streamed (greedy)")
    check(finishes.get(0) == full["choices"][0]["finish_reason"], "streamed chat finish == non-streamed")


def test_logprobs(port):
    print("logprobs")
    status, body, _ = request(port, "POST", "/v1/completions",
                              {"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "logprobs": 3})
    lp = body["choices"][0]["logprobs"]
    n = body["usage"]["completion_tokens"]
    check(status == 200 and len(lp["tokens"]) == n and len(lp["token_logprobs"]) == n and len(lp["top_logprobs"]) == n,
          "completions logprobs: one entry per generated token")
    check(all(v <= 0 for v in lp["token_logprobs"]), "token logprobs are <= 0")
    check(all(1 <= len(t) <= 3 for t in lp["top_logprobs"]), "top_logprobs has 1..3 alternatives")
    # Greedy: the chosen token is the most likely one.
    check(all(abs(max(t.values()) - v) < 1e-5 for t, v in zip(lp["top_logprobs"], lp["token_logprobs"])),
          "greedy tokens are the top alternative")
    check("".join(lp["tokens"]) == body["choices"][0]["text"], "logprob tokens spell the text")
    check(lp["text_offset"][0] == 0 and all(a < b for a, b in zip(lp["text_offset"], lp["text_offset"][1:])),
          "text_offset increases from 0")
    status, body, _ = request(port, "POST", "/v1/chat/completions",
                              {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "temperature": 0,
                               "logprobs": True, "top_logprobs": 2})
    content = body["choices"][0]["logprobs"]["content"]
    check(status == 200 and len(content) == body["usage"]["completion_tokens"] and
          all(len(c["top_logprobs"]) == 2 and c["bytes"] == list(c["token"].encode()) for c in content),
          "chat logprobs: content per token with 2 top_logprobs and bytes")
    status, events, _, _ = stream(port, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 12,
                                                           "temperature": 0, "logprobs": 1, "stream": True})
    streamed = [t for e in events if e != "[DONE]" for c in e["choices"] if c["logprobs"] for t in c["logprobs"]["tokens"]]
    check(len(streamed) == 12, "streamed logprobs cover every token")


def test_n(port):
    print("n = 2")
    body = {"prompt": "The cat", "max_tokens": 8, "temperature": 0.9, "seed": 5, "n": 2}
    status, full, _ = request(port, "POST", "/v1/completions", body)
    idx = sorted(c["index"] for c in full["choices"])
    check(status == 200 and idx == [0, 1], "n=2: two choices, indexes 0 and 1")
    lengths = sum(1 for c in full["choices"] if c["finish_reason"] == "length")
    check(lengths < 2 or full["usage"]["completion_tokens"] == 16, "n=2: completion_tokens counts both choices")
    check(full["choices"][0]["text"] != full["choices"][1]["text"], "n=2 sampled choices differ")
    status, events, _, _ = stream(port, "/v1/completions", {**body, "stream": True})
    texts, finishes = stream_texts(events)
    check(status == 200 and well_formed_stream(events, 2), "n=2 streamed: both choices finish, then [DONE]")
    check(texts == {c["index"]: c["text"] for c in full["choices"]}, "n=2 streamed texts == non-streamed (seeded)")
    status, full, _ = request(port, "POST", "/v1/chat/completions",
                              {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "n": 2, "seed": 9,
                               "temperature": 1.0})
    check(status == 200 and len(full["choices"]) == 2, "chat n=2: two choices")


def test_sampler_fields(port, text):
    print("sampler fields and logit_bias")
    lp = request(port, "POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 1, "temperature": 0,
                                                    "logprobs": 0})[1]["choices"][0]["logprobs"]
    first = lp["tokens"][0]
    # Find the token id of the greedy first token by banning candidates is not possible without ids;
    # the lmrt `samplers` extra and logit_bias take ids, so ban every id in a range and check the change.
    # Every id but the last 64 of the 2048: the greedy text must change.
    status, body, _ = request(port, "POST", "/v1/completions",
                              {"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0,
                               "logit_bias": {str(i): -100 for i in range(0, 1984)}})
    check(status == 200 and body["choices"][0]["text"] != text, "logit_bias -100 on many ids changes the greedy text")
    # Every id banned: a clean 400 naming the cause, not token 0 with finish "length".
    status, body, _ = request(port, "POST", "/v1/completions",
                              {"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0,
                               "logit_bias": {str(i): -100 for i in range(0, 2048)}})
    check(status == 400 and "excluded" in body["error"]["message"], "logit_bias banning every id is a clean 400")
    status, body, _ = request(port, "POST", "/v1/completions",
                              {"prompt": "Once upon a time", "max_tokens": 24, "samplers": "greedy"})
    check(status == 200 and body["choices"][0]["text"] == text, "samplers 'greedy' == temperature 0")
    status, body, _ = request(port, "POST", "/v1/completions",
                              {"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0.7, "top_k": 1,
                               "min_p": 0.05, "repeat_penalty": 1.0, "presence_penalty": 0, "frequency_penalty": 0})
    check(status == 200 and body["choices"][0]["text"] == text, "top_k 1 == greedy")
    status, body, _ = request(port, "POST", "/v1/completions",
                              {"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0,
                               "repeat_penalty": 1.5, "presence_penalty": 1.5, "frequency_penalty": 1.0})
    check(status == 200 and body["choices"][0]["text"] != text, "penalties change the greedy text")
    check(bool(first), "first token has text")


def test_errors(port, n_ctx):
    print("error statuses")
    cases = [
        ("POST", "/v1/completions", b"{not json", 400, None),
        ("POST", "/v1/completions", b"[1,2]", 400, None),
        ("POST", "/v1/completions", b"\xff\xfe\x00garbage", 400, None),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "temperature": "hot"}).encode(), 400, "temperature"),
        ("POST", "/v1/completions", json.dumps({"prompt": 5}).encode(), 400, "prompt"),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "max_tokens": 0}).encode(), 400, "max_tokens"),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "max_tokens": -3}).encode(), 400, "max_tokens"),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "max_tokens": 2.5}).encode(), 400, "max_tokens"),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "n": 0}).encode(), 400, "n"),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "stop": 3}).encode(), 400, "stop"),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "stream": "yes"}).encode(), 400, "stream"),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "logit_bias": {"abc": 1}}).encode(), 400, "logit_bias"),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "logit_bias": {"99999999": 1}}).encode(), 400,
         "logit_bias"),
        ("POST", "/v1/completions", json.dumps({"prompt": "x", "samplers": "top_k(oops"}).encode(), 400, "samplers"),
        ("POST", "/v1/completions", json.dumps({"prompt": "once " * (n_ctx * 2)}).encode(), 400, "prompt"),
        ("POST", "/v1/chat/completions", json.dumps({"messages": []}).encode(), 400, "messages"),
        ("POST", "/v1/chat/completions", json.dumps({"messages": [{"role": 1}]}).encode(), 400, "messages[0].role"),
        ("POST", "/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": "hi " * n_ctx * 2}]}).encode(),
         400, "messages"),
        ("GET", "/v1/nothing", None, 404, None),
        ("POST", "/v2/completions", b"{}", 404, None),
        ("GET", "/v1/completions", None, 405, None),
        ("DELETE", "/v1/chat/completions", None, 405, None),
        ("POST", "/v1/models", b"{}", 405, None),
    ]
    for method, path, raw, want, param in cases:
        status, body, _ = request(port, method, path, raw=raw)
        ok = status == want and isinstance(body, dict) and isinstance(body.get("error", {}).get("message"), str)
        if param is not None:
            ok = ok and body["error"].get("param") == param
        check(ok, f"{method} {path} {raw[:40] if raw else ''} -> {want}" + (f" param {param}" if param else ""))
    status, body, _ = request(port, "POST", "/v1/completions", {"prompt": "once " * (n_ctx * 2)})
    check(body["error"].get("code") == "context_length_exceeded", "long prompt: code context_length_exceeded")
    check(request(port, "GET", "/health")[0] == 200, "server healthy after bad requests")


def test_garbage(port):
    print("garbage bodies")
    import random
    rng = random.Random(42)
    seeds = [{"prompt": "x", "max_tokens": 2}, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
             {"prompt": ["a", "b"], "n": 2, "max_tokens": 2, "stop": ["x"], "logit_bias": {"1": 5}, "logprobs": 2}]
    values = [None, True, -1, 0, 2**64, -2**63, 1e308, -1e308, 0.5, "", "x" * 300, [], {}, [1, "a"], {"a": []},
              "\ud800", "\u0000"]
    statuses = set()
    for i in range(300):
        body = json.loads(json.dumps(rng.choice(seeds)))
        for _ in range(rng.randint(1, 3)):
            key = rng.choice(["prompt", "messages", "max_tokens", "n", "stop", "logit_bias", "logprobs", "top_logprobs",
                              "temperature", "top_p", "top_k", "min_p", "seed", "samplers", "stream", "echo",
                              "stream_options", "presence_penalty", "repeat_penalty", "model"])
            body[key] = rng.choice(values)
        raw = json.dumps(body).encode()
        if i % 5 == 0:  # damage the bytes too
            pos = rng.randrange(len(raw))
            raw = raw[:pos] + bytes([rng.randrange(256)]) + raw[pos + 1:]
        path = "/v1/chat/completions" if "messages" in body else "/v1/completions"
        try:
            status, _, _ = request(port, "POST", path, raw=raw, timeout=10)
        except (OSError, http.client.HTTPException):
            status = "conn"
        statuses.add(status)
    check(statuses <= {200, 400}, f"300 mutated bodies answered 200 or 400 (got {sorted(map(str, statuses))})")
    check(request(port, "GET", "/health")[0] == 200, "server healthy after garbage")


def test_cancel(port):
    print("cancellation on disconnect")
    # A request of an earlier test may still be finishing on the server: start from an idle server.
    check(wait_until(lambda: health(port)["slots_busy"] == 0, 10), "no context busy before the stream")
    before = 0
    s = OpenStream(port, endless_body())
    got = s.wait_for_data()
    check(b"data: " in got, "endless stream started")
    check(health(port)["slots_busy"] == before + 1, "its context is busy")
    t0 = time.time()
    s.close()
    freed = wait_until(lambda: health(port)["slots_busy"] == before, 5)
    check(freed, f"context freed after the client left ({time.time() - t0:.3f} s)")
    t1 = time.time()
    status, _, _ = request(port, "POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 8, "temperature": 0})
    check(status == 200 and time.time() - t1 < 5, f"next request served promptly ({time.time() - t1:.3f} s)")


def test_queue_and_key(binary, model):
    print("queue limit (--parallel 1 --queue 1) and --api-key")
    srv = Server(binary, model, "--parallel", "1", "--queue", "1", "--api-key", "sekrit", "--max-tokens-limit",
                 "1000000")
    auth = {"Authorization": "Bearer sekrit"}
    try:
        p = srv.port
        check(request(p, "GET", "/health")[0] == 200, "/health needs no key")
        status, body, _ = request(p, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
        check(status == 401 and body["error"]["code"] == "invalid_api_key", "no key -> 401")
        status, body, _ = request(p, "GET", "/v1/models", headers={"Authorization": "Bearer wrong"})
        check(status == 401, "wrong key -> 401")
        status, body, _ = request(p, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 2}, headers=auth)
        check(status == 200, "right key -> 200")

        a = OpenStream(p, endless_body(), auth)
        check(b"data: " in a.wait_for_data(), "request A generating")
        b = OpenStream(p, endless_body(), auth)
        check(wait_until(lambda: health(p)["queued"] == 1, 5), "request B waits in the queue")
        t0 = time.time()
        status, body, _ = request(p, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 2}, headers=auth)
        check(status == 429 and "error" in body and time.time() - t0 < 5,
              f"request C beyond the queue -> 429 at once ({time.time() - t0:.3f} s)")
        a.close()
        check(b"data: " in b.wait_for_data(), "B runs once A left")
        b.close()
        check(wait_until(lambda: health(p)["slots_busy"] == 0 and health(p)["queued"] == 0, 5), "all free again")
    finally:
        check(srv.stop() == 0, "server stops cleanly on SIGTERM")

# ---- structured output and tools -----------------------------------------------------------------

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}, "age": {"type": "integer",
     "minimum": 0, "maximum": 120}}, "required": ["name", "age"], "additionalProperties": False},
    {"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1,
     "maxItems": 3}}, "required": ["tags"]},
    {"type": "object", "properties": {"ok": {"type": "boolean"}, "score": {"type": "number", "minimum": -1,
     "maximum": 1}, "kind": {"const": "story"}}, "required": ["ok", "score", "kind"]},
    {"type": "object", "properties": {"hero": {"$ref": "#/$defs/person"}, "friends": {"type": "array",
     "items": {"$ref": "#/$defs/person"}, "maxItems": 2}}, "required": ["hero", "friends"],
     "$defs": {"person": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1,
      "maxLength": 10}}, "required": ["name"], "additionalProperties": False}}},
    {"type": "object", "properties": {"value": {"anyOf": [{"type": "integer"}, {"type": "null"},
     {"type": "string", "format": "date"}]}}, "required": ["value"]},
]


def grammar_model(model):
    """stories260K beside the main model: its vocabulary has byte tokens, so a grammar can spell any JSON
    (TinyStories-656K's has no '{')."""
    return os.path.join(os.path.dirname(os.path.abspath(model)), "stories260K.gguf")


def test_response_format(binary, model):
    print("response_format: every output parses and validates (python3-jsonschema)")
    srv = Server(binary, grammar_model(model))
    try:
        check_response_format(srv.port)
    finally:
        check(srv.stop() == 0, "server stops cleanly on SIGTERM")


def check_response_format(port):
    import jsonschema
    msgs = [{"role": "user", "content": "Describe a cat as JSON."}]
    cases = [({"type": "json_object"}, {"type": "object"})] + [
        ({"type": "json_schema", "json_schema": {"name": f"s{i}", "schema": sc, "strict": True}}, sc)
        for i, sc in enumerate(SCHEMAS)]
    for i, (rf, schema) in enumerate(cases):
        body = {"messages": msgs, "response_format": rf, "max_tokens": 300, "temperature": 0.7, "seed": i}
        if rf["type"] == "json_object":
            # Any object: the tiny model never closes one by itself (300 tokens of members), so "}"
            # (byte token 128 of stories260K) is favoured so strongly that wherever the grammar allows
            # it, every other token together has a probability below 1e-15 at T 0.7: the object closes
            # at the first place the grammar allows, under any seed and however the sampler consumes
            # the random stream (with +16 a seed could draw a 0.45 % alternative and never close). The
            # grammar still decides where "}" may go: without it the first token would be "}".
            body["logit_bias"] = {"128": 40}
        status, full, _ = request(port, "POST", "/v1/chat/completions", body)
        ok = status == 200 and full["choices"][0]["finish_reason"] == "stop"
        text = full["choices"][0]["message"]["content"] if ok else ""
        try:
            jsonschema.validate(json.loads(text), schema)
            valid = rf["type"] != "json_object" or json.loads(text) == {}
        except (ValueError, jsonschema.ValidationError) as e:
            valid = False
            print(f"    {e}")
        check(ok and valid, f"response_format {rf['type']} #{i}: {text[:60]!r} validates")
        status, events, _, _ = stream(port, "/v1/chat/completions", {**body, "stream": True})
        texts, _ = stream_texts(events)
        check(status == 200 and well_formed_stream(events) and texts.get(0) == text,
              f"response_format #{i} streamed == completed")
    # llama.cpp's grammar field, and the errors.
    status, full, _ = request(port, "POST", "/v1/chat/completions",
                              {"messages": msgs, "grammar": 'root ::= "yes" | "no"', "max_tokens": 8})
    check(status == 200 and full["choices"][0]["message"]["content"] in ("yes", "no"), "grammar field (GBNF)")
    for bad, param in [({"type": "yaml"}, "response_format.type"),
                       ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string",
                         "pattern": "a+"}}}, "response_format.json_schema.schema"),
                       ("json", "response_format")]:
        status, err, _ = request(port, "POST", "/v1/chat/completions", {"messages": msgs, "response_format": bad})
        check(status == 400 and err["error"]["param"] == param, f"response_format {bad!r}: 400 naming {param}")


WEATHER_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16},
      "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"]}}},
    {"type": "function", "function": {"name": "add", "description": "Adds two integers.",
     "parameters": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99},
      "b": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["a", "b"],
      "additionalProperties": False}}},
]


def streamed_tool_calls(events):
    """Accumulates delta.tool_calls the way OpenAI's clients do: by index, id/name once, arguments appended."""
    calls, content = {}, ""
    for ev in events:
        if ev == "[DONE]":
            continue
        for ch in ev["choices"]:
            delta = ch.get("delta", {})
            content += delta.get("content") or ""
            for tc in delta.get("tool_calls") or []:
                c = calls.setdefault(tc["index"], {"id": None, "type": None, "function": {"name": "", "arguments": ""}})
                c["id"] = tc.get("id") or c["id"]
                c["type"] = tc.get("type") or c["type"]
                fn = tc.get("function", {})
                c["function"]["name"] += fn.get("name") or ""
                c["function"]["arguments"] += fn.get("arguments") or ""
    return [calls[k] for k in sorted(calls)], content


def valid_call(call, tools, name=None):
    import jsonschema
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    try:
        fn = call["function"]
        args = json.loads(fn["arguments"])
        jsonschema.validate(args, by_name[fn["name"]])
        return (call["type"] == "function" and isinstance(call["id"], str) and call["id"]
                and (name is None or fn["name"] == name))
    except (KeyError, ValueError, TypeError, jsonschema.ValidationError) as e:
        print(f"    invalid call {call!r}: {e}")
        return False


TOOL_TEMPLATES = ["Qwen-Qwen2.5-7B-Instruct.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
                  "mistralai-Mistral-Nemo-Instruct-2407.jinja"]


def template_path(name):
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "chat", "templates", name)


def test_tools(binary, model):
    msgs = [{"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "What is the weather in Paris?"}]
    for name in TOOL_TEMPLATES:
        print(f"tool calls with {name}")
        srv = Server(binary, model, "--chat-template", template_path(name))
        try:
            p = srv.port
            for choice, want in [("required", None), ({"type": "function", "function": {"name": "add"}}, "add")]:
                body = {"messages": msgs, "tools": WEATHER_TOOLS, "tool_choice": choice, "max_tokens": 200,
                        "temperature": 0}
                status, full, _ = request(p, "POST", "/v1/chat/completions", body)
                ch = full["choices"][0] if status == 200 else {}
                calls = ch.get("message", {}).get("tool_calls") or []
                check(status == 200 and ch["finish_reason"] == "tool_calls" and len(calls) == 1
                      and valid_call(calls[0], WEATHER_TOOLS, want),
                      f"tool_choice {json.dumps(choice)}: one valid call {calls[:1]}")
                check(status == 200 and ch["message"]["content"] is None, "content is null beside the call")
                status, events, _, _ = stream(p, "/v1/chat/completions", {**body, "stream": True})
                s_calls, s_content = streamed_tool_calls(events)
                _, finishes = stream_texts(events)
                check(status == 200 and well_formed_stream(events) and finishes.get(0) == "tool_calls"
                      and [c["function"] for c in s_calls] == [c["function"] for c in calls] and s_content == ""
                      and all(c["id"] and c["type"] == "function" for c in s_calls),
                      "streamed delta.tool_calls == completed calls")
            if name.startswith("Qwen"):
                # Text before a call stays content, streamed as it comes; the call follows as deltas. A
                # grammar (tool_choice "auto") makes the tiny model write exactly that reply.
                gbnf = r'root ::= "Sure, one moment." "\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"'
                body = {"messages": msgs, "tools": WEATHER_TOOLS, "grammar": gbnf, "max_tokens": 100, "temperature": 0}
                status, full, _ = request(p, "POST", "/v1/chat/completions", body)
                msg = full["choices"][0]["message"] if status == 200 else {}
                check(status == 200 and msg["content"] == "Sure, one moment.\n" and len(msg["tool_calls"]) == 1
                      and json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"a": 1, "b": 2},
                      f"content before a call, then the call: {msg}")
                status, events, _, _ = stream(p, "/v1/chat/completions", {**body, "stream": True})
                s_calls, s_content = streamed_tool_calls(events)
                check(status == 200 and s_content == "Sure, one moment.\n"
                      and [c["function"] for c in s_calls] == [c["function"] for c in msg.get("tool_calls", [])]
                      and not any("<tool_call>" in (e["choices"][0]["delta"].get("content") or "")
                                  for e in events[:-1] if e["choices"]),
                      "streamed: the content, no marker text, then the call")
                # Two calls: streamed as they are written (each call's arguments in several
                # fragments), and parallel_tool_calls false keeps only the first, streamed or not.
                gbnf2 = (r'root ::= "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n'
                         r'<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>"')
                for parallel, n_calls in [(True, 2), (False, 1)]:
                    body = {"messages": msgs, "tools": WEATHER_TOOLS, "grammar": gbnf2, "max_tokens": 400,
                            "temperature": 0, "parallel_tool_calls": parallel}
                    status, full, _ = request(p, "POST", "/v1/chat/completions", body)
                    calls = full["choices"][0]["message"].get("tool_calls") or [] if status == 200 else []
                    check(status == 200 and [c["function"]["name"] for c in calls] == ["add", "get_weather"][:n_calls]
                          and all(valid_call(c, WEATHER_TOOLS) for c in calls),
                          f"parallel_tool_calls {parallel}: {n_calls} call(s) {calls}")
                    status, events, _, _ = stream(p, "/v1/chat/completions", {**body, "stream": True})
                    s_calls, s_content = streamed_tool_calls(events)
                    fragments = [sum(1 for e in events if e != "[DONE]" and e["choices"]
                                     for tc in e["choices"][0]["delta"].get("tool_calls") or []
                                     if tc["index"] == k and tc.get("function", {}).get("arguments"))
                                 for k in range(len(s_calls))]
                    check(status == 200 and [c["function"] for c in s_calls] == [c["function"] for c in calls]
                          and s_content == "" and all(f >= 2 for f in fragments),
                          f"parallel_tool_calls {parallel}: streamed calls == completed ones, arguments in fragments {fragments}")
            # The round trip: the call and its result go back through the template.
            call = {"id": "abcDEF123", "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}
            follow = msgs + [{"role": "assistant", "content": None, "tool_calls": [call]},
                             {"role": "tool", "tool_call_id": "abcDEF123", "content": '{"temperature": 21}'}]
            status, full, _ = request(p, "POST", "/v1/chat/completions",
                                      {"messages": follow, "tools": WEATHER_TOOLS, "max_tokens": 16,
                                       "temperature": 0, "tool_choice": "none"})
            check(status == 200 and isinstance(full["choices"][0]["message"]["content"], str)
                  and "tool_calls" not in full["choices"][0]["message"]
                  and full["choices"][0]["finish_reason"] != "tool_calls",
                  "tool result message renders; tool_choice none answers with text")
            for bad, param in [({"type": "function", "function": {"name": "nope"}}, "tool_choice"),
                               ("sometimes", "tool_choice")]:
                status, err, _ = request(p, "POST", "/v1/chat/completions",
                                         {"messages": msgs, "tools": WEATHER_TOOLS, "tool_choice": bad})
                check(status == 400 and err["error"]["param"] == param, f"tool_choice {bad!r}: 400")
            status, err, _ = request(p, "POST", "/v1/chat/completions",
                                     {"messages": msgs + [{"role": "tool", "content": "x"}]})
            check(status == 400 and "tool_call_id" in err["error"]["param"], "tool message without tool_call_id: 400")
        finally:
            check(srv.stop() == 0, "server stops cleanly on SIGTERM")



def test_openai_npm(port, model_id, binary, model):
    print("official openai npm client")
    if shutil.which("npm") is None or shutil.which("node") is None:
        check(False, "node and npm are installed")
        return
    tmp = tempfile.mkdtemp(prefix="lmrt-openai-")
    try:
        r = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", tmp, "openai"],
                           capture_output=True, text=True, timeout=240)
        if not check(r.returncode == 0, "npm install openai"):
            print(r.stderr[-2000:])
            return
        script = os.path.join(tmp, "client.mjs")
        shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai_client.mjs"), script)
        r = subprocess.run(["node", script, f"http://127.0.0.1:{port}/v1", model_id], capture_output=True, text=True,
                           timeout=120)
        if not check(r.returncode == 0, "openai client ran"):
            print(r.stdout[-2000:], r.stderr[-2000:])
            return
        out = json.loads(r.stdout.strip().splitlines()[-1])
        check(isinstance(out["text"], str) and out["text"], f"openai chat completion: {out['text'][:40]!r}")
        check(out["streamed"] == out["text"] and out["stream_finish"] == out["finish"], "openai streamed == completed")
        check(out["usage"]["total_tokens"] > 0 and model_id in out["models"], "openai usage and models.list")
        # The tool-calling flow against a server with a tool-capable template (Qwen2.5's).
        srv = Server(binary, grammar_model(model), "--chat-template", template_path(TOOL_TEMPLATES[0]))
        try:
            script = os.path.join(tmp, "tools.mjs")
            shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "openai_tools.mjs"), script)
            r = subprocess.run(["node", script, f"http://127.0.0.1:{srv.port}/v1", "stories260K",
                                json.dumps(WEATHER_TOOLS)], capture_output=True, text=True, timeout=120)
            if check(r.returncode == 0, "openai tool-calling flow ran"):
                out = json.loads(r.stdout.strip().splitlines()[-1])
                check(out["finish"] == "tool_calls" and valid_call(out["call"], WEATHER_TOOLS),
                      f"openai client: tool_calls {out['call']}")
                check(out["streamed_call"] == out["call"]["function"], "openai client: streamed call (runTools-style "
                      "accumulation) == completed call")
                check(out["streamed_fragments"] >= 2,
                      f"openai client: arguments streamed in {out['streamed_fragments']} fragments as generated")
                check(isinstance(out["answer"], str) and out["answer_finish"] in ("stop", "length"),
                      f"openai client: final answer after the tool result: {out['answer'][:40]!r}")
            else:
                print(r.stdout[-2000:], r.stderr[-2000:])
        finally:
            check(srv.stop() == 0, "tool server stops cleanly")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_load(port):
    print("load: 4 clients x 25 streamed requests, --parallel 2")
    prompts = ["Once upon a time", "The little dog", "Lily wanted to", "One day, a bird"]
    body = lambda p: {"prompt": p, "max_tokens": 32, "temperature": 0, "stream": True}
    reference = {p: request(port, "POST", "/v1/completions", {**body(p), "stream": False})[1]["choices"][0]["text"]
                 for p in prompts}
    ttfts, bad = [], []
    lock = threading.Lock()

    def client(k):
        for i in range(25):
            p = prompts[(k + i) % len(prompts)]
            try:
                status, events, ttft, _ = stream(port, "/v1/completions", body(p))
                texts, _ = stream_texts(events) if status == 200 else ({}, {})
                ok = status == 200 and well_formed_stream(events) and texts.get(0) == reference[p] and ttft is not None
            except Exception as e:  # noqa: BLE001 - any failure counts
                ok, ttft = False, None
                status = repr(e)
            with lock:
                if ok:
                    ttfts.append(ttft)
                else:
                    bad.append((k, i, status))

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    elapsed = time.time() - t0
    check(not any(t.is_alive() for t in threads), "load clients finished in time")
    check(len(ttfts) == 100 and not bad, f"100/100 streams complete and correct (bad: {bad[:3]})")
    if ttfts:
        print(f"  load: {len(ttfts)} requests in {elapsed:.2f} s = {len(ttfts) / elapsed:.1f} req/s, "
              f"median TTFT {statistics.median(ttfts) * 1000:.1f} ms, p90 "
              f"{sorted(ttfts)[int(len(ttfts) * 0.9) - 1] * 1000:.1f} ms")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary, model = sys.argv[1], sys.argv[2]
    skip_npm = "--skip-npm" in sys.argv
    model_id = os.path.basename(model).removesuffix(".gguf")
    t0 = time.time()
    # endless_body() must outlast the default max_tokens cap (the context size).
    srv = Server(binary, model, "--parallel", "2", "--max-tokens-limit", "1000000")
    try:
        n_ctx = request(srv.port, "GET", "/v1/models")[1]["data"][0]["context_length"]
        test_basics(srv.port, model_id)
        text = test_completions(srv.port)
        test_stop(srv.port, text)
        test_chat(srv.port)
        test_logprobs(srv.port)
        test_n(srv.port)
        test_sampler_fields(srv.port, text)
        test_errors(srv.port, n_ctx)
        test_garbage(srv.port)
        test_cancel(srv.port)
        if not skip_npm:
            test_openai_npm(srv.port, model_id, binary, model)
        test_load(srv.port)
    finally:
        check(srv.stop() == 0, "server stops cleanly on SIGTERM")
    test_queue_and_key(binary, model)
    test_response_format(binary, model)
    test_tools(binary, grammar_model(model))
    print(f"{'FAILED' if FAILURES else 'PASSED'} in {time.time() - t0:.1f} s"
          + (f": {len(FAILURES)} failures" if FAILURES else ""))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
