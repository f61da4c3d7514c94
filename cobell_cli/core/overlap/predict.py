"""`predict_overlaps`: the co-runners' ends and overlaps at every candidate scale-out, joint or
as in the paper, with live progress where drivers answered and fallbacks where models fail."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from cobell_cli.core.overlap.algorithm1 import MAX_ITER, TOL_S, _paper
from cobell_cli.core.overlap.joint import _joint
from cobell_cli.core.overlap.live import _mark_live, with_live_progress
from cobell_cli.core.overlap.records import CoRunnerInput, InterferenceFn, OverlapPrediction


def _per_candidate(values: Iterable[float], what: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in values)
    except TypeError as exc:  # a nested sequence: not one number per candidate
        raise ValueError(f"{what} must be a flat sequence of numbers") from exc


def predict_overlaps(
    scale_outs: Iterable[float],
    base_runtime_s: Iterable[float],
    interference: InterferenceFn,
    job: str | None,
    co_runners: Sequence[CoRunnerInput],
    now: float,
    *,
    mode: Literal["joint", "paper"] = "joint",
    target_s: float | None = None,
    tol_s: float = TOL_S,
    max_iter: int = MAX_ITER,
) -> OverlapPrediction:
    """Predict each co-runner's end and overlap with the new job `job` starting at `now`.

    `base_runtime_s[i]` is the new job's no-interference runtime f(x_i) at `scale_outs[i]`,
    `interference` its model's (a, b) per co-runner job. mode="joint" solves, per candidate,
    the fix-point of (new job's runtime, every modelled co-runner's end); mode="paper" runs
    `predict_overlapping` per co-runner with C = `target_s`, independent of the candidate.

    A co-runner with a model whose fix-point end is not after `now` is still running, so the
    model is wrong about this run: it falls back, like a co-runner without history, to its
    progress if meaningful, else to outlasting the new job.
    """
    xs, base = _checked_candidates(scale_outs, base_runtime_s, mode, target_s)
    started = tuple(now if c.started_at is None else min(c.started_at, now) for c in co_runners)
    co_runners, live, notes = with_live_progress(co_runners, now, tol_s)
    modelled = [c.has_model for c in co_runners]
    # Each pass can only move co-runners from the model to a fallback, so K+1 passes suffice.
    for _ in range(len(co_runners) + 1):
        if mode == "paper":
            result = _paper(xs, base, interference, job, co_runners, now, modelled, notes,
                            float(target_s or 0.0), tol_s, max_iter)
        else:
            result = _joint(xs, base, interference, job, co_runners, now, modelled, notes,
                            tol_s, max_iter, started)
        overdue = _overdue(result, live, now)
        if not overdue:
            return _mark_live(result, live)
        for k in overdue:
            modelled[k] = False
            notes[k] = "its model predicts it has already finished; it is still running"
    return _mark_live(result, live)  # unreachable: every pass removes at least one co-runner


def _checked_candidates(
    scale_outs: Iterable[float],
    base_runtime_s: Iterable[float],
    mode: str,
    target_s: float | None,
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The candidates and base runtimes as float tuples; ValueError for what cannot be solved."""
    xs = _per_candidate(scale_outs, "scale_outs")
    base = _per_candidate(base_runtime_s, "base_runtime_s")
    if len(xs) != len(base):
        raise ValueError("scale_outs and base_runtime_s must be of equal length")
    if any(x <= 0 for x in xs) or any(b <= 0 for b in base):
        raise ValueError("scale-outs and base runtimes must be > 0")
    if mode == "paper" and (target_s is None or target_s <= 0):
        raise ValueError("mode='paper' needs the runtime target target_s > 0")
    if mode not in ("joint", "paper"):
        raise ValueError(f"unknown overlap mode {mode!r}")
    return xs, base


def _overdue(result: OverlapPrediction, live: Sequence[bool], now: float) -> list[int]:
    """Modelled co-runners (not restated from live progress) the fix-point ends by `now`,
    though they are still running."""
    return [
        k
        for k, c in enumerate(result.co_runners)
        if c.source == "model" and not live[k] and any(end <= now for end in c.end_at)
    ]
