"""The node-level contention world (bench/nodesim.py): its physics, event by event."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from bench import nodesim as ns
from bench.simulator import SimJob

LIGHT = (0.4, 0.3, 0.2)


def _noise(placement: dict[str, tuple[int, ...]],
           demands: dict[str, tuple[float, float, float]]) -> ns.NodeNoise:
    return ns.NodeNoise(rep_index={}, placement=placement, demands=demands)


def test_fair_shares_never_exceed_demand_and_fill_the_capacity():
    assert ns.fair_shares([0.2, 0.3]) == [0.2, 0.3]  # below capacity: all they ask
    shares = ns.fair_shares([0.2, 0.9, 0.9])
    assert shares[0] == pytest.approx(0.2)  # the small one keeps its demand
    assert shares[1] == pytest.approx(0.4) and shares[2] == pytest.approx(0.4)
    assert sum(shares) == pytest.approx(1.0)


def test_no_slowdown_below_capacity():
    assert ns.executor_rates([LIGHT, (0.5, 0.6, 0.7)]) == [1.0, 1.0]
    noise = _noise({"a": (0, 1, 2, 3), "b": (0, 1, 2, 3)}, {"a": LIGHT, "b": (0.6, 0.7, 0.8)})
    out = ns.simulate([SimJob("a", "a", 4, 0.0, 100.0), SimJob("b", "b", 4, 10.0, 50.0)], noise)
    assert out[0].finish_s == pytest.approx(100.0)
    assert out[1].finish_s == pytest.approx(60.0)


def test_the_scarcest_resource_decides_the_rate():
    victim = (0.8, 0.8, 0.1)
    cpu_hog, disk_hog = (0.8, 0.0, 0.0), (0.0, 0.8, 0.0)
    one = ns.executor_rates([victim, cpu_hog])[0]
    assert one == pytest.approx(0.5 / 0.8)  # half the cpu of what it asks
    # A second co-runner pressing another resource just as hard does not slow it further:
    # the rate is the minimum over resources, not a product or a sum.
    both = ns.executor_rates([victim, cpu_hog, disk_hog])[0]
    assert both == pytest.approx(one)
    # ...but one pressing harder on any resource does.
    worse = ns.executor_rates([victim, cpu_hog, (0.0, 0.95, 0.0), (0.0, 0.95, 0.0)])[0]
    assert worse == pytest.approx((1 / 3) / 0.8)


def test_two_co_runners_saturating_the_same_disk_do_not_double_the_slowdown():
    disk = (0.1, 0.9, 0.1)
    placement = {"victim": (0, 1, 2, 3), "c1": (0,), "c2": (0,)}
    noise = _noise(placement, {"victim": disk, "c1": disk, "c2": disk})
    victim = SimJob("v", "victim", 4, 0.0, 100.0)
    forever = 1e9

    def runtime(co: list[str]) -> float:
        jobs = [SimJob(c, c, 1, 0.0, forever) for c in co] + [victim]
        return ns.simulate(jobs, noise)[-1].finish_s

    extra_one, extra_two = runtime(["c1"]) - 100.0, runtime(["c1", "c2"]) - 100.0
    assert extra_one > 1.0
    assert extra_one < extra_two < 2 * extra_one
    # The same two co-runners on different nodes of the job do add up (at least).
    apart = _noise({**placement, "c2": (1,)}, {"victim": disk, "c1": disk, "c2": disk})
    jobs = [SimJob("c1", "c1", 1, 0.0, forever), SimJob("c2", "c2", 1, 0.0, forever), victim]
    assert ns.simulate(jobs, apart)[-1].finish_s - 100.0 >= 2 * extra_one - 1e-6


def test_a_slowed_co_runner_finishes_later_and_cascades():
    heavy = (0.9, 0.9, 0.9)
    noise = _noise({"w": (0, 1), "t": (0, 1, 2, 3), "g": (0, 1)},
                   {"w": heavy, "t": heavy, "g": heavy})
    w = SimJob("w", "w", 2, 0.0, 200.0)
    t = SimJob("t", "t", 4, 100.0, 200.0)
    alone = ns.simulate([w], noise)[0]
    pair = ns.simulate([w, t], noise)
    assert alone.finish_s == pytest.approx(200.0)
    assert pair[0].finish_s > 200.0 + 1.0  # the target slows the co-runner
    assert pair[1].finish_s > 300.0 + 1.0  # and the co-runner the target
    # A third job that ends before the target starts still slows the co-runner, which then
    # overlaps (and slows) the target longer.
    g = SimJob("g", "g", 2, 0.0, 50.0)
    trio = ns.simulate([g, w, t], noise)
    assert trio[0].finish_s < 100.0
    assert trio[1].finish_s > pair[0].finish_s
    assert trio[2].finish_s > pair[1].finish_s


def test_progress_until_a_time_and_determinism(bell_dir: Path):
    curves = ns.load_curves(bell_dir)
    a = ns.NodeNoise.draw(np.random.default_rng(5), curves, ns.Cluster())
    b = ns.NodeNoise.draw(np.random.default_rng(5), curves, ns.Cluster())
    assert a == b
    jobs = [SimJob("w", "wordcount", 24, 0.0, 400.0), SimJob("t", "sgd", 40, 100.0, 300.0)]
    at = ns.simulate(jobs, a, until_s=50.0)
    assert at[0].done_s == pytest.approx(50.0) and at[1].done_s == 0.0
    full = ns.simulate(jobs, a)
    assert [j.finish_s for j in full] == [j.finish_s for j in ns.simulate(jobs, b)]
    assert full[1].finish_s > 400.0  # 40 of 64 nodes: the two jobs must share some


def test_isolated_runtime_reproduces_the_bell_curve(bell_dir: Path):
    curves = ns.load_curves(bell_dir)
    noise = ns.NodeNoise.draw(np.random.default_rng(1), curves, ns.Cluster())
    for job, curve in curves.items():
        with (bell_dir / ns.JOB_FILES[job]).open(newline="") as fh:
            real: dict[int, set[float]] = {}
            for row in csv.DictReader(fh):
                real.setdefault(int(row["Nodes"]), set()).add(float(row["Runtime"]) / 1000)
        for x in curve.scale_outs:
            work = curve.isolated_s(x, noise.rep_index[job])
            assert work in real[int(x)]
            done = ns.simulate([SimJob("j", job, int(x), 5.0, work)], noise)[0]
            assert done.finish_s - 5.0 == pytest.approx(work)
    # All demands stay within one node's capacity: alone, nothing is slowed.
    assert all(0 < d <= 1 for ds in noise.demands.values() for d in ds)


def test_more_nodes_than_the_cluster_is_an_error(bell_dir: Path):
    curves = ns.load_curves(bell_dir)
    noise = ns.NodeNoise.draw(np.random.default_rng(1), curves, ns.Cluster(nodes=8))
    with pytest.raises(ValueError, match="exceeds the cluster"):
        ns.simulate([SimJob("j", "sgd", 9, 0.0, 10.0)], noise)


def test_job_rates_shared_by_nodes_with_the_same_mix_are_each_nodes_own():
    """job_rates computes one executor_rates per mix of jobs on a node; the sums must equal
    those of every node computed on its own, in the same order."""
    rng = np.random.default_rng(3)
    names = ("a", "b", "c", "d")
    demands = {n: tuple(float(v) for v in rng.uniform(0.1, 0.9, len(ns.RESOURCES)))
               for n in names}
    placement = {n: tuple(int(i) for i in rng.permutation(12)) for n in names}
    noise = _noise(placement, demands)
    active = [SimJob(f"k{i}", n, int(rng.integers(2, 13)), 0.0, 100.0)
              for i, n in enumerate([*names, "a"])]  # two runs of the same job too
    by_node: dict[int, list[SimJob]] = {}
    for job in active:
        for node in ns.nodes_of(job, noise):
            by_node.setdefault(node, []).append(job)
    total = {job.key: 0.0 for job in active}
    for jobs in by_node.values():
        for job, rate in zip(jobs, ns.executor_rates([demands[j.job] for j in jobs]),
                             strict=True):
            total[job.key] += rate
    assert len({tuple(j.job for j in jobs) for jobs in by_node.values()}) < len(by_node)
    assert ns.job_rates(active, noise) == {j.key: total[j.key] / j.scale_out for j in active}
