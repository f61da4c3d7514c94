"""Smoke tests of the benchmarks (issue 6): the simulator's physics, tiny experiment runs whose
reports must be well-formed and sane, and the latency harness on a tiny history."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from bench.simulator import Contention, RunNoise, SimJob, load_curves, simulate
from cobell_cli.core.calibration import JACKKNIFE_MAX_FITS

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def curves(bell_dir: Path):
    return load_curves(bell_dir)


def _noise(curves, seed: int = 0) -> RunNoise:
    return RunNoise.draw(np.random.default_rng(seed), curves, Contention())


# --- simulator -----------------------------------------------------------------------------


def test_isolated_runtime_is_a_real_repetition_and_keeps_the_cliff(curves, bell_dir):
    import csv

    noise = _noise(curves)
    with (bell_dir / "pagerank.spark.csv").open() as fh:
        real_at_8 = {float(r["Runtime"]) / 1000 for r in csv.DictReader(fh) if r["Nodes"] == "8"}
    at_8 = curves["pagerank"].isolated_s(8, noise.rep_index["pagerank"])
    assert at_8 in real_at_8
    at_4 = curves["pagerank"].isolated_s(4, noise.rep_index["pagerank"])
    assert at_4 > 2.5 * at_8  # the cliff: ~1.1-1.5k s at 4 nodes vs ~0.3k s at 8
    between = curves["sgd"].isolated_s(22, noise.rep_index["sgd"])
    lo = curves["sgd"].isolated_s(20, noise.rep_index["sgd"])
    hi = curves["sgd"].isolated_s(24, noise.rep_index["sgd"])
    assert min(lo, hi) <= between <= max(lo, hi)


def test_overlap_slows_down_and_cascades(curves):
    noise = _noise(curves)
    c = Contention()
    alone = simulate([SimJob("t", "sgd", 20, 100.0, 300.0)], noise, c)[0]
    assert alone.finish_s == pytest.approx(400.0)
    pair = [SimJob("w", "wordcount", 24, 0.0, 400.0), SimJob("t", "sgd", 20, 100.0, 300.0)]
    slowed = simulate(pair, noise, c)
    assert slowed[1].finish_s > 400.0 + 1.0  # the target is slowed while they overlap
    assert slowed[0].finish_s > 400.0 + 1.0  # and slows the co-runner in return
    # A third job slows the co-runner, which then overlaps the target longer: the target ends
    # later even though the third job ends before the target starts.
    trio = [SimJob("g", "grep", 32, -200.0, 250.0), *pair]
    cascaded = simulate(trio, noise, c)
    assert cascaded[0].finish_s < 100.0
    assert cascaded[1].finish_s > slowed[0].finish_s
    assert cascaded[2].finish_s > slowed[1].finish_s


def test_progress_until_a_time(curves):
    noise = _noise(curves)
    jobs = [SimJob("w", "wordcount", 24, 0.0, 400.0), SimJob("t", "sgd", 20, 100.0, 300.0)]
    at = simulate(jobs, noise, Contention(), until_s=50.0)
    assert at[0].done_s == pytest.approx(50.0)  # alone so far: full speed
    assert at[1].done_s == 0.0 and at[1].finish_s is None
    later = simulate(jobs, noise, Contention(), until_s=200.0)
    assert 100.0 < later[0].done_s < 200.0


# --- co-location experiment ----------------------------------------------------------------


def test_tiny_colocation_experiment_report(bell_dir):
    from bench import colocation as co

    cfg = co.Config(targets=("sgd",), variants=("pair",), runs_per_interferer=2)
    results = co.run_experiment(cfg, bell_dir)
    assert set(results) == {(w, "pair", "sgd") for w in co.WORLDS}
    for (_, variant, _), per in results.items():
        assert set(per) == set(co.STRATEGIES)
        n = 2 * len(co.INTERFERERS)
        assert all(len(recs) == n for recs in per.values())
        # every strategy faced the same runs
        for i in range(n):
            assert len({per[s][i].co_jobs for s in co.STRATEGIES}) == 1
        assert all(len(r.co_jobs) == co.VARIANTS[variant] for r in per["bell"])
        phases = [r.phase for r in per["bell"]]
        assert phases[:3] == ["bootstrap-search"] * 3
        assert phases[3:6] == ["bootstrap-parametric"] * 3
        assert set(phases[6:]) == {"model"}
        # Too few of Bell's own outcomes for a margin yet: Bell + conformal is Bell.
        for margin in set(co.MARGINS) & set(per):
            assert [r.scale_out for r in per[margin]] == [r.scale_out for r in per["bell"]]
        # The default row plans as the CLI does without flags; an equal explicit level is the
        # same plan() call, so the same runs.
        for twin in ("cobell90", "cobell97"):
            if co.planner_key(twin) == co.planner_key("default"):
                assert [r.scale_out for r in per[twin]] == [r.scale_out for r in per["default"]]
        # Bell predicts no overlaps; the interference strategies do, once past the bootstrap.
        assert not any(r.overlap_errors for r in per["bell"])
        assert any(r.overlap_errors for r in per["paper"] if not r.bootstrap)
        assert all(0 <= e <= 3 for r in per["default"] for e in r.overlap_errors)
        # measured overlaps were recorded; most runs overlap their co-runner
        assert sum(r.overlap_ratio > 0 for r in per["bell"]) >= n // 2
        oracle = co.summarise(per["oracle"], per["oracle"])
        for strategy in co.STRATEGIES:
            s = co.summarise(per[strategy], per["oracle"])
            assert s["runs"] == n - co.MODEL_FROM_USABLE
            assert co.summarise(per[strategy], per["oracle"], bootstrap=True)["runs"] == 6
            assert all(math.isfinite(v) and v >= 0 for k, v in s.items() if k != "overlap_mae")
            assert oracle["over_share_pct"] <= s["over_share_pct"]
            assert s["node_s_vs_oracle"] > 0.5
        assert oracle["node_s_vs_oracle"] == pytest.approx(1.0)
    text = co.render(results, cfg, "test", 0.0)
    cells = [line for line in text.splitlines() if line.startswith("| nodesim | pair | sgd ")]
    assert len(cells) == len(co.STRATEGIES) + 1  # one per strategy, the default's worst run
    pooled = [line for line in text.splitlines() if line.startswith("| simulator | Bell |")]
    assert len(pooled) == 2  # post-bootstrap and bootstrap
    assert "Goal check (cobell default, post-bootstrap): met in" in text
    assert "nan" not in text and "inf" not in text


def test_bell_conformal_margin_is_the_conformal_bound_of_bells_own_ratios(bell_dir):
    from bench import colocation as co
    from cobell_cli.core.calibration import ratio_bound
    from cobell_cli.core.plan import plan

    memory = co.World("sgd")
    for k, x in enumerate((8, 12, 16, 20, 24, 28, 32, 36, 40, 44)):
        runtime = 30.0 + 6000.0 / x  # every run took 25 % longer than Bell predicted
        memory.add("sgd", scale_out=x, runtime_s=runtime, started_at=k * 1e4,
                   finished_at=k * 1e4 + runtime, target_s=350.0, overlaps={},
                   predicted_s=runtime / 1.25, model="model")
    setup = co.RunSetup(11, (), (), (), 2e5, None)
    bell = co.decide("bell", memory, setup, 350.0, [])
    careful = co.decide("bell90", memory, setup, 350.0, [])
    margin = ratio_bound([1.25] * 10, 0.9)
    assert margin == pytest.approx(1.25)
    again = plan(job="sgd", history=memory.histories["sgd"], now=2e5, target_s=350.0 / margin,
                 min_scale_out=co.MIN_SCALE_OUT, max_scale_out=co.MAX_SCALE_OUT,
                 interference="none", fit=memory.fit)
    assert careful.scale_out == again.scale_out > bell.scale_out
    assert careful.predicted_s * margin <= 350.0 < bell.predicted_s * margin


@pytest.mark.parametrize("world", ["simulator", "nodesim"])
def test_oracle_never_misses_when_feasible(bell_dir, curves, world):
    from bench import colocation as co

    truth = co.truth(world)
    cfg = co.Config(targets=("sgd",), variants=("triple",), runs_per_interferer=1)
    setup = co.draw_runs("triple", "sgd", cfg, curves, truth)[0]
    x = co.oracle_scale_out(setup, curves, "sgd", 350.0, truth)
    runtime = truth.simulate(co._jobs(setup, curves, "sgd", x), setup.noise)[-1]
    assert runtime.finish_s - setup.submit_s <= 350.0
    smaller = truth.simulate(co._jobs(setup, curves, "sgd", x - 1), setup.noise)[-1]
    assert x == co.MIN_SCALE_OUT or smaller.finish_s - setup.submit_s > 350.0


# --- latency -------------------------------------------------------------------------------


def test_history_builder(tmp_path, bell_dir):
    from bench import latency
    from cobell_cli.store.history import History

    db = tmp_path / "h.db"
    latency.build_history(db, 200, bell_dir)
    with History.open(db, create=False) as h:
        assert h.count() == 200
        runs = h.training_runs(latency.JOB)
    assert 60 < len(runs) < 140
    assert sum(1 for r in runs if r["overlaps"]) > len(runs) // 3


def test_many_co_runner_jobs_and_the_calibration_check(tmp_path, bell_dir):
    from bench import latency

    names = latency.co_job_names(9)
    assert len(set(names)) == 9 and names[:4] == latency.CO_JOBS and names[4] == "grep-1"
    db = tmp_path / "h.db"
    latency.build_history(db, 240, bell_dir, co_jobs=names)
    check = latency.calibration_check(db, latency.child_env(tmp_path))
    assert 80 < check["runs"] < 160 and check["co_runner_jobs"] >= 2
    assert check["fit_s"] > 0 and check["refits_s"] > check["fit_s"]  # ten fits cost more
    for one_fit, refits in check["bounds"].values():
        assert one_fit >= 1.0 and refits >= 1.0


def test_latency_quick_on_a_tiny_history(bell_dir):
    from bench import latency

    result = latency.run(quick=True, repeats=1, data_dir=bell_dir, sizes=(30,))
    m = result["measured"]
    assert {"python -c pass", "cobell --help", "predict, 30 runs",
            "predict, 30 runs, no cache"} <= set(m)
    for v in m.values():
        assert 0 < v["min_wall_s"] <= v["wall_s"] and v["cpu_s"] > 0
    assert m["predict, 30 runs"]["cpu_s"] > m["python -c pass"]["cpu_s"]
    # Without the cache every process imports scipy and fits: never cheaper than a cache hit.
    assert m["predict, 30 runs, no cache"]["cpu_s"] > m["predict, 30 runs"]["cpu_s"]
    text = latency.render(result, "test")
    assert "cobell --help <= 0.15 s" in text and "| predict, 30 runs |" in text
    one, three, crowded = result["profile_labels"]
    assert one.startswith("1 run of") and three.startswith("3 runs of")
    assert crowded == f"{three} and 8 runs of 4 other jobs"
    assert f"| predict, {crowded} |" in text and f"| predict, {crowded}, no cache |" in text
    # With profiles, no cache means replaying each profile and fitting: more than a cache hit.
    assert m[f"predict, {three}, no cache"]["cpu_s"] > m[f"predict, {three}"]["cpu_s"]
    assert f"| predict, {one} |" in text


def test_the_must_fit_goal_is_judged_at_every_history_size() -> None:
    from bench import latency

    m = {"predict, 100 runs, no cache": {"wall_s": 1.0},
         "predict, 1000 runs, no cache": {"wall_s": 0.5}, "predict, 1000 runs": {"wall_s": 0.2}}
    line = latency._must_fit_goal(m, (100, 1000, 10_000), spark_s=2.8)
    assert line.startswith("- a predict that must fit <= 0.2x")
    assert line.endswith(f"100 runs 0.357x (the job's runs: {JACKKNIFE_MAX_FITS} refits) (MISSED);"
                         " 1000 runs 0.179x (met)")


# --- confidence levels ------------------------------------------------------------------------


def test_confidence_levels_on_a_tiny_experiment(bell_dir):
    from bench import colocation
    from bench.studies import confidence_levels

    cfg = colocation.Config(worlds=("simulator",), targets=("sgd",), variants=("single",),
                            runs_per_interferer=3)
    results = confidence_levels.run([0.5, 0.97], cfg.seed, cfg)
    assert colocation.STRATEGIES[-1] == "oracle" and "joint@0.5" not in colocation.STRATEGIES
    per = results[("simulator", "single", "sgd")]
    assert set(per) == {"joint@0.5", "joint@0.97", "oracle"}
    assert len(per["joint@0.5"]) == len(per["oracle"]) == 12
    # The same runs: a more careful level never reserves fewer nodes in total.
    later = [r for r in per["joint@0.97"] if r.index > colocation.MODEL_FROM_USABLE]
    loose = [r for r in per["joint@0.5"] if r.index > colocation.MODEL_FROM_USABLE]
    assert sum(r.scale_out for r in later) >= sum(r.scale_out for r in loose)
    text = confidence_levels.render(results, [0.5, 0.97], "test", 1.0)
    assert "| simulator | single | sgd | 0.97 |" in text
    assert "Cells meeting the whole goal: 0.5:" in text


# --- sparse3 limits --------------------------------------------------------------------------


def test_sparse_limits_bounds_are_ordered_and_leave_the_model_untouched(bell_dir):
    from bench.studies import sparse_limits
    from cobell_cli.core.model.metrics import mape

    ds = sparse_limits.draws(bell_dir, [0])
    assert len(ds) == 30  # six jobs, five draws
    for d in ds:
        fitted = d.model.edge_parallel_fraction_
        assert d.mape_at(d.p_hat) == pytest.approx(mape(d.y, d.model.predict(d.x)))
        d.mape_at(1.0 - fitted)
        assert d.model.edge_parallel_fraction_ == fitted  # the counterfactual is undone
        assert d.by_p.shape == sparse_limits.P_GRID.shape
        if not d.below.any():  # p only matters below the training range
            assert np.ptp(d.by_p) == pytest.approx(0.0, abs=1e-9)
    table = sparse_limits.rules(ds)
    oracle = table[next(k for k in table if k.startswith("oracle"))]
    fitted = table[next(iter(table))]
    for name, scores in table.items():
        assert scores.shape == (30,) and np.all(np.isfinite(scores)), name
        assert np.all(oracle <= scores + 0.01), name  # no rule beats the per-draw best p
        if "tuned" in name and "single" not in name:
            # Every tuned family contains the fitted p (λ = 1, or one step per draw bin
            # at worst equals some grid p), so on average it cannot be worse than the
            # best single p...
            assert scores.mean() <= table[next(k for k in table if "single" in k)].mean() + 1e-9
    # ...and the shrinkage family contains cobell's own rule (λ = 1).
    shrink = table[next(k for k in table if k.startswith("best shrinkage"))]
    assert shrink.mean() <= fitted.mean() + 1e-9
    report = sparse_limits.render(ds, [0], "python -m bench.studies.sparse_limits --seeds 1")
    assert f"| {next(iter(table))} | {fitted.mean():.1f} /" in report


def test_the_default_row_plans_at_what_the_cli_resolves_without_flags():
    from bench import colocation as co
    from cobell_cli import config

    settings = config.load()  # no flags; conftest isolates the config dir and COBELL_*
    assert co.planner_key("default") == ("joint", settings.confidence, None)


# --- the noise-aware oracle -----------------------------------------------------------------


@pytest.mark.parametrize("world", ["simulator", "nodesim"])
def test_target_redraw_changes_only_the_targets_own_draw(curves, world):
    from bench import colocation as co
    from bench.oracle_bound import target_redraw

    truth = co.truth(world)
    rng = np.random.default_rng(1)
    real, fresh = truth.draw(rng, curves), truth.draw(rng, curves)
    mixed = target_redraw(real, fresh, "sgd")
    assert mixed.rep_index["sgd"] == fresh.rep_index["sgd"]
    assert mixed.rep_index["grep"] == real.rep_index["grep"]
    if world == "nodesim":
        assert mixed.placement["sgd"] == fresh.placement["sgd"]
        assert mixed.placement["pagerank"] == real.placement["pagerank"]
    else:
        assert mixed.pair_factor[("sgd", "grep")] == fresh.pair_factor[("sgd", "grep")]
        assert mixed.pair_factor[("grep", "sgd")] == fresh.pair_factor[("grep", "sgd")]
        assert mixed.pair_factor[("grep", "wordcount")] == real.pair_factor[("grep", "wordcount")]


def test_knowing_the_draw_the_noise_aware_oracle_is_the_oracle(bell_dir, curves):
    from bench import colocation as co
    from bench import oracle_bound as ob

    truth = co.truth("nodesim")
    cfg = co.Config(worlds=("nodesim",), targets=("sgd",), variants=("pair",),
                    runs_per_interferer=2)
    for setup in co.draw_runs("pair", "sgd", cfg, curves, truth)[co.MODEL_FROM_USABLE:]:
        def runtime(x, noise, setup=setup):
            done = truth.simulate(co._jobs(setup, curves, "sgd", x), noise)[-1]
            return done.finish_s - setup.submit_s

        exact = ob.Draws(runtime, [setup.noise] * 3)  # every draw is the real one
        oracle = co.oracle_scale_out(setup, curves, "sgd", 350.0, truth)
        for level in (0.5, 0.97):
            assert ob.plan_at(exact, level, 350.0) == oracle
    bounds = ob.run(cfg, (0.5, 0.97), 8, bell_dir)[("nodesim", "pair", "sgd")]
    assert len(bounds) == 2 * len(co.INTERFERERS) - co.MODEL_FROM_USABLE  # post-bootstrap
    for b in bounds:  # a more careful level never plans fewer nodes on the same draws
        assert b.planned[0.97][0] >= b.planned[0.5][0]
    text = ob.render({("nodesim", "pair", "sgd"): bounds}, (0.5, 0.97), cfg, 8, "test", 1.0)
    assert "| nodesim | pair | sgd | 0.97 |" in text and "reachable at" in text


def test_the_physics_aware_oracle_redraws_every_job_but_keeps_what_the_submit_shows(curves):
    from bench import colocation as co
    from bench import oracle_bound as ob

    truth = co.truth("nodesim")
    cfg = co.Config(worlds=("nodesim",), targets=("sgd",), variants=("pair",))
    setup = co.draw_runs("pair", "sgd", cfg, curves, truth)[42]  # a co-runner near its end
    seen = ob.running_at_submit(setup, curves, truth, setup.noise)
    assert seen and seen <= {f"co{k}-{setup.index}" for k in range(2)}
    rng = np.random.default_rng(3)
    free = [ob.running_at_submit(setup, curves, truth, truth.draw(rng, curves))
            for _ in range(40)]
    assert any(state != seen for state in free)  # unconditioned, the submit could differ
    draws = ob.blind_redraws(setup, curves, truth, np.random.default_rng(3), 12)
    assert len(draws) == 12
    for noise in draws:  # what the planner sees at the submit is the same in every draw
        assert ob.running_at_submit(setup, curves, truth, noise) == seen
    co_jobs = set(setup.co_jobs)  # the co-runners' own noise is redrawn, not kept
    assert any(d.placement[j] != setup.noise.placement[j] for d in draws for j in co_jobs)


def test_matched_miss_rates_pick_the_cheapest_cobell_level_that_misses_no_more_often():
    from bench import colocation as co
    from bench.studies import keep_frontier as kf

    saved = dict(co.PLANNERS), dict(co.MARGINS), dict(co.LABELS)
    try:
        names = kf.register(["point", "0.9"], ["point", "0.9", "0.97"])
        keys = {co.planner_key(n) for n in names if n != "oracle"}
        assert len(keys) == len(names) - 1  # no two levels share runs
    finally:
        for live, old in zip((co.PLANNERS, co.MARGINS, co.LABELS), saved, strict=True):
            live.clear()
            live.update(old)
    points = {"cobell@point": {"over_share_pct": 30.0, "node_s_vs_oracle": 1.00},
              "cobell@0.9": {"over_share_pct": 2.0, "node_s_vs_oracle": 1.06},
              "cobell@0.97": {"over_share_pct": 0.0, "node_s_vs_oracle": 1.09},
              "bell@0.9": {"over_share_pct": 9.0, "node_s_vs_oracle": 1.04},
              "bell@0.99": {"over_share_pct": 0.0, "node_s_vs_oracle": 1.20}}
    cobell = ["cobell@point", "cobell@0.9", "cobell@0.97"]
    assert kf.matched(points, "bell@0.9", cobell) == "cobell@0.9"
    assert kf.matched(points, "bell@0.99", cobell) == "cobell@0.97"
    assert kf.matched({**points, "bell@x": {"over_share_pct": -1.0, "node_s_vs_oracle": 1}},
                      "bell@x", cobell) is None


def test_the_error_split_separates_prediction_and_runtime_around_one_expectation(bell_dir):
    from bench import colocation as co
    from bench.studies import error_split as es

    cell = ("nodesim", "pair", "sgd")
    split = es.split_cell(cell, 4, co.Config.seed, bell_dir, runs_per_interferer=2)
    assert len(split.model) == len(split.noise) == 2 * len(co.INTERFERERS) - co.MODEL_FROM_USABLE
    curves, world = es.load_curves(bell_dir), co.truth("nodesim")
    memory = co.seed_world("sgd", curves, world, co.Config.seed)
    cfg = co.Config(worlds=("nodesim",), targets=("sgd",), variants=("pair",),
                    runs_per_interferer=2)
    records = [co.play("default", memory, s, curves, co.TARGETS_S["sgd"], world)
               for s in co.draw_runs("pair", "sgd", cfg, curves, world)]
    post = [r for r in records if not r.bootstrap]
    for m, n, r in zip(split.model, split.noise, post, strict=True):  # the same runs, in order
        assert m - n == pytest.approx(math.log(r.predicted_s / r.runtime_s))
        assert abs(n) < 0.5  # the runtime is near what the physics expects at that scale-out
