"""What the benchmarks comparing two checkouts share (history_memory, cluster_faults).

Each runs the real CLI of a checkout in child processes: this one, and with `--before PATH`
another (e.g. main before a change), in the same run, so that the columns compare.
"""

from __future__ import annotations

import sys
from pathlib import Path


def python_of(checkout: Path) -> str:
    """The interpreter of the checkout's .venv (its editable install), else this one."""
    venv = checkout / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def command_line(module: str, *, quick: bool, before: Path | None) -> str:
    """The command a report names as the one that produced it."""
    if quick:
        return f"python -m {module} --quick"
    return f"python -m {module}" + (f" --before {before}" if before else "")


def publish(report: str, output: Path | None) -> None:
    """Print the report; write it to `output` unless that is None (quick runs)."""
    print(report)
    if output is not None:
        output.write_text(report)
