"""Predicted runtimes of jobs placed on a timeline, each slowed by whatever overlaps it.

The new job's runtime in cobell's model is f(x)·(1 + S(ov)): S combines the co-runners'
(a_k + b_k/x)·ov_k by the model's rule, ov_k the share of the run a co-runner overlaps.
`overlap.predict_overlaps` solves that for one job about to start among running apps; here
several jobs start at chosen times, so each one's overlaps depend on the others' runtimes:
the same fix-point over all of them (damped, as in overlap/joint.py). Apps that already run
(`Busy`) keep their predicted ends. The model's own `predict` gives every runtime, so the
combination rules, pooled pairs and co-runner sizes are the model's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cobell_cli.core.co_runner_effects import combine_row
from cobell_cli.core.schedule.records import Busy

TOL_S = 1.0  # runtimes settle within a second
MAX_ITER = 60


@dataclass(frozen=True)
class Interval:
    """Something that overlaps a run: its job (None: unknown), when it runs and its size."""

    job: str | None
    start_at: float
    end_at: float  # +inf: outlasts everything
    scale_out: int | None = None


def busy_intervals(busy: Sequence[Busy]) -> list[Interval]:
    return [
        Interval(b.job, b.started_at, math.inf if b.end_at is None else b.end_at, b.scale_out)
        for b in busy
    ]


def overlap_row(
    start_at: float, runtime_s: float, others: Sequence[Interval],
    weigh: Callable[[Any, Any], float] | None = None,
) -> dict[str | None, float]:
    """{co-runner job: summed overlap ratio} of a run [start, start + runtime) (weighted by
    the model's co-runner size weights when it has them)."""
    row: dict[str | None, float] = {}
    end_at = start_at + runtime_s
    for o in others:
        overlap_s = min(end_at, o.end_at) - max(start_at, o.start_at)
        if overlap_s > 0 and runtime_s > 0:
            weight = weigh(o.job, o.scale_out) if weigh is not None else 1.0
            row[o.job] = row.get(o.job, 0.0) + overlap_s / runtime_s * weight
    return row


def _weigh(model: Any) -> Callable[[Any, Any], float] | None:
    """The model's co-runner size weights, if it weighs sizes (a table without references
    weighs every app 1: nothing to ask)."""
    if getattr(model, "alone_s", None) is not None and not getattr(model, "size_reference", 1):
        return None
    return getattr(model, "size_weight", None)


def alone_s(model: Any, scale_out: int) -> float:
    return float(next(iter(model.predict([float(scale_out)], None))))


def runtime_s(model: Any, scale_out: int, row: Mapping[Any, float]) -> float:
    """model.predict([x], row)[0]. A model table on its grid answers here without the pairs'
    uncertainty it would also compute (the schedule asks thousands of times): its alone
    runtime times 1 + the combination of (a + b/x)·ov over the row, as
    co_runner_effects.factor_and_sd combines them (tests hold the two equal)."""
    alone = getattr(model, "alone_s", None)
    if alone is None or not row or not 1 <= scale_out <= len(alone):
        return float(next(iter(model.predict([float(scale_out)], dict(row) if row else None))))
    x = float(scale_out)
    effects = []
    for job, ratio in row.items():
        a, b = model.interference(job)
        effects.append((a + b / x) * ratio)
    return alone[scale_out - 1] * (1.0 + combine_row(effects, model.combination))


def runtime_among(
    model: Any, scale_out: int, start_at: float, others: Sequence[Interval],
    tol_s: float = TOL_S, max_iter: int = MAX_ITER,
) -> tuple[float, dict[str | None, float]]:
    """The runtime of one job starting at `start_at` among fixed `others`, and its overlaps:
    the fix-point of r = model(x, overlaps of [start, start + r)), from no slow-down."""
    weigh = _weigh(model)
    r = alone_s(model, scale_out)
    row: dict[str | None, float] = {}
    damping, last_step = 1.0, 0.0
    for _ in range(max_iter):
        row = overlap_row(start_at, r, others, weigh)
        new = runtime_s(model, scale_out, row)
        step = new - r
        if abs(step) <= tol_s:
            return new, row
        if step * last_step < 0:
            damping = max(damping / 2, 1 / 64)
        r = max(r + damping * step, 1e-9)
        last_step = step
    return r, row


@dataclass(frozen=True)
class Slot:
    """A job placed on the timeline: its model, start and scale-out."""

    key: str
    job: str
    model: Any
    start_at: float
    scale_out: int


def joint_runtimes(
    slots: Sequence[Slot], fixed: Sequence[Interval], tol_s: float = TOL_S,
    max_iter: int = MAX_ITER, guess: Mapping[str, float] | None = None,
) -> tuple[dict[str, float], dict[str, dict[str | None, float]]]:
    """Every slot's runtime and overlaps, each slowed by the fixed intervals and by the
    other slots as they run at the fix-point (damped Jacobi steps from `guess`, else alone)."""
    runtime = {s.key: (guess or {}).get(s.key) or alone_s(s.model, s.scale_out) for s in slots}
    weighs = {s.key: _memoised(_weigh(s.model)) for s in slots}
    rows: dict[str, dict[str | None, float]] = {}
    damping = 1.0
    last: dict[str, float] = {}
    for _ in range(max_iter):
        worst = 0.0
        flipped = False
        new_runtime = {}
        spans = [Interval(o.job, o.start_at, o.start_at + runtime[o.key], o.scale_out)
                 for o in slots]
        for i, s in enumerate(slots):
            others = [*fixed, *spans[:i], *spans[i + 1:]]
            row = overlap_row(s.start_at, runtime[s.key], others, weighs[s.key])
            rows[s.key] = row
            new = runtime_s(s.model, s.scale_out, row)
            step = new - runtime[s.key]
            worst = max(worst, abs(step))
            flipped = flipped or step * last.get(s.key, 0.0) < 0
            last[s.key] = step
            new_runtime[s.key] = max(runtime[s.key] + damping * step, 1e-9)
        if worst <= tol_s:
            return runtime, rows
        if flipped:
            damping = max(damping / 2, 1 / 64)
        runtime = new_runtime
    return runtime, rows


def _memoised(weigh: Callable[[Any, Any], float] | None) -> Callable[[Any, Any], float] | None:
    """A size weight asked once per (job, scale-out) in one solve."""
    if weigh is None:
        return None
    seen: dict[tuple[Any, Any], float] = {}

    def memo(job: Any, scale_out: Any) -> float:
        key = (job, scale_out)
        if key not in seen:
            seen[key] = weigh(job, scale_out)
        return seen[key]

    return memo
