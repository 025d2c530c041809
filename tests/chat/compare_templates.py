#!/usr/bin/env python3
"""Renders every chat template with every message set (x add_generation_prompt true/false) with
`lmrt template` and with python3-jinja2 as transformers does (render_reference.py), and compares the
bytes. A template that raises must raise in both, with the same message for raise_exception.

  compare_templates.py LMRT_BINARY [--shared DIR] [--table]

Templates: tests/chat/templates/*.jinja (special tokens from tokens.json beside them) and the
chat_template of every ../shared/vocab/hf/*/tokenizer_config.json. Message sets:
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


def lmrt(binary, tmp, text, case, agp, tok):
    files = {}
    for key, value in (("template", text), ("messages", case["messages"]), ("tools", case.get("tools")),
                       ("vars", case.get("vars"))):
        if value is None:
            continue
        path = os.path.join(tmp, key)
        with open(path, "w", encoding="utf-8") as f:
            f.write(value if key == "template" else json.dumps(value, ensure_ascii=False))
        files[key] = path
    cmd = [binary, "template"]
    for key, path in files.items():
        cmd += ["--" + key, path]
    if "bos_token" in tok:
        cmd += ["--bos", tok["bos_token"]]
    if "eos_token" in tok:
        cmd += ["--eos", tok["eos_token"]]
    if not agp:
        cmd.append("--no-generation-prompt")
    p = subprocess.run(cmd, capture_output=True, timeout=60)
    if p.returncode == 0:
        return "OK", p.stdout.decode("utf-8")
    err = p.stderr.decode("utf-8", "replace").strip()
    marker = "raise_exception: "
    if marker in err:
        return "RAISE", err[err.index(marker) + len(marker):]
    return "ERROR", err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lmrt")
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
    failures = 0
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, text, tok in templates:
            same = raised = total = 0
            bad = []
            for case_name, case in cases:
                for agp in (True, False):
                    total += 1
                    want = reference(text, case, agp, tok)
                    got = lmrt(a.lmrt, tmp, text, case, agp, tok)
                    ok = want[0] == got[0] and (want[0] == "ERROR" or want[1] == got[1])
                    if ok:
                        same += 1
                        raised += want[0] != "OK"
                    else:
                        bad.append("%s/agp=%d" % (case_name, agp))
                        failures += 1
                        print("MISMATCH %s %s add_generation_prompt=%s\n  jinja2: %s %r\n  lmrt:   %s %r" %
                              (name, case_name, agp, want[0], want[1][:400], got[0], got[1][:400]))
            rows.append((name, same, total, raised, bad))
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
