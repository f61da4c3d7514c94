"""A wait is weighed in every phase with a model (issue 35, "a deadline the demo can show"):
the what-if's phase and runs 4-6 weigh a later start with the model's held-out errors, or,
where it has too few, with the width of the plan's own predictive distribution; only the
binary search (runs 1-3) starts at once. The plans are real `plan()` calls on the what-if
fixtures of tests/test_whatif_corunners.py (an `etl` job slowed by a `hog` by 1 + 0.3·ov)."""

from __future__ import annotations

import math

import pytest

from cobell_cli.core.calibration import ratio_bound
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.plan import plan
from cobell_cli.core.running import RunningApp
from cobell_cli.core.schedule.build import WIDTH_RATIOS, busy_apps, pending_job, width_ratios
from cobell_cli.core.schedule.decision import decide
from tests.test_whatif_corunners import HOG_RUNS, eleven_runs, run, wide_profile

NOW = 1e6
# the hog (500 s runs) started 480 s ago: it ends in about 20 s, well before the deadline
HOG_ENDING = RunningApp(app_id="app-hog", name="hog", job="hog", user=None, queue=None,
                        state="RUNNING", started_at=NOW - 480, scale_out=2)


def planned(history: list[dict], profiles: list, deadline_in_s: float = 40.0):
    captured: dict = {}
    p = plan(job="etl", history=history, now=NOW, target_s=deadline_in_s, min_scale_out=1,
             max_scale_out=16, profiles=profiles, co_runners=(HOG_ENDING,),
             co_runner_histories={"hog": HOG_RUNS}, confidence=0.95,
             on_model=lambda model, phase: captured.update(model=model))
    pending = pending_job(p, captured.get("model"), history, deadline_at=NOW + deadline_in_s,
                          submitted_at=NOW, now=NOW)
    return p, pending


def test_the_whatif_phase_weighs_a_wait_and_chooses_it_when_cheaper():
    p, pending = planned(eleven_runs(), [wide_profile(2)])
    assert p.phase == "bootstrap-whatif"
    assert pending is not None  # main: None ("plans without the errors ...")
    decision, _ = decide(pending, [], busy_apps(p, {"hog": HOG_RUNS}, fit_runtime_model), NOW)
    # alone after the hog the job is 1.3x faster at the same scale-out: waiting 20 s is cheaper
    assert not decision.start_now and decision.waits_for == "hog (app-hog)"
    assert decision.feasible and decision.meet_probability >= 0.95
    assert decision.start_reason.startswith("waiting for hog (app-hog): ")
    now, wait = decision.options
    assert wait.cost < now.cost and wait.predicted_s < now.predicted_s


def test_runs_four_to_six_weigh_a_wait_too():
    history = [run(i, x, ov) for i, (x, ov) in enumerate(
        [(2, 0), (4, 0), (8, 0), (4, 1.0), (6, 0.8)], 1)]
    p, pending = planned(history, [])
    assert p.phase == "bootstrap-parametric"
    assert pending is not None
    decision, _ = decide(pending, [], busy_apps(p, {"hog": HOG_RUNS}, fit_runtime_model), NOW)
    assert decision.waits_for == "hog (app-hog)" and decision.feasible


def test_too_few_held_out_errors_weigh_with_the_plans_own_width():
    history = [run(i, x, 0) for i, x in enumerate((2, 4, 8), 1)]
    p, pending = planned(history, [])
    assert p.phase == "bootstrap-parametric" and len(history) < 4  # error_ratios needs 4
    assert pending is not None and pending.ratios == width_ratios(p)
    assert len(pending.ratios) == WIDTH_RATIOS
    # the scheduler reads back the plan's own upper bound at its confidence (within 2 %)
    assert p.predicted_s * ratio_bound(pending.ratios, 0.95) == pytest.approx(p.upper_s, rel=0.02)
    assert math.prod(pending.ratios) == pytest.approx(1.0)  # centred on the prediction


def test_the_binary_search_has_nothing_to_weigh_a_wait_with():
    history = [run(1, 4, 0)]
    p, pending = planned(history, [])
    assert p.phase == "bootstrap-search" and pending is None


def test_no_width_no_ratios():
    p, _ = planned([run(i, x, 0) for i, x in enumerate((2, 4, 8), 1)], [])
    from dataclasses import replace

    assert width_ratios(replace(p, upper_s=p.predicted_s)) == ()
    assert width_ratios(replace(p, upper_s=None)) == ()
