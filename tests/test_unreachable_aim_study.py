"""bench.studies.unreachable_aim: the watched plan is the one the benchmark's run made with the
rule before 1 Dec 2026, the choice it reports is that rule's (core/plan/infeasible.py) over
what it watched, and today's rule, played on the same runs, leaves that scale-out."""

from __future__ import annotations

import pytest

from bench.studies import unreachable_aim as ua
from cobell_cli.core.plan import infeasible, model_phase


def test_the_watched_plan_is_the_played_run_and_the_old_rule_chose_it() -> None:
    real = model_phase.unreachable
    chosen, seen, record = ua.replay()
    assert model_phase.unreachable is real  # the spy is gone
    assert record.index == ua.RUN and record.scale_out == chosen.scale_out
    dist, costs, level = seen["dist"], seen["costs"], seen["confidence"]
    js = range(len(dist.candidates))
    aim = max(seen["target_s"], min(dist.quantile_s(j, level) for j in js))
    within = [dist.meet_probability(j, aim) for j in js]
    floor = max(within) - infeasible.standard_error(max(within), dist.errors)
    cheapest = min((j for j in js if within[j] >= floor), key=lambda j: (costs[j], j))
    assert int(dist.candidates[cheapest].scale_out) == chosen.scale_out
    assert seen["choice"].explored_from is None
    # today's rule, on what the old one saw, moves: no candidate's next run could meet it
    today = infeasible.unreachable(dist, costs, seen["target_s"], level)
    assert today.closest and today.explored_from == cheapest and today.index != cheapest
    assert dist.meet_probability(today.index, seen["target_s"]) > \
        dist.meet_probability(cheapest, seen["target_s"])


@pytest.fixture(scope="module")
def cell() -> dict[str, list]:
    return ua.both(runs=12)  # the late run is the 7th


def test_the_cell_with_each_rule_shows_the_late_run_and_its_absence(cell: dict) -> None:
    chosen, seen, record = ua.replay()
    before = cell["before"][ua.RUN - 1]
    assert (before.scale_out, before.runtime_s) == (record.scale_out, record.runtime_s)
    assert max(r.overshoot_pct for r in cell["before"]) == pytest.approx(record.overshoot_pct)
    assert max(r.overshoot_pct for r in cell["today"]) < record.overshoot_pct
    assert [r.scale_out for r in cell["before"][:3]] == [r.scale_out for r in cell["today"][:3]]
    text = ua.render(chosen, seen, record, "cmd", cell)
    assert f"| {chosen.scale_out} |" in text and "<- |" in text
    assert f"{record.runtime_s:.0f} s at {record.scale_out} executors" in text
    assert "| today (the step toward the closest) |" in text
