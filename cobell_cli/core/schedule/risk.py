"""How likely a job is to finish within a budget, and how late an app may end: both read from
runtime / predicted ratios the way the planner reads them (core/calibration.py).

`Risk.judge` reads one candidate the pooled way: upper = predicted x the stranger factor x the
ratios' bound at the confidence, and P(meet) = the ratios' probability of staying below
budget / (predicted x stranger factor), so that "upper within the budget" and "P(meet) >= the
confidence" are one statement (as the planner's, core/predictive.py). The model's own interval
decides only for a job without ratios: joined to the ratios' bound, it called 40-84 % of the
candidates out of reach at P(meet) >= 0.95 (seed 7, bench/studies/deadline_agree.py), and the
schedule then reserved the likeliest, the largest. (The planner gives each
candidate a distribution of its own, core/predictive.py; a schedule weighs jobs it has no
candidates' runs for.) It reads the
ratios a job carried into the history (a waiting submit's own), so that any process can weigh
another's job without its runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cobell_cli.core.calibration import (
    POOLED_KEY,
    RECENT_OUTCOMES,
    RatioDistribution,
    held_out_ratios,
    outcome_ratios,
    ratio_bound,
    stranger_factors,
)

# The P(meet) a deadline plans at when --confidence is not given. Seed 7 (bench.deadline, the
# tuning seed) showed P(meet) calibrated outside crowds beyond the history's (runtime over the
# prediction above the ratios' 0.9 bound in 4-7 % of starts) while only 90.7 / 92.0 % of the
# deadlines were met at the runtime target's default 0.9: at P(meet) >= 0.9 a calibrated
# decision misses up to one deadline in ten, and the issue asks >= 95 % met at default flags.
DEADLINE_CONFIDENCE = 0.95


def deadline_confidence(confidence: float | None, given: bool) -> float | None:
    """The level a deadline plans at: the user's --confidence (or 'point') when given (on the
    command line, in the environment or the config file), else DEADLINE_CONFIDENCE."""
    return confidence if given else DEADLINE_CONFIDENCE


# An app whose job has no error record yet: its end taken as log-normal around the predicted
# one with this sd (the co-runners' overlap error in bench/results/progress.md is ~5-7 % of a
# runtime; 0.25 is several times that, so a wait for such an app is seldom worth it). Set by
# hand at 0b3faad; measured since by bench.studies.unknown_end (bench/results/unknown_end.md:
# the Bell runs predicted from histories of 1-3 runs): fitted on the Spark jobs (the sd whose
# 0.9 stretch 90 % of their runs ended by) 0.232; on the Flink jobs, which it was not fitted
# on, 0.25 covers 95.8 % (0.232: 95.6 %), so 0.25 stays.
UNKNOWN_END_LOG_SD = 0.25


def error_ratios(model: Any, runs: Sequence[Mapping[str, Any]]) -> tuple[float, ...]:
    """The model's held-out runtime / predicted ratios joined by the recorded outcomes of the
    job's last plans: the pooled errors `calibration.held_out_errors` gives the planner
    when the model carries its own."""
    own = held_out_ratios(model) or []
    if len(own) < 4 or len(runs) < 4:
        return ()
    return tuple(own + outcome_ratios(runs)[-RECENT_OUTCOMES:])


class Judgement:
    """A candidate judged at a budget: its upper bound, whether it meets the budget, and
    P(runtime <= budget), computed when first asked (the schedule asks it of few)."""

    __slots__ = ("_budget_s", "_probability", "_risk", "_scaled_s", "feasible", "upper_s")

    def __init__(self, upper_s: float, feasible: bool, risk: Risk, budget_s: float,
                 scaled_s: float) -> None:
        self.upper_s = upper_s
        self.feasible = feasible
        self._risk, self._budget_s, self._scaled_s = risk, budget_s, scaled_s
        self._probability: float | None = None

    @property
    def meet_probability(self) -> float | None:
        if self._probability is None:
            self._probability = self._risk.probability(self._budget_s, self._scaled_s)
        return self._probability


@dataclass
class Risk:
    """One job's error record at its confidence (None: the point decision)."""

    ratios: Sequence[float]
    confidence: float | None
    _dist: RatioDistribution | None = field(default=None, init=False, repr=False)
    _bound: float = field(default=0.0, init=False, repr=False)
    _own: dict[int, frozenset[str]] = field(default_factory=dict, init=False, repr=False)
    _seen: dict[float, float] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        usable = [float(r) for r in self.ratios if r > 0]
        if usable:
            self._dist = RatioDistribution(usable)
            if self.confidence is not None:
                self._bound = ratio_bound(usable, self.confidence)

    def judge(
        self, model: Any, scale_out: int, predicted_s: float, row: Mapping[Any, float],
        budget_s: float,
    ) -> Judgement:
        """The upper bound, whether the candidate meets the budget (the upper bound at a
        confidence, the point prediction without one) and P(runtime <= budget): with ratios,
        the bound is their quantile, so it meets the budget exactly when P(meet) >= p."""
        factor = self._stranger_factor(model, scale_out, row)
        scaled = predicted_s * factor
        if self.confidence is None:
            return Judgement(scaled, budget_s > 0 and predicted_s <= budget_s, self, budget_s,
                             scaled)
        if self._dist is not None:  # one statement: the bound within budget iff P(meet) >= p
            bound = scaled * self._bound
            return Judgement(bound, budget_s > 0 and bound <= budget_s, self, budget_s, scaled)
        if budget_s <= 0:
            return Judgement(scaled, False, self, budget_s, scaled)
        _, upper = model.predict_interval([float(scale_out)], dict(row) or None,
                                          confidence=self.confidence)
        bound = float(next(iter(upper))) * factor
        return Judgement(bound, bound <= budget_s, self, budget_s, scaled)

    def alone_bound(self, alone_s: float) -> float | None:
        """A lower bound of the upper bound of a run alone `alone_s` long (co-runners only slow
        it, strangers only widen it); None at the point decision."""
        return None if self.confidence is None else alone_s * self._bound

    def _stranger_factor(self, model: Any, scale_out: int, row: Mapping[Any, float]) -> float:
        """calibration.stranger_factors at one candidate; 1 at once when every co-runner job
        in the row has a pair of its own (nothing to widen for)."""
        own = self._own.get(id(model))
        if own is None:
            pairs = (model.describe() or {}).get("interference") or {}
            own = self._own[id(model)] = frozenset(str(k) for k in pairs if k != POOLED_KEY)
        if all(job is not None and str(job) in own for job, r in row.items() if r > 0):
            return 1.0
        return stranger_factors([float(scale_out)], [dict(row)], model)[0][0]

    def probability(self, budget_s: float, predicted_s: float) -> float | None:
        """P(runtime <= budget_s) for a run predicted at `predicted_s`; None: no record."""
        if self._dist is None:
            return None
        if budget_s <= 0 or predicted_s <= 0:
            return 0.0
        threshold = float(f"{budget_s / predicted_s:.5g}")  # a tail read once per threshold
        if threshold not in self._seen:
            self._seen[threshold] = self._dist.meet_probability(threshold)
        return self._seen[threshold]


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
