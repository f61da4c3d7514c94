"""The expert selector: for a job with too few runs to choose its own memory function, the
function of the most similar known job, as the paper's KNN does (memory-aware-colocation-moe,
Sections 3-4), on what cobell has instead of hardware counters: each run's event-log profile.

Features (each scaled to [0, 1] over the known jobs, as the paper scales its features):
shuffle bytes written per input byte, the storage share of the heap's peak (cached data and
broadcasts), the GC share of the tasks' time, and log10 of the task count. A known job is one
whose memory function was chosen on its own runs (model.py); the new job takes its nearest
neighbour's candidate (k = 1, the paper's choice) and, where its own runs cannot determine
that form, the neighbour's fitted function scaled to its own runs (`borrow`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cobell_cli.core.memory.experts import Fitted
from cobell_cli.core.profile import AppProfile

FEATURE_NAMES = ("shuffle_per_input", "storage_share", "gc_share", "log_tasks")


def profile_features(profile: AppProfile) -> tuple[float, ...] | None:
    """The selector's features of one run; None without executor metrics."""
    memory = profile.memory
    if memory is None or not memory.executors:
        return None
    heap = memory.peak("heap_mb") or 0.0
    storage = memory.peak("storage_mb") or 0.0
    return (
        memory.shuffle_write_bytes / max(profile.input_bytes, 1),
        storage / heap if heap > 0 else 0.0,
        memory.task_gc_s / memory.task_run_s if memory.task_run_s > 0 else 0.0,
        math.log10(max(memory.tasks, 1)),
    )


def job_features(profiles: Sequence[AppProfile]) -> tuple[float, ...] | None:
    """The mean features of a job's runs (None when none has executor metrics)."""
    rows = [f for f in (profile_features(p) for p in profiles) if f is not None]
    if not rows:
        return None
    return tuple(sum(col) / len(rows) for col in zip(*rows, strict=True))


@dataclass(frozen=True)
class KnownJob:
    """A job whose memory function its own runs chose: its features, label and function."""

    job: str
    features: tuple[float, ...]
    label: str  # select.Candidate label
    fitted: Fitted | None = None


@dataclass(frozen=True)
class Neighbour:
    job: str
    label: str
    distance: float
    fitted: Fitted | None


def nearest(features: Sequence[float], known: Sequence[KnownJob]) -> Neighbour | None:
    """The known job closest in min-max scaled feature space (None when there is none)."""
    if not known:
        return None
    columns = list(zip(*(k.features for k in known), features, strict=True))
    lows = [min(c) for c in columns]
    spans = [max(c) - lo or 1.0 for c, lo in zip(columns, lows, strict=True)]

    def scaled(values: Sequence[float]) -> list[float]:
        return [(v - lo) / span for v, lo, span in zip(values, lows, spans, strict=True)]

    me = scaled(features)
    best = min(known, key=lambda k: (math.dist(me, scaled(k.features)), k.job))
    return Neighbour(best.job, best.label, math.dist(me, scaled(best.features)), best.fitted)


def borrow(fitted: Fitted, z: Sequence[float], y: Sequence[float]) -> Fitted:
    """A neighbour's function scaled to this job's runs: the paper calibrates a chosen form
    on the new application's own small runs; with fewer runs than the form has parameters,
    one factor (the runs' mean ratio to the neighbour's prediction) is all they determine."""
    ratios = [yi / fitted.predict(zi) for zi, yi in zip(z, y, strict=True)
              if fitted.predict(zi) > 0]
    factor = sum(ratios) / len(ratios) if ratios else 1.0
    if fitted.name == "power":
        return Fitted("power", fitted.a * factor, fitted.b)
    return Fitted(fitted.name, fitted.a * factor, fitted.b * factor, fitted.tau)
