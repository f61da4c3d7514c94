"""A job's memory model: the chosen memory function and a calibrated upper bound on the need.

`MemoryModel` follows scikit-learn's estimator contract: hyper-parameters in the constructor,
`fit(runs)` returns self, learned values end in `_`, `predict`/`upper` have no side effects.

The upper bound at confidence p is the prediction times a bound on the nested held-out
ratios (measured / predicted, select.py): their conformal p-bound when there are enough of
them, else the largest times TAIL_MARGIN (`bound_folds` runs are held out: MAX_FOLDS by
default, so at p = 0.95 that is the default rule; a --memory-confidence given holds out as
many as its level needs, plan.py `bound_folds`); and never below what the job's memory
failures prove: a run that failed at R MB with at least as much input per executor (or
input, for a function of the input) needed more than R. The runtime's normal-theory tail
(calibration.ratio_bound's Student t) is not used: on 3-6 ratios its spread is noise, and t
on 2-5 degrees of freedom turned three ratios [0.42, 1.40, 1.63] into a factor of 11.85
(bench/results/memory_e2e.md).
A `prior` (bound.py: the spread of ratios across jobs borrowed where a job's own are few,
its ratios on the reserved scale, select.grant_ratio) is a candidate, not the default: held
out it did not win (docs/memory.md, "Which method is the default").

A job whose runs never gave an input size is modelled by its peaks alone: a constant per
executor, its held-out ratios each run's over the runs before it (`input_free_`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cobell_cli.core.memory.bound import RatioPrior, ratio_upper
from cobell_cli.core.memory.experts import Fitted
from cobell_cli.core.memory.records import FEATURES, MemoryObservation, at_least, feature_value
from cobell_cli.core.memory.select import (
    CANDIDATES,
    FLOOR_MB,
    MAX_FOLDS,
    Candidate,
    candidate,
    grant_ratio,
    held_out_prediction,
    holdable_runs,
    nested_ratios,
    select,
)
from cobell_cli.core.memory.selector import Neighbour, borrow

STEP_MB = 64  # reservations move in 64 MB steps: what the need is measured in
# With fewer held-out ratios than this, the bound is widened to at least MIN_MARGIN: one or two
# held-out errors say nothing about the tail.
MIN_RATIOS = 3
MIN_MARGIN = 1.25
# Below the conformal rank, the largest held-out ratio covers only n / (n + 1) of the next
# ones: it is widened by this factor (a guess, held fixed: chosen before bench.memory_e2e's
# tuning seed was run, left as it was after).
TAIL_MARGIN = 1.05


@dataclass(frozen=True)
class MemoryEstimate:
    """The model's answer for one run: point and upper need in MB, and what it rests on."""

    predicted_mb: float
    upper_mb: float
    failed_below_mb: float | None  # the largest reservation that failed at this much input


class MemoryModel:
    """Peak memory per executor as one expert's function of the input, chosen per job.

    `fallback`: the candidate label used when the runs are too few to choose (the expert
    selector's or the default); `pool`: the candidates considered; `bound_folds`: how many
    runs (those of the largest inputs) the bound's ratios are held out on.
    """

    def __init__(
        self,
        fallback: str = "linear(per_executor)",
        pool: Sequence[str] | None = None,
        nested: bool = True,
        neighbour: Neighbour | None = None,
        prior: RatioPrior | None = None,
        learn_failures: bool = False,
        cap_by_successes: bool = False,
        deep_folds: bool = False,
        bound_folds: int = MAX_FOLDS,
        reserved_scale: bool = False,
    ) -> None:
        self.fallback = fallback
        self.pool = pool
        self.nested = nested
        self.neighbour = neighbour
        self.prior = prior
        self.learn_failures = learn_failures
        self.cap_by_successes = cap_by_successes
        self.deep_folds = deep_folds
        self.bound_folds = bound_folds
        self.reserved_scale = reserved_scale

    def _pool(self) -> tuple[Candidate, ...]:
        if self.pool is None:
            return CANDIDATES
        return tuple(candidate(label) for label in self.pool)

    def _ratio_floor_mb(self) -> float:
        """The held-out ratios' floor: Spark's smallest heap on the reserved scale (the prior's
        and the `reserved_scale` candidate's: a need and a prediction both below it get the
        same heap), else none."""
        return FLOOR_MB if self.prior is not None or self.reserved_scale else 0.0

    def _fallback(self) -> Candidate:
        """The candidate when the runs are too few to choose: the nearest job's, or ours."""
        return candidate(self.neighbour.label if self.neighbour is not None else self.fallback)

    def fit(self, runs: Sequence[MemoryObservation]) -> MemoryModel:
        """Fit on the job's runs: those with a demand are fitted, memory failures bound. Runs
        without an input size are fitted only when no run has one (`input_free_`)."""
        measured = [r for r in runs if r.demand_mb is not None and r.demand_mb > 0]
        if not measured:
            raise ValueError("no run with a measured memory demand")
        sized = [r for r in measured if r.input_bytes > 0]
        self.input_free_: bool = not sized
        self.unsized_runs_: int = len(measured) - len(sized)
        if sized:
            self._fit_input(sized)
        else:
            self._fit_peaks(measured)
        self.failures_: list[MemoryObservation] = [
            r for r in runs if r.failed and r.reserved_mb is not None
        ]
        self.successes_: list[MemoryObservation] = [
            r for r in sized if not r.failed and r.reserved_mb]
        self.failure_ratios_: list[float] = (
            self._failure_ratios(runs) if self.learn_failures and self.nested else [])
        self.runs_: int = len(sized or measured)
        return self

    def _failure_ratios(self, runs: Sequence[MemoryObservation]) -> list[float]:
        """Each memory failure as the held-out ratio it proves at least: its heap and a step
        over what the runs before it (`runs` oldest first) predict there, the model that
        sized it. A demand read from peaks can be biased low (a GC room or a sampled top the
        rule does not know), which the demands' own ratios cannot show; only a failure does,
        and unlike a fold's ratio it stays in the bound however many larger runs follow.
        Predicted in-sample instead, its own retried run (whose demand demand.consistent
        lifts above the failed heap) hid the bias (bench.studies.memory_demand_candidates,
        `failure-ratios`)."""
        out = []
        for i, f in enumerate(runs):
            if not f.failed or f.reserved_mb is None or not (f.input_bytes or self.input_free_):
                continue
            before = [r for r in runs[:i] if r.demand_mb is not None and r.demand_mb > 0
                      and (r.input_bytes > 0) != self.input_free_]
            if not before:
                continue
            if self.input_free_:
                predicted = CANDIDATES[0].fit(before).predict(0.0)  # type: ignore[union-attr]
            else:
                predicted = held_out_prediction(before, f, self._fallback(), self._pool())
            if predicted:
                out.append((f.reserved_mb + STEP_MB) / predicted)
        return out

    @property
    def bound_ratios_(self) -> list[float]:
        """The ratios the upper bound is calibrated on: the held-out ones, and the failures'."""
        return [*self.ratios_, *self.failure_ratios_]

    def _fit_input(self, measured: Sequence[MemoryObservation]) -> None:
        """A memory function of the input, chosen on the runs (select.py)."""
        guide = self.neighbour
        fallback = self._fallback()
        selection = select(measured, fallback, self._pool())
        chosen = selection.candidate
        fitted = chosen.fit(measured)
        self.source_ = "own" if selection.folds else ("selector" if guide else "default")
        if fitted is None and guide is not None and guide.fitted is not None:
            z = [feature_value(r, chosen.feature) for r in measured]
            fitted = borrow(guide.fitted, z, [r.demand_mb for r in measured])  # type: ignore[misc]
        if fitted is None:  # too few distinct inputs for the form: the same scaled constant
            chosen = CANDIDATES[0]
            fitted = chosen.fit(measured)
        assert fitted is not None
        self.candidate_: Candidate = chosen
        self.fitted_: Fitted = fitted
        self.scores_: dict[str, float] = selection.scores
        self.folds_: int = selection.folds
        self.holdable_runs_: int = holdable_runs(measured)
        self.ratios_: list[float] = (
            nested_ratios(measured, fallback, self._pool(),
                          self._ratio_floor_mb(), self.deep_folds,
                          self.bound_folds)
            if self.nested else []
        )

    def _fit_peaks(self, measured: Sequence[MemoryObservation]) -> None:
        """No input size: the constant of the peaks, each run's ratio over the runs before
        it (the MAX_FOLDS latest) its held-out error."""
        const = CANDIDATES[0]
        fitted = const.fit(measured)
        assert fitted is not None
        ratios = []
        for i in range(max(1, len(measured) - self.bound_folds), len(measured)):
            before = const.fit(measured[:i])
            if before is not None and before.predict(0.0) > 0:
                ratios.append(grant_ratio(measured[i].demand_mb,  # type: ignore[arg-type]
                                          before.predict(0.0),
                                          self._ratio_floor_mb()))
        self.source_ = "peaks"
        self.candidate_ = const
        self.fitted_ = fitted
        self.scores_ = {}
        self.folds_ = len(ratios)
        self.holdable_runs_ = len(measured) - 1
        self.ratios_ = ratios if self.nested else []

    def predict(self, input_bytes: int, scale_out: int) -> float:
        """The point prediction of the need per executor, MB."""
        run = MemoryObservation(input_bytes, scale_out, None)
        return max(self.fitted_.predict(feature_value(run, self.candidate_.feature)), 1.0)

    def ratio(self, confidence: float) -> float:
        """The factor on the prediction that bounds the need with probability >= confidence."""
        if self.prior is None:
            return memory_ratio_bound(self.bound_ratios_, confidence)
        return ratio_upper(self.bound_ratios_, confidence, self.prior)

    def estimate(self, input_bytes: int, scale_out: int, confidence: float) -> MemoryEstimate:
        predicted = self.predict(input_bytes, scale_out)
        failed = self.failed_below(input_bytes, scale_out)
        upper = predicted * self.ratio(confidence)
        if self.cap_by_successes:
            cap = success_bound(self.successes_, input_bytes, scale_out)
            if cap is not None:
                upper = max(predicted, min(upper, cap))
        if failed is not None:
            upper = max(upper, failed + STEP_MB)
        return MemoryEstimate(predicted, upper, failed)

    def failed_below(self, input_bytes: int, scale_out: int) -> float | None:
        """The largest reservation that failed for memory at no more input than this run's."""
        return failure_bound(self.failures_, input_bytes, scale_out, self.candidate_.feature)

    def _chosen_by(self) -> str:
        return _chosen_by_text(self.source_, self.neighbour, self.candidate_.label)

    def describe(self) -> dict[str, Any]:
        return {
            "function": self.candidate_.label,
            "chosen_by": self._chosen_by(),
            "formula": self.fitted_.describe(),
            "runs": self.runs_,
            "runs_without_input": self.unsized_runs_,
            "input_free": self.input_free_,
            "failures": len(self.failures_),
            "cv_folds": self.folds_,
            "cv_rmsle": {k: round(math.sqrt(v), 4) for k, v in self.scores_.items()},
            "held_out_ratios": len(self.ratios_),
            "holdable_runs": self.holdable_runs_,
            "failure_ratios": len(self.failure_ratios_),
        }


def memory_ratio_bound(ratios: Sequence[float], confidence: float) -> float:
    """The factor on a prediction that bounds the next need at `confidence`, from held-out
    ratios: conformal (the ceil((n + 1) p)-th smallest) when n reaches that rank, else the
    largest times TAIL_MARGIN (at least MIN_MARGIN below MIN_RATIOS); never below 1. At most
    the largest ratio times TAIL_MARGIN whatever their spread: it cannot run away."""
    n = len(ratios)
    if n < MIN_RATIOS:
        return max([MIN_MARGIN, *ratios])
    ordered = sorted(ratios)
    rank = math.ceil((n + 1) * confidence)
    if rank <= n:
        return max(ordered[rank - 1], 1.0)
    return max(ordered[-1] * TAIL_MARGIN, 1.0)


def confidence_acts(n_ratios: int, confidence: float) -> bool:
    """Does `memory_ratio_bound` on n held-out ratios depend on this confidence? Only while
    its conformal rank is within them, up to n / (n + 1): above it the bound is the largest
    ratio x TAIL_MARGIN at any confidence, and below MIN_RATIOS at least MIN_MARGIN."""
    return n_ratios >= MIN_RATIOS and math.ceil((n_ratios + 1) * confidence) <= n_ratios


def _chosen_by_text(source: str, neighbour: Neighbour | None, label: str) -> str:
    """What chose the function, read after "chosen by", in words that agree with `label`:
    the default function is linear in the input per executor, and where the runs' inputs are
    too alike to fit a slope to, a constant stands in for it."""
    if source == "peaks":
        return "its own peaks"
    if source == "own":
        return "its own runs (nested forward CV)"
    if source == "selector" and neighbour is not None:
        return f"the nearest job by event-log profile, {neighbour.job} (KNN)"
    if label == "constant":
        return ("default: a constant, since the runs' inputs are too alike to fit how memory "
                "grows with them")
    return "default: too few input sizes to choose a function, so linear in the input per executor"


def failure_bound(
    failures: Sequence[MemoryObservation], input_bytes: int, scale_out: int, feature: Any = None
) -> float | None:
    """The largest reservation that failed for memory with no more input per executor (or,
    for a function of the whole input, no more input) than this run has, within
    records.SAME_INPUT:
    the need here is above it."""
    query = MemoryObservation(input_bytes, scale_out, None)
    proved = [
        f.reserved_mb
        for f in failures
        if f.failed and f.reserved_mb is not None and (
            at_least(query, f, "per_executor") or (feature and at_least(query, f, feature))
        )
    ]
    return max(proved) if proved else None  # type: ignore[type-var]


def success_bound(
    successes: Sequence[MemoryObservation], input_bytes: int, scale_out: int
) -> float | None:
    """The smallest heap the job's successes prove enough here, if the need grows no faster
    than its input (per executor and whole): a run that succeeded at R MB with input u proves
    the need at u' at most R x max(1, u' / u). Spark's fixed reserved heap (300 MB) makes a
    need grow slower than that; a need that grows faster (a quadratic aggregation) breaks it.
    None without an input size or a success (the candidate `success-cap`, not the default:
    docs/memory.md)."""
    if input_bytes <= 0:
        return None
    query = MemoryObservation(input_bytes, scale_out, None)
    caps = [r.reserved_mb * max(1.0, *(feature_value(query, f) / feature_value(r, f)
                                        for f in FEATURES))
            for r in successes if r.reserved_mb and r.input_bytes > 0]
    return min(caps) if caps else None  # type: ignore[type-var]
