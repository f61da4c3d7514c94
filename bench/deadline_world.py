"""The rounds bench.deadline plays and the simulated cluster they play on.

A round is drawn before any strategy decides: the arrivals (job, submit time, deadline), the
apps already running (stragglers), and the world's noise; every strategy then faces the very
same round. Patterns:

* isolated: one straggler running, one job submitted while it runs (after 0-60 % of the
  straggler's alone runtime);
* burst5 / burst10: one straggler, and 5 (distinct) or 10 (each job at most twice) jobs
  submitted in the same second, as cron fires them;
* spread (the third pattern): one straggler, and 6 jobs submitted at uniform random moments
  over ten minutes, as a script or a team's crontab spreads them.

Deadlines: submit + U(1.5, 3) x the job's median alone runtime at REF_SCALE_OUT (the issue's
"1.5-3x their isolated runtime"). A strategy plays a round online (`Cluster`): it starts jobs
at moments of its choosing and sees, when it decides, what runs and how far along it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.colocation import (
    INTERFERER_SCALE_OUTS,
    RUN_SPACING_S,
    Truth,
    World,
    _by_job,
    _sizes_by_job,
    add_solo_runs,
)
from bench.simulator import Curve, SimJob
from cobell_cli.api import measured_overlaps
from cobell_cli.cluster.base import RunningApp
from cobell_cli.core.cost import executor_seconds

JOBS = ("grep", "kmeans", "pagerank", "sgd", "tpchq10", "wordcount")
REF_SCALE_OUT = 16
DEADLINE_FACTORS = (1.5, 3.0)
PATTERNS = ("isolated", "burst5", "burst10", "spread")
SPREAD_JOBS, SPREAD_WINDOW_S = 6, 600.0
BURST_GAP_S = 0.01  # "the same second": cron starts them a few milliseconds apart


@dataclass(frozen=True)
class Arrival:
    key: str
    job: str
    at: float
    deadline_at: float


@dataclass(frozen=True)
class Straggler:
    key: str
    job: str
    scale_out: int
    start_at: float


@dataclass(frozen=True)
class Round:
    pattern: str
    index: int
    arrivals: tuple[Arrival, ...]
    stragglers: tuple[Straggler, ...]
    noise: Any


def deadline_for(curves: Mapping[str, Curve], job: str, at: float,
                 rng: np.random.Generator) -> float:
    return at + float(rng.uniform(*DEADLINE_FACTORS)) * curves[job].median_s(REF_SCALE_OUT)


def _jobs_for(pattern: str, rng: np.random.Generator) -> list[str]:
    if pattern == "isolated":
        return [str(rng.choice(JOBS))]
    if pattern == "burst5":
        return [str(j) for j in rng.choice(JOBS, 5, replace=False)]
    if pattern == "burst10":
        return [str(j) for j in rng.permutation([*JOBS, *JOBS])[:10]]
    return [str(j) for j in rng.choice(JOBS, SPREAD_JOBS, replace=True)]


def draw_round(pattern: str, index: int, seed: int, curves: Mapping[str, Curve],
               world: Truth) -> Round:
    """One round of `pattern`, drawn from (seed, pattern, index) alone."""
    rng = np.random.default_rng([seed, PATTERNS.index(pattern), index])
    base = (index + 1) * RUN_SPACING_S
    straggler_job = str(rng.choice(JOBS))
    x = int(rng.choice(INTERFERER_SCALE_OUTS))
    alone = curves[straggler_job].median_s(x)
    jobs = _jobs_for(pattern, rng)
    if pattern == "isolated":
        straggler_at = base
        times = [base + float(rng.uniform(0.0, 0.6)) * alone]
    else:
        straggler_at = base - float(rng.uniform(0.2, 0.8)) * alone
        if pattern == "spread":
            times = sorted(base + float(t) for t in rng.uniform(0, SPREAD_WINDOW_S, len(jobs)))
        else:
            times = [base + i * BURST_GAP_S for i in range(len(jobs))]
    arrivals = tuple(Arrival(f"{pattern}{index}-{i}", job, at, deadline_for(curves, job, at, rng))
                     for i, (job, at) in enumerate(zip(jobs, times, strict=True)))
    stragglers = (Straggler(f"{pattern}{index}-s", straggler_job, x, straggler_at),)
    return Round(pattern, index, arrivals, stragglers, world.draw(rng, curves))


def seeded_memory(curves: Mapping[str, Curve], world: Truth, seed: int) -> World:
    """Every job's six solo runs at SEED_SCALE_OUTS (as bench.colocation seeds its co-runners)."""
    return add_solo_runs(World(""), JOBS, curves, world, np.random.default_rng([seed, 98]), -2e7)


@dataclass
class Started:
    key: str
    job: str
    scale_out: int
    start_at: float
    deadline_at: float | None = None
    predicted_s: float | None = None  # the plan's prediction at the start (recorded)
    phase: str | None = None
    waited_s: float = 0.0


@dataclass
class Cluster:
    """One round on one world: what has been started, and what runs at any moment."""

    world: Truth
    curves: Mapping[str, Curve]
    round: Round
    started: dict[str, Started] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for s in self.round.stragglers:
            self.started[s.key] = Started(s.key, s.job, s.scale_out, s.start_at)

    def _sim_jobs(self) -> list[SimJob]:
        reps = self.round.noise.rep_index
        return [SimJob(s.key, s.job, s.scale_out, s.start_at,
                       self.curves[s.job].isolated_s(s.scale_out, reps[s.job]))
                for s in self.started.values()]

    def start(self, key: str, job: str, scale_out: int, at: float, **info: Any) -> None:
        self.started[key] = Started(key, job, scale_out, at, **info)

    def running_at(self, t: float) -> list[RunningApp]:
        """The apps running at `t`, as a cluster lists them (progress included)."""
        state = self.world.simulate(self._sim_jobs(), self.round.noise, until_s=t)
        return [_app(j) for j in state if j.start_s <= t and j.finish_s is None]

    def ends_if_nothing_starts(self) -> dict[str, float]:
        """Each started app's end if nothing else started: when the apps running now end."""
        done = self.world.simulate(self._sim_jobs(), self.round.noise)
        return {j.key: float(j.finish_s) for j in done if j.finish_s is not None}

    def finish(self) -> list[SimJob]:
        return self.world.simulate(self._sim_jobs(), self.round.noise)


def _app(job: SimJob) -> RunningApp:
    return RunningApp(app_id=job.key, name=job.job, job=job.job, user=None, queue="default",
                      state="RUNNING", started_at=job.start_s, finished_at=None,
                      scale_out=job.scale_out, progress=job.done_s / job.work_s,
                      backend="simulator")


@dataclass(frozen=True)
class JobResult:
    key: str
    job: str
    scale_out: int
    start_at: float
    runtime_s: float
    deadline_at: float | None  # None: a straggler
    waited_s: float

    @property
    def met(self) -> bool:
        return self.deadline_at is None or self.start_at + self.runtime_s <= self.deadline_at

    @property
    def executor_s(self) -> float:
        return executor_seconds(self.scale_out, self.runtime_s)


def record(memory: World | None, cluster: Cluster) -> list[JobResult]:
    """Play the round to its end, add every run to `memory` as `cobell submit` records it
    (its measured overlaps; the plan's prediction for runs a plan started), and return them."""
    done = cluster.finish()
    apps = [RunningApp(app_id=j.key, name=j.job, job=j.job, user=None, queue="default",
                       state="FINISHED", started_at=j.start_s, finished_at=j.finish_s,
                       scale_out=j.scale_out, progress=1.0, backend="simulator") for j in done]
    out = []
    for job, app in zip(done, apps, strict=True):
        assert job.finish_s is not None
        info = cluster.started[job.key]
        runtime = job.finish_s - job.start_s
        out.append(JobResult(job.key, job.job, job.scale_out, job.start_s, runtime,
                             info.deadline_at, info.waited_s))
        if memory is None:
            continue
        rows = measured_overlaps(job.start_s, job.finish_s,
                                 [a for a in apps if a.app_id != app.app_id])
        planned = info.predicted_s is not None
        memory.add(job.job, scale_out=job.scale_out, runtime_s=runtime, started_at=job.start_s,
                   finished_at=job.finish_s,
                   target_s=(info.deadline_at - job.start_s) if info.deadline_at else None,
                   overlaps=_by_job(rows), co_runner_scale_outs=_sizes_by_job(rows),
                   predicted_s=info.predicted_s if planned else None,
                   model=info.phase if planned else None)
    return out


def total_executor_s(results: Sequence[JobResult]) -> float:
    return sum(r.executor_s for r in results)


def met_share(results: Sequence[JobResult]) -> float:
    judged = [r for r in results if r.deadline_at is not None]
    return sum(r.met for r in judged) / len(judged) if judged else math.nan
