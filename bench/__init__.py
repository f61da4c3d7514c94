"""Benchmarks: `python -m bench gate` and the canonical benchmarks (bench/README.md,
docs/benchmarks.md)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BELL_DATA_ENV = "COBELL_BELL_DATA"


def bell_data(environ: Mapping[str, str] | None = None, checkout: Path = ROOT) -> Path:
    """Where the Bell runtime data is: $COBELL_BELL_DATA, else `shared/data/bell` beside the
    checkout or beside one of its parents (a git worktree under /work/wt/NAME finds
    /work/shared as /work/main does). Never copied into the repository (its licence)."""
    env = os.environ if environ is None else environ
    if env.get(BELL_DATA_ENV):
        return Path(env[BELL_DATA_ENV])
    for parent in checkout.parents:
        candidate = parent / "shared" / "data" / "bell"
        if candidate.is_dir():
            return candidate
    return checkout.parent / "shared" / "data" / "bell"


BELL_DATA = bell_data()


def publish(text: str, output: Path | None) -> None:
    """Print a benchmark's report and, unless it is a quick run (`output` None), write it,
    keeping the gate's blocks the file held (bench/gate/blocks.py)."""
    from bench.gate.blocks import carried_over

    print(text)
    if output is None:
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.is_file():
        text = carried_over(output.read_text(), text)
    output.write_text(text)
    print(f"wrote {output.relative_to(ROOT) if output.is_relative_to(ROOT) else output}")
