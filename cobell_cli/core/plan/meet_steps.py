"""Why a plan's P(meet) can fall or stand still where the prediction falls (issue 35: "99 % at
3 executors and 88 % at 4 for a 4 s difference in the upper bound reads as noise").

P(meet) at a candidate is read from the job's n held-out errors (core/predictive.py): their
conformal ranks, so between two errors it stands still and at one it jumps by 1/(n + 1), and
beyond the largest a Student t tail takes over. A candidate the job ran less near is wider
too. Neither is noise: the first is how much n errors can say, the second what the runs say.
`meet_probability_note` names what the table shows, in one line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

from cobell_cli.core.plan.reasons import bound_text
from cobell_cli.core.plan.records import CandidatePrediction, Plan

JUMP = 0.05  # a fall in P(meet) smaller than this is not worth a line at 6 am
PLATEAU = 3  # candidates in a row with one P(meet) while the bound falls
PLATEAU_BELOW = 0.99  # a plateau at 99 % and above reads as "certain", not as noise


def meet_probability_note(plan: Plan, shown: Sequence[CandidatePrediction]) -> str | None:
    """One line on the first fall of P(meet) where the prediction falls, or the first run of
    PLATEAU equal P(meet)s where the bound falls, among the candidates `shown`; None where
    there is neither, or no error record behind P(meet)."""
    errors = int((plan.calibration or {}).get("runs") or 0)
    if errors < 2:
        return None
    rows = [c for c in shown if c.meet_probability is not None and c.upper_s is not None]
    steps = f"it rests on {errors} held-out errors (steps of {1 / (errors + 1):.0%})"
    for a, b in pairwise(rows):
        if b.predicted_s < a.predicted_s and a.meet_probability - b.meet_probability >= JUMP:
            wider = (f"bound {bound_text(a.upper_s)} -> {bound_text(b.upper_s)} s, fewer runs near "
                     f"{b.scale_out}; " if b.upper_s > a.upper_s else "")
            return (f"  P(meet) falls from {_pct(a)} at {a.scale_out} to {_pct(b)} at "
                    f"{b.scale_out} while the prediction falls: {wider}{steps}")
    i = 0
    while i < len(rows):
        level = rows[i].meet_probability
        end = i
        while end + 1 < len(rows) and rows[end + 1].meet_probability == level:
            end += 1
        if level < PLATEAU_BELOW and end - i + 1 >= PLATEAU and rows[end].upper_s < rows[i].upper_s:
            return (f"  P(meet) stays {_pct(rows[i])} from {rows[i].scale_out} to "
                    f"{rows[end].scale_out} while the bound falls: {steps}")
        i = end + 1
    return None


def _pct(c: CandidatePrediction) -> str:
    """As the table shows it (reasons.probability_text: rounded down)."""
    return f"{math.floor((c.meet_probability or 0.0) * 100 + 1e-9):d}%"
