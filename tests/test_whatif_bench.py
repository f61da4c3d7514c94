"""bench/whatif.py on the committed real event logs (bench/data/whatif/)."""

from __future__ import annotations

import math

import pytest

from bench import whatif as bench

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def runs():
    if not (bench.DATA / "manifest.json").is_file():
        pytest.skip("the recorded logs are not in bench/data/whatif (bench/whatif_record.py)")
    return bench.load_runs(bench.DATA, bench.QUICK_EXECUTORS, (1,))


def test_the_committed_logs_are_the_four_shapes_at_the_quick_counts(runs):
    assert {r.shape for r in runs} == {"wide", "join", "straggler", "iterative"}
    for shape in ("wide", "join", "straggler", "iterative"):
        assert sorted(r.executors for r in runs if r.shape == shape) == [1, 2, 4, 8]
    for r in runs:
        assert r.profile.scale_out == r.executors and r.runtime_s > 0


def test_every_method_predicts_every_other_run(runs):
    preds = bench.predict_all(runs)
    n = {shape: sum(r.shape == shape for r in runs) for shape in {r.shape for r in runs}}
    for method in ("replay", "observed", "whatif", "history"):
        for shape, k in n.items():
            mine = [p for p in preds if p.method == method and p.shape == shape]
            assert len(mine) == k * (k - 1)
            assert all(p.predicted_s > 0 and math.isfinite(p.error_pct) for p in mine)
    # two runs: the source and a partner; the other runs are predicted
    assert all(len([p for p in preds if p.method == "two_runs" and p.source == r.name])
               == n[r.shape] - 2 for r in runs)


def test_the_whatif_is_anchored_on_its_source_run(runs):
    from cobell_cli.core.whatif import fit_whatif

    for r in runs:
        assert fit_whatif([r.profile]).predict([r.executors])[0] == pytest.approx(r.runtime_s)


def test_the_report_has_the_goal_table_and_the_baseline_row(runs):
    preds = bench.predict_all(runs)
    text = bench.render({"tuning": (runs, preds, [])}, "python -m bench.whatif --quick", 1.0)
    goal = text.split("### Source and predicted run")[1].split("###")[0]
    for shape in ("wide", "join", "straggler", "iterative"):
        assert f"| {shape} | {bench.LABELS['replay']} |" in goal
        assert f"| {shape} | {bench.LABELS['whatif']} |" in goal
    assert "6-8 executors" in text and "Measured runtimes" in text


def test_the_calibrated_interval_covers_the_asked_share(runs):
    preds = [p for p in bench.predict_all(runs, methods=("whatif",))]
    a, b = bench.calibrated_error(preds, confidence=0.8)
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.9)
    inside = [abs(math.log(p.predicted_s / p.measured_s))
              <= z * (a + b * abs(math.log(p.executors / p.source_executors))) + 1e-12
              for p in preds]
    assert sum(inside) / len(inside) >= 0.8
    assert sum(inside) / len(inside) <= 0.8 + 2 / len(inside)


def test_a_stopped_test_recording_leaves_a_complete_one_repetition_grid():
    from bench.whatif_record_test import EXECUTORS, REPS, SHAPES, recording_order

    cells = {(s, x) for s in SHAPES for x in EXECUTORS}
    fresh = recording_order(set())
    assert sorted(fresh) == sorted((s, x, r) for s, x in cells for r in REPS)
    assert {o[:2] for o in fresh[:len(cells)]} == cells
    # part recorded (both repetitions of some cells, one of others, none of the rest)
    done = {("cpu", 2, 1), ("cpu", 2, 2), ("loop", 3, 2), ("skew", 8, 1)}
    rest = recording_order(done)
    assert not done & set(rest) and len(rest) == len(fresh) - len(done)
    missing_cells = cells - {d[:2] for d in done}
    assert {o[:2] for o in rest[:len(missing_cells)]} == missing_cells
