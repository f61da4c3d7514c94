"""The joint fix-point cobell plans with: per candidate, the new job's runtime and every
modelled co-runner's end, each slowed by the new job and by the other co-runners."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cobell_cli.core.overlap.records import (
    CoRunnerInput,
    CoRunnerOverlap,
    InterferenceFn,
    OverlapPrediction,
    Source,
    _fallback,
    _slow_down,
)

_MIN_DAMPING = 1.0 / 64.0


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
    """The fix-point of one candidate's map, from no overlap, and what it implies."""
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
