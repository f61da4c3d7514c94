"""The gate's workers end with the gate: a gate killed mid-run leaves no worker computing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# The parent prints its workers' pids once both run a unit (each has written its pid file),
# so the watch the initializer starts is running in both: the premise is certain, not timed.
PARENT = """
import concurrent.futures, multiprocessing, os, sys, time
from pathlib import Path
from bench.gate import cli
READY = Path(sys.argv[1])
def stay(_):
    (READY / str(os.getpid())).touch()
    time.sleep(120)
if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx, initializer=cli._silent,
                                                  initargs=(os.getpid(),))
    futures = [pool.submit(stay, i) for i in range(2)]
    deadline = time.monotonic() + 120
    while len(list(READY.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    print(" ".join(p.name for p in READY.iterdir()), flush=True)
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:  # a zombie has ended; only its entry is left
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:  # reaped in between
        return False


def _ended_within(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not any(_alive(p) for p in pids)


def test_workers_of_a_killed_gate_exit_within_seconds(tmp_path: Path) -> None:
    script, ready = tmp_path / "parent.py", tmp_path / "ready"
    script.write_text(PARENT)
    ready.mkdir()
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    parent = subprocess.Popen([sys.executable, str(script), str(ready)], stdout=subprocess.PIPE,
                              text=True, env=env)
    workers: list[int] = []
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(p) for p in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        assert _ended_within(workers, 10)
    finally:
        parent.kill()
        for p in workers:
            if _alive(p):
                os.kill(p, signal.SIGKILL)


def test_a_worker_whose_gate_died_before_it_started_ends_too() -> None:
    """The gate's pid is handed to the worker, not read at its start: a gate killed while a
    worker still imports leaves that worker another parent, and reading `getppid()` then
    would watch the wrong process forever (a gate on a loaded machine can take seconds to
    start its workers)."""
    gate = 1  # init: a process that is not the worker's parent, as a dead gate's pid is not
    worker = subprocess.Popen(
        [sys.executable, "-c",
         f"import time; from bench.gate import cli; cli._silent({gate}); time.sleep(60)"],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    try:
        assert worker.wait(timeout=30) == 1
        assert worker.stderr.read() == ""  # ended by the watch, not by an error
    finally:
        worker.kill()
