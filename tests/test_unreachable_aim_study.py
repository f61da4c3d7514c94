"""bench.studies.unreachable_aim: the watched plan is the one the benchmark's run made, and the
choice it reports is the rule's (core/plan/infeasible.py) over what it watched."""

from __future__ import annotations

from bench.studies import unreachable_aim as ua
from cobell_cli.core.plan import infeasible, model_phase


def test_the_watched_plan_is_the_played_run_and_the_rule_chose_it() -> None:
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
    text = ua.render(chosen, seen, record, "cmd")
    assert f"| {chosen.scale_out} |" in text and "<- |" in text
    assert f"{record.runtime_s:.0f} s at {record.scale_out} executors" in text
