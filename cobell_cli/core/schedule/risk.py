"""How likely a job is to finish within a budget, and how late an app may end: both read from
runtime / predicted ratios the way the planner reads them (core/calibration.py).

`Risk.judge` mirrors `calibrated_upper` for one candidate: upper = max(the model's interval,
predicted x the ratios' bound at the confidence) x the stranger factor, and P(meet) = the
ratios' probability of staying below budget / (predicted x stranger factor). It reads the
ratios a job carried into the history (a waiting submit's own), so that any process can weigh
another's job without its runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cobell_cli.core.calibration import (
    RECENT_OUTCOMES,
    RatioDistribution,
    held_out_ratios,
    outcome_ratios,
    ratio_bound,
    stranger_factors,
)
from cobell_cli.core.plan.model_phase import DEFAULT_INTERVAL_CONFIDENCE

# An app whose job has no error record yet: its end taken as log-normal around the predicted
# one with this sd (the co-runners' overlap error in bench/results/progress.md is ~5-7 % of a
# runtime; 0.25 is several times that, so a wait for such an app is seldom worth it).
UNKNOWN_END_LOG_SD = 0.25


def error_ratios(model: Any, runs: Sequence[Mapping[str, Any]]) -> tuple[float, ...]:
    """The model's held-out runtime / predicted ratios joined by the recorded outcomes of the
    job's last plans: what `calibrated_upper` calibrates on when the model carries its own."""
    own = held_out_ratios(model) or []
    if len(own) < 4 or len(runs) < 4:
        return ()
    return tuple(own + outcome_ratios(runs)[-RECENT_OUTCOMES:])


@dataclass(frozen=True)
class Judgement:
    upper_s: float
    meet_probability: float | None
    feasible: bool


@dataclass
class Risk:
    """One job's error record at its confidence (None: the point decision)."""

    ratios: Sequence[float]
    confidence: float | None
    _dist: RatioDistribution | None = field(default=None, init=False, repr=False)
    _bound: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        usable = [float(r) for r in self.ratios if r > 0]
        if usable:
            self._dist = RatioDistribution(usable)
            if self.confidence is not None:
                self._bound = ratio_bound(usable, self.confidence)

    @property
    def known(self) -> bool:
        return self._dist is not None

    def judge(
        self, model: Any, scale_out: int, predicted_s: float, row: Mapping[Any, float],
        budget_s: float,
    ) -> Judgement:
        """The upper bound, P(runtime <= budget) and whether the candidate meets the budget
        (the upper bound at a confidence, the point prediction without one; and where P is
        known, P >= confidence)."""
        level = self.confidence if self.confidence is not None else DEFAULT_INTERVAL_CONFIDENCE
        _, upper = model.predict_interval([float(scale_out)], dict(row), confidence=level)
        factor = stranger_factors([float(scale_out)], [dict(row)], model)[0][0]
        bound = max(float(next(iter(upper))), predicted_s * self._bound) * factor
        probability = self.probability(budget_s, predicted_s * factor)
        decide = bound if self.confidence is not None else predicted_s
        feasible = budget_s > 0 and decide <= budget_s
        if feasible and probability is not None and self.confidence is not None:
            feasible = probability >= self.confidence - 1e-9
        return Judgement(bound, probability, feasible)

    def probability(self, budget_s: float, predicted_s: float) -> float | None:
        """P(runtime <= budget_s) for a run predicted at `predicted_s`; None: no record."""
        if self._dist is None:
            return None
        if budget_s <= 0 or predicted_s <= 0:
            return 0.0
        return self._dist.meet_probability(budget_s / predicted_s)


def ended_by(started_at: float, end_at: float, ratios: Sequence[float], at: float) -> float:
    """P(an app started at `started_at`, predicted to end at `end_at`, has ended by `at`),
    from its job's runtime / predicted ratios (a log-normal of UNKNOWN_END_LOG_SD without)."""
    predicted = end_at - started_at
    if predicted <= 0:
        return 1.0
    threshold = (at - started_at) / predicted * (1 + 1e-9)  # a moment read back from a bound
    if threshold <= 0:
        return 0.0
    usable = [r for r in ratios if r > 0]
    if len(usable) >= 3:
        return RatioDistribution(usable).meet_probability(threshold)
    from statistics import NormalDist

    return NormalDist().cdf(math.log(threshold) / UNKNOWN_END_LOG_SD)


def end_at_level(started_at: float, end_at: float, ratios: Sequence[float], level: float) -> float:
    """When an app has ended with probability `level`: its predicted runtime times the
    ratios' bound at that level (or the log-normal's quantile without a record)."""
    predicted = max(end_at - started_at, 0.0)
    usable = [r for r in ratios if r > 0]
    if len(usable) >= 3:
        factor = ratio_bound(usable, level)
    else:
        from statistics import NormalDist

        factor = math.exp(NormalDist().inv_cdf(level) * UNKNOWN_END_LOG_SD)
    return started_at + predicted * max(factor, 1.0)
