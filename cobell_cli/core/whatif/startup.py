"""How executor start-up and the host's contention grow with the number of executors N on one
cluster (`Startup`), learned from the executor-added times and tasks of every profile on it
(`fit_startup`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cobell_cli.core.profile import AppProfile
from cobell_cli.core.whatif.workload import Workload, workload_or_none

TREND_ROUNDS = 20  # backfitting rounds of the job levels and f(N)


@dataclass(frozen=True)
class Trend:
    """A start-up quantity against the number of executors N on one cluster: f(N) through
    knots (N, f), non-decreasing, flat below the first knot and continued with the last
    segment's slope beyond the last; `level` the cluster's typical value at N = 1 (what a
    run whose log does not show the quantity is given). f is relative: jobs differ by a
    level of their own, which the run's own log supplies."""

    knots: tuple[tuple[float, float], ...] = ()
    level: float | None = None

    @classmethod
    def linear(cls, slope: float, level: float | None = None) -> Trend:
        return cls(((1.0, 0.0), (2.0, slope)), level)

    def f(self, n: float) -> float:
        k = self.knots
        if not k:
            return 0.0
        if n <= k[0][0]:
            return k[0][1]
        for (n0, y0), (n1, y1) in itertools.pairwise(k):
            if n <= n1:
                return y0 + (y1 - y0) * (n - n0) / (n1 - n0)
        if len(k) == 1:
            return k[0][1]
        (n0, y0), (n1, y1) = k[-2], k[-1]
        return y1 + (y1 - y0) / (n1 - n0) * (n - n1)

    def at(self, own: float | None, own_n: int, n: int) -> float | None:
        """Moved along f from the run's own value at own_n, else the cluster's level."""
        if own is not None:
            return own + self.f(n) - self.f(own_n)
        if self.level is not None:
            return self.level + self.f(n) - self.f(1)
        return None

    def describe(self) -> dict[str, Any]:
        return {"knots": [list(k) for k in self.knots], "level": self.level}


@dataclass(frozen=True)
class Startup:
    """How start-up and the host's contention change with the number of executors N on one
    cluster: the first executor's registration (from the application's start), the spacing
    from one registration to the next, a cold task's extra time, and the warm tasks' log
    duration (the CPU parts of N executors' tasks sharing the host). Zero slopes and no
    levels say "as in the run's own log", which is all one log can tell.

    `pooled`: the registration levels come from the cluster's other runs (a run's own
    registration is one draw of the host's load at the time; the cluster's typical value
    predicts another run better), else from the run's own log.
    """

    first: Trend = Trend()
    spacing: Trend = Trend()
    warmup: Trend = Trend()
    task_log: Trend = Trend()
    profiles: int = 0  # how many profiles the trends were learned from
    pooled: bool = False
    # Where no trend was learned: the run's own first registration and cold-task extra
    # scaled by how many executors share its busiest host, (offset + per host at N) /
    # (offset + per host in the run); None: as observed. The spacing of the registrations
    # stays as observed (it did not grow with N on the tuning set: bench/results/whatif.md).
    # See evidence.HOST_SHARE_OFFSET.
    host_offset: float | None = None

    def registration_s(self, w: Workload, executors: int) -> list[float]:
        """When each of N executors registers: the first, then evenly spaced."""
        own = w.registration_s or (0.0,)
        n0 = len(own)
        own_first = None if self.pooled else own[0]
        own_spacing = (own[-1] - own[0]) / (n0 - 1) if n0 > 1 and not self.pooled else None
        first = max(0.0, _value(self._at(self.first, own_first, n0, w, executors), own[0]))
        spacing = self.spacing.at(own_spacing, n0, executors)
        if spacing is None:
            spacing = (own[-1] - own[0]) / (n0 - 1) if n0 > 1 else 0.0
        return [first + max(0.0, spacing) * k for k in range(executors)]

    def warmup_s(self, w: Workload, executors: int) -> float:
        """A cold task's extra time at N (0 when neither the log nor the cluster shows it)."""
        return max(0.0, self._at(self.warmup, w.warmup_s, w.scale_out, w, executors) or 0.0)

    def _at(self, trend: Trend, own: float | None, own_n: int, w: Workload,
            executors: int) -> float | None:
        """The trend's value at N, or without one the run's own value scaled by the
        executors per host (`host_offset`), or as observed."""
        if trend.knots or own is None or self.host_offset is None:
            return trend.at(own, own_n, executors)
        at_n, at_own = w.per_host(executors), w.per_host(own_n)
        if at_n is None or at_own is None:
            return trend.at(own, own_n, executors)
        return own * (self.host_offset + at_n) / (self.host_offset + at_own)

    def task_factor(self, w: Workload, executors: int) -> float:
        """How much longer a warm task takes at N than in the run's own log."""
        return math.exp(self.task_log.f(executors) - self.task_log.f(w.scale_out))

    def describe(self) -> dict[str, Any]:
        return {
            "profiles": self.profiles,
            "pooled_registration": self.pooled,
            "host_share_offset": self.host_offset,
            "first_registration_s": self.first.describe(),
            "registration_spacing_s": self.spacing.describe(),
            "cold_task_extra_s": self.warmup.describe(),
            "warm_task_log_duration": self.task_log.describe(),
        }


def _value(v: float | None, default: float) -> float:
    return default if v is None else v


def fit_startup(
    profiles: Sequence[AppProfile],
    pooled: bool = False,
    workloads: Sequence[Workload | None] = (),
    host_offset: float | None = None,
) -> Startup:
    """Trends in N from the profiles' executor-added times, cold tasks and warm tasks.

    Each job keeps its own level (and each of its stages for the warm tasks): slopes are
    fitted within the runs of one job (fixed effects), so a job with a slow driver does not
    read as a slope. A job is its `cobell-job` tag, else its stage structure (the stages'
    task counts, which a recurring job keeps whatever its executors; app names often carry
    dates or counts). Slopes are clipped at zero from below: more executors on one cluster
    do not start, nor run a task, faster. `workloads`: those of the first profiles (None: not
    replayable), when the caller has them already (a workload of 25 000 tasks takes ~15 ms).
    """
    rows: dict[Any, list[tuple[int, float, float | None, float | None]]] = {}
    tasks: dict[tuple[Any, int], list[tuple[int, float]]] = {}
    for i, p in enumerate(profiles):
        if p.local_mode:
            continue
        w = workloads[i] if i < len(workloads) else workload_or_none(p)
        if w is None:
            continue
        reg = w.registration_s
        if not reg:
            continue
        spacing = (reg[-1] - reg[0]) / (len(reg) - 1) if len(reg) > 1 else None
        job = _job_key(p, w)
        rows.setdefault(job, []).append((len(reg), reg[0], spacing, w.warmup_s))
        for stage_id, warm in w.warm_medians:
            tasks.setdefault((job, stage_id), []).append((len(reg), math.log(max(1e-3, warm))))
    groups = list(rows.values())
    first, spacing, warmup = (
        _trend([[(row[0], row[k]) for row in g if row[k] is not None] for g in groups])
        for k in (1, 2, 3)
    )
    return Startup(first, spacing, warmup, _trend(list(tasks.values())),
                   sum(len(g) for g in groups), pooled, host_offset)


def _job_key(p: AppProfile, w: Workload) -> Any:
    """Which job a profile is a run of (see fit_startup)."""
    if p.job_tag:
        return ("tag", p.job_tag)
    return ("stages", tuple(len(s.task_s) for g in w.groups for s in g.stages))


def _trend(groups: Sequence[Sequence[tuple[int, float]]]) -> Trend:
    """y = a_job + f(N): backfitting of the job levels and f at each N seen, f then made
    non-decreasing (pool-adjacent-violators, weighted by runs); the level at N = 1 is the
    mean job level plus f(1). A job seen at one N only tells the level, not f."""
    groups = [list(g) for g in groups if g]
    if not groups:
        return Trend()
    ns = sorted({n for g in groups for n, _ in g})
    f = dict.fromkeys(ns, 0.0)
    for _ in range(TREND_ROUNDS):
        a = [sum(y - f[n] for n, y in g) / len(g) for g in groups]
        by_n: dict[int, list[float]] = {n: [] for n in ns}
        for g, level in zip(groups, a, strict=True):
            if len(g) > 1:
                for n, y in g:
                    by_n[n].append(y - level)
        f = {n: (sum(v) / len(v) if v else f[n]) for n, v in by_n.items()}
    seen = [n for n in ns if by_n[n]]
    if not seen:
        level = sum(y for g in groups for _, y in g) / sum(len(g) for g in groups)
        return Trend((), max(0.0, level))
    knots = _non_decreasing([(float(n), f[n], len(by_n[n])) for n in seen])
    trend = Trend(knots)
    level = sum(a) / len(a) + trend.f(1)
    return Trend(knots, max(0.0, level))


def _non_decreasing(points: Sequence[tuple[float, float, int]]) -> tuple[tuple[float, float], ...]:
    """Weighted isotonic fit (pool adjacent violators) of (x, y, weight) sorted by x."""
    blocks: list[list[float]] = []  # [sum w*y, sum w, count of points]
    for _, y, w in points:
        blocks.append([y * w, float(w), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            top = blocks.pop()
            blocks[-1] = [blocks[-1][0] + top[0], blocks[-1][1] + top[1],
                          blocks[-1][2] + top[2]]
    values = [b[0] / b[1] for b in blocks for _ in range(int(b[2]))]
    return tuple((x, v) for (x, _, _), v in zip(points, values, strict=True))


