"""`pytest --gate`: the benchmark gate (`python -m bench gate`) runs beside the tests, at the
lowest CPU priority, and the session fails when the gate fails.

Why beside and not after: on this 2-core machine the suite leaves about a fifth of the CPU
idle (its real clusters' JVMs wait on each other and on YARN's heartbeats: 30.5 CPU-min over
19.7 min in a clean-clone run), and the gate is 10 CPU-min of pure computation. At nice 19
it takes only the cycles the tests leave, so the tests run as fast as without it; whatever
is left of it runs at full speed once they end. Its figures do not depend on timing (fixed
seeds, committed recordings), so they are the same either way.

The gate's own output follows the tests' summary; its exit code decides the session's as a
failed test would (1), and Ctrl-C stops it with the tests.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

import pytest

ROOT = Path(__file__).resolve().parents[1]
NICENESS = 19
COMMAND = [sys.executable, "-m", "bench", "gate"]
_GATE = pytest.StashKey[tuple[subprocess.Popen[bytes], IO[bytes]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--gate", action="store_true",
                     help="run `python -m bench gate` beside the tests at nice 19 and fail"
                     " the session when it fails (the README's test command)")


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("gate") or hasattr(config, "workerinput"):  # xdist's workers
        return
    log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in pytest_sessionfinish)
    gate = subprocess.Popen(["nice", "-n", str(NICENESS), *COMMAND], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT,
                            start_new_session=True)  # Ctrl-C reaches it through pytest, below
    config.stash[_GATE] = (gate, log)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> object:
    """After the tests' own summary (the outermost wrapper's code after `yield` runs last):
    wait for the gate, print what it printed, and let a failed gate fail the session."""
    yield
    started = session.config.stash.get(_GATE, None)
    if started is None:
        return
    gate, log = started
    with log:
        if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
            os.killpg(gate.pid, signal.SIGTERM)
            gate.wait()
            return
        code = gate.wait()
        log.seek(0)
        out = sys.stdout
        out.write(f"\n{'=' * 30} python -m bench gate (beside the tests, nice {NICENESS})"
                  f" {'=' * 30}\n")
        out.write(log.read().decode(errors="replace"))
        out.flush()
    if code != 0:
        print(f"bench gate exited {code}: the session fails", file=sys.stderr)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
