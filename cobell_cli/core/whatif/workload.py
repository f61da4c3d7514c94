"""What the replay needs of a profile (`workload`): each stage's tasks in launch order and
which were cold, the jobs grouped as they overlapped, the driver's gaps, the executors'
registration and a cold task's extra time."""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from cobell_cli.core.digest import blake2b
from cobell_cli.core.median import median
from cobell_cli.core.profile import AppProfile


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
    # the most executors the run had on one host; None: the log does not name the hosts
    executors_per_host: int | None = None

    def per_host(self, executors: int) -> float | None:
        """Executors on the busiest host at N, the cluster placing them as in this run (N
        times its share per host; all on one host for a single-host run), at least 1."""
        if self.executors_per_host is None:
            return None
        return max(1.0, executors * self.executors_per_host / max(1, self.scale_out))

    @property
    def n_tasks(self) -> int:
        return sum(len(s.task_s) for g in self.groups for s in g.stages)

    @cached_property
    def warm_medians(self) -> tuple[tuple[int, float], ...]:
        """(stage id, median warm task duration) of the stages with a warm task, in group
        order: what a start-up fit reads of a workload, once per workload, however many
        candidate fits include it (`cached_property` keeps it beside the frozen fields)."""
        out = []
        for g in self.groups:
            for st in g.stages:
                warm = [d for d, c in zip(st.task_s, st.cold, strict=True) if not c]
                if warm:
                    out.append((st.stage_id, median(warm)))
        return tuple(out)

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
        executors_per_host=_executors_per_host(profile),
    )


def _executors_per_host(profile: AppProfile) -> int | None:
    hosts = [e.host for e in profile.executors]
    if not hosts or any(h is None for h in hosts):
        return None
    return max(hosts.count(h) for h in set(hosts))


def workload_digest(w: Workload) -> str:
    """A hash of everything a replay reads of `w`: the durations packed as doubles (~1 ms per
    25 000 tasks; their repr would take ~7 ms), the rest as repr (exact for floats)."""
    digest = blake2b(digest_size=20)
    digest.update(repr((w.app_id, w.tail_s, w.cores_per_executor, w.scale_out, w.runtime_s,
                        w.stage_lag_s, w.registration_s, w.warmup_s,
                        w.executors_per_host)).encode())
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
    executor ids (older profiles) the first scale_out x cores launches of the run are.

    Launch order is by (launch time, stage id, task index): the tasks listed by stage id and
    index, then sorted by launch time alone, stably (a float key sorts ~3x faster than
    (time, stage, index) tuples: ~25 ms of a cached predict per 26 000-task profile)."""
    ids = sorted(stages)
    launch: list[float] = []
    owner: list[str | None] = []  # each task's executor; None: its stage lacks the ids
    for sid in ids:
        s = stages[sid]
        times = s.launch_s or [0.0] * len(s.task_s)
        launch += times
        named = len(s.task_executor) == len(s.task_s)
        owner += s.task_executor[: len(times)] if named else [None] * len(times)
    cold = [False] * len(launch)
    seen: dict[str, int] = {}
    slots = profile.scale_out * cores
    for n, i in enumerate(sorted(range(len(launch)), key=launch.__getitem__)):
        executor = owner[i]
        if executor is None:
            cold[i] = n < slots
        else:
            seen[executor] = seen.get(executor, 0) + 1
            cold[i] = seen[executor] <= cores
    flags, start = {}, 0
    for sid in ids:
        s = stages[sid]
        k = len(s.launch_s or s.task_s)
        flags[sid] = cold[start : start + k] + [False] * (len(s.task_s) - k)
        start += k
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


def workload_or_none(p: AppProfile) -> Workload | None:
    """`workload(p)`, or None for a profile the replay cannot use."""
    try:
        return workload(p)
    except ValueError:
        return None
