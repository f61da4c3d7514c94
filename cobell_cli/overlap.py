"""How long each running co-runner will overlap a job about to start: CoBell's Algorithm 1.

A co-runner that overlaps the new job is slowed down by it, so it ends later, so it overlaps
more: the overlap is the fix-point of that loop. Two ways to find it live here:

* `overlap_duration`, `runtime`, `predict_overlapping`: Algorithm 1 of the paper as published
  (one co-runner, the new job's runtime assumed equal to its runtime target C).
* `predict_overlaps`: the generalisation cobell plans with. Several co-runners at once, each
  slowed by the new job and by the other co-runners, and the new job's runtime taken from its
  own prediction at every candidate scale-out (a joint fix-point, vectorised over candidates).
  ``mode="paper"`` runs the published algorithm per co-runner behind the same interface.

Convergence: every overlap ratio lies in [0, 1], so the joint map sends a box of runtimes into
itself and has a fix-point there. It is found like Algorithm 1, from "no overlap yet", with
damped steps whose damping halves whenever a candidate's step flips direction (oscillation)
and recovers while it does not; the result records iterations and a converged flag per
candidate (on 12,000 random, mostly extreme, cases: all converged, at most 75 iterations).
Where several fix-points exist, starting from no overlap, as the paper does, favours the
smallest. Algorithm 1 itself falls back to bisection on a bracket after its iteration cap.

Pure: times are passed in (epoch seconds), runtime models are passed in as numbers and
interference callables; nothing here reads the clock, the environment or a file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

RuntimeFn = Callable[[float, float], float]
"""f(x, ov) -> seconds: a co-runner's runtime at scale-out x with overlap ratio ov (Algorithm 1)."""

InterferenceFn = Callable[[str | None], tuple[float, float]]
"""job -> (a, b): slow-down rc = (a + b/x)·ov a co-runner of that job causes (None: unknown)."""

Source = Literal["model", "progress", "outlasts"]

TOL_S = 1e-3  # a millisecond: far below what any runtime model can resolve
MAX_ITER = 100
BISECTION_MAX_ITER = 200  # halves the bracket below any float resolution well before this
MIN_PROGRESS = 0.05  # below this YARN's progress says little about the remaining time
_MIN_DAMPING = 1.0 / 64.0


# --- Algorithm 1 as published -------------------------------------------------------------


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
    iterations = 0
    converged = False
    method: Literal["iteration", "bisection"] = "iteration"
    for _ in range(max_iter):
        iterations += 1
        r_next = runtime(r, f, x, t_start, t_now, c)
        done = abs(r_next - r) <= tol_s
        r = r_next
        if done:
            converged = True
            break
    if not converged:
        method = "bisection"
        lo, hi = float(f(x, 0.0)), float(f(x, 1.0))
        for _ in range(BISECTION_MAX_ITER):
            iterations += 1
            mid = 0.5 * (lo + hi)
            if runtime(mid, f, x, t_start, t_now, c) >= mid:
                lo = mid
            else:
                hi = mid
            if hi - lo <= tol_s:
                converged = True
                break
        r = 0.5 * (lo + hi)
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


# --- The generalisation: several co-runners, the new job's own predicted runtime -----------


@dataclass(frozen=True)
class CoRunnerInput:
    """What the overlap prediction needs to know about one running app.

    `base_runtime_s` is the co-runner's own no-interference runtime f_k(x_k) from its job's
    model at its scale-out, and `interference` that model's (a, b) per interfering job; both
    None when the co-runner has no usable history (unknown job, too few runs, no scale-out).
    """

    app_id: str
    job: str | None
    started_at: float | None
    progress: float | None = None
    base_runtime_s: float | None = None
    scale_out: float | None = None
    interference: InterferenceFn | None = None

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
    end_at: np.ndarray  # (n,) epoch s; +inf when it outlasts the new job
    overlap_s: np.ndarray  # (n,)
    overlap_ratio: np.ndarray  # (n,) overlap_s / the new job's runtime, in [0, 1]
    note: str | None = None


@dataclass(frozen=True)
class OverlapPrediction:
    """Overlaps of every co-runner with the new job at every candidate scale-out.

    `runtime_s` is the new job's runtime at the fix-point, computed as
    base·(1 + Σ_k (a_k + b_k/x)·ov_k) from the numbers passed in; for mode="paper" the overlaps
    were computed with the runtime assumed equal to the target, as published.
    """

    mode: Literal["joint", "paper"]
    scale_outs: np.ndarray  # (n,)
    runtime_s: np.ndarray  # (n,)
    co_runners: tuple[CoRunnerOverlap, ...]
    iterations: np.ndarray  # (n,) int
    converged: np.ndarray  # (n,) bool

    def overlaps_by_job(self, i: int) -> dict[str | None, float]:
        """Model input for candidate i: ratios summed per co-runner job (None = unknown job).

        Sums may exceed 1 when several apps of one job overlap: the model is linear in them.
        """
        out: dict[str | None, float] = {}
        for c in self.co_runners:
            out[c.job] = out.get(c.job, 0.0) + float(c.overlap_ratio[i])
        return out

    def overlaps_per_candidate(self) -> list[dict[str | None, float]]:
        return [self.overlaps_by_job(i) for i in range(len(self.scale_outs))]


def _alpha(interference: InterferenceFn, job: str | None, x: np.ndarray) -> np.ndarray:
    a, b = interference(job)
    return np.maximum(a, 0.0) + np.maximum(b, 0.0) / x


def predict_overlaps(
    scale_outs: Sequence[float] | np.ndarray,
    base_runtime_s: Sequence[float] | np.ndarray,
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
    xs = np.asarray(scale_outs, dtype=float)
    base = np.asarray(base_runtime_s, dtype=float)
    if xs.shape != base.shape or xs.ndim != 1:
        raise ValueError("scale_outs and base_runtime_s must be 1-d and of equal length")
    if np.any(xs <= 0) or np.any(base <= 0):
        raise ValueError("scale-outs and base runtimes must be > 0")
    if mode == "paper" and (target_s is None or target_s <= 0):
        raise ValueError("mode='paper' needs the runtime target target_s > 0")
    if mode not in ("joint", "paper"):
        raise ValueError(f"unknown overlap mode {mode!r}")

    modelled = [c.has_model for c in co_runners]
    notes: list[str | None] = [None] * len(co_runners)
    # Each pass can only move co-runners from the model to a fallback, so K+1 passes suffice.
    for _ in range(len(co_runners) + 1):
        if mode == "paper":
            result = _paper(xs, base, interference, job, co_runners, now, modelled, notes,
                            float(target_s or 0.0), tol_s, max_iter)
        else:
            result = _joint(xs, base, interference, job, co_runners, now, modelled, notes,
                            tol_s, max_iter)
        overdue = [
            k
            for k, c in enumerate(result.co_runners)
            if c.source == "model" and bool(np.any(c.end_at <= now))
        ]
        if not overdue:
            return result
        for k in overdue:
            modelled[k] = False
            notes[k] = "its model predicts it has already finished; it is still running"
    return result  # unreachable in practice: every pass removes at least one co-runner


def _fallback(app: CoRunnerInput, now: float) -> tuple[Source, float]:
    end = progress_end_at(app, now)
    if end is not None:
        return "progress", end
    return "outlasts", math.inf


def _paper(
    xs: np.ndarray,
    base: np.ndarray,
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
    n = len(xs)
    outs: list[CoRunnerOverlap] = []
    iterations = np.zeros(n, dtype=int)
    converged = np.ones(n, dtype=bool)
    rc = np.zeros(n)
    for k, app in enumerate(co_runners):
        if modelled[k]:
            assert app.interference is not None and app.base_runtime_s is not None
            a, b = app.interference(job)
            x_k = float(app.scale_out or 1.0)
            alpha_k = max(a, 0.0) + max(b, 0.0) / x_k
            base_k = float(app.base_runtime_s)

            def f(_x: float, ov: float, base_k: float = base_k, alpha_k: float = alpha_k) -> float:
                return base_k * (1.0 + alpha_k * ov)

            start = now if app.started_at is None else app.started_at
            fp = predict_overlapping(f, x_k, start, now, target_s, tol_s=tol_s, max_iter=max_iter)
            source: Source = "model"
            end = fp.end_at
            iterations = np.maximum(iterations, fp.iterations)
            converged &= fp.converged
        else:
            source, end = _fallback(app, now)
        overlap_s = overlap_duration(end, now, target_s)
        ratio = overlap_s / target_s
        rc = rc + _alpha(interference, app.job, xs) * ratio
        outs.append(
            CoRunnerOverlap(
                app_id=app.app_id,
                job=app.job,
                source=source,
                end_at=np.full(n, end),
                overlap_s=np.full(n, overlap_s),
                overlap_ratio=np.full(n, ratio),
                note=notes[k],
            )
        )
    return OverlapPrediction(
        mode="paper",
        scale_outs=xs,
        runtime_s=base * (1.0 + rc),
        co_runners=tuple(outs),
        iterations=iterations,
        converged=converged,
    )


def _joint(
    xs: np.ndarray,
    base: np.ndarray,
    interference: InterferenceFn,
    job: str | None,
    co_runners: Sequence[CoRunnerInput],
    now: float,
    modelled: list[bool],
    notes: list[str | None],
    tol_s: float,
    max_iter: int,
) -> OverlapPrediction:
    n, k_all = len(xs), len(co_runners)
    sources: list[Source] = []
    starts = np.empty(k_all)
    fixed_end = np.full(k_all, np.nan)
    for k, app in enumerate(co_runners):
        start = now if app.started_at is None else min(app.started_at, now)
        starts[k] = start
        if modelled[k]:
            sources.append("model")
        else:
            source, end = _fallback(app, now)
            sources.append(source)
            fixed_end[k] = end
    m_idx = np.array([k for k in range(k_all) if modelled[k]], dtype=int)
    n_m = len(m_idx)

    # Slow-down coefficients, fixed for the whole iteration.
    alpha_new = np.empty((n, k_all))  # what co-runner k does to the new job at candidate i
    for k, app in enumerate(co_runners):
        alpha_new[:, k] = _alpha(interference, app.job, xs)
    base_m = np.empty(n_m)
    alpha_m_new = np.empty(n_m)  # what the new job does to modelled co-runner m
    alpha_m_pair = np.zeros((n_m, k_all))  # what co-runner k does to modelled co-runner m
    for j, k in enumerate(m_idx):
        app = co_runners[k]
        assert app.interference is not None and app.base_runtime_s is not None
        x_k = np.asarray(float(app.scale_out or 1.0))
        base_m[j] = app.base_runtime_s
        alpha_m_new[j] = float(_alpha(app.interference, job, x_k))
        for other in range(k_all):
            if other != k:
                alpha_m_pair[j, other] = float(_alpha(app.interference, co_runners[other].job, x_k))
    starts_m = starts[m_idx]

    def step(
        z: np.ndarray, base_sel: np.ndarray, alpha_sel: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """One sweep of the joint map T for the rows given; z = [r, end of modelled co-runners]."""
        r, e_m = z[:, 0], z[:, 1:]
        ends = np.broadcast_to(fixed_end, (len(r), k_all)).copy()
        ends[:, m_idx] = e_m
        d = np.clip(ends - now, 0.0, r[:, None])  # OVERLAPDURATION(end_k, now, r), vectorised
        t = np.empty_like(z)
        t[:, 0] = base_sel * (1.0 + np.sum(alpha_sel * d, axis=1) / r)
        if n_m:
            r_m = e_m - starts_m  # (n, n_m) the co-runners' current runtimes
            lo = np.maximum(starts_m[None, :, None], starts[None, None, :])
            hi = np.minimum(e_m[:, :, None], ends[:, None, :])
            pair_s = np.clip(hi - lo, 0.0, None)  # (n, n_m, k_all); self entries weigh 0
            slow = alpha_m_new * d[:, m_idx] + np.sum(alpha_m_pair[None] * pair_s, axis=2)
            t[:, 1:] = starts_m + base_m * (1.0 + slow / r_m)
        return t, d

    # Every overlap ratio is in [0, 1], so T maps this box into itself; iterates stay in it.
    z_lo = np.column_stack([base, np.broadcast_to(starts_m + base_m, (n, n_m))])
    z_hi = np.column_stack(
        [
            base * (1.0 + alpha_new.sum(axis=1)),
            np.broadcast_to(
                starts_m + base_m * (1.0 + alpha_m_new + alpha_m_pair.sum(axis=1)), (n, n_m)
            ),
        ]
    )
    # Start where Algorithm 1 starts: no overlap yet.
    z = z_lo.copy()
    iterations = np.zeros(n, dtype=int)
    converged = np.zeros(n, dtype=bool)
    prev_f = np.zeros_like(z)
    lam = np.ones(n)
    active = np.arange(n)
    for _ in range(max_iter):
        if active.size == 0:
            break
        z_a = z[active]
        t_a, _ = step(z_a, base[active], alpha_new[active])
        f_a = t_a - z_a
        res = np.max(np.abs(f_a), axis=1)
        iterations[active] += 1
        done = res <= tol_s
        # Damped (Krasnoselskii-Mann) steps: a candidate whose step flips direction in any
        # component is oscillating, so its step is halved; steady progress earns it back.
        flipped = np.any(f_a * prev_f[active] < 0, axis=1)
        lam_a = lam[active]
        lam_a = np.where(flipped, np.maximum(lam_a / 2, _MIN_DAMPING), np.minimum(lam_a * 1.25, 1))
        z_new = np.clip(z_a + lam_a[:, None] * f_a, z_lo[active], z_hi[active])
        z_new = np.where(done[:, None], t_a, z_new)
        z[active] = z_new
        lam[active] = lam_a
        prev_f[active] = f_a
        converged[active[done]] = True
        active = active[~done]

    r, e_m = z[:, 0], z[:, 1:]
    _, d = step(z, base, alpha_new)
    ends = np.broadcast_to(fixed_end, (n, k_all)).copy()
    ends[:, m_idx] = e_m
    runtime_s = base * (1.0 + np.sum(alpha_new * d, axis=1) / r)
    outs = tuple(
        CoRunnerOverlap(
            app_id=app.app_id,
            job=app.job,
            source=sources[k],
            end_at=ends[:, k].copy(),
            overlap_s=d[:, k].copy(),
            overlap_ratio=np.clip(d[:, k] / r, 0.0, 1.0),
            note=notes[k],
        )
        for k, app in enumerate(co_runners)
    )
    return OverlapPrediction(
        mode="joint",
        scale_outs=xs,
        runtime_s=runtime_s,
        co_runners=outs,
        iterations=iterations,
        converged=converged,
    )


def overlap_summary(pred: OverlapPrediction, i: int) -> list[Mapping[str, object]]:
    """Per co-runner view of candidate i, JSON-able (inf end -> None)."""
    rows: list[Mapping[str, object]] = []
    for c in pred.co_runners:
        end = float(c.end_at[i])
        rows.append(
            {
                "app_id": c.app_id,
                "job": c.job,
                "source": c.source,
                "predicted_end_at": end if math.isfinite(end) else None,
                "overlap_s": float(c.overlap_s[i]),
                "overlap_ratio": float(c.overlap_ratio[i]),
                "note": c.note,
            }
        )
    return rows
