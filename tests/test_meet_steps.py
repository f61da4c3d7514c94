"""P(meet) that reads as noise (issue 35): where it falls or stands still while the
prediction falls, predict says why in one line (core/plan/meet_steps.py)."""

from __future__ import annotations

import math
from dataclasses import replace

from cobell_cli.core.calibration import DEFAULT_CONFIDENCE
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.plan import plan
from cobell_cli.core.plan.meet_steps import meet_probability_note
from cobell_cli.core.plan.records import CandidatePrediction
from tests.test_decision_robustness import MAX_X, MIN_X, _history, _run


def row(x: int, predicted: float, upper: float, p: float) -> CandidatePrediction:
    return CandidatePrediction(scale_out=x, predicted_s=predicted, lower_s=None, upper_s=upper,
                               overlap_ratio={}, meets_target=p >= 0.9, meet_probability=p)


def a_plan(rows, errors: int = 18):
    runs, target, _ = _history(4)
    p = plan(job="j", history=runs, now=1e9, target_s=target, min_scale_out=MIN_X,
             max_scale_out=MAX_X, fit=fit_runtime_model, confidence=DEFAULT_CONFIDENCE)
    return replace(p, candidates=tuple(rows), calibration={**(p.calibration or {}),
                                                            "runs": errors})


def test_a_fall_with_a_wider_bound_names_both_causes():
    rows = [row(3, 50, 74, 0.99), row(4, 49, 78, 0.88)]
    note = meet_probability_note(a_plan(rows), rows)
    assert note == ("  P(meet) falls from 99% at 3 to 88% at 4 while the prediction falls: "
                    "bound 74 -> 78 s, fewer runs near 4; it rests on 18 held-out errors "
                    "(steps of 5%)")
    assert len(note) <= 160


def test_a_fall_without_a_wider_bound_is_the_steps():
    rows = [row(3, 50, 78, 0.99), row(4, 49, 77, 0.88)]
    note = meet_probability_note(a_plan(rows, errors=9), rows)
    assert note.endswith("while the prediction falls: it rests on 9 held-out errors (steps of "
                         "10%)")


def test_smooth_or_rising_probabilities_need_no_note():
    rows = [row(3, 50, 78, 0.90), row(4, 49, 77, 0.93), row(5, 48, 75, 0.97)]
    assert meet_probability_note(a_plan(rows), rows) is None
    slower = [row(3, 50, 78, 0.99), row(4, 52, 80, 0.88)]  # the prediction rises: no puzzle
    assert meet_probability_note(a_plan(slower), slower) is None
    assert meet_probability_note(a_plan(rows, errors=0), rows) is None


def test_the_plateau_the_lead_found_is_explained():
    """seed 4 of test_decision_robustness plus one run at 4 executors, 2 sd slow: P(meet)
    0.895 at 13-23 executors, then 0.998 at 24 (the largest error's rank)."""
    runs, target, (truth, sd) = _history(4)
    runs = [*runs, _run(len(runs), 4, truth(4) * math.exp(2.0 * sd))]
    p = plan(job="j", history=runs, now=1e9, target_s=target, min_scale_out=MIN_X,
             max_scale_out=MAX_X, fit=fit_runtime_model, confidence=DEFAULT_CONFIDENCE)
    shown = [c for c in p.candidates if 11 <= c.scale_out <= 25]
    note = meet_probability_note(p, shown)
    errors = p.calibration["runs"]
    assert note == (f"  P(meet) stays 89% from 13 to 23 while the bound falls: it rests on "
                    f"{errors} held-out errors (steps of {1 / (errors + 1):.0%})")
