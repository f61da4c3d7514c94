"""How long each running co-runner will overlap a job about to start: CoBell's Algorithm 1.

A co-runner that overlaps the new job is slowed down by it, so it ends later, so it overlaps
more: the overlap is the fix-point of that loop. Two ways to find it live here:

* `overlap_duration`, `runtime`, `predict_overlapping`: Algorithm 1 of the paper as published
  (one co-runner, the new job's runtime assumed equal to its runtime target C).
* `predict_overlaps`: the generalisation cobell plans with. Several co-runners at once, each
  slowed by the new job and by the other co-runners, and the new job's runtime taken from its
  own prediction at every candidate scale-out (a joint fix-point, solved per candidate).
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from cobell_cli.core.remaining import DriverProgress, StagePlan, remaining_work

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


# --- The generalisation: several co-runners, the new job's own predicted runtime -----------


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


def with_live_progress(
    co_runners: Sequence[CoRunnerInput], now: float, tol_s: float = TOL_S
) -> tuple[list[CoRunnerInput], list[bool], list[str | None]]:
    """Co-runners whose driver answered, restated as what is left of them from `now` on.

    A modelled co-runner with driver progress becomes one that starts now with its remaining
    isolated work (`remaining.remaining_work`) as its runtime alone, so the fix-point slows
    only the rest of it, by the new job and the other co-runners alike. One whose progress
    carries no weight keeps its model exactly (Algorithm 1). Returns the
    inputs, which of them are live, and a note per co-runner.
    """
    out: list[CoRunnerInput] = []
    live: list[bool] = []
    notes: list[str | None] = []
    for k, app in enumerate(co_runners):
        rest = _remaining(k, app, co_runners, now)
        if rest is None:
            out.append(app)
            live.append(False)
            notes.append(None)
            continue
        work, note = rest
        out.append(replace(app, started_at=now, base_runtime_s=max(work, tol_s)))
        live.append(True)
        notes.append(note)
    return out, live, notes


def _remaining(
    k: int, app: CoRunnerInput, co_runners: Sequence[CoRunnerInput], now: float
) -> tuple[float, str] | None:
    """(remaining isolated seconds, note) of co-runner k from its live progress, else None."""
    if app.driver is None or not app.has_model or app.started_at is None:
        return None
    elapsed_s = now - app.started_at
    if elapsed_s <= 0:
        return None
    assert app.interference is not None and app.base_runtime_s is not None
    x_k = float(app.scale_out or 1.0)
    slowed_s = 0.0  # alpha-weighted seconds other running co-runners shared with it so far
    for other, o in enumerate(co_runners):
        if other == k:
            continue
        a, b = _slow_down(app.interference, o.job)
        since = max(app.started_at, now if o.started_at is None else o.started_at)
        slowed_s += (a + b / x_k) * max(now - since, 0.0)
    elapsed_iso_s = elapsed_s * elapsed_s / (elapsed_s + slowed_s)
    startup_iso_s = None
    if app.driver.first_job_at is not None:
        startup_iso_s = (app.driver.first_job_at - app.started_at) * elapsed_iso_s / elapsed_s
    est = remaining_work(
        app.driver,
        elapsed_iso_s,
        float(app.base_runtime_s),
        app.stage_plan,
        startup_iso_s=startup_iso_s,
    )
    if est.weight == 0:
        return None  # the progress changes nothing: Algorithm 1 as it stands
    model_left_s = max(float(app.base_runtime_s) - elapsed_iso_s, 0.0)
    d, plan = app.driver, app.stage_plan
    assert plan is not None
    note = (
        f"live progress: {d.stages_done:.1f} of {d.stages_known} known stages done, "
        f"{plan.stages:g} expected{' (shares known)' if plan.shares else ''}; weight "
        f"{est.weight:.2f}: {est.remaining_s:.0f} s of work left alone (model: "
        f"{model_left_s:.0f} s)"
    )
    return est.remaining_s, note


def _mark_live(result: OverlapPrediction, live: Sequence[bool]) -> OverlapPrediction:
    """Co-runners restated from live progress are reported with source "progress"."""
    if not any(live):
        return result
    marked = tuple(
        replace(c, source="progress") if live[k] and c.source == "model" else c
        for k, c in enumerate(result.co_runners)
    )
    return replace(result, co_runners=marked)


def _fallback(app: CoRunnerInput, now: float) -> tuple[Source, float]:
    end = progress_end_at(app, now)
    if end is not None:
        return "progress", end
    return "outlasts", math.inf


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


@dataclass(frozen=True, slots=True)
class _ModelledCoRunner:
    """A co-runner whose end the joint fix-point solves for; its slow-downs do not change."""

    k: int  # its index among all co-runners
    started_at: float
    base_s: float  # its runtime alone
    alpha_new: float  # the slow-down the new job causes it
    # (index, alpha, since) of each other co-runner that slows it down by alpha per second
    # they run side by side, which they can from `since`, the later of their two starts
    slowed_by: tuple[tuple[int, float, float], ...]


@dataclass(frozen=True, slots=True)
class _JointMap:
    """The joint map T at one candidate: z = (r, end of each modelled co-runner) -> T(z).

    r is the new job's runtime; a co-runner's overlap with it is OVERLAPDURATION(end, now, r),
    and modelled co-runners are slowed by the new job and by each other for as long as they
    run side by side.
    """

    now: float
    base_s: float  # the new job's runtime alone at this candidate
    alpha_new: tuple[float, ...]  # the slow-down each co-runner causes the new job here
    fixed_end: tuple[float, ...]  # ends known without solving (nan where modelled)
    modelled: tuple[_ModelledCoRunner, ...]

    def ends(self, z: Sequence[float]) -> list[float]:
        out = list(self.fixed_end)
        for m, end in zip(self.modelled, z[1:], strict=True):
            out[m.k] = end
        return out

    def overlaps_s(self, r: float, ends: Sequence[float]) -> list[float]:
        """OVERLAPDURATION(end, now, r) of every co-runner: its end clipped to [now, now + r]."""
        return [min(max(end - self.now, 0.0), r) for end in ends]

    def runtime_s(self, r: float, overlaps_s: Sequence[float]) -> float:
        """The new job's runtime, slowed by each co-runner for its overlap ratio d_k / r."""
        slow = sum(a * d for a, d in zip(self.alpha_new, overlaps_s, strict=True))
        return self.base_s * (1.0 + slow / r)

    def __call__(self, z: Sequence[float]) -> list[float]:
        r, ends = z[0], self.ends(z)
        d = self.overlaps_s(r, ends)
        t = [self.runtime_s(r, d)]
        for m, end in zip(self.modelled, z[1:], strict=True):
            slow = m.alpha_new * d[m.k] + sum(
                alpha * max(min(end, ends[o]) - since, 0.0) for o, alpha, since in m.slowed_by
            )
            t.append(m.started_at + m.base_s * (1.0 + slow / (end - m.started_at)))
        return t

    def box(self) -> tuple[list[float], list[float]]:
        """Where T(z) lies for any z: every overlap ratio is in [0, 1]."""
        lo = [self.base_s] + [m.started_at + m.base_s for m in self.modelled]
        hi = [self.base_s * (1.0 + sum(self.alpha_new))] + [
            m.started_at + m.base_s * (1.0 + m.alpha_new + sum(a for _, a, _ in m.slowed_by))
            for m in self.modelled
        ]
        return lo, hi


def _damped_fix_point(
    step: Callable[[Sequence[float]], list[float]],
    lo: list[float],
    hi: list[float],
    tol_s: float,
    max_iter: int,
) -> tuple[list[float], int, bool]:
    """Iterate `step` from `lo` (no overlap yet, where Algorithm 1 starts) until it settles.

    Damped (Krasnoselskii-Mann) steps: when a step flips direction in any component the
    iterate is oscillating, so the step is halved; steady progress earns it back. `step` maps
    the box [lo, hi] into itself, and the iterates stay in it.
    """
    z = list(lo)
    prev_f = [0.0] * len(z)
    damping = 1.0
    for iterations in range(1, max_iter + 1):
        t = step(z)
        f = [t_c - z_c for t_c, z_c in zip(t, z, strict=True)]
        if max(abs(f_c) for f_c in f) <= tol_s:
            return t, iterations, True
        if any(f_c * p_c < 0 for f_c, p_c in zip(f, prev_f, strict=True)):
            damping = max(damping / 2, _MIN_DAMPING)
        else:
            damping = min(damping * 1.25, 1.0)
        z = [
            min(max(z_c + damping * f_c, lo_c), hi_c)
            for z_c, f_c, lo_c, hi_c in zip(z, f, lo, hi, strict=True)
        ]
        prev_f = f
    return z, max(max_iter, 0), False


def _joint(
    xs: tuple[float, ...],
    base: tuple[float, ...],
    interference: InterferenceFn,
    job: str | None,
    co_runners: Sequence[CoRunnerInput],
    now: float,
    modelled: list[bool],
    notes: list[str | None],
    tol_s: float,
    max_iter: int,
    started: Sequence[float],
) -> OverlapPrediction:
    """Per candidate, the fix-point of the new job's runtime and the modelled co-runners' ends.

    `started` holds when each co-runner really started: a co-runner restated from live
    progress starts its remainder now, but slowed the others since its real start.
    """
    sources, fixed_end, starts = _unsolved_ends(co_runners, now, modelled)
    solved = tuple(
        _modelled_co_runner(k, app, starts, started, job, co_runners)
        for k, app in enumerate(co_runners)
        if modelled[k]
    )
    slow_downs = [_slow_down(interference, app.job) for app in co_runners]
    solutions = [
        _solve_candidate(
            _JointMap(
                now=now,
                base_s=base_s,
                alpha_new=tuple(a + b / x for a, b in slow_downs),
                fixed_end=tuple(fixed_end),
                modelled=solved,
            ),
            tol_s,
            max_iter,
        )
        for x, base_s in zip(xs, base, strict=True)
    ]
    return _joint_prediction(xs, co_runners, sources, notes, solutions)


def _unsolved_ends(
    co_runners: Sequence[CoRunnerInput], now: float, modelled: list[bool]
) -> tuple[list[Source], list[float], list[float]]:
    """Each co-runner's source, its end where known without solving (nan where modelled),
    and its start (no later than now)."""
    sources: list[Source] = []
    starts: list[float] = []
    fixed_end: list[float] = []
    for k, app in enumerate(co_runners):
        starts.append(now if app.started_at is None else min(app.started_at, now))
        if modelled[k]:
            sources.append("model")
            fixed_end.append(math.nan)
        else:
            source, end = _fallback(app, now)
            sources.append(source)
            fixed_end.append(end)
    return sources, fixed_end, starts


@dataclass(frozen=True, slots=True)
class _Solution:
    """The joint fix-point at one candidate: the new job's runtime and, per co-runner, its
    end, overlap seconds and overlap ratio."""

    runtime_s: float
    ends: list[float]
    overlaps_s: list[float]
    ratios: list[float]
    iterations: int
    converged: bool


def _solve_candidate(joint_map: _JointMap, tol_s: float, max_iter: int) -> _Solution:
    z, n_iter, done = _damped_fix_point(joint_map, *joint_map.box(), tol_s, max_iter)
    r, end_k = z[0], joint_map.ends(z)
    d = joint_map.overlaps_s(r, end_k)
    ratios = [min(max(d_k / r, 0.0), 1.0) for d_k in d]
    return _Solution(joint_map.runtime_s(r, d), end_k, d, ratios, n_iter, done)


def _joint_prediction(
    xs: tuple[float, ...],
    co_runners: Sequence[CoRunnerInput],
    sources: Sequence[Source],
    notes: Sequence[str | None],
    solutions: Sequence[_Solution],
) -> OverlapPrediction:
    """The per-candidate solutions regrouped per co-runner."""
    outs = tuple(
        CoRunnerOverlap(
            app_id=app.app_id,
            job=app.job,
            source=sources[k],
            end_at=tuple(s.ends[k] for s in solutions),
            overlap_s=tuple(s.overlaps_s[k] for s in solutions),
            overlap_ratio=tuple(s.ratios[k] for s in solutions),
            note=notes[k],
        )
        for k, app in enumerate(co_runners)
    )
    return OverlapPrediction(
        mode="joint",
        scale_outs=xs,
        runtime_s=tuple(s.runtime_s for s in solutions),
        co_runners=outs,
        iterations=tuple(s.iterations for s in solutions),
        converged=tuple(s.converged for s in solutions),
    )


def _modelled_co_runner(
    k: int,
    app: CoRunnerInput,
    starts: Sequence[float],
    started: Sequence[float],
    job: str | None,
    co_runners: Sequence[CoRunnerInput],
) -> _ModelledCoRunner:
    """The slow-downs co-runner k suffers, from its own model at its own scale-out.

    Co-runners that do not slow it down (alpha 0) are left out: they add nothing to its runtime.
    """
    interference, base_s = app.interference, app.base_runtime_s
    assert interference is not None and base_s is not None
    x_k = float(app.scale_out or 1.0)

    def alpha(other_job: str | None) -> float:
        a, b = _slow_down(interference, other_job)
        return a + b / x_k

    slowed_by = [
        (other, alpha(c.job), max(starts[k], started[other]))
        for other, c in enumerate(co_runners)
        if other != k
    ]
    return _ModelledCoRunner(
        k=k,
        started_at=starts[k],
        base_s=float(base_s),
        alpha_new=alpha(job),
        slowed_by=tuple(pair for pair in slowed_by if pair[1] != 0.0),
    )
