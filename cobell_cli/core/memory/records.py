"""What the memory models read of a run, and the features a memory function takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

MB = 1024 * 1024

Feature = Literal["per_executor", "input"]
FEATURES: tuple[Feature, ...] = get_args(Feature)


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
