"""What the memory models read of a run, and the features a memory function takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

MB = 1024 * 1024

Feature = Literal["per_executor", "input"]
FEATURES: tuple[Feature, ...] = get_args(Feature)
# Inputs within this fraction count as the same: a reservation's outcome at one input proves
# a bound on the need at the same or (memory never falls as the input grows) a larger one.
SAME_INPUT = 0.10


@dataclass(frozen=True)
class MemoryObservation:
    """One run of a job as the memory models see it.

    `demand_mb`: the heap the run showed it needs (demand.py), None for a run without it;
    `reserved_mb`: the heap it had (`--executor-memory`); `failed`: it failed for memory, so
    its need was more than `reserved_mb` (a lower bound, never a demand).
    """

    input_bytes: int
    scale_out: int
    demand_mb: float | None
    reserved_mb: float | None = None
    failed: bool = False

    @property
    def per_executor_mb(self) -> float:
        return self.input_bytes / MB / max(self.scale_out, 1)


def feature_value(run: MemoryObservation, feature: Feature) -> float:
    """The feature in MB: the input each executor processes, or the whole input."""
    if feature == "per_executor":
        return run.per_executor_mb
    return run.input_bytes / MB


def at_least(run: MemoryObservation, other: MemoryObservation, feature: Feature) -> bool:
    """Does `run` have at least `other`'s input (by `feature`), within SAME_INPUT?"""
    return feature_value(run, feature) >= (1 - SAME_INPUT) * feature_value(other, feature)
