"""Which start-up and host-contention terms a job's what-if uses: only what its evidence
supports (`choose_startup`).

A single event log shows the run's own start-up at its own N and nothing of how it grows
with N. Without more, the replay keeps the log's start-up, scaled by how many executors share
a host (`HOST_SHARE_OFFSET`): N one-core executors starting on one host share its CPU, so the
first registration, the spacing of the others and a cold task's extra time grow with the
executors per host; on a cluster that spreads them over many hosts they do not.

Trends learned from runs at several N replace that prior where they exist: the job's own
profiles at two or more executor counts (fixed effects per job, as before), or other jobs'
runs on the cluster. Other jobs are weighed by how well they predict this job's own runs: a
job whose trend, applied to this job's newest profile, predicts the job's other runs (at
other executor counts, which the trend never saw) worse than the prior is left out; the
trend of the jobs kept is used only when it, too, predicts those runs better. A job with no
run at another executor count has no such evidence, so other jobs' runs do not change its
what-if at all (issue 23: unrelated runs in the history moved the what-if by 60-80 %).
"""

from __future__ import annotations

import math
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cobell_cli.core.profile import AppProfile
from cobell_cli.core.whatif.replay import replay_key, replay_s
from cobell_cli.core.whatif.startup import Startup, _job_key, fit_startup
from cobell_cli.core.whatif.workload import Workload, workload_or_none

# The executors-per-host offset of the start-up prior: the first registration and a cold
# task's extra at N are the log's times (1 + per host at N) / (1 + per host in the log).
# Fitted on bench/data/whatif (the tuning set: 64 logs, 4 shapes, 1-8 executors on one host)
# as the minimum of the mean |log error| over all pairs on the grid 1, 1.5, 2, 2.5, 3
# (0.158, 0.158, 0.161, 0.164, 0.167); bench/results/whatif.md re-measures it on the fresh
# test set.
HOST_SHARE_OFFSET = 1.0
MIN_CLUSTER_PROFILES = 3  # other runs' profiles from which the cluster's start-up is typical
EVIDENCE_RUNS = 8  # the job's newest runs that judge the candidates


@dataclass(frozen=True)
class StartupChoice:
    """The start-up the replay uses and why: `source` is "log" (the prior), "own runs" (the
    job's profiles at several N) or "cluster" (other jobs' trends, `jobs`); `errors` the
    candidates' mean |log(runtime / predicted)| on the job's runs at other executor counts
    (empty: no such run, so no evidence)."""

    startup: Startup
    source: str
    jobs: tuple[str, ...] = ()
    errors: dict[str, float] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "other_jobs": list(self.jobs),
                "evidence_mean_abs_log_error": dict(self.errors)}


def choose_startup(
    profiles: Sequence[AppProfile],
    workloads: Sequence[Workload | None],
    points: Sequence[tuple[float, float]],
    cluster_profiles: Sequence[AppProfile],
    host_offset: float | None = HOST_SHARE_OFFSET,
    memory: MutableMapping[str, dict[int, float]] | None = None,
) -> StartupChoice:
    """The job's start-up terms (see the module doc). `profiles`: the job's (newest first),
    `workloads` theirs (None: not replayable), `points` its runs as (scale-out, runtime);
    `host_offset` None keeps the log's start-up as observed where no trend is learned;
    `memory` keeps the candidates' replays (`WhatIfModel`'s), so a job's evidence is replayed
    once, not on every plan."""
    mine = _workloads(profiles, workloads)
    base = fit_startup(profiles, False, mine, host_offset)
    source = "own runs" if base.first.knots or base.warmup.knots else "log"
    newest = next((w for w in workloads if w is not None), None)
    evidence = _evidence(newest, points)
    if not evidence or not cluster_profiles:
        return StartupChoice(base, source)
    errors = {source: _error(base, newest, evidence, memory)}
    kept: list[AppProfile] = []
    kept_workloads: list[Workload | None] = []
    names: list[str] = []
    for name, theirs, their_workloads in _other_jobs(cluster_profiles):
        trend = fit_startup([*profiles, *theirs], False, [*mine, *their_workloads],
                            host_offset)
        errors[f"job {name}"] = _error(trend, newest, evidence, memory)
        if errors[f"job {name}"] < errors[source]:
            kept += theirs
            kept_workloads += their_workloads
            names.append(name)
    if not kept:
        return StartupChoice(base, source, (), errors)
    pooled = len(kept) >= MIN_CLUSTER_PROFILES
    cluster = fit_startup([*profiles, *kept], pooled, [*mine, *kept_workloads], host_offset)
    errors["cluster"] = _error(cluster, newest, evidence, memory)
    if errors["cluster"] >= errors[source]:
        return StartupChoice(base, source, (), errors)
    return StartupChoice(cluster, "cluster", tuple(names), errors)


def _evidence(w: Workload | None, points: Sequence[tuple[float, float]],
              ) -> list[tuple[int, float]]:
    """The job's newest runs at executor counts other than the profile's own."""
    if w is None:
        return []
    other = [(int(x), y) for x, y in points if int(x) != w.scale_out and y > 0]
    return other[-EVIDENCE_RUNS:]


def _error(startup: Startup, w: Workload, evidence: Sequence[tuple[int, float]],
           memory: MutableMapping[str, dict[int, float]] | None) -> float:
    """Mean |log(runtime / predicted)| of the runs by the profile's replay with `startup`,
    pinned to the profile's own runtime unless the start-up is the cluster's typical one."""
    cache = {} if memory is None else memory.setdefault("evidence-" + replay_key([w], startup),
                                                        {})

    def replayed(x: int) -> float:
        if x not in cache:
            cache[x] = replay_s(w, x, startup)
        return cache[x]

    anchor = 0.0 if startup.pooled else w.runtime_s - replayed(w.scale_out)
    errs = [abs(math.log(y / max(1e-3, replayed(x) + anchor))) for x, y in evidence]
    return sum(errs) / len(errs)


def _workloads(profiles: Sequence[AppProfile], known: Sequence[Workload | None],
               ) -> list[Workload | None]:
    """Each profile's workload (None: not replayable, or local mode, which start-up fits
    skip), `known` the first ones': computed once per fit, not once per start-up candidate
    (~10 ms per 25 000 tasks)."""
    return [known[i] if i < len(known) else None if p.local_mode else workload_or_none(p)
            for i, p in enumerate(profiles)]


def _other_jobs(profiles: Sequence[AppProfile],
                ) -> list[tuple[str, list[AppProfile], list[Workload | None]]]:
    """Other jobs' profiles (and their workloads) grouped by job (its tag, else its stage
    structure), those seen at two or more executor counts: a job at one count shows no
    trend."""
    groups: dict[Any, list[tuple[AppProfile, Workload]]] = {}
    names: dict[Any, str] = {}
    for p in profiles:
        w = None if p.local_mode else workload_or_none(p)
        if w is None or not w.registration_s:
            continue
        key = _job_key(p, w)
        groups.setdefault(key, []).append((p, w))
        names.setdefault(key, p.job_tag or p.app_name or p.app_id)
    return [(names[k], [p for p, _ in pairs], [w for _, w in pairs])
            for k, pairs in groups.items() if len({p.scale_out for p, _ in pairs}) >= 2]
