#!/usr/bin/env python3
"""Renders every chat template with every message set (x add_generation_prompt true/false) through
lmrt's C ABI (the lmrt_render_cases program, built from render_cases.cpp) and with python3-jinja2 as transformers does (render_reference.py), and compares the
bytes. A template that raises must raise in both, with the same message for raise_exception.

  compare_templates.py RENDER_CASES_BINARY [--shared DIR] [--table] [--only NAME]

Templates: tests/chat/templates/*.jinja (special tokens from tokens.json beside them), the
one-line feature templates of tests/chat/feature_templates.txt and the chat_template of every
../shared/vocab/hf/*/tokenizer_config.json. Message sets:
tests/chat/messages/*.json, each {"messages": [...], "tools": [...]?, "vars": {...}?}.
Exit status 0 when every case agrees; prints each disagreement and, with --table, the
per-template counts.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import render_reference  # noqa: E402


def token_text(value):
    if isinstance(value, dict):
        return value.get("content")
    return value


def collect_templates(shared):
    templates = []
    with open(os.path.join(HERE, "templates", "tokens.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    for path in sorted(glob.glob(os.path.join(HERE, "templates", "*.jinja"))):
        name = os.path.basename(path)[:-len(".jinja")]
        with open(path, encoding="utf-8") as f:
            text = f.read()
        tok = tokens.get(name, {})
        templates.append((name, text, {k: v for k, v in tok.items() if v is not None}))
    with open(os.path.join(HERE, "feature_templates.txt"), encoding="utf-8") as f:
        features = [line.rstrip("\n") for line in f if line.strip() and not line.startswith("#")]
    for i, text in enumerate(features):
        templates.append(("feature-%02d" % (i + 1), text, {"bos_token": "<s>", "eos_token": "</s>"}))
    for cfg in sorted(glob.glob(os.path.join(shared, "vocab", "hf", "*", "tokenizer_config.json"))):
        with open(cfg, encoding="utf-8") as f:
            c = json.load(f)
        tmpl = c.get("chat_template")
        if isinstance(tmpl, list):  # named templates: [{"name": ..., "template": ...}]
            for t in tmpl:
                templates.append(("hf-%s-%s" % (os.path.basename(os.path.dirname(cfg)), t["name"]), t["template"], {}))
            continue
        if not tmpl:
            continue
        tok = {}
        for key in ("bos_token", "eos_token"):
            v = token_text(c.get(key))
            if v is not None:
                tok[key] = v
        templates.append(("hf-" + os.path.basename(os.path.dirname(cfg)), tmpl, tok))
    return templates


def reference(text, case, agp, tok):
    variables = dict(tok)
    variables.update(case.get("vars", {}))
    try:
        return "OK", render_reference.render(text, case["messages"], case.get("tools"), agp, variables)
    except render_reference.RaisedByTemplate as e:
        return "RAISE", str(e)
    except Exception as e:  # noqa: BLE001 - any template error
        return "ERROR", "%s: %s" % (type(e).__name__, e)


def lmrt_batch(binary, tmp, cases):
    """Renders every case with one lmrt_render_cases process (the C ABI); [(status, text)]."""
    path = os.path.join(tmp, "cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)
    p = subprocess.run([binary, path], capture_output=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit("lmrt_render_cases failed: " + p.stderr.decode("utf-8", "replace"))
    return [(r["status"], r["text"]) for r in json.loads(p.stdout.decode("utf-8"))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lmrt", help="the lmrt_render_cases program")
    ap.add_argument("--shared", default=os.environ.get("LMRT_SHARED_DIR", os.path.join(HERE, "..", "..", "..", "shared")))
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--only", help="a template name")
    a = ap.parse_args()
    cases = []
    for path in sorted(glob.glob(os.path.join(HERE, "messages", "*.json"))):
        with open(path, encoding="utf-8") as f:
            cases.append((os.path.basename(path)[:-len(".json")], json.load(f)))
    templates = collect_templates(a.shared)
    if a.only:
        templates = [t for t in templates if t[0] == a.only]
    batch, keys = [], []
    for name, text, tok in templates:
        for case_name, case in cases:
            for agp in (True, False):
                c = {"template": text, "messages": case["messages"], "add_generation_prompt": agp}
                for key in ("tools", "vars"):
                    if key in case:
                        c[key] = case[key]
                c.update(tok)
                batch.append(c)
                keys.append((name, case_name, agp, text, case, tok))
    with tempfile.TemporaryDirectory() as tmp:
        results = lmrt_batch(a.lmrt, tmp, batch)
    failures = 0
    rows = {}
    for (name, case_name, agp, text, case, tok), got in zip(keys, results):
        want = reference(text, case, agp, tok)
        row = rows.setdefault(name, [name, 0, 0, 0, []])
        row[2] += 1
        if want[0] == got[0] and (want[0] == "ERROR" or want[1] == got[1]):
            row[1] += 1
            row[3] += want[0] != "OK"
        else:
            row[4].append("%s/agp=%d" % (case_name, agp))
            failures += 1
            print("MISMATCH %s %s add_generation_prompt=%s\n  jinja2: %s %r\n  lmrt:   %s %r" %
                  (name, case_name, agp, want[0], want[1][:400], got[0], got[1][:400]))
    rows = list(rows.values())
    if a.table:
        print("| template | identical | of | of which raise/error in both | differing cases |")
        print("| --- | --- | --- | --- | --- |")
        for name, same, total, raised, bad in rows:
            print("| %s | %d | %d | %d | %s |" % (name, same, total, raised, ", ".join(bad) or "-"))
    n_same = sum(r[1] for r in rows)
    n_total = sum(r[2] for r in rows)
    print("%d templates, %d cases, %d identical, %d differ" % (len(rows), n_total, n_same, n_total - n_same))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
