"""Run the real `cobell` entry point in-process (fast) or as a subprocess (the real thing)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

from typer.testing import CliRunner

from cobell_cli.cli import main


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str


def cobell(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
    """Call cobell_cli.cli.main with captured streams, exactly as the console script would."""
    runner = CliRunner()
    with runner.isolation(input=input, env=env) as (out, err, _):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:
            code = 0
        return Result(code, out.getvalue().decode(), err.getvalue().decode())


def cobell_process(
    *args: str, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run `python -m cobell_cli` as a separate process (no stdin terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "cobell_cli", *map(str, args)],
        input=input if input is not None else "",
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )
