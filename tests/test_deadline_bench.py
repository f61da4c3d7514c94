"""bench.deadline: the rounds, the peers, the oracle, and a tiny run of the whole table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench import deadline as bench
from bench.colocation import truth
from bench.deadline_peers import _Queued, paper_waits
from bench.deadline_world import PATTERNS, REF_SCALE_OUT, JobResult, draw_round, met_share
from bench.simulator import load_curves
from cobell_cli.core.model_table import ModelTable


@pytest.fixture(scope="module")
def curves(bell_dir_module):
    return load_curves(bell_dir_module)


@pytest.fixture(scope="module")
def bell_dir_module():
    from tests.conftest import BELL_DIR, require_shared

    return require_shared(BELL_DIR, "real runtime data")


def test_a_round_is_drawn_before_anyone_decides_and_the_same_for_every_row(curves) -> None:
    world = truth("simulator")
    a = draw_round("burst10", 3, 7, curves, world)
    b = draw_round("burst10", 3, 7, curves, world)
    assert a.arrivals == b.arrivals and a.stragglers == b.stragglers
    assert len(a.arrivals) == 10 and max(x.at for x in a.arrivals) - a.arrivals[0].at < 1
    for arrival in a.arrivals:
        alone = curves[arrival.job].median_s(REF_SCALE_OUT)
        assert 1.5 * alone <= arrival.deadline_at - arrival.at <= 3 * alone
    assert a.stragglers[0].start_at < a.arrivals[0].at
    spread = draw_round("spread", 0, 7, curves, world)
    assert 0 < spread.arrivals[-1].at - spread.arrivals[0].at <= 600


def _table(pair: float) -> ModelTable:
    runtime = [1000 / x + 40 for x in range(1, 65)]
    return ModelTable(alone_s=runtime, lower_s=runtime, upper_s=runtime, confidence=0.9,
                      pairs={"job": (pair, 0.0)}, default_pair=(pair, 0.0),
                      scale_out_range=(1, 64), description={"interference": {}})


def test_the_papers_waits_stagger_jobs_that_slow_each_other_and_not_others() -> None:
    heavy = [_Queued(k, "job", 10, _table(1.5), None) for k in ("a", "b")]
    waits = paper_waits(heavy, [], 0.0)
    assert sorted(waits.values())[0] == 0 and sorted(waits.values())[1] > 100  # one waits
    light = [_Queued(k, "job", 10, _table(0.05), None) for k in ("a", "b")]
    assert set(paper_waits(light, [], 0.0).values()) == {0.0}  # waiting only lengthens it


def test_a_tiny_table_plays_every_row_through_the_same_rounds(curves) -> None:
    world = truth("simulator")
    base = bench.warmed(curves, world, 7, 2)
    rows = [row for row in bench.ROWS if row != "physics"]  # its own test: it costs more
    cell = bench.run_cell("simulator", "burst5", 7, 1, base, curves, lambda _m: None, rows)
    (outcome,) = cell.rounds
    arrivals = {a.key for a in draw_round("burst5", 0, 7, curves, world).arrivals}
    for row in rows:
        results = {r.key for r in outcome[row] if r.deadline_at is not None}
        assert results == arrivals, row
        assert all(r.start_at >= r.start_at - r.waited_s for r in outcome[row])
    # the oracle knows every runtime: it meets at least as many deadlines as any row
    best = met_share(outcome["oracle"])
    assert all(met_share(outcome[row]) <= best + 1e-9 for row in rows)
    text = bench.render({7: [cell]}, "python -m bench.deadline --quick", 1.0, 1.0)
    assert "| simulator | burst5 | cobell --deadline |" in text and "Goals per cell" in text
    assert not math.isnan(bench._row_stats(cell, "deadline")["vs_oracle"])


def test_a_row_played_later_merges_into_the_same_rounds(curves) -> None:
    """--rows and --load: a row added in a later run is the row the whole run would have
    played, on the same rounds; the careful user's margin starts every job at its submit."""
    world = truth("simulator")
    base = bench.warmed(curves, world, 7, 2)
    both = bench.run_cell("simulator", "burst5", 7, 1, base, curves, lambda _m: None,
                          rows=("start_now", "margin"))
    assert "oracle" not in both.rounds[0]  # the oracle needs every row it starts from
    first = bench.run_cell("simulator", "burst5", 7, 1, base, curves, lambda _m: None,
                           rows=("start_now",))
    later = bench.run_cell("simulator", "burst5", 7, 1, base, curves, lambda _m: None,
                           rows=("margin",))
    (cell,) = bench.merged([first], [later])
    assert cell.rows == ["start_now", "margin"]
    assert cell.results("margin") == both.results("margin")
    assert cell.results("start_now") == both.results("start_now")
    assert all(r.waited_s == 0 for r in cell.results("margin"))


def test_the_physics_aware_planner_sizes_on_redrawn_noise_like_oracle_bound(curves) -> None:
    """The peer that says where >= 95 % is reachable: every job started GATHER_S after its
    submit at the smallest scale-out meeting its deadline in >= 95 % of noise draws that
    agree with what runs at the submit (bench.oracle_bound's planner, not a copy)."""
    from bench import oracle_bound
    from bench.deadline_peers import PHYSICS_LEVEL, PhysicsAware
    from bench.deadline_world import Cluster
    from cobell_cli.core.schedule.decision import GATHER_S

    world = truth("simulator")
    # a job that some scale-out gets there with (the simulator's tpchq10 may not, even at 60)
    rnd = next(r for i in range(24) if (r := draw_round("isolated", i, 7, curves, world))
               .arrivals[0].job == "sgd")
    results, _, _ = bench.play(PhysicsAware, bench.World(""), rnd, curves, world,
                                     learn=False)
    (arrival,) = rnd.arrivals
    (mine,) = [r for r in results if r.key == arrival.key]
    assert mine.start_at == pytest.approx(arrival.at + GATHER_S)
    probe = PhysicsAware(bench.World(""), Cluster(world, curves, rnd))
    noises = probe._redraws(arrival.at, np.random.default_rng(
        [PATTERNS.index("isolated"), rnd.index, 27]))
    running = {a.app_id for a in probe.cluster.running_at(arrival.at)}
    assert all({a.app_id for a in probe._trial(n).running_at(arrival.at)} == running
               for n in noises)
    draws = oracle_bound.Draws(probe._runtime(arrival.key, {}), noises)
    budget = arrival.deadline_at - mine.start_at
    assert draws.share_meeting(mine.scale_out, budget) >= PHYSICS_LEVEL
    assert draws.share_meeting(mine.scale_out - 1, budget) < PHYSICS_LEVEL
    tight = oracle_bound.plan_at(draws, PHYSICS_LEVEL, budget / 2)
    assert tight > mine.scale_out  # half the time left: more executors


def test_the_excess_over_the_oracle_splits_into_stragglers_scale_outs_and_unused_windows(
) -> None:
    def job(key, x, runtime, deadline=1000.0):
        return JobResult(key, "sgd", x, 0.0, runtime, deadline, 0.0)

    def straggler(runtime):
        return JobResult("s", "kmeans", 4, -100.0, runtime, None, 0.0)

    oracle = [job("a", 4, 900.0), job("b", 2, 950.0), straggler(500.0)]
    # twice the oracle's executors, half the window unused; the straggler runs 100 s longer
    mine = [job("a", 8, 500.0), job("b", 6, 400.0), straggler(600.0)]
    cell = bench.CellResult("simulator", "isolated", rounds=[{"deadline": mine,
                                                              "oracle": oracle}])
    e = bench._excess_stats(cell, "deadline")
    gap = sum(r.executor_s for r in mine) - sum(r.executor_s for r in oracle)
    assert e["x_over"] == pytest.approx(2.5)  # median of 2 and 3
    assert e["unused"] == pytest.approx(0.55)  # median of 0.5 and 0.6
    assert e["straggler_gap"] == pytest.approx(4 * 100.0 / gap)
    assert bench._excess_stats(cell, "oracle")["x_over"] == 1.0


def test_the_cost_goal_names_what_the_physics_aware_planner_spends_over_the_oracle() -> None:
    def job(x, runtime):
        return JobResult("a", "sgd", x, 0.0, runtime, 1000.0, 0.0)

    rounds = [{"start_now": [job(8, 500.0)], "deadline": [job(6, 600.0)],
               "physics": [job(5, 700.0)], "oracle": [job(2, 990.0)]}]
    cell = bench.CellResult("simulator", "isolated", rounds=rounds)
    ok, failed = bench.goal_row(cell)
    assert ok == "no"  # the cost goal is not waived where no planner reaches it
    assert failed == [f"{3600 / 1980:.2f}x oracle (the physics-aware, noise-blind planner:"
                      f" {3500 / 1980:.2f}x)"]
    table = "\n".join(bench.side_by_side({7: [cell]}))
    assert f"| {3600 / 1980:.3f} / {3500 / 1980:.3f} |" in table


def test_the_cpu_benchmarks_burst_writes_deciding_submits_into_a_real_history(
        curves, tmp_path) -> None:
    """bench.deadline_cpu had imported `deadlines` from where it no longer lives (api/) and
    failed before measuring anything."""
    import time

    from bench.deadline_cpu import burst_rows, history_rows
    from bench.deadline_world import seeded_memory
    from cobell_cli.store import waiting
    from cobell_cli.store.history import History

    db = tmp_path / "burst.db"
    with History.open(db) as history:
        history.insert_runs(history_rows(seeded_memory(curves, truth("simulator"), 7)),
                            keep_ids=False)
    now = time.time()
    burst_rows(db, curves, now, submits=2)  # the benchmark's nine cost ~10x the CPU
    with History.open(db, read_only=True) as history:
        rows = waiting.rows(history, now)
    assert len(rows) == 2
    assert all(r["deadline_at"] > now for r in rows)
