"""Ground truth for the co-location benchmark: a discrete-event simulator of a shared cluster.

Deliberately NOT cobell's model, so the benchmark can expose model error:

* Isolated runtime of a job at scale-out x: a real repetition from ../shared/data/bell (ms ->
  s) at the measured scale-outs 4, 8, ..., 60; between two measured scale-outs the two sampled
  repetitions are interpolated in log-log space, so each run keeps the noise of real runs and
  PageRank's cliff between 4 and 8 stays.
* Interference is contention for shared resources. Each job has a resource profile (cpu, memory
  bandwidth, disk, network shares). While job i overlaps co-runner j, j adds
    kappa · noise_ij · (p_i · p_j) · x_j / (x_j + PRESSURE_HALF) · (VICTIM_REF / x_i) ** GAMMA
  to i's slow-down (a power law in the victim's scale-out, saturating in the co-runner's), and
  the sum over co-runners saturates: slowdown = S · tanh(sum / S). Neither is cobell's
  (a + b/x)·ov, and several co-runners do not add up linearly.
* Progress-based and event-driven: a job's remaining work (in isolated seconds) advances at rate
  1 / (1 + slowdown) while it overlaps; rates change only when a job starts or ends, so a slowed
  co-runner runs longer and slows the others longer (cascades).
* Per-run noise: the repetition drawn at each scale-out and a log-normal factor per ordered
  pair of jobs (`RunNoise`), drawn once per experiment run so that every strategy faces the
  very same run.

* What a running app's Spark driver would say (`driver_progress`): each job has a Spark
  structure (`SHAPES`, below): driver start-up, then Spark jobs one after another, each a
  chain of stages with a share of the work and a task count. The driver knows a Spark job
  only once it is submitted, so later jobs are not yet known. Work shares and the start-up
  share are jittered per run (`run_shape`); a stage's tasks finish in waves over the app's
  executors (one core each), each task somewhat before the end of its wave. A finished run's
  stage shares (`stage_shares`) are what its event-log profile would say. Both worlds report
  through these functions: they read only how much of its isolated work an app has done.

Pure apart from `load_curves` (reads the CSVs).
"""

from __future__ import annotations

import csv
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cobell_cli.core.remaining import DriverProgress, stage_fraction

RESOURCES = ("cpu", "memory_bandwidth", "disk", "network")

# Resource profiles: the share of each resource a job's tasks keep busy. Chosen from what the
# jobs do (SGD and K-Means iterate in memory, Grep scans disk, TPC-H Q10 joins over disk and
# network, PageRank shuffles over the network, WordCount reads and shuffles), not fitted.
PROFILES: dict[str, tuple[float, float, float, float]] = {
    "sgd": (0.8, 0.6, 0.1, 0.3),
    "kmeans": (0.9, 0.5, 0.1, 0.2),
    "pagerank": (0.4, 0.6, 0.2, 0.8),
    "grep": (0.3, 0.2, 0.9, 0.3),
    "tpchq10": (0.4, 0.3, 0.7, 0.6),
    "wordcount": (0.6, 0.3, 0.6, 0.5),
}

JOB_FILES = {
    "grep": "grep.spark.csv",
    "kmeans": "kmeans.flink.csv",
    "pagerank": "pagerank.spark.csv",
    "sgd": "sgd.spark.csv",
    "tpchq10": "tpchq10.flink.csv",
    "wordcount": "wordcount.flink.csv",
}


@dataclass(frozen=True)
class Contention:
    """Constants of the ground-truth slow-down (see the module doc)."""

    kappa: float = 0.7
    pressure_half_scale_out: float = 16.0
    victim_ref_scale_out: float = 16.0
    gamma: float = 0.35
    saturation: float = 1.5
    pair_noise_sigma: float = 0.15


@dataclass(frozen=True)
class Curve:
    """Measured repetitions of one job: scale_outs (m,), runtimes_s (m, reps)."""

    job: str
    scale_outs: np.ndarray
    runtimes_s: np.ndarray

    @property
    def reps(self) -> int:
        return int(self.runtimes_s.shape[1])

    def isolated_s(self, scale_out: float, rep_index: Sequence[int]) -> float:
        """Runtime alone at `scale_out`, using repetition rep_index[k] at measured scale-out k."""
        xs = self.scale_outs
        x = float(min(max(scale_out, xs[0]), xs[-1]))
        hi = int(np.searchsorted(xs, x, side="left"))
        if xs[hi] == x:
            return float(self.runtimes_s[hi, rep_index[hi]])
        lo = hi - 1
        y0 = self.runtimes_s[lo, rep_index[lo]]
        y1 = self.runtimes_s[hi, rep_index[hi]]
        w = (math.log(x) - math.log(xs[lo])) / (math.log(xs[hi]) - math.log(xs[lo]))
        return float(math.exp((1 - w) * math.log(y0) + w * math.log(y1)))

    def median_s(self, scale_out: float) -> float:
        """Median isolated runtime (for choosing delays and documenting targets)."""
        med = np.median(self.runtimes_s, axis=1)
        xs = self.scale_outs
        x = float(min(max(scale_out, xs[0]), xs[-1]))
        return float(math.exp(np.interp(math.log(x), np.log(xs), np.log(med))))


def load_curves(data_dir: Path, jobs: Sequence[str] = tuple(JOB_FILES)) -> dict[str, Curve]:
    """Bell CSVs (Nodes, Runtime in ms) -> Curve per job; every scale-out needs equal reps."""
    out = {}
    for job in jobs:
        by_x: dict[int, list[float]] = {}
        with (data_dir / JOB_FILES[job]).open(newline="") as fh:
            for row in csv.DictReader(fh):
                by_x.setdefault(int(row["Nodes"]), []).append(float(row["Runtime"]) / 1000.0)
        xs = sorted(by_x)
        reps = min(len(v) for v in by_x.values())
        out[job] = Curve(job, np.array(xs, dtype=float),
                         np.array([by_x[x][:reps] for x in xs], dtype=float))
    return out


@dataclass(frozen=True)
class RunNoise:
    """Everything random about one experiment run, drawn before any strategy decides."""

    rep_index: Mapping[str, tuple[int, ...]]  # job -> repetition per measured scale-out
    pair_factor: Mapping[tuple[str, str], float]  # (victim job, co-runner job) -> factor

    @staticmethod
    def draw(rng: np.random.Generator, curves: Mapping[str, Curve],
             contention: Contention) -> RunNoise:
        jobs = sorted(curves)
        reps = {j: tuple(int(i) for i in rng.integers(0, curves[j].reps,
                                                      len(curves[j].scale_outs)))
                for j in jobs}
        pairs = {(a, b): float(rng.lognormal(0.0, contention.pair_noise_sigma))
                 for a in jobs for b in jobs}
        return RunNoise(reps, pairs)


@dataclass
class SimJob:
    """One application in the simulation; `work_s` is its isolated runtime."""

    key: str
    job: str
    scale_out: int
    start_s: float
    work_s: float
    finish_s: float | None = None
    done_s: float = field(default=0.0)  # isolated seconds of work done so far
    trace: list[tuple[float, float]] = field(default_factory=list)  # (t, done_s) at each event

    def time_at(self, done_s: float) -> float:
        """When the job had done `done_s` isolated seconds (rates are constant between events)."""
        t0, d0 = self.start_s, 0.0
        for t1, d1 in self.trace:
            if d1 >= done_s:
                return t0 if d1 <= d0 else t0 + (t1 - t0) * (done_s - d0) / (d1 - d0)
            t0, d0 = t1, d1
        return t0


def pair_slowdown(victim: SimJob, other: SimJob, noise: RunNoise, c: Contention) -> float:
    dot = float(np.dot(PROFILES[victim.job], PROFILES[other.job]))
    pressure = other.scale_out / (other.scale_out + c.pressure_half_scale_out)
    shrink = (c.victim_ref_scale_out / victim.scale_out) ** c.gamma
    factor = noise.pair_factor.get((victim.job, other.job), 1.0)
    return c.kappa * factor * dot * pressure * shrink


def slowdown(victim: SimJob, others: Sequence[SimJob], noise: RunNoise, c: Contention) -> float:
    total = sum(pair_slowdown(victim, o, noise, c) for o in others if o is not victim)
    return c.saturation * math.tanh(total / c.saturation)


def simulate(jobs: Sequence[SimJob], noise: RunNoise, contention: Contention,
             until_s: float | None = None) -> list[SimJob]:
    """Advance copies of `jobs` to the end (or to `until_s`); returns them with finish/done."""
    def rates(active: Sequence[SimJob]) -> dict[str, float]:
        return {j.key: 1.0 / (1.0 + slowdown(j, active, noise, contention)) for j in active}

    return advance(jobs, rates, until_s)


def advance(jobs: Sequence[SimJob], job_rates: Callable[[Sequence[SimJob]], dict[str, float]],
            until_s: float | None = None) -> list[SimJob]:
    """Copies of `jobs` advanced from event to event (a start, an end) to the end or to
    `until_s`, each active job doing `job_rates(active)[key]` seconds of its work per second:
    the clock of both simulated worlds, which differ only in the rates."""
    state = [SimJob(j.key, j.job, j.scale_out, j.start_s, j.work_s) for j in jobs]
    if not state:
        return state
    t = min(j.start_s for j in state)
    horizon = math.inf if until_s is None else until_s
    while True:
        active = [j for j in state if j.start_s <= t and j.finish_s is None]
        pending = [j.start_s for j in state if j.start_s > t]
        if not active and not pending:
            break
        rates = job_rates(active)
        dt = min((j.work_s - j.done_s) / rates[j.key] for j in active) if active else math.inf
        if pending:
            dt = min(dt, min(pending) - t)
        if t + dt >= horizon:
            for j in active:
                j.done_s += rates[j.key] * (horizon - t)
                j.trace.append((horizon, j.done_s))
            break
        t += dt
        for j in active:
            j.done_s = min(j.work_s, j.done_s + rates[j.key] * dt)
            if j.work_s - j.done_s <= 1e-9 * j.work_s:
                j.done_s, j.finish_s = j.work_s, t
            j.trace.append((t, j.done_s))
    return state


# --- what a finished run's event log would sum (resource profiles, issue 28) --------------
#
# Off by default: nothing in the simulation reads it, so no other benchmark's draw moves. A
# job's demand per resource becomes the task metrics core/profile.py sums, in the event log's
# own terms, not the world's: memory-bandwidth stalls count as CPU time (with a little GC),
# disk time moves bytes at DISK_BYTES_PER_S, network time shuffles NET_BYTES_PER_S and waits
# for some fetches. Each figure carries log-normal noise per run (RESOURCE_SIGMA).

DISK_BYTES_PER_S = 40e6
NET_BYTES_PER_S = 25e6
RESOURCE_SIGMA = 0.15


def observed_resources(demand: Mapping[str, float], job: str, key: str, seed: int = 0,
                       task_s: float = 1000.0) -> dict[str, float]:
    """The summed task metrics (core/profile.py RESOURCE_SUMS) of `task_s` task-seconds of a
    run of `job` whose tasks split their time as `demand` ({resource: share}) says."""
    rng = np.random.default_rng([seed, zlib.crc32(f"{job}/{key}".encode()), 2])
    total = sum(demand.values()) or 1.0
    f = {r: v / total for r, v in demand.items()}

    def noisy(v: float) -> float:
        return v * float(rng.lognormal(0.0, RESOURCE_SIGMA))

    cpu, mem = f.get("cpu", 0.0), f.get("memory_bandwidth", 0.0)
    disk, net = f.get("disk", 0.0), f.get("network", 0.0)
    return {
        "run_s": task_s,
        "cpu_s": noisy(cpu + 0.8 * mem) * task_s,
        "gc_s": noisy(0.2 * mem + 0.02) * task_s,
        "input_bytes": noisy(0.7 * disk * DISK_BYTES_PER_S) * task_s,
        "output_bytes": noisy(0.3 * disk * DISK_BYTES_PER_S) * task_s,
        "shuffle_read_bytes": noisy(0.5 * net * NET_BYTES_PER_S) * task_s,
        "shuffle_write_bytes": noisy(0.5 * net * NET_BYTES_PER_S) * task_s,
        "shuffle_fetch_wait_s": noisy(0.3 * net) * task_s,
    }


def run_resources(job: str, key: str, seed: int = 0) -> dict[str, float]:
    """What the event log of one run of `job` in this world would sum (observed_resources)."""
    return observed_resources(dict(zip(RESOURCES, PROFILES[job], strict=True)), job, key, seed)


# --- what a running app's Spark driver would report ----------------------------------------


@dataclass(frozen=True)
class SparkShape:
    """A job's Spark structure: start-up share, then Spark jobs in order, each a chain of
    stages given as (share of the work, tasks). Shares are relative; they are scaled to fill
    what start-up leaves."""

    startup_share: float
    jobs: tuple[tuple[tuple[float, int], ...], ...]

    @property
    def stages(self) -> int:
        return sum(len(stages) for stages in self.jobs)


def _iterations(load: tuple[tuple[float, int], ...], step: tuple[tuple[float, int], ...],
                n: int, tail: tuple[tuple[float, int], ...] = ()) -> tuple:
    return (load, *([step] * n), *((tail,) if tail else ()))


# Spark structures assumed for the Bell jobs (executed stages only; skipped ones, whose output
# an earlier job left, are left out, as the progress reader leaves them out). Start-up (driver,
# executors registering) takes 3-8 % of a run. Iteration counts are fixed per job, as in the
# Bell experiments, so every run of a job executes the same number of stages.
SHAPES: dict[str, SparkShape] = {
    # textFile -> filter -> save: one job, one stage over the input splits
    "grep": SparkShape(0.05, ((( 1.0, 400),),)),
    # textFile -> flatMap -> reduceByKey -> save: one job, a map and a reduce stage
    "wordcount": SparkShape(0.05, (((0.65, 400), (0.35, 200)),)),
    # Spark SQL with adaptive execution: one job per query stage, submitted as the previous
    # finishes: nation broadcast, lineitem/orders/customer scans to shuffle, join+aggregate,
    # sort+limit
    "tpchq10": SparkShape(0.04, (((0.02, 1),), ((0.40, 300),), ((0.20, 120),), ((0.08, 40),),
                                 ((0.25, 200),), ((0.05, 200),))),
    # load links (read, group) in one job, then one job per iteration (join + reduceByKey;
    # earlier stages skipped), then save the ranks
    "pagerank": SparkShape(0.04, _iterations(((0.12, 200), (0.08, 200)), ((0.075, 200),), 10,
                                             ((0.05, 200),))),
    # load and cache, then one treeAggregate job (two stages) per iteration
    "sgd": SparkShape(0.06, _iterations(((0.15, 200),), ((0.035, 200), (0.007, 8)), 20)),
    # load and cache, then one job per iteration (assign points, sum per centroid)
    "kmeans": SparkShape(0.05, _iterations(((0.10, 200),), ((0.06, 200), (0.015, 8)), 12)),
}
SHAPE_SIGMA = 0.3  # log-normal jitter of every stage's work share and of start-up, per run
TASK_JITTER = 0.5  # a task ends within the last half of its wave, uniformly


def executed_stages(job: str) -> int:
    """Stages one run of `job` executes (the same in every run: fixed iterations)."""
    return SHAPES[job].stages


def run_shape(job: str, key: str, seed: int = 0) -> tuple[float, list[list[float]]]:
    """(start-up share, work share of each stage per Spark job) of one run, jittered per run.

    Deterministic per (seed, job, key) and drawn from a stream of its own, so the driver's
    reports change no draw of the run noise.
    """
    shape = SHAPES[job]
    rng = np.random.default_rng([seed, zlib.crc32(f"{job}/{key}".encode()), 0])
    startup = min(shape.startup_share * float(rng.lognormal(0.0, SHAPE_SIGMA)), 0.5)
    shares = [[w * float(rng.lognormal(0.0, SHAPE_SIGMA)) for w, _ in stages]
              for stages in shape.jobs]
    scale = (1.0 - startup) / sum(sum(s) for s in shares)
    return startup, [[w * scale for w in s] for s in shares]


def stage_shares(job: str, key: str, seed: int = 0) -> list[float]:
    """Each executed stage's share of one run's stage work: what its event-log profile says
    (task time per stage, in submission order)."""
    startup, shares = run_shape(job, key, seed)
    return [w / (1.0 - startup) for stages in shares for w in stages]


def driver_progress(job: SimJob, seed: int = 0) -> DriverProgress:
    """What `job`'s Spark driver would answer now: jobs submitted so far and their stages.

    `job.done_s` is how much isolated work it has done; its trace gives when start-up ended
    (the first job's submission time the REST API reports).
    """
    shape = SHAPES[job.job]
    startup, shares = run_shape(job.job, job.key, seed)
    rng = np.random.default_rng([seed, zlib.crc32(f"{job.job}/{job.key}".encode()), 1])
    done = min(max(job.done_s / job.work_s, 0.0), 1.0)
    slots = max(int(job.scale_out), 1)
    counts = {"jobs_known": 0, "jobs_done": 0, "stages_known": 0, "stages_complete": 0,
              "tasks_known": 0, "tasks_done": 0}
    active: list[float] = []
    t = startup
    for stages, job_shares in zip(shape.jobs, shares, strict=True):
        if done < t:  # not submitted yet: the driver does not know it
            break
        counts["jobs_known"] += 1
        counts["stages_known"] += len(stages)
        finished = True
        for (_, tasks), span in zip(stages, job_shares, strict=True):
            phase = (done - t) / span if span > 0 else 1.0
            completed, running = _tasks(rng, tasks, slots, phase)
            counts["tasks_known"] += tasks
            counts["tasks_done"] += completed
            if completed == tasks:
                counts["stages_complete"] += 1
            elif phase > 0:
                active.append(stage_fraction(completed, running, tasks))
            finished = finished and completed == tasks
            t += span
        counts["jobs_done"] += finished
    first_job_at = job.time_at(startup * job.work_s) if counts["jobs_known"] else None
    return DriverProgress(active_fractions=tuple(active), first_job_at=first_job_at, **counts)


def _tasks(rng: np.random.Generator, tasks: int, slots: int, phase: float) -> tuple[int, int]:
    """(completed, running) tasks of a stage `phase` (0..1) of the way through its work.

    Tasks run in waves of `slots`; each ends in the last TASK_JITTER of its wave's span.
    The draws are made whatever the phase, so every stage consumes the same numbers.
    """
    waves = -(-tasks // slots)
    ends = (np.arange(tasks) // slots + 1.0 - TASK_JITTER * rng.random(tasks)) / waves
    if phase <= 0:
        return 0, 0
    completed = int(np.count_nonzero(ends <= phase)) if phase < 1 else tasks
    return completed, min(slots, tasks - completed)


# --- executor memory (issue 26; only bench/memory_e2e.py reads it) --------------------------


@dataclass(frozen=True)
class MemoryBehaviour:
    """How a job's live heap per executor grows: base + scale · g(z / ref), z the input each
    executor processes (MB) when `per_executor`, else the whole input; g one of the shapes
    memory grows by. Chosen from what the jobs hold, not fitted to cobell's experts."""

    form: str  # "linear" | "saturating" | "power" | "log"
    per_executor: bool
    base_mb: float
    scale_mb: float
    ref_mb: float

    def live_mb(self, input_mb: float, scale_out: int) -> float:
        z = (input_mb / scale_out if self.per_executor else input_mb) / self.ref_mb
        g = {"linear": z, "saturating": 1.0 - math.exp(-z), "power": z ** 0.5,
             "log": math.log1p(z)}[self.form]
        return self.base_mb + self.scale_mb * g


# SGD caches its training partitions (heap grows with each executor's share); K-Means caches
# the points and keeps per-centroid sums (saturating once every centroid is populated).
MEMORY: dict[str, MemoryBehaviour] = {
    "sgd": MemoryBehaviour("linear", True, 700.0, 800.0, 1000.0),
    "kmeans": MemoryBehaviour("saturating", True, 600.0, 2600.0, 1500.0),
}
INPUT_MB: dict[str, float] = {"sgd": 30_000.0, "kmeans": 40_000.0}  # a typical night's input
MEMORY_HEADROOM = 1.15  # a JVM fails below ~15 % above its live peak (GC cannot keep up)
MEMORY_SIGMA = 0.04  # log-normal run-to-run noise of the live heap
# What a run's event log reports as its heap peak at reservation R: the live peak plus a
# share of the slack R - live that garbage fills before a collection, uniform in this range
GARBAGE_FILL = (0.04, 0.55)


def memory_need_mb(job: str, input_mb: float, scale_out: int, noise: float) -> float:
    """The heap one run of `job` needs per executor (`noise`: its log-normal factor)."""
    return MEMORY_HEADROOM * MEMORY[job].live_mb(input_mb, scale_out) * noise


def heap_peak_mb(need_mb: float, reserved_mb: float, fill: float) -> float:
    """The heap peak a succeeded run's event log reports (garbage included)."""
    live = need_mb / MEMORY_HEADROOM
    return min(reserved_mb, live + fill * max(reserved_mb - live, 0.0))


__all__ = ["JOB_FILES", "PROFILES", "RESOURCES", "SHAPES", "Contention", "Curve", "RunNoise",
           "SimJob", "SparkShape", "advance", "driver_progress", "executed_stages", "load_curves",
           "observed_resources", "pair_slowdown", "run_resources", "run_shape", "simulate",
           "slowdown", "stage_shares"]
