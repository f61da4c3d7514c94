"""bench.studies.deadline_agree: its `interval` judge is main's before deadagree (a wide model
interval makes a likely candidate infeasible), the counter sees that disagreement and not under
`one`, and the patched judge is put back."""

from __future__ import annotations

from collections import Counter

from bench.studies import deadline_agree as da
from cobell_cli.core.schedule.risk import Risk
from tests.test_schedule import RATIOS, table


def _judge_all(feasibility: str) -> tuple[Counter, list[bool]]:
    tally: Counter = Counter()
    wide = table(width=1.0)  # the model's interval twice its prediction
    with da.judged_by(feasibility, tally):
        risk = Risk(RATIOS, 0.9)
        got = [risk.judge(wide, 10, 140.0, {}, budget_s=b).feasible for b in (141.0, 160.0, 300.0)]
    return tally, got


def test_the_interval_judge_calls_a_likely_candidate_out_of_reach_and_one_does_not() -> None:
    kept = Risk.judge
    tally, got = _judge_all("interval")
    assert got == [False, False, True]
    assert tally["infeasible, P>=conf: model interval"] == 1  # budget 160: P(meet) >= 0.9
    assert tally["judged"] == 3 and tally["agree"] == 2
    tally, got = _judge_all("one")
    assert got == [False, True, True]
    assert tally["agree"] == tally["judged"] == 3
    assert Risk.judge is kept
