#!/usr/bin/env python3
"""Constrained generation over a corpus of JSON Schemas: for each schema in SCHEMA_DIR, `lmrt run
--json-schema` on a tiny model must finish by itself (finish_reason eos, within the token budget)
with text that is JSON valid against the schema (python3-jsonschema, formats checked).

usage: check_schemas.py LMRT_CLI MODEL SCHEMA_DIR"""
import json
import pathlib
import subprocess
import sys

import jsonschema

MAX_TOKENS = 400
PROMPTS = ["Once upon a time"]


def main():
    cli, model, schema_dir = sys.argv[1:4]
    failures = []
    schemas = sorted(pathlib.Path(schema_dir).glob("*.json"))
    if len(schemas) == 0:
        print("no schemas in", schema_dir)
        return 1
    for path in schemas:
        schema = json.loads(path.read_text(encoding="utf-8"))
        validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator_cls.check_schema(schema)
        validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
        for prompt in PROMPTS:
            proc = subprocess.run([cli, "run", "-m", model, "-p", prompt, "-n", str(MAX_TOKENS), "--json-schema",
                                   str(path), "--json"], capture_output=True, text=True, timeout=120)
            where = f"{path.name} (prompt {prompt!r})"
            if proc.returncode != 0:
                failures.append(f"{where}: lmrt exited {proc.returncode}: {proc.stderr.strip()}")
                continue
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            text = result["text"]
            if result["finish_reason"] != "eos":
                failures.append(f"{where}: finished with {result['finish_reason']}, text {text!r}")
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as e:
                failures.append(f"{where}: not JSON ({e}): {text!r}")
                continue
            errors = [e.message for e in validator.iter_errors(value)]
            if errors:
                failures.append(f"{where}: invalid: {errors[0]}: {text!r}")
                continue
            print(f"ok {where}: {text}")
    for f in failures:
        print("FAIL", f)
    print(f"{len(schemas) * len(PROMPTS) - len(failures)} of {len(schemas) * len(PROMPTS)} generations valid")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
