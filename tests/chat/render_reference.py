#!/usr/bin/env python3
"""Renders a chat template exactly as Hugging Face transformers' apply_chat_template does, with
Debian's python3-jinja2: ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with
the loopcontrols extension and a no-op {% generation %} block, transformers' tojson filter and its
raise_exception and strftime_now globals; the template sees messages, tools (None when absent),
documents (None), add_generation_prompt, the special tokens and any extra variables.

  render_reference.py --template T.jinja --messages M.json [--tools T.json] [--vars V.json]
                      [--bos TEXT] [--eos TEXT] [--no-generation-prompt]

prints the text exactly (no newline added); on a template error prints "ERROR: <message>" to
stdout and exits 3 ("ERROR: raise_exception: <message>" for the template's own raise_exception).
"""
import argparse
import functools
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


class RaisedByTemplate(Exception):
    pass


class GenerationTracker(jinja2.ext.Extension):
    """transformers' AssistantTracker without the mask bookkeeping: the body renders unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise RaisedByTemplate(message)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


@functools.lru_cache(maxsize=None)
def compile_template(template):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(template)


def render(template, messages, tools=None, add_generation_prompt=True, variables=None):
    return compile_template(template).render(messages=messages, tools=tools, documents=None,
                                             add_generation_prompt=add_generation_prompt, **(variables or {}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", required=True)
    ap.add_argument("--messages", required=True)
    ap.add_argument("--tools")
    ap.add_argument("--vars")
    ap.add_argument("--bos")
    ap.add_argument("--eos")
    ap.add_argument("--no-generation-prompt", action="store_true")
    a = ap.parse_args()
    with open(a.template, encoding="utf-8") as f:
        template = f.read()
    with open(a.messages, encoding="utf-8") as f:
        messages = json.load(f)
    tools = None
    if a.tools:
        with open(a.tools, encoding="utf-8") as f:
            tools = json.load(f)
    variables = {}
    if a.bos is not None:
        variables["bos_token"] = a.bos
    if a.eos is not None:
        variables["eos_token"] = a.eos
    if a.vars:
        with open(a.vars, encoding="utf-8") as f:
            variables.update(json.load(f))
    try:
        text = render(template, messages, tools, not a.no_generation_prompt, variables)
    except RaisedByTemplate as e:
        sys.stdout.write("ERROR: raise_exception: %s" % e)
        return 3
    except Exception as e:  # any other template error
        sys.stdout.write("ERROR: %s: %s" % (type(e).__name__, e))
        return 3
    sys.stdout.buffer.write(text.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
