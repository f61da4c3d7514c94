"""One BLAS thread for cobell's fits, the user's own environment for the jobs it runs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cobell_cli import __version__
from cobell_cli.threads import BLAS_THREAD_VARS, limit_blas_threads
from tests.cli_support import cobell_process

SHOW = f"import json, os; print(json.dumps({{v: os.environ.get(v) for v in {BLAS_THREAD_VARS!r}}}))"


def test_only_unset_variables_are_set() -> None:
    env = {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": ""}
    added = limit_blas_threads(env)
    assert set(added) == {"OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"}
    assert env == {"OMP_NUM_THREADS": "4", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _child_env(tmp_path: Path, extra: dict[str, str]) -> dict[str, str | None]:
    """What the job `cobell submit` starts sees of the BLAS variables."""
    base = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARS}
    argv = [sys.executable, "-m", "cobell_cli", "--db", str(tmp_path / "h.db"), "submit", "-j",
            "toy", "-t", "5", "--cluster", "none", "--", sys.executable, "-c", SHOW, "{scale_out}"]
    import subprocess

    proc = subprocess.run(argv, env={**base, **extra}, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_job_gets_the_users_environment_not_cobells(tmp_path: Path) -> None:
    assert _child_env(tmp_path, {}) == {v: None for v in BLAS_THREAD_VARS}
    assert _child_env(tmp_path, {"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"


def test_cobell_itself_runs_with_one_blas_thread(tmp_path: Path) -> None:
    """`python -m cobell_cli` sets the variables before any command imports numpy."""
    code = ("import os, sys; from cobell_cli.cli import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)")
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARS}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["cobell " + __version__, "1 False"]
    assert cobell_process("--version").returncode == 0
