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

Pure apart from `load_curves` (reads the CSVs).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

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
        rates = {j.key: 1.0 / (1.0 + slowdown(j, active, noise, contention)) for j in active}
        dt = min((j.work_s - j.done_s) / rates[j.key] for j in active) if active else math.inf
        if pending:
            dt = min(dt, min(pending) - t)
        if t + dt >= horizon:
            for j in active:
                j.done_s += rates[j.key] * (horizon - t)
            break
        t += dt
        for j in active:
            j.done_s = min(j.work_s, j.done_s + rates[j.key] * dt)
            if j.work_s - j.done_s <= 1e-9 * j.work_s:
                j.done_s, j.finish_s = j.work_s, t
    return state


__all__ = ["JOB_FILES", "PROFILES", "RESOURCES", "Contention", "Curve", "RunNoise", "SimJob",
           "load_curves", "pair_slowdown", "simulate", "slowdown"]
