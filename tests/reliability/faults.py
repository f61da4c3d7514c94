"""Real faults for the reliability tests: a second process holding the history's write lock, a
`cobell submit` process whose job is a Python script, and waiting for files the job touches."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

PY = sys.executable

HOLDER = """
import sqlite3, sys, time
from pathlib import Path
conn = sqlite3.connect(sys.argv[1], timeout=60, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
release, deadline = Path(sys.argv[2]), time.monotonic() + float(sys.argv[3])
while not release.exists() and time.monotonic() < deadline:
    time.sleep(0.02)
conn.execute("ROLLBACK")
print("released", flush=True)
"""


class LockHolder:
    """Another process holding the history's write lock (`BEGIN IMMEDIATE`) until released."""

    def __init__(self, db: Path, max_s: float = 120.0) -> None:
        self.release_file = db.with_name(f"release-{time.monotonic_ns()}")
        self.proc = subprocess.Popen(
            [PY, "-c", HOLDER, str(db), str(self.release_file), str(max_s)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "locked"
        self.locked_at = time.monotonic()

    def release(self) -> None:
        self.release_file.touch()
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.release()


@contextmanager
def lock_held(db: Path, max_s: float = 120.0) -> Iterator[LockHolder]:
    holder = LockHolder(db, max_s)
    try:
        yield holder
    finally:
        holder.stop()


def job(code: str) -> list[str]:
    """A job command `cobell submit` accepts: a Python script (the {scale_out} placeholder is
    its first argument)."""
    return [PY, "-c", textwrap.dedent(code), "{scale_out}"]


def submit_argv(db: Path, command: Sequence[str], *extra: str, job_name: str = "toy") -> list[str]:
    return [PY, "-m", "cobell_cli", "--db", str(db), "submit", "-j", job_name, "-t", "5",
            "--cluster", "none", *extra, "--", *command]  # fmt: skip


def start_submit(
    db: Path, command: Sequence[str], *extra: str, env: dict[str, str] | None = None, **kw
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        submit_argv(db, command, *extra, **kw),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COBELL_MODEL_CACHE": "off", **(env or {})},
        preexec_fn=as_from_a_terminal,
    )


def as_from_a_terminal() -> None:
    """SIGHUP at its default, as a shell on a terminal starts cobell: a suite run under
    `nohup` would otherwise hand cobell an ignored SIGHUP, which cobell rightly keeps
    ignored (test_under_nohup_sighup_is_ignored_and_the_run_recorded)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def wait_for(predicate: Callable[[], object], timeout_s: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"not reached within {timeout_s} s: {what}")


def directory_state(directory: Path) -> dict[str, str]:
    """Every file with a digest of its bytes (SQLite's -shm index and an empty -wal left out:
    a reader may create them, they hold no content)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.is_file()
        and not p.name.endswith("-shm")
        and not (p.name.endswith("-wal") and p.stat().st_size == 0)
    }
