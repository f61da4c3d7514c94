"""CoBell's Algorithm 1 as published: one co-runner, the new job's runtime assumed equal to its
runtime target C (`predict_overlapping`), and the same per co-runner behind
`predict_overlaps`' interface (mode="paper")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from cobell_cli.core.overlap.records import (
    CoRunnerInput,
    CoRunnerOverlap,
    InterferenceFn,
    OverlapPrediction,
    Source,
    _fallback,
    _slow_down,
)

RuntimeFn = Callable[[float, float], float]
"""f(x, ov) -> seconds: a co-runner's runtime at scale-out x with overlap ratio ov (Algorithm 1)."""

TOL_S = 1e-3  # a millisecond: far below what any runtime model can resolve
MAX_ITER = 100
BISECTION_MAX_ITER = 200  # halves the bracket below any float resolution well before this


def overlap_duration(t1: float, t2: float, d: float) -> float:
    """OVERLAPDURATION: seconds a job starting at t2 for d seconds shares with one ending at t1."""
    if t2 > t1:
        return 0.0
    if t2 + d < t1:
        return float(d)
    return float(min(t1 - t2, d))  # = t1 - t2 exactly; min() only stops rounding past d


def runtime(r: float, f: RuntimeFn, x: float, t_start: float, t_now: float, c: float) -> float:
    """RUNTIME: the co-runner's runtime again, now slowed by the overlap its runtime r implies.

    The overlap ratio handed to f is relative to the co-runner's own runtime r, as the model
    of the co-runner was trained on ratios relative to its own runs.
    """
    t_end = t_start + r
    d = overlap_duration(t_end, t_now, c)
    return float(f(x, d / r))


@dataclass(frozen=True)
class FixPoint:
    """The outcome of PREDICTOVERLAPPING for one co-runner."""

    runtime_s: float  # r*: the co-runner's converged runtime
    end_at: float  # t_start + r*
    overlap_s: float  # OVERLAPDURATION(end_at, t_now, C)
    overlap_ratio: float  # overlap_s / C: what the new job's model takes as ov
    iterations: int
    converged: bool
    method: Literal["iteration", "bisection"]


def predict_overlapping(
    f: RuntimeFn,
    x: float,
    t_start: float,
    t_now: float,
    c: float,
    *,
    tol_s: float = TOL_S,
    max_iter: int = MAX_ITER,
) -> FixPoint:
    """PREDICTOVERLAPPING: iterate r_{n+1} = RUNTIME(r_n) from r_0 = f(x, 0) until it settles.

    The paper returns "the overlapping ratio r*_C"; we return the converged runtime r* together
    with the ratio the new job sees, OVERLAPDURATION(t_start + r*, t_now, C) / C.

    If plain iteration has not settled after `max_iter` steps, a bisection on
    RUNTIME(r) - r over [f(x, 0), f(x, 1)] finishes the job: that function is >= 0 at the left
    end and <= 0 at the right end whenever f grows with ov (a, b >= 0) and the co-runner started
    no later than now, so a fix-point lies in the bracket and bisection cannot oscillate.
    """
    if c <= 0:
        raise ValueError(f"runtime target C must be > 0, got {c}")
    t_start = min(t_start, t_now)  # a start in the future is clock skew, not information
    r = float(f(x, 0.0))
    if not r > 0:
        raise ValueError(f"co-runner runtime f(x, 0) must be > 0, got {r}")
    method: Literal["iteration", "bisection"] = "iteration"
    r, iterations, converged = _iterate(f, x, t_start, t_now, c, r, tol_s, max_iter)
    if not converged:
        method = "bisection"
        r, more, converged = _bisect(f, x, t_start, t_now, c, tol_s)
        iterations += more
    end_at = t_start + r
    overlap_s = overlap_duration(end_at, t_now, c)
    return FixPoint(
        runtime_s=r,
        end_at=end_at,
        overlap_s=overlap_s,
        overlap_ratio=overlap_s / c,
        iterations=iterations,
        converged=converged,
        method=method,
    )


def _iterate(
    f: RuntimeFn, x: float, t_start: float, t_now: float, c: float, r: float, tol_s: float,
    max_iter: int,
) -> tuple[float, int, bool]:
    """Plain iteration r <- RUNTIME(r) from r: (last r, steps taken, whether it settled)."""
    for iterations in range(1, max_iter + 1):
        r_next = runtime(r, f, x, t_start, t_now, c)
        if abs(r_next - r) <= tol_s:
            return r_next, iterations, True
        r = r_next
    return r, max(max_iter, 0), False


def _bisect(
    f: RuntimeFn, x: float, t_start: float, t_now: float, c: float, tol_s: float
) -> tuple[float, int, bool]:
    """Bisection on RUNTIME(r) - r over [f(x, 0), f(x, 1)]: (midpoint, steps, settled)."""
    lo, hi = float(f(x, 0.0)), float(f(x, 1.0))
    for iterations in range(1, BISECTION_MAX_ITER + 1):
        mid = 0.5 * (lo + hi)
        if runtime(mid, f, x, t_start, t_now, c) >= mid:
            lo = mid
        else:
            hi = mid
        if hi - lo <= tol_s:
            return 0.5 * (lo + hi), iterations, True
    return 0.5 * (lo + hi), BISECTION_MAX_ITER, False


def _paper(
    xs: tuple[float, ...],
    base: tuple[float, ...],
    interference: InterferenceFn,
    job: str | None,
    co_runners: Sequence[CoRunnerInput],
    now: float,
    modelled: list[bool],
    notes: list[str | None],
    target_s: float,
    tol_s: float,
    max_iter: int,
) -> OverlapPrediction:
    """Algorithm 1 per co-runner with C = target: one overlap for every candidate."""
    n = len(xs)
    outs: list[CoRunnerOverlap] = []
    iterations = 0
    converged = True
    rc = [0.0] * n
    for k, app in enumerate(co_runners):
        if modelled[k]:
            fp = _paper_fix_point(app, job, now, target_s, tol_s, max_iter)
            source: Source = "model"
            end = fp.end_at
            iterations = max(iterations, fp.iterations)
            converged = converged and fp.converged
        else:
            source, end = _fallback(app, now)
        overlap_s = overlap_duration(end, now, target_s)
        ratio = overlap_s / target_s
        a, b = _slow_down(interference, app.job)
        rc = [rc_i + (a + b / x) * ratio for rc_i, x in zip(rc, xs, strict=True)]
        outs.append(CoRunnerOverlap(app_id=app.app_id, job=app.job, source=source,
                                    end_at=(end,) * n, overlap_s=(overlap_s,) * n,
                                    overlap_ratio=(ratio,) * n, note=notes[k]))
    return OverlapPrediction(
        mode="paper",
        scale_outs=xs,
        runtime_s=tuple(b * (1.0 + rc_i) for b, rc_i in zip(base, rc, strict=True)),
        co_runners=tuple(outs),
        iterations=(iterations,) * n,
        converged=(converged,) * n,
    )


def _paper_fix_point(
    app: CoRunnerInput, job: str | None, now: float, target_s: float, tol_s: float,
    max_iter: int,
) -> FixPoint:
    """PREDICTOVERLAPPING for one modelled co-runner, slowed by the new job alone."""
    assert app.interference is not None and app.base_runtime_s is not None
    a, b = _slow_down(app.interference, job)
    x_k = float(app.scale_out or 1.0)
    alpha_k = a + b / x_k
    base_k = float(app.base_runtime_s)

    def f(_x: float, ov: float, base_k: float = base_k, alpha_k: float = alpha_k) -> float:
        return base_k * (1.0 + alpha_k * ov)

    start = now if app.started_at is None else app.started_at
    return predict_overlapping(f, x_k, start, now, target_s, tol_s=tol_s, max_iter=max_iter)
