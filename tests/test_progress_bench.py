"""What the simulated worlds' drivers report (bench/simulator.py, bench/nodesim.py) and the
live-progress benchmark (bench/studies/progress.py, bench/colocation.py's live-progress row)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bench import colocation, nodesim
from bench import simulator as sim
from bench.simulator import SHAPES, SimJob, driver_progress, executed_stages, stage_shares
from bench.studies import progress as progress_bench


def _world_runs(world: str, bell_dir, job: str, until_s: float) -> SimJob:
    curves = sim.load_curves(bell_dir)
    rng = np.random.default_rng(3)
    jobs = [SimJob("co0-1", job, 16, 0.0, curves[job].isolated_s(16, [0] * 15)),
            SimJob("co1-1", "grep", 24, 30.0, curves["grep"].isolated_s(24, [0] * 15))]
    if world == "simulator":
        noise = sim.RunNoise.draw(rng, curves, sim.Contention())
        return sim.simulate(jobs, noise, sim.Contention(), until_s=until_s)[0]
    noise = nodesim.NodeNoise.draw(rng, curves, nodesim.Cluster())
    return nodesim.simulate(jobs, noise, until_s=until_s)[0]


@pytest.mark.parametrize("world", ["simulator", "nodesim"])
def test_a_running_app_reports_only_the_jobs_submitted_so_far(world, bell_dir):
    total_jobs = len(SHAPES["pagerank"].jobs)
    seen = []
    for until in (1.0, 40.0, 120.0, 250.0, 10_000.0):
        job = _world_runs(world, bell_dir, "pagerank", until)
        d = nodesim.driver_progress(job) if world == "nodesim" else driver_progress(job)
        seen.append(d)
        assert d.jobs_done <= d.jobs_known <= total_jobs
        assert d.stages_complete + len(d.active_fractions) <= d.stages_known
        assert d.tasks_done <= d.tasks_known
        if d.jobs_known:
            assert d.first_job_at is not None and job.start_s < d.first_job_at <= until
    assert seen[0].jobs_known == 0  # start-up: no job yet
    assert 0 < seen[1].jobs_known < total_jobs  # later iterations not known yet
    for a, b in itertools.pairwise(seen):  # progress only grows
        assert b.jobs_known >= a.jobs_known and b.stages_done >= a.stages_done - 1e-9
    last = seen[-1]
    assert last.jobs_done == last.jobs_known == total_jobs
    assert last.stages_complete == last.stages_known == executed_stages("pagerank")


def test_the_trace_says_when_work_was_done(bell_dir):
    job = _world_runs("simulator", bell_dir, "wordcount", 10_000.0)
    assert job.finish_s is not None
    assert job.time_at(0.0) == job.start_s
    assert job.time_at(job.work_s) == pytest.approx(job.finish_s)
    half = job.time_at(0.5 * job.work_s)
    assert job.start_s < half < job.finish_s


def test_past_runs_stage_shares_and_per_run_jitter():
    for name, shape in SHAPES.items():
        shares = stage_shares(name, "history-1")
        assert len(shares) == shape.stages == executed_stages(name)
        assert sum(shares) == pytest.approx(1.0)
        if shape.stages > 1:  # every run's stages weigh a little differently
            assert shares != stage_shares(name, "history-2")
        assert shares == stage_shares(name, "history-1")  # and are reproducible


def test_the_progress_benchmark_compares_with_and_without(bell_dir):
    cfg = colocation.Config(worlds=("nodesim",), targets=("sgd",), variants=("pair",),
                            runs_per_interferer=2)
    vs = progress_bench.variants([0.8], [0.0])
    results = progress_bench.run(cfg, bell_dir, vs)
    per = results[("nodesim", "pair", "sgd")]
    assert set(per) == {v.name for v in vs}
    n = len(per["no progress"].overlap_errors)
    assert n > 0 and all(len(t.overlap_errors) == n for t in per.values())
    assert per["no progress"].sources.get("progress", 0) == 0
    assert per["w_max 0.8, power 0"].sources.get("progress", 0) > 0
    assert all(0 <= e <= 1 for t in per.values() for e in t.overlap_errors)
    text = progress_bench.render(results, vs, cfg, "test", 1.0, "0.0")
    assert "| nodesim | no progress |" in text and "nan" not in text
    # the colocation table has the live-progress row, planned as the default with drivers
    assert "progress" in colocation.STRATEGIES
    assert colocation.planner_key("progress") == colocation.planner_key("default")
