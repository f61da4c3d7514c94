"""Quiet recordings: a real run that reports accuracy starts only on an idle machine.

A runtime measured while other work shares the two cores carries that work's noise, often more
than the effect the recording is meant to show. So every recorder waits, before each run, until
the 1-minute load average is below `MAX_LOAD`, and keeps that load beside the run. Where other
work on the machine honours a lock (`COBELL_QUIET_LOCK`: a file such work holds shared, e.g.
with `flock -s`), the recorder announces itself (`<lock>.wanted.PID`: new work waits) and holds the
lock exclusively for the run, so nothing starts beside it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MAX_LOAD = 1.5  # the brief's bar for a quiet 2-core machine
LOCK_ENV = "COBELL_QUIET_LOCK"
POLL_S = 5.0
# After a run, how long the recorder leaves the lock free before it asks again, so that work
# queued behind it starts (the load the run left decays meanwhile anyway).
GAP_S = 45.0


def load_1min() -> float:
    return os.getloadavg()[0]


def wait_for_quiet(max_load: float = MAX_LOAD, poll_s: float = POLL_S) -> float:
    """Block until the 1-minute load average is below `max_load`; return the load then."""
    load = load_1min()
    while load >= max_load:
        time.sleep(poll_s)
        load = load_1min()
    return load


@contextmanager
def quiet_run(max_load: float = MAX_LOAD) -> Iterator[dict[str, float]]:
    """Hold the machine for one run: the lock (when `COBELL_QUIET_LOCK` names one), then a
    load below `max_load`. Yields {"load_before": ..., "waited_s": ...} to write beside the
    run; a run never starts above the bar, so none needs rerunning for it."""
    lock_path = os.environ.get(LOCK_ENV)
    started = time.monotonic()
    if not lock_path:
        yield {"load_before": wait_for_quiet(max_load), "waited_s": time.monotonic() - started}
        return
    wanted = Path(f"{lock_path}.wanted.{os.getpid()}")
    wanted.touch()
    with open(lock_path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            load = wait_for_quiet(max_load)
            yield {"load_before": load, "waited_s": time.monotonic() - started}
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            wanted.unlink(missing_ok=True)
    time.sleep(GAP_S)
