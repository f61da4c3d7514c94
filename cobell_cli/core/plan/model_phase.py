"""Planning with a fitted model (or the what-if): the co-runners' overlaps, each candidate's
runtime bounds, the decision, and the `Plan` that records why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cobell_cli.core.jsonable import jsonable
from cobell_cli.core.plan.co_runners import (
    _co_runner_views,
    _Overlaps,
    _predict_overlaps,
    considers_co_runners,
)
from cobell_cli.core.plan.curve_effects import slowdown
from cobell_cli.core.plan.infeasible import Choice, unreachable
from cobell_cli.core.plan.reasons import _model_reason, probability_text, unreachable_words
from cobell_cli.core.plan.records import (
    CandidatePrediction,
    CoRunnerView,
    FitFn,
    Phase,
    Plan,
    RuntimeModel,
    _floats,
)
from cobell_cli.core.predictive import Predictive, calibrated_distribution
from cobell_cli.core.running import RunningApp
from cobell_cli.core.words import count

DEFAULT_INTERVAL_CONFIDENCE = 0.9  # the interval shown when no --confidence decides


@dataclass(frozen=True)
class _Bounds:
    """Point prediction, the distribution's bounds and P(meet) per candidate."""

    predicted: tuple[float, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    interval_confidence: float
    calibration: Mapping[str, Any] | None
    meet_probability: tuple[float, ...] | None
    predictive: Predictive


@dataclass(frozen=True)
class _Decision:
    """The runtime each candidate is judged on, which meet the target, and the chosen index;
    `choice`: infeasible.py's, when none meets it."""

    decide: tuple[float, ...]
    meets: tuple[bool, ...]
    feasible: bool
    index: int
    choice: Choice | None = None


def _runtime_bounds(
    model: RuntimeModel,
    phase: Phase,
    xs: Sequence[float],
    overlaps: list[dict[str | None, float]] | None,
    runs: Sequence[Mapping[str, Any]],
    candidates: Sequence[int],
    fit_fn: FitFn,
    confidence: float | None,
    target_s: float,
) -> _Bounds:
    """The point prediction and each candidate's predictive distribution (predictive.py):
    its bounds at the plan's level (the confidence, else DEFAULT_INTERVAL_CONFIDENCE) and
    P(runtime <= target)."""
    predicted = _floats(model.predict(xs, overlaps))
    level = confidence if confidence is not None else DEFAULT_INTERVAL_CONFIDENCE
    _, upper = (_floats(b) for b in model.predict_interval(xs, overlaps, confidence=level))
    found = calibrated_distribution(
        runs=runs,
        scale_outs=candidates,
        predicted_s=predicted,
        upper_s=upper,
        interval_confidence=level,
        overlaps=overlaps,
        model=model,
        fit=fit_fn,
        confidence=level,
        refit=phase == "model" and confidence is not None,
        pair_log_sd=_pair_log_sd(model, xs, overlaps),
    )
    dist = found.predictive
    js = range(len(candidates))
    probability = (tuple(dist.meet_probability(j, target_s) for j in js)
                   if found.has_errors else None)
    return _Bounds(
        predicted,
        tuple(dist.quantile_s(j, 1 - level) for j in js),
        tuple(dist.quantile_s(j, level) for j in js),
        level,
        found.calibration,
        probability,
        dist,
    )


def _pair_log_sd(model: RuntimeModel, xs: Sequence[float],
                 overlaps: list[dict[str | None, float]] | None) -> list[float] | None:
    """Per candidate, the sd of the log slow-down of its predicted co-runners from the pairs'
    uncertainty (co_runner_effects.factor_and_sd); None without co-runners."""
    if not overlaps or not any(overlaps):
        return None
    return [slowdown(model, x, row or {})[1] for x, row in zip(xs, overlaps, strict=True)]


def _decide(
    xs: Sequence[float],
    bounds: _Bounds,
    observed: tuple[float, float],
    confidence: float | None,
    target_s: float,
    prices: Sequence[float] | None = None,
) -> _Decision:
    """The smallest candidate meeting the target; none meets it: infeasible.py's rule.

    With a confidence p a candidate meets the target when its upper bound, the p-quantile of
    its predictive distribution, is within it: P(meet) >= p. Without one (the point
    decision) the point prediction decides, but below the smallest observed scale-out, where
    the model can only bound the runtime (between no and linear speed-up), the upper bound
    does, or a flat history would make every smaller scale-out "meet" the target. `prices`
    (per executor-second, e.g. container MB for `--minimize memory-mb-seconds`): among the
    candidates meeting the target, the one whose price x scale-out x predicted runtime is
    least, instead of the smallest. None meeting it: the choice by P(meet) and cost, or the
    exploration rule (infeasible.py).
    """
    lo = observed[0]
    decide = tuple(
        u if x < lo or confidence is not None else p
        for x, p, u in zip(xs, bounds.predicted, bounds.upper, strict=True)
    )
    meets = tuple(d <= target_s for d in decide)
    costs = [x * p * (prices[j] if prices is not None else 1.0)
             for j, (x, p) in enumerate(zip(xs, bounds.predicted, strict=True))]
    if any(meets):
        i = meets.index(True)
        if prices is not None:
            i = min((j for j, m in enumerate(meets) if m), key=lambda j: (costs[j], j))
        return _Decision(decide, meets, True, i)
    level = confidence if confidence is not None else bounds.interval_confidence
    choice = unreachable(bounds.predictive, costs, target_s, level)
    return _Decision(decide, meets, False, choice.index, choice)


def _candidate_rows(
    candidates: Sequence[int], bounds: _Bounds, decision: _Decision, ov: _Overlaps
) -> tuple[CandidatePrediction, ...]:
    pred = ov.prediction
    return tuple(
        CandidatePrediction(
            scale_out=int(c),
            predicted_s=bounds.predicted[j],
            lower_s=bounds.lower[j],
            upper_s=bounds.upper[j],
            overlap_ratio=(
                {co.app_id: co.overlap_ratio[j] for co in pred.co_runners}
                if pred is not None
                else {}
            ),
            meets_target=decision.meets[j],
            meet_probability=(
                bounds.meet_probability[j] if bounds.meet_probability is not None else None
            ),
        )
        for j, c in enumerate(candidates)
    )


def _model_plan(
    model: RuntimeModel,
    phase: Phase,
    runs: Sequence[Mapping[str, Any]],
    candidates: Sequence[int],
    apps: Sequence[RunningApp],
    co_runner_histories: Mapping[str, Sequence[Mapping[str, Any]]],
    fit_fn: FitFn,
    warnings: list[str],
    common: dict[str, Any],
    confidence: float | None,
    tol_s: float | None,
    max_iter: int | None,
    own_fit: FitFn | None = None,
    prices: Sequence[float] | None = None,
) -> Plan:
    """Plan with a fitted model: overlaps, bounds, the decision, and the record of why.
    `own_fit` refits the job's own model (with its what-if), `fit_fn` the co-runners';
    `prices` see `_decide`."""
    target_s = common["target_s"]
    xs = [float(c) for c in candidates]
    ov = _Overlaps()
    considered = considers_co_runners(model, phase, common["strategy"])
    if considered and apps:
        ov = _predict_overlaps(
            model, xs, apps, co_runner_histories, fit_fn, runs, common, tol_s, max_iter
        )
    bounds = _runtime_bounds(
        model, phase, xs, ov.per_candidate(), runs, candidates, own_fit or fit_fn, confidence,
        target_s,
    )
    if not considered and apps:  # co-runners ignored: the errors do not cover them
        bounds = replace(bounds, meet_probability=None)
    decision = _decide(xs, bounds, model.scale_out_range_, confidence, target_s, prices)
    views = _co_runner_views(apps, ov, decision.index, phase, max_iter, warnings)
    description = model.describe()
    if considered:
        warnings.extend(_never_alone(description, ov, decision.index, common["job"]))
    n_overlapping = len(apps) if ov.prediction is not None else 0
    reason = _reason(phase, candidates, bounds, decision, confidence, common, n_overlapping)
    if not decision.feasible:
        warnings.append(_infeasible_warning(candidates, target_s, decision, bounds, confidence))
    return _model_plan_record(description, phase, reason, candidates, bounds, decision, ov, views,
                              confidence, warnings, common)


def _never_alone(described: Mapping[str, Any] | None, ov: _Overlaps, i: int, job: str,
                 ) -> list[str]:
    """A plan for a job that runs alone now, from runs that never did: its runtime alone is
    then read from co-located runs, which cannot tell the job's own speed from its
    co-runners' slow-down (bench/results/profiles_gap.md, part 3: 0.43x to 2.13x the runtime
    alone on the real profile sets' folds)."""
    described = described or {}
    rows = ov.per_candidate()
    alone_now = rows is None or not any(v > 0 for v in rows[i].values())
    if described.get("n_runs_alone") != 0 or not described.get("interference") or not alone_now:
        return []
    return [f"none of {job}'s {count(described['n_runs'], 'run')} ran alone, and this plan has"
            " it run alone: its runtime alone is inferred from runs beside co-runners, which"
            " cannot tell its own speed from their slow-down (on real runs it came out from under"
            " half to over twice the runtime alone); one run alone settles it"]


def _reason(
    phase: Phase,
    candidates: Sequence[int],
    bounds: _Bounds,
    decision: _Decision,
    confidence: float | None,
    common: Mapping[str, Any],
    n_overlapping: int,
) -> str:
    """The plan's reason (reasons.py) at the chosen candidate."""
    i = decision.index
    return _model_reason(
        phase,
        common["strategy"],
        candidates[i],
        decision.feasible,
        bounds.predicted[i],
        bounds.upper[i],
        confidence,
        common["target_s"],
        candidates,
        n_overlapping,
        common["usable_runs"],
        _meet_probability(bounds, i),
        decision.choice,
    )


def _meet_probability(bounds: _Bounds, i: int) -> float | None:
    return bounds.meet_probability[i] if bounds.meet_probability is not None else None


def _infeasible_warning(
    candidates: Sequence[int], target_s: float, decision: _Decision, bounds: _Bounds,
    confidence: float | None,
) -> str:
    """What a plan that meets no target reserves instead, in the words of the table: the
    runtime each candidate was judged on (the upper bound under a P(meet) policy, else the
    prediction, but for the upper bound below the smallest scale-out ever run) and the rule
    that chose (infeasible.py)."""
    i, chosen = decision.index, candidates[decision.index]
    judged = "upper bound" if confidence is not None else "judged runtime"
    probability = _meet_probability(bounds, i)
    chance = f", P(meet) {probability_text(probability)}" if probability is not None else ""
    assert decision.choice is not None
    return (
        f"no scale-out in [{candidates[0]}, {candidates[-1]}] meets the {target_s:.0f} s "
        f"target ({judged} {decision.decide[i]:.0f} s at {chosen}{chance}); reserving "
        f"{unreachable_words(decision.choice, candidates, target_s)}"
    )


def _model_plan_record(
    description: Mapping[str, Any] | None,
    phase: Phase,
    reason: str,
    candidates: Sequence[int],
    bounds: _Bounds,
    decision: _Decision,
    ov: _Overlaps,
    views: tuple[CoRunnerView, ...],
    confidence: float | None,
    warnings: list[str],
    common: dict[str, Any],
) -> Plan:
    """The `Plan` of a model phase: the chosen candidate, every candidate, and the model."""
    i, pred = decision.index, ov.prediction
    return Plan(
        scale_out=candidates[i],
        phase=phase,
        reason=reason,
        feasible=decision.feasible,
        predicted_s=bounds.predicted[i],
        lower_s=bounds.lower[i],
        upper_s=bounds.upper[i],
        interval_confidence=bounds.interval_confidence,
        confidence=confidence,
        meet_probability=_meet_probability(bounds, i),
        warnings=tuple(warnings),
        co_runners=views,
        candidates=_candidate_rows(candidates, bounds, decision, ov),
        model=jsonable(description),
        overlap_iterations=max(pred.iterations) if pred is not None else None,
        overlap_converged=all(pred.converged) if pred is not None else None,
        calibration=bounds.calibration,
        **common,
    )
