"""The one-run what-if: a Spark run's runtime at other executor counts, from its event log.

The replay, in the spirit of Sparklens' completion estimator: a run's jobs, in submission
order, each job's stages on N x cores task slots, a stage runnable when its parent stages
have ended, free slots taking the next task of the highest-priority runnable stage (Spark's
FIFO scheduler: lowest job id, then lowest stage id), tasks in launch order; jobs that
overlapped in time are replayed together. The driver's time outside jobs (before the first,
between them, after the last) is kept serial and as observed.

Where the plain replay is known to be wrong, and what this one does instead:

* Executors are not all there from the start. A run's log shows when each executor
  registered; the replay's executors register when the cluster's start-up model says they
  would at N (`Startup`: the first and the last registration, and a cold task's extra, each
  a level anchored on the run itself plus a slope in N learned from the executor-added times
  of every profile on the cluster, other jobs included; no slope from a single log).
  Tasks wait for slots that are not there yet, as the first job often does.
* An executor's first task is cold (JVM warm-up, Python worker start): the log shows its
  extra time against the warm tasks of the same stage. The replay strips it from the
  observed cold tasks and charges it to the first task of each replayed slot, so N slots pay
  it N times, in parallel, and a larger N on a crowded host pays more (the slope above).
* Costs that grow or shrink with N and that one log cannot show (shuffle fan-in, host
  contention of the tasks' CPU parts): where the job has more than one run, a correction
  log(runtime / replay) = c0 + c1·log N is fitted to its runs and chosen by leave-one-out
  cross-validation against "none" and a constant (`WhatIfModel`).

`sparklens_runtime_s` is the plain replay (fixed task durations, constant driver time,
every executor there from the start), the baseline of bench/whatif.py.

Cost: a replay is a pass over the tasks (a heap per slot; chains of stages, most jobs, skip
the event queue), about 25 ms per 24 000 tasks; `WhatIfModel` replays each scale-out up to
EXACT_UP_TO and a geometric grid beyond, cached per process, or across processes in a
`memory` the caller keeps (keyed by `cache_key()`, a hash of the workloads' content and the
start-up fit: about 1 ms per 25 000 tasks).

Pure: no I/O, no clock. Profiles come in as `cobell_cli.core.profile.AppProfile`.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import math
from array import array
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from cobell_cli.core.profile import AppProfile

CORRECTIONS = ("none", "constant", "log-linear")
TREND_ROUNDS = 20  # backfitting rounds of the job levels and f(N)
MIN_CLUSTER_PROFILES = 3  # other runs' profiles from which the cluster's start-up is typical
EXACT_UP_TO = 32  # executors replayed one by one; beyond, a geometric grid
GRID_STEP = 1.15
# The sd of a single-run what-if's log error at the observed scale-out, and its growth per
# unit of |log(N / N_observed)|: the interval before the job's own runs say more. Measured
# by bench/whatif.py on all pairs of the recorded runs (bench/results/whatif.md).
LOG_ERROR_AT_OBSERVED = 0.118
LOG_ERROR_PER_LOG_SCALE_OUT = 0.044


# --- what the replay needs of a profile ---------------------------------------------------


@dataclass(frozen=True)
class StageWork:
    """One stage's tasks: observed durations in launch order, and which were cold."""

    stage_id: int
    job_id: int
    parent_ids: tuple[int, ...]
    task_s: tuple[float, ...]
    cold: tuple[bool, ...]


@dataclass(frozen=True)
class JobGroup:
    """Jobs that overlapped in time, replayed together; `gap_s` is the driver's time before
    them (since the previous group ended; the first: since the application started)."""

    gap_s: float
    start_s: float
    end_s: float
    stages: tuple[StageWork, ...]


@dataclass(frozen=True)
class Workload:
    """A profile as the replay sees it (`workload(profile)`)."""

    app_id: str
    groups: tuple[JobGroup, ...]
    tail_s: float  # the driver's time after the last job
    cores_per_executor: int
    scale_out: int
    runtime_s: float
    stage_lag_s: float  # a runnable stage's delay before its first task can launch
    registration_s: tuple[float, ...]  # executors' registration, sorted, from app start
    warmup_s: float | None  # a cold task's extra time; None: the log shows no warm peer

    @property
    def n_tasks(self) -> int:
        return sum(len(s.task_s) for g in self.groups for s in g.stages)

    def warm_task_s(self, stage: StageWork) -> list[float]:
        """Durations with the cold extra taken off the cold tasks (never below 1 ms)."""
        extra = self.warmup_s or 0.0
        return [max(0.001, d - extra) if c else d for d, c in zip(stage.task_s, stage.cold,
                                                                      strict=True)]


def workload(profile: AppProfile) -> Workload:
    """Stages with tasks grouped into job groups, the driver's gaps, start-up as observed.

    Raises ValueError for a profile the replay cannot use: no task at all, or no end.
    """
    if profile.end_ms is None:
        raise ValueError(
            f"{profile.app_id or 'the run'} has no end event (still running, or its driver died)"
        )
    stages = {s.stage_id: s for s in profile.stages if s.task_s}
    if not stages:
        raise ValueError(f"{profile.app_id or 'the run'} ran no tasks: nothing to replay")
    cores = max(1, int(profile.cores_per_executor or 1))
    cold = _cold_flags(profile, stages, cores)
    work = {
        i: StageWork(i, s.job_id, tuple(s.parent_ids), tuple(s.task_s), tuple(cold[i]))
        for i, s in stages.items()
    }
    runtime = profile.runtime_s
    groups = _job_groups(profile, work, runtime)
    registration = tuple(sorted(max(0.0, e.add_s) for e in profile.executors))
    return Workload(
        app_id=profile.app_id,
        groups=groups,
        tail_s=max(0.0, runtime - (groups[-1].end_s if groups else 0.0)),
        cores_per_executor=cores,
        scale_out=profile.scale_out,
        runtime_s=runtime,
        stage_lag_s=_stage_lag(profile, stages, registration),
        registration_s=registration,
        warmup_s=_warmup(work),
    )


def workload_digest(w: Workload) -> str:
    """A hash of everything a replay reads of `w`: the durations packed as doubles (~1 ms per
    25 000 tasks; their repr would take ~7 ms), the rest as repr (exact for floats)."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(repr((w.app_id, w.tail_s, w.cores_per_executor, w.scale_out, w.runtime_s,
                        w.stage_lag_s, w.registration_s, w.warmup_s)).encode())
    for g in w.groups:
        digest.update(repr((g.gap_s, g.start_s, g.end_s, len(g.stages))).encode())
        for s in g.stages:
            digest.update(repr((s.stage_id, s.job_id, s.parent_ids, len(s.task_s))).encode())
            digest.update(array("d", s.task_s).tobytes())
            digest.update(bytes(s.cold))
    return digest.hexdigest()


def _cold_flags(
    profile: AppProfile, stages: Mapping[int, Any], cores: int
) -> dict[int, list[bool]]:
    """Each executor's first `cores` tasks (one per slot) in launch order are cold. Without
    executor ids (older profiles) the first scale_out x cores launches of the run are."""
    launches = sorted(
        (t, sid, k)
        for sid, s in stages.items()
        for k, t in enumerate(s.launch_s or [0.0] * len(s.task_s))
    )
    flags = {sid: [False] * len(s.task_s) for sid, s in stages.items()}
    seen: dict[str, int] = {}
    slots = profile.scale_out * cores
    for n, (_, sid, k) in enumerate(launches):
        ids = stages[sid].task_executor
        if len(ids) == len(stages[sid].task_s):
            seen[ids[k]] = seen.get(ids[k], 0) + 1
            flags[sid][k] = seen[ids[k]] <= cores
        else:
            flags[sid][k] = n < slots
    return flags


def _warmup(work: Mapping[int, StageWork]) -> float | None:
    """Median over cold tasks of (duration - the median warm task of its stage)."""
    extras = []
    for s in work.values():
        warm = [d for d, c in zip(s.task_s, s.cold, strict=True) if not c]
        if warm:
            typical = median(warm)
            extras += [d - typical for d, c in zip(s.task_s, s.cold, strict=True) if c]
    return max(0.0, median(extras)) if extras else None


def _stage_lag(
    profile: AppProfile, stages: Mapping[int, Any], registration: Sequence[float]
) -> float:
    """The smallest delay from a stage's submission to its first launch, over stages
    submitted once every executor was there (earlier ones wait for executors)."""
    ready = registration[-1] if registration else 0.0
    lags = [
        min(s.launch_s) - s.submit_s
        for s in stages.values()
        if s.submit_s is not None and s.launch_s and s.submit_s >= ready
    ]
    return max(0.0, min(lags)) if lags else 0.0


def _job_groups(
    profile: AppProfile, work: Mapping[int, StageWork], runtime_s: float
) -> tuple[JobGroup, ...]:
    """Jobs with tasks, in submission order; a job starting before the group's end joins it."""
    by_job: dict[int, list[StageWork]] = {}
    for s in work.values():
        by_job.setdefault(s.job_id, []).append(s)
    spans = []
    for job in profile.jobs:
        stages = by_job.pop(job.job_id, [])
        if stages:
            end = job.end_s if job.end_s is not None else _stages_end(profile, stages)
            spans.append((job.submit_s, min(end, runtime_s), stages))
    for stages in by_job.values():  # stages whose job start was not logged
        first = min(_stages_start(profile, stages), runtime_s)
        spans.append((first, min(_stages_end(profile, stages), runtime_s), stages))
    spans.sort(key=lambda t: t[0])
    merged: list[list[Any]] = []
    for start, end, stages in spans:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            merged[-1][2] = merged[-1][2] + stages
        else:
            merged.append([start, end, stages])
    groups, last_end = [], 0.0
    for start, end, stages in merged:
        groups.append(
            JobGroup(
                gap_s=max(0.0, start - last_end),
                start_s=start,
                end_s=max(end, start),
                stages=tuple(sorted(stages, key=lambda s: (s.job_id, s.stage_id))),
            )
        )
        last_end = max(end, start)
    return tuple(groups)


def _stages_end(profile: AppProfile, stages: Sequence[StageWork]) -> float:
    ends = []
    for s in stages:
        p = next(x for x in profile.stages if x.stage_id == s.stage_id)
        if p.end_s is not None:
            ends.append(p.end_s)
        ends += [t + d for t, d in zip(p.launch_s, p.task_s, strict=False)]
    return max(ends) if ends else 0.0


def _stages_start(profile: AppProfile, stages: Sequence[StageWork]) -> float:
    starts = []
    for s in stages:
        p = next(x for x in profile.stages if x.stage_id == s.stage_id)
        starts += [p.submit_s] if p.submit_s is not None else list(p.launch_s[:1])
    return min(starts) if starts else 0.0


# --- the scheduler ------------------------------------------------------------------------


class _Slots:
    """Task slots: when each is free next, and whether its next task is its first."""

    def __init__(self, ready_s: Sequence[float]) -> None:
        self.heap = [(t, i) for i, t in enumerate(ready_s)]
        heapq.heapify(self.heap)
        self.cold = [True] * len(ready_s)


def _chain(stages: Sequence[StageWork]) -> list[int] | None:
    """The stages' order when they form one chain (each waits for the one before), else
    None: most jobs, and every iterative job's, so the replay takes the fast path."""
    index = {s.stage_id: k for k, s in enumerate(stages)}
    parents = [[index[p] for p in s.parent_ids if p in index] for s in stages]
    if any(len(ps) > 1 for ps in parents):
        return None
    child = {}
    for k, ps in enumerate(parents):
        if ps:
            if ps[0] in child:
                return None
            child[ps[0]] = k
    roots = [k for k, ps in enumerate(parents) if not ps]
    if len(roots) != 1:
        return None
    order = [roots[0]]
    while order[-1] in child:
        order.append(child[order[-1]])
    return order if len(order) == len(stages) else None


def _run_chain(
    order: Sequence[int],
    durations: Sequence[Sequence[float]],
    start_s: float,
    slots: _Slots,
    warmup_s: float,
    stage_lag_s: float,
) -> float:
    """`_run_group` for a chain of stages: one stage at a time, each task on the slot that
    is free first (the same schedule, without the event queue)."""
    heap, cold = slots.heap, slots.cold
    t = start_s
    for k in order:
        ready = t + stage_lag_s
        end = ready
        for d in durations[k]:
            free, slot = heap[0]
            finish = max(free, ready) + d + (warmup_s if cold[slot] else 0.0)
            cold[slot] = False
            heapq.heapreplace(heap, (finish, slot))
            end = max(end, finish)
        t = end
    return t


def _run_group(
    stages: Sequence[StageWork],
    durations: Sequence[Sequence[float]],
    start_s: float,
    slots: _Slots,
    warmup_s: float,
    stage_lag_s: float,
) -> float:
    """List-schedule one job group's stages on the slots from `start_s`; returns its end.

    A stage becomes runnable `stage_lag_s` after its last parent in the group ended; a free
    slot takes the next task of the runnable stage first in (job id, stage id) order; a
    slot's first task ever costs `warmup_s` more.
    """
    order = _chain(stages)
    if order is not None:
        return _run_chain(order, durations, start_s, slots, warmup_s, stage_lag_s)
    index = {s.stage_id: k for k, s in enumerate(stages)}
    waiting = [sum(1 for p in s.parent_ids if p in index) for s in stages]
    children: list[list[int]] = [[] for _ in stages]
    for k, s in enumerate(stages):
        for p in s.parent_ids:
            if p in index:
                children[index[p]].append(k)
    pending: list[tuple[float, int]] = []  # (ready at, stage) not yet runnable
    runnable: list[tuple[int, int, int]] = []  # (job id, stage id, stage)
    running: list[tuple[float, int]] = []  # (finish, stage)
    launched = [0] * len(stages)
    finished = [0] * len(stages)
    for k, n in enumerate(waiting):
        if n == 0:
            heapq.heappush(pending, (start_s + stage_lag_s, k))
    t, end = start_s, start_s
    while True:
        while pending and pending[0][0] <= t:
            k = heapq.heappop(pending)[1]
            heapq.heappush(runnable, (stages[k].job_id, stages[k].stage_id, k))
        while runnable and slots.heap[0][0] <= t:
            k = runnable[0][2]
            _, slot = heapq.heappop(slots.heap)
            duration = durations[k][launched[k]] + (warmup_s if slots.cold[slot] else 0.0)
            slots.cold[slot] = False
            heapq.heappush(slots.heap, (t + duration, slot))
            heapq.heappush(running, (t + duration, k))
            launched[k] += 1
            if launched[k] == len(durations[k]):
                heapq.heappop(runnable)
        nexts = [running[0][0]] if running else []
        if pending:
            nexts.append(pending[0][0])
        if runnable:
            nexts.append(slots.heap[0][0])
        if not nexts:
            return end
        t = max(t, min(nexts))
        while running and running[0][0] <= t:
            k = heapq.heappop(running)[1]
            finished[k] += 1
            if finished[k] == len(durations[k]):
                end = max(end, t)
                for c in children[k]:
                    waiting[c] -= 1
                    if waiting[c] == 0:
                        heapq.heappush(pending, (t + stage_lag_s, c))


# --- executor start-up --------------------------------------------------------------------


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

    def registration_s(self, w: Workload, executors: int) -> list[float]:
        """When each of N executors registers: the first, then evenly spaced."""
        own = w.registration_s or (0.0,)
        n0 = len(own)
        own_first = None if self.pooled else own[0]
        own_spacing = (own[-1] - own[0]) / (n0 - 1) if n0 > 1 and not self.pooled else None
        first = max(0.0, _value(self.first.at(own_first, n0, executors), own[0]))
        spacing = self.spacing.at(own_spacing, n0, executors)
        if spacing is None:
            spacing = (own[-1] - own[0]) / (n0 - 1) if n0 > 1 else 0.0
        return [first + max(0.0, spacing) * k for k in range(executors)]

    def warmup_s(self, w: Workload, executors: int) -> float:
        """A cold task's extra time at N (0 when neither the log nor the cluster shows it)."""
        return max(0.0, self.warmup.at(w.warmup_s, w.scale_out, executors) or 0.0)

    def task_factor(self, w: Workload, executors: int) -> float:
        """How much longer a warm task takes at N than in the run's own log."""
        return math.exp(self.task_log.f(executors) - self.task_log.f(w.scale_out))

    def describe(self) -> dict[str, Any]:
        return {
            "profiles": self.profiles,
            "pooled_registration": self.pooled,
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
        w = workloads[i] if i < len(workloads) else _workload_or_none(p)
        if w is None:
            continue
        reg = w.registration_s
        if not reg:
            continue
        spacing = (reg[-1] - reg[0]) / (len(reg) - 1) if len(reg) > 1 else None
        job = _job_key(p, w)
        rows.setdefault(job, []).append((len(reg), reg[0], spacing, w.warmup_s))
        for g in w.groups:
            for st in g.stages:
                warm = [d for d, c in zip(st.task_s, st.cold, strict=True) if not c]
                if warm:
                    tasks.setdefault((job, st.stage_id), []).append(
                        (len(reg), math.log(max(1e-3, median(warm))))
                    )
    groups = list(rows.values())
    first, spacing, warmup = (
        _trend([[(row[0], row[k]) for row in g if row[k] is not None] for g in groups])
        for k in (1, 2, 3)
    )
    return Startup(first, spacing, warmup, _trend(list(tasks.values())),
                   sum(len(g) for g in groups), pooled)


def _workload_or_none(p: AppProfile) -> Workload | None:
    try:
        return workload(p)
    except ValueError:
        return None


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


# --- the replays --------------------------------------------------------------------------


def replay_s(w: Workload, executors: int, startup: Startup | None = None) -> float:
    """The runtime at `executors` executors: start-up from `startup`, cold tasks, FIFO DAG
    replay of every job group, the driver's gaps kept serial (see the module doc)."""
    if executors < 1:
        raise ValueError(f"executors must be >= 1, got {executors}")
    startup = startup or Startup()
    cores = w.cores_per_executor
    ready = [t for t in startup.registration_s(w, executors) for _ in range(cores)]
    slots = _Slots(ready)
    warmup = startup.warmup_s(w, executors)
    factor = startup.task_factor(w, executors)
    t = 0.0
    for g in w.groups:
        t += g.gap_s
        durations = [_slowed(w.warm_task_s(s), factor) for s in g.stages]
        t = _run_group(g.stages, durations, t, slots, warmup, w.stage_lag_s)
    return t + w.tail_s


def _slowed(task_s: list[float], factor: float) -> list[float]:
    """Each task longer by what the host's contention adds to the stage's typical (median)
    task: the same seconds for every task of the stage, so a straggler that waits (on I/O,
    a lock, a sleep) is not stretched in proportion to its length."""
    if factor == 1.0:
        return task_s
    extra = median(task_s) * (factor - 1.0)
    return [max(0.001, d + extra) for d in task_s]


def sparklens_runtime_s(w: Workload, executors: int) -> float:
    """The plain replay: each job group on N x cores slots that are all free when it starts,
    task durations as observed, plus the driver's time (runtime minus time in jobs)."""
    if executors < 1:
        raise ValueError(f"executors must be >= 1, got {executors}")
    in_jobs = sum(g.end_s - g.start_s for g in w.groups)
    total = max(0.0, w.runtime_s - in_jobs)
    for g in w.groups:
        slots = _Slots([0.0] * (executors * w.cores_per_executor))
        total += _run_group(g.stages, [s.task_s for s in g.stages], 0.0, slots, 0.0, 0.0)
    return total


def critical_path_s(w: Workload) -> float:
    """A lower bound at any N: the driver's time plus each group's longest chain of
    longest (warm) tasks."""
    total = sum(g.gap_s for g in w.groups) + w.tail_s
    for g in w.groups:
        longest: dict[int, float] = {}
        for s in g.stages:  # sorted by (job, stage id): parents come first
            before = max((longest.get(p, 0.0) for p in s.parent_ids), default=0.0)
            longest[s.stage_id] = before + max(w.warm_task_s(s))
        total += max(longest.values())
    return total


# --- the estimator ------------------------------------------------------------------------


def _scale_outs(scale_outs: Any) -> list[int]:
    xs = [scale_outs] if isinstance(scale_outs, int | float) else list(scale_outs)
    out = []
    for x in xs:
        if not (isinstance(x, int | float) and math.isfinite(x) and x >= 1):
            raise ValueError("scale-outs must be numbers >= 1")
        out.append(max(1, round(float(x))))
    return out


class WhatIfModel:
    """Predicts a job's runtime at a scale-out by replaying its runs' profiles.

    `fit(profiles, runs)`: profiles of the job's runs (newest first), the job's succeeded
    runs (mappings with scale_out and runtime_s), and optionally profiles of other jobs on
    the cluster for the start-up slopes. Follows the estimator contract of
    `cobell_cli.core.model` (learned values end in _), and planning's RuntimeModel protocol
    (`predict`, `predict_interval`, `interference`, `describe`, `scale_out_range_`).

    `memory`, like scikit-learn's: a mapping the replays are kept in across fits (and, when
    the caller stores it, across processes), `cache_key()` -> {executors: replayed seconds}.
    A fit of the same workloads and start-up then replays nothing it replayed before.
    """

    def __init__(
        self,
        *,
        correction: str = "auto",
        max_profiles: int = 3,
        memory: MutableMapping[str, dict[int, float]] | None = None,
    ) -> None:
        self.correction = correction  # "auto" (LOO CV) or one of CORRECTIONS
        self.max_profiles = max_profiles
        self.memory = memory

    def fit(
        self,
        profiles: Sequence[AppProfile],
        runs: Sequence[Mapping[str, Any]] = (),
        cluster_profiles: Sequence[AppProfile] = (),
    ) -> WhatIfModel:
        own: list[Workload | None] = []  # the first profiles', up to max_profiles usable
        for p in profiles:
            own.append(_workload_or_none(p))
            if sum(w is not None for w in own) == self.max_profiles:
                break
        usable = [w for w in own if w is not None]
        if not usable:
            raise ValueError("no profile with tasks and an end to replay")
        self.workloads_ = usable
        pooled = len(cluster_profiles) >= MIN_CLUSTER_PROFILES
        self.startup_ = fit_startup([*profiles, *cluster_profiles], pooled, own)
        self._key = _replay_key(usable, self.startup_)
        self._anchors_s: list[float] | None = None
        self._cache: dict[int, float] = (
            {} if self.memory is None else self.memory.setdefault(self._key, {})
        )
        observed = [(float(w.scale_out), w.runtime_s) for w in usable]
        own = [
            (float(r["scale_out"]), float(r["runtime_s"]))
            for r in runs
            if (r.get("runtime_s") or 0) > 0 and (r.get("scale_out") or 0) >= 1
        ]
        self.points_ = own or observed
        xs = [x for x, _ in self.points_] + [x for x, _ in observed]
        self.scale_out_range_ = (min(xs), max(xs))
        self.correction_, self.theta_, self.cv_ = self._choose_correction(self.points_)
        self.correction_range_ = _log_range(self._log_ratios(self.points_))
        self.residual_sd_ = self._residual_sd(self.points_)
        return self

    # -- replay, cached per scale-out
    def replay(self, executors: int) -> float:
        """The geometric mean of the profiles' replays (`_replay_exact`).

        Exact up to EXACT_UP_TO executors and at the observed counts; beyond, on a
        geometric grid (GRID_STEP apart) interpolated in log-log, so tabulating hundreds of
        scale-outs costs tens of replays.
        """
        x = int(executors)
        if x <= EXACT_UP_TO or any(x == w.scale_out for w in self.workloads_):
            return self._replay_exact(x)
        lo = EXACT_UP_TO
        while (hi := max(lo + 1, round(lo * GRID_STEP))) < x:
            lo = hi
        if hi == x:
            return self._replay_exact(x)
        y0, y1 = self._replay_exact(lo), self._replay_exact(hi)
        f = (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return math.exp((1 - f) * math.log(y0) + f * math.log(y1))

    def _replay_exact(self, executors: int) -> float:
        """Each profile's replay, pinned to its measured runtime by the difference at its own
        count, unless the cluster's typical start-up replaces the run's own: then that
        difference is the run's start-up under the load of its moment, which another run
        will not see, and the replay stands as it is."""
        if executors not in self._cache:
            logs = [math.log(max(1e-3, replay_s(w, executors, self.startup_) + anchor))
                    for w, anchor in zip(self.workloads_, self._anchors(), strict=True)]
            self._cache[executors] = math.exp(sum(logs) / len(logs))
        return self._cache[executors]

    def _anchors(self) -> list[float]:
        """Per profile, measured runtime minus its replay at its own count (0 when pooled);
        replayed once per fit, and only when some replay is not in the memory."""
        if self._anchors_s is None:
            self._anchors_s = [
                0.0 if self.startup_.pooled
                else w.runtime_s - replay_s(w, w.scale_out, self.startup_)
                for w in self.workloads_
            ]
        return self._anchors_s

    def _log_ratios(self, points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
        return [(math.log(x), math.log(y / self.replay(int(x)))) for x, y in points]

    def _choose_correction(
        self, points: Sequence[tuple[float, float]]
    ) -> tuple[str, tuple[float, float], dict[str, float]]:
        data = self._log_ratios(points)
        forms = list(CORRECTIONS) if self.correction == "auto" else [self.correction]
        if self.correction not in ("auto", *CORRECTIONS):
            raise ValueError(f"correction must be 'auto' or one of {CORRECTIONS}")
        scores: dict[str, float] = {}
        for form in forms:
            errs = []
            for i in range(len(data)):
                rest = data[:i] + data[i + 1 :]
                if form != "none" and not _fittable(form, rest):
                    break
                theta = _fit_correction(form, rest)
                errs.append(abs(data[i][1] - _correction(theta, data[i][0], _log_range(rest))))
            else:
                if errs:
                    scores[form] = sum(errs) / len(errs)
        best = min(scores, key=scores.get) if scores else forms[0]
        if best != "none" and not _fittable(best, data):
            best = "none"
        return best, _fit_correction(best, data), scores

    def _residual_sd(self, points: Sequence[tuple[float, float]]) -> float:
        data = self._log_ratios(points)
        a, b = self.theta_
        res = [y - (a + b * t) for t, y in data]
        k = {"none": 0, "constant": 1, "log-linear": 2}[self.correction_]
        dof = len(res) - k
        return math.sqrt(sum(r * r for r in res) / dof) if dof > 0 else 0.0

    # -- prediction
    def predict(self, scale_outs: Any, overlaps: Any = None) -> list[float]:
        """Runtime in seconds per scale-out (co-runners are not modelled: `overlaps` is
        accepted for planning's protocol and ignored)."""
        return [self.replay(x) * math.exp(_correction(self.theta_, math.log(x),
                                                      self.correction_range_))
                for x in _scale_outs(scale_outs)]

    def predict_interval(
        self, scale_outs: Any, overlaps: Any = None, confidence: float = 0.9
    ) -> tuple[list[float], list[float]]:
        """A log-normal interval: the what-if's measured error growing with the distance in
        log scale-out from the nearest observed run, and the runs' residual spread."""
        from statistics import NormalDist

        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        seen = [math.log(x) for x, _ in self.points_]
        lower, upper = [], []
        for x, p in zip(_scale_outs(scale_outs), self.predict(scale_outs), strict=True):
            distance = min(abs(math.log(x) - s) for s in seen)
            sd = math.hypot(LOG_ERROR_AT_OBSERVED + LOG_ERROR_PER_LOG_SCALE_OUT * distance,
                            self.residual_sd_)
            lower.append(p * math.exp(-z * sd))
            upper.append(p * math.exp(z * sd))
        return lower, upper

    @property
    def loo_error_(self) -> float:
        """Leave-one-out mean |log(runtime / predicted)| of the chosen correction."""
        return self.cv_.get(self.correction_, 0.0)

    def interference(self, job: Any) -> tuple[float, float]:
        return 0.0, 0.0

    def cache_key(self) -> str:
        """What the replay curve depends on (the workloads' content and the start-up fit),
        for `memory` and for caches of models that use the curve."""
        return self._key

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "what-if",
            "profiles": [w.app_id for w in self.workloads_],
            "observed": [
                {"scale_out": w.scale_out, "runtime_s": w.runtime_s} for w in self.workloads_
            ],
            "runs": len(self.points_),
            "scale_out_range": list(self.scale_out_range_),
            "startup": self.startup_.describe(),
            "correction": {"form": self.correction_, "c0": self.theta_[0],
                           "c1_log_scale_out": self.theta_[1],
                           "cv_mean_abs_log_error": dict(self.cv_)},
        }


def _replay_key(workloads: Sequence[Workload], startup: Startup) -> str:
    """A hash of the workloads' content (`workload_digest`) and the start-up fit (its repr:
    exact floats); the same app id re-imported with other tasks gets another key."""
    parts = repr(([workload_digest(w) for w in workloads], startup)).encode()
    return hashlib.blake2b(parts, digest_size=20).hexdigest()


def _fittable(form: str, data: Sequence[tuple[float, float]]) -> bool:
    if form == "none":
        return True
    if form == "constant":
        return len(data) >= 1
    return len({round(t, 9) for t, _ in data}) >= 2


def _log_range(data: Sequence[tuple[float, float]]) -> tuple[float, float]:
    ts = [t for t, _ in data]
    return (min(ts), max(ts)) if ts else (0.0, 0.0)


def _correction(theta: tuple[float, float], t: float, t_range: tuple[float, float]) -> float:
    """c0 + c1·log x, its trend held flat beyond the runs it was learned from: a slope from
    runs a few executors apart (co-runners, noise) is no evidence far from them, where the
    replay alone says how the runtime scales (a 3-run slope at 31-43 executors, carried to
    9, predicted a third of the real runtime: bench.coldstart, simulator triple kmeans)."""
    return theta[0] + theta[1] * min(max(t, t_range[0]), t_range[1])


def _fit_correction(form: str, data: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """(c0, c1) of log(runtime / replay) = c0 + c1·log x by least squares."""
    if form == "none" or not data:
        return 0.0, 0.0
    mean_t = sum(t for t, _ in data) / len(data)
    mean_y = sum(y for _, y in data) / len(data)
    if form == "constant":
        return mean_y, 0.0
    sxx = sum((t - mean_t) ** 2 for t, _ in data)
    if sxx == 0:
        return mean_y, 0.0
    b = sum((t - mean_t) * (y - mean_y) for t, y in data) / sxx
    return mean_y - b * mean_t, b


def fit_whatif(
    profiles: Sequence[AppProfile],
    runs: Sequence[Mapping[str, Any]] = (),
    cluster_profiles: Sequence[AppProfile] = (),
    **params: Any,
) -> WhatIfModel:
    """Fit the what-if to a job's profiles (newest first) and runs (see WhatIfModel)."""
    return WhatIfModel(**params).fit(profiles, runs, cluster_profiles)


__all__ = [
    "CORRECTIONS",
    "JobGroup",
    "StageWork",
    "Startup",
    "WhatIfModel",
    "Workload",
    "critical_path_s",
    "fit_startup",
    "fit_whatif",
    "replay_s",
    "sparklens_runtime_s",
    "workload",
    "workload_digest",
]
