"""The gate's blocks in Markdown files: `<!-- gate:NAME -->` ... `<!-- /gate:NAME -->`.

A block is generated text (a headline table the gate renders from bench/baseline.json); the
rest of the file is anyone's. A benchmark that rewrites its whole results file keeps the
file's blocks (`bench.publish` carries them over), so a full rerun never drops them. So is
text written by hand into a generated file, in `<!-- kept:NAME -->` ... `<!-- /kept:NAME -->`
(a reading of the tables): a rerun (`python -m bench rerun`) keeps it, at the file's end.
"""

from __future__ import annotations

import re

_BLOCK = re.compile(r"<!-- gate:(?P<name>[\w.-]+) -->\n(?P<body>.*?)<!-- /gate:(?P=name) -->",
                    re.S)


def block(name: str, body: str) -> str:
    """The block `name` holding `body` (one trailing newline)."""
    return f"<!-- gate:{name} -->\n{body.rstrip()}\n<!-- /gate:{name} -->"


def blocks(text: str) -> dict[str, str]:
    """name -> body of every block in `text`."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(text)}


def put(text: str, name: str, body: str) -> str:
    """`text` with block `name` holding `body`: replaced where it is, else inserted after the
    first line (a results file's title) and a blank line."""
    new = block(name, body)
    for m in _BLOCK.finditer(text):
        if m["name"] == name:
            return text[:m.start()] + new + text[m.end():]
    title, _, rest = text.partition("\n")
    return f"{title}\n\n{new}\n\n{rest.lstrip(chr(10))}"


def carried_over(old: str, new: str) -> str:
    """`new` with every block of `old` that `new` lacks (a rewritten results file)."""
    out = new
    present = blocks(new)
    for name, body in reversed(list(blocks(old).items())):
        if name not in present:
            out = put(out, name, body)
    return out


_KEPT = re.compile(r"<!-- kept:(?P<name>[\w.-]+) -->\n.*?<!-- /kept:(?P=name) -->", re.S)


def kept_over(old: str, new: str) -> str:
    """`new` with every hand-written block of `old` that `new` lacks, at its end."""
    present = {m["name"] for m in _KEPT.finditer(new)}
    missing = [m[0] for m in _KEPT.finditer(old) if m["name"] not in present]
    return "\n\n".join([new.rstrip("\n"), *missing]) + "\n" if missing else new
