"""The gate's workers end with the gate: a gate killed mid-run leaves no worker computing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

PARENT = """
import concurrent.futures, multiprocessing, os, sys, time
from bench.gate import cli
def stay(_):
    time.sleep(120)
if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    pool = concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx, initializer=cli._silent)
    futures = [pool.submit(stay, i) for i in range(2)]
    time.sleep(3)  # both workers started and running their unit
    print(" ".join(str(p) for p in pool._processes), flush=True)
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


def test_workers_of_a_killed_gate_exit_within_seconds(tmp_path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              env=env)
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(p) for p in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(p) for p in workers)
    finally:
        parent.kill()
        for p in workers if "workers" in locals() else []:
            if _alive(p):
                os.kill(p, signal.SIGKILL)
