"""Benchmarks: each `python -m bench.NAME` writes bench/results/NAME.md (see docs/benchmarks.md)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def publish(text: str, output: Path | None) -> None:
    """Print a benchmark's report and, unless it is a quick run (`output` None), write it."""
    print(text)
    if output is None:
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    print(f"wrote {output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}")
