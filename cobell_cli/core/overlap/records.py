"""What the overlap prediction reads of each running app (`CoRunnerInput`) and what it answers
(`CoRunnerOverlap`, `OverlapPrediction`), and the fallbacks for a co-runner without a model."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from cobell_cli.core.remaining import DriverProgress, StagePlan

InterferenceFn = Callable[[str | None], tuple[float, float]]
"""job -> (a, b): slow-down rc = (a + b/x)·ov a co-runner of that job causes (None: unknown)."""

Source = Literal["model", "progress", "outlasts"]
MIN_PROGRESS = 0.05  # below this YARN's progress says little about the remaining time


@dataclass(frozen=True)
class CoRunnerInput:
    """What the overlap prediction needs to know about one running app.

    `base_runtime_s` is the co-runner's own no-interference runtime f_k(x_k) from its job's
    model at its scale-out, and `interference` that model's (a, b) per interfering job; both
    None when the co-runner has no usable history (unknown job, too few runs, no scale-out).
    `driver` is what its Spark driver reported (None: it did not answer) and `stage_plan`
    what its job's past runs executed (None: no past run knows its stages).
    """

    app_id: str
    job: str | None
    started_at: float | None
    progress: float | None = None
    base_runtime_s: float | None = None
    scale_out: float | None = None
    interference: InterferenceFn | None = None
    driver: DriverProgress | None = None
    stage_plan: StagePlan | None = None
    base_log_sd: float | None = None  # relative error of base_runtime_s (its held-out errors)

    @property
    def has_model(self) -> bool:
        return (
            self.base_runtime_s is not None
            and self.base_runtime_s > 0
            and self.interference is not None
            and self.scale_out is not None
            and self.scale_out > 0
        )


def progress_end_at(app: CoRunnerInput, now: float) -> float | None:
    """Linear extrapolation of YARN progress: remaining = elapsed·(1-p)/p; None if meaningless.

    Below 5 % progress (or with no start time) the ratio mostly measures start-up cost, so we
    would rather be conservative than extrapolate it.
    """
    if app.progress is None or app.started_at is None:
        return None
    p = min(float(app.progress), 1.0)
    elapsed_s = now - app.started_at
    if p < MIN_PROGRESS or elapsed_s <= 0:
        return None
    return now + elapsed_s * (1.0 - p) / p


@dataclass(frozen=True)
class CoRunnerOverlap:
    """One co-runner's predicted end and overlap with the new job, one value per candidate.

    `source` says where the end time came from: its job's runtime model ("model"), linear
    extrapolation of its YARN progress ("progress"), or nothing usable, so it is assumed to
    outlast the new job ("outlasts": end_at is +inf and the overlap ratio is 1). `note` says why
    a co-runner with a model still fell back (e.g. the model thinks it should have finished).
    """

    app_id: str
    job: str | None
    source: Source
    end_at: tuple[float, ...]  # epoch s per candidate; +inf when it outlasts the new job
    overlap_s: tuple[float, ...]
    overlap_ratio: tuple[float, ...]  # overlap_s / the new job's runtime, in [0, 1]
    note: str | None = None


@dataclass(frozen=True)
class OverlapPrediction:
    """Overlaps of every co-runner with the new job at every candidate scale-out.

    `runtime_s` is the new job's runtime at the fix-point, computed as
    base·(1 + Σ_k (a_k + b_k/x)·ov_k) from the numbers passed in; for mode="paper" the overlaps
    were computed with the runtime assumed equal to the target, as published.
    """

    mode: Literal["joint", "paper"]
    scale_outs: tuple[float, ...]
    runtime_s: tuple[float, ...]
    co_runners: tuple[CoRunnerOverlap, ...]
    iterations: tuple[int, ...]
    converged: tuple[bool, ...]

    def overlaps_by_job(self, i: int) -> dict[str | None, float]:
        """Model input for candidate i: ratios summed per co-runner job (None = unknown job).

        Sums may exceed 1 when several apps of one job overlap: the model is linear in them.
        """
        out: dict[str | None, float] = {}
        for c in self.co_runners:
            out[c.job] = out.get(c.job, 0.0) + c.overlap_ratio[i]
        return out

    def overlaps_per_candidate(self) -> list[dict[str | None, float]]:
        return [self.overlaps_by_job(i) for i in range(len(self.scale_outs))]


def _slow_down(interference: InterferenceFn, job: str | None) -> tuple[float, float]:
    """(a, b) of a co-runner of `job`, clipped at 0: interference never speeds a job up."""
    a, b = interference(job)
    return max(float(a), 0.0), max(float(b), 0.0)


def _fallback(app: CoRunnerInput, now: float) -> tuple[Source, float]:
    end = progress_end_at(app, now)
    if end is not None:
        return "progress", end
    return "outlasts", math.inf
