"""A run's resource profile: what each task-second of it asked of a node, per resource class.

From the task metrics an event log sums per run (core/profile.py `AppProfile.resources`):

* cpu     the share of task time on a JVM thread's CPU (Executor CPU Time / Run Time);
* memory  the share in the garbage collector, plus spilling (bytes spilled per task-second);
* disk    bytes read from and written to storage, and spilled to disk, per task-second;
* network shuffle bytes read and written per task-second, plus the share waiting for fetches;
* wait    what is left: task time on no measured resource (sleeping on a remote service,
          Python workers, locks).

Byte rates become shares by rate / (rate + BYTES_HALF_PER_S): 0 for none, 1/2 at the half
rate, towards 1 for a task that does nothing else. So every class lies in [0, 1], and jobs of
any size compare: a profile says what a job's tasks are busy with, not how much work it has.
Pure: no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

CLASSES = ("cpu", "memory", "disk", "network", "wait")
# 20 MB per task-second is half a share of a byte-moving class. Set by hand at 533024c;
# measured since by bench.studies.nodetype_constants (leave one node type out): flat on
# bench.hetero's seed 2018 (10.87-11.15, 20e6 within one SE of the best), the best of the grid
# (5e6-80e6) on seed 7, which chose nothing, so it stays.
BYTES_HALF_PER_S = 20e6
MIN_TASK_S = 1e-3  # a run whose tasks ran for less has no profile


def _rate_share(bytes_: float, task_s: float) -> float:
    rate = max(bytes_, 0.0) / task_s
    return rate / (rate + BYTES_HALF_PER_S)


def shares(resources: Mapping[str, float]) -> dict[str, float] | None:
    """One run's profile {class: share in [0, 1]} from its summed task metrics; None when the
    run has no task time (a format-1 profile, or no task finished)."""
    task_s = float(resources.get("run_s") or 0.0)
    if not math.isfinite(task_s) or task_s < MIN_TASK_S:
        return None

    def part(key: str) -> float:
        return min(max(float(resources.get(key) or 0.0) / task_s, 0.0), 1.0)

    cpu = part("cpu_s")
    gc = part("gc_s")
    fetch = part("shuffle_fetch_wait_s")
    spill = float(resources.get("memory_spill_bytes") or 0.0)
    disk_bytes = sum(float(resources.get(k) or 0.0)
                     for k in ("input_bytes", "output_bytes", "disk_spill_bytes"))
    net_bytes = sum(float(resources.get(k) or 0.0)
                    for k in ("shuffle_read_bytes", "shuffle_write_bytes"))
    return {
        "cpu": cpu,
        "memory": min(gc + _rate_share(spill, task_s), 1.0),
        "disk": _rate_share(disk_bytes, task_s),
        "network": min(_rate_share(net_bytes, task_s) + fetch, 1.0),
        "wait": max(1.0 - cpu - gc - fetch - part("shuffle_write_s"), 0.0),
    }


def job_profile(runs: Iterable[Mapping[str, float] | None]) -> dict[str, float] | None:
    """A job's profile: each class's median over its runs' profiles (None when none has one).
    The median, because a run slowed by co-runners stretches its task time and so lowers its
    shares for a while; most runs do not."""
    rows = [r for r in runs if r]
    if not rows:
        return None
    return {c: float(statistics.median(r.get(c, 0.0) for r in rows)) for c in CLASSES}


def vector(profile: Mapping[str, float], classes: Sequence[str] = CLASSES) -> list[float]:
    return [float(profile.get(c, 0.0)) for c in classes]
