"""From a run's memory columns to what the memory models fit: its demand, or a lower bound.

A succeeded run with a measured peak shows its demand; a run that failed for memory shows only
that its need was above the heap it had. Everything else says nothing about memory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cobell_cli.core.memory.records import MemoryObservation


def demand_mb(peak_mb: float, reserved_mb: float | None) -> float:
    """The need a run's peak shows: the peak itself (measure.py says which peak).

    Decided on the tune set (bench/data/memory/tune, bench/results/memory_accuracy.md): the
    heap peak at a generous reservation did not overstate the need there (a `collect` run
    whose peak was 950 MB at 2048 MB failed at 960 MB), so nothing is subtracted for garbage;
    and six bounded needs of one job cannot fit a factor, so none is added: the conformal
    bound (model.py) carries the error."""
    return peak_mb


def observations(runs: Sequence[Mapping[str, Any]]) -> list[MemoryObservation]:
    """The runs the memory models can use, as observations, oldest first as given."""
    out = []
    for run in runs:
        size, x = run.get("input_bytes"), run.get("scale_out")
        if not size or not x:
            continue
        reserved = run.get("executor_memory_mb")
        if run.get("status") == "failed" and run.get("failure_reason") == "memory":
            if reserved:
                out.append(MemoryObservation(int(size), int(x), None, float(reserved), True))
        elif run.get("status") == "succeeded" and run.get("peak_memory_mb"):
            demand = demand_mb(float(run["peak_memory_mb"]), reserved)
            out.append(MemoryObservation(int(size), int(x), demand, reserved))
    return out
