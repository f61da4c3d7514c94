"""Rendering records for people (tables) and scripts (JSON, CSV); no business logic."""

from __future__ import annotations

import io
import json
import math
import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any


def iso(ts: float | None) -> str:
    """Epoch seconds to ISO-8601 UTC, to the second, for screens."""
    if ts is None or (isinstance(ts, float) and math.isnan(ts)):
        return ""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def printable(value: Any) -> Any:
    """Text safe to print on a terminal: what is not printable shown as an escape. Controls
    (C0, DEL, C1: \\xNN) would move the cursor, recolour or retitle the terminal; invisible
    format characters (\\uNNNN: a bidi override, a zero-width space) would reorder or hide
    what is shown; tab and newline would break a row in two."""
    if not isinstance(value, str) or value.isprintable():
        return value
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) <= 0xFF
                   else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
                   for c in value)


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 1 else f"{value:.3g}"
    if isinstance(value, list | dict):
        return json.dumps(value)  # ASCII-only: control characters come out escaped
    return printable(value)


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    tabulate = _tabulate()
    body = [[_cell(row.get(c)) for c in columns] for row in rows]
    return tabulate(body, headers=list(columns), tablefmt="simple", disable_numparse=True)


class _NoMetadata(Exception):
    pass


def _no_version(name: str) -> str:
    raise _NoMetadata(name)


def _tabulate() -> Any:
    """tabulate.tabulate, imported without importlib.metadata where nothing loaded it yet.

    tabulate 0.10's first act is to ask importlib.metadata for its own version; importing
    that (email, zipfile, csv) and scanning sys.path costs ~10 ms of every command that
    prints a table, a tenth of `cobell config show`. For the import only, a module whose
    lookup fails fast stands in, so tabulate.__version__ reads "unknown" in cobell's process
    (tabulate itself never reads it); the real importlib.metadata imports as usual later.
    `html` stands in too (its entity table is ~1.5 % of a cached predict): tabulate escapes
    with it only in HTML tables, and the stand-in's `escape` is the real one, imported then.
    """
    if ("tabulate" not in sys.modules and "importlib.metadata" not in sys.modules
            and _one_thread()):
        metadata = types.ModuleType("importlib.metadata")
        metadata.version = _no_version  # type: ignore[attr-defined]
        metadata.PackageNotFoundError = _NoMetadata  # type: ignore[attr-defined]
        stand_ins = {"importlib.metadata": metadata}
        if "html" not in sys.modules:
            stand_ins["html"] = types.ModuleType("html")
            stand_ins["html"].escape = _html_escape  # type: ignore[attr-defined]
        sys.modules.update(stand_ins)
        try:
            import tabulate  # noqa: F401 - loaded here, under the stand-ins
        finally:
            for name in stand_ins:
                del sys.modules[name]
            if getattr(sys.modules.get("importlib"), "metadata", None) is metadata:
                del sys.modules["importlib"].metadata
    import tabulate as module

    if module.wcwidth is None:  # columns measured as a terminal shows them
        module.wcwidth, module.WIDE_CHARS_MODE = _TerminalWidth, True
    return module.tabulate


def _html_escape(text: str, quote: bool = True) -> str:
    """html.escape, the real one, imported on the first HTML table (see `_tabulate`)."""
    import html

    return html.escape(text, quote)


class _TerminalWidth:
    """What tabulate asks the optional `wcwidth` package for, from the standard library: the
    columns a job name of any script takes (CJK and emoji two, combining marks none), so a
    table of `ジョブ-夜間` and `sgd` lines up. Cells are printable() already."""

    @staticmethod
    def wcswidth(text: str) -> int:
        import unicodedata

        return sum(0 if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me")
                   else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
                   for c in text)


def _one_thread() -> bool:
    """No other thread could be importing the real importlib.metadata meanwhile (threads are
    started through `threading`; where it is not loaded, none were)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def to_json(value: Any) -> str:
    return json.dumps(value, sort_keys=False, default=str)


def to_csv(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str:
    import csv  # here: only CSV output needs it, not every command that prints

    buf = io.StringIO()
    writer = csv.DictWriter(
        buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n"
    )
    writer.writeheader()
    for row in rows:
        writer.writerow({c: "" if row.get(c) is None else row.get(c) for c in columns})
    return buf.getvalue()
