"""A second ground truth for the co-location benchmark: node-level contention for resources.

Structurally different from `bench/simulator.py` (the first world), so that no decision rule
can be tuned to one world:

* The cluster has `Cluster.nodes` nodes (64: the Bell experiments went up to 60), each with
  capacity 1 of every resource in RESOURCES (cpu, disk, network). A job at scale-out x runs one
  executor on each of x distinct nodes: the first x of a random node order drawn per job and
  run (`NodeNoise.placement`; YARN places containers where heartbeats offer room, not where
  the load is lowest).
* Each executor of a job demands a fixed share of every resource of its node (PROFILES, below;
  jittered per run by a log-normal factor). Per node and resource the executors on it share
  the capacity max-min fairly (`fair_shares`: nobody gets more than it asks, the rest split
  evenly). Below capacity nobody is slowed.
* An executor progresses at the rate of its scarcest resource: min over resources of
  granted / demanded (1 when it gets all it asks). A job's tasks are pulled by whichever
  executor is free, so the job's progress rate is the mean of its executors' rates: an
  executor on a crowded node costs the job in proportion to the share of its executors there,
  whatever the job's scale-out (unlike cobell's a + b/x, the effect need not shrink with x).
* Event by event: rates change only when a job starts or finishes; a job's remaining work (in
  isolated seconds) advances at its rate. A slowed co-runner lasts longer and so overlaps, and
  slows, the others longer.
* Isolated runtimes are measured ones: a repetition of the Bell data (../shared/data/bell) at
  each measured scale-out, interpolated in log-log space in between (`bench.simulator.Curve`).
  Alone, every executor has a node to itself, so the job runs exactly its Bell runtime.

What follows from it (and what cobell's additive model Σ_k (a_k + b_k/x)·ov_k does not say):
co-runners that press on different resources of a node slow an executor by the scarcest one
(the larger effect, not the sum); co-runners on the same node and resource saturate as seen
by the job: a second one on the same disk takes less extra time than the first (the job's
executors elsewhere pick up its tasks); co-runners on different nodes of the job add up
(slightly more than linearly). A co-runner's effect grows with its own scale-out (the share
of the job's nodes it reaches) and not with the job's.

Resource profiles (per executor, share of a node's cpu, disk, network), chosen from what each
job does, not fitted to any outcome:

* sgd       (0.90, 0.15, 0.35): gradient steps over cached partitions, cpu-bound; a small
            aggregate per iteration over the network.
* kmeans    (0.95, 0.10, 0.20): distance computations over cached points, cpu-bound; tiny
            centroid updates.
* pagerank  (0.45, 0.25, 0.95): a shuffle of rank contributions every iteration: network.
* grep      (0.30, 0.95, 0.10): a scan of the input with a cheap predicate: disk.
* tpchq10   (0.50, 0.70, 0.60): scans of four tables joined by shuffles: disk and network.
* wordcount (0.60, 0.60, 0.55): reads, tokenises and shuffles counts: all three moderately.

What a running app's Spark driver would say at a decision (`driver_progress`): the same
Spark structures as the first world (`bench.simulator.SHAPES`), read from how much of its
isolated work the app has done here: the completed and known jobs, stages and tasks.

Pure and deterministic given the noise (drawn from a seeded generator) apart from
`load_curves` (re-exported from bench.simulator; reads the CSVs).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from bench.simulator import (
    JOB_FILES,
    MEMORY_HEADROOM,
    Curve,
    MemoryBehaviour,
    SimJob,
    advance,
    driver_progress,
    load_curves,
    observed_resources,
)
from bench.simulator import heap_peak_mb as simulator_heap_peak_mb

RESOURCES = ("cpu", "disk", "network")

PROFILES: dict[str, tuple[float, float, float]] = {
    "sgd": (0.90, 0.15, 0.35),
    "kmeans": (0.95, 0.10, 0.20),
    "pagerank": (0.45, 0.25, 0.95),
    "grep": (0.30, 0.95, 0.10),
    "tpchq10": (0.50, 0.70, 0.60),
    "wordcount": (0.60, 0.60, 0.55),
}


@dataclass(frozen=True)
class Cluster:
    """Constants of the node world: how many nodes, and how much demands vary per run."""

    nodes: int = 64
    demand_sigma: float = 0.10  # log-normal jitter of a job's demands per run


@dataclass(frozen=True)
class NodeNoise:
    """Everything random about one experiment run, drawn before any strategy decides."""

    rep_index: Mapping[str, tuple[int, ...]]  # job -> repetition per measured scale-out
    placement: Mapping[str, tuple[int, ...]]  # job -> node order; scale-out x uses the first x
    demands: Mapping[str, tuple[float, ...]]  # job -> per-executor demand per resource

    @staticmethod
    def draw(rng: np.random.Generator, curves: Mapping[str, Curve], cluster: Cluster) -> NodeNoise:
        jobs = sorted(curves)
        reps = {j: tuple(int(i) for i in rng.integers(0, curves[j].reps,
                                                      len(curves[j].scale_outs)))
                for j in jobs}
        placement = {j: tuple(int(n) for n in rng.permutation(cluster.nodes)) for j in jobs}
        demands = {j: tuple(min(1.0, d * float(rng.lognormal(0.0, cluster.demand_sigma)))
                            for d in PROFILES[j])
                   for j in jobs}
        return NodeNoise(reps, placement, demands)


def fair_shares(demands: Sequence[float], capacity: float = 1.0) -> list[float]:
    """Max-min fair split of one resource: nobody gets more than it asks, the rest evenly."""
    if sum(demands) <= capacity:
        return list(demands)
    out = [0.0] * len(demands)
    left, remaining = capacity, len(demands)
    for i in sorted(range(len(demands)), key=lambda k: demands[k]):
        share = left / remaining
        out[i] = min(demands[i], share)
        left -= out[i]
        remaining -= 1
    return out


def executor_rates(demands: Sequence[Sequence[float]], capacity: float = 1.0) -> list[float]:
    """Rates of the executors sharing one node: each at its scarcest resource's grant/demand."""
    rates = [1.0] * len(demands)
    for r in range(len(RESOURCES)):
        grants = fair_shares([d[r] for d in demands], capacity)
        for i, (d, g) in enumerate(zip(demands, grants, strict=True)):
            if d[r] > 0:
                rates[i] = min(rates[i], g / d[r])
    return rates


def nodes_of(job: SimJob, noise: NodeNoise) -> tuple[int, ...]:
    """The nodes of a job's executors: the first scale_out of its drawn node order."""
    order = noise.placement[job.job]
    if job.scale_out > len(order):
        raise ValueError(f"scale-out {job.scale_out} exceeds the cluster's {len(order)} nodes")
    return order[: job.scale_out]


def job_rates(active: Sequence[SimJob], noise: NodeNoise) -> dict[str, float]:
    """Progress rate of every active job: the mean rate of its executors.

    Nodes that hold the same jobs in the same order share one executor_rates: tens of nodes
    come in a handful of such mixes, and the simulators call this millions of times."""
    by_node: dict[int, list[SimJob]] = {}
    for job in active:
        for node in nodes_of(job, noise):
            by_node.setdefault(node, []).append(job)
    total = {job.key: 0.0 for job in active}
    by_mix: dict[tuple[str, ...], list[float]] = {}
    for jobs in by_node.values():
        mix = tuple(j.job for j in jobs)
        if (rates := by_mix.get(mix)) is None:
            rates = by_mix[mix] = executor_rates([noise.demands[name] for name in mix])
        for job, rate in zip(jobs, rates, strict=True):
            total[job.key] += rate
    return {job.key: total[job.key] / job.scale_out for job in active}


def simulate(jobs: Sequence[SimJob], noise: NodeNoise, cluster: Cluster | None = None,
             until_s: float | None = None) -> list[SimJob]:
    """Advance copies of `jobs` to the end (or to `until_s`); returns them with finish/done.

    `cluster` is accepted for the same signature as bench.simulator.simulate; the node count is
    already in the noise's placements.
    """
    del cluster
    return advance(jobs, lambda active: job_rates(active, noise), until_s)


def run_resources(job: str, key: str, seed: int = 0) -> dict[str, float]:
    """What the event log of one run of `job` in this world would sum: its demands in the event
    log's terms (bench.simulator.observed_resources). Off by default: nothing here reads it."""
    return observed_resources(dict(zip(RESOURCES, PROFILES[job], strict=True)), job, key, seed)


__all__ = ["JOB_FILES", "PROFILES", "RESOURCES", "Cluster", "NodeNoise", "driver_progress",
           "executor_rates", "fair_shares", "job_rates", "load_curves", "nodes_of", "run_resources",
           "simulate"]


# --- executor memory (issue 26; only bench/memory_e2e.py reads it) --------------------------
#
# Not the first world's memory either: other shapes (SGD's executors hold a sampled model
# whose size grows as the root of their share; K-Means' centroid statistics grow with the
# logarithm of the whole input), and the largest executor decides: hash partitioning's
# largest share grows ~ log x above the mean, so the need is not a function of the input per
# executor alone. The heap peak an event log reports is sampled at heartbeats: it may fall
# short of the live peak (PEAK_SAMPLED of it, at worst).

MEMORY = {
    "sgd": MemoryBehaviour("power", True, 500.0, 1400.0, 1000.0),
    "kmeans": MemoryBehaviour("log", False, 800.0, 900.0, 20_000.0),
}
MEMORY_SKEW = 0.12
PEAK_SAMPLED = 0.90


def memory_need_mb(job: str, input_mb: float, scale_out: int, noise: float) -> float:
    """The heap the largest executor of one run of `job` needs (`noise`: its factor)."""
    skew = 1.0 + MEMORY_SKEW * math.log(scale_out)
    return MEMORY_HEADROOM * MEMORY[job].live_mb(input_mb * skew, scale_out) * noise


def heap_peak_mb(need_mb: float, reserved_mb: float, fill: float) -> float:
    """The reported heap peak: garbage as in the first world, the top possibly missed."""
    sampled = PEAK_SAMPLED + (1.0 - PEAK_SAMPLED) * fill
    return sampled * simulator_heap_peak_mb(need_mb, reserved_mb, fill)
