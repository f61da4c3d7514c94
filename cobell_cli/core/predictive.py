"""The predictive distribution of a job's next runtime at each candidate scale-out: what the
planner reads P(meet) and the upper bound from.

The model predicts c_j at candidate x_j (co-runners' slow-down and the stranger factor
included). Where the next run may land around it is learnt from the model's held-out errors
e_i = log(runtime_i / predicted_i), each at the scale-out x_i of its run (calibration.py: the
model's K-fold errors and the recorded outcomes of recent plans). The distribution at x_j is
log(runtime / c_j) = mu_j + sigma_j · Z, Z of the pooled errors' own standardised shape
(their conformal ranks, the Student t tail beyond the largest: calibration.RatioDistribution).
What makes mu_j and sigma_j the candidate's own:

* The errors near it. A Gaussian kernel in log scale-out (bandwidth LOCAL_BANDWIDTH) weighs
  the errors; their weighted mean and spread, shrunk to the pooled ones by PRIOR_ERRORS
  pseudo-errors, are the candidate's location and spread: with many errors near it, theirs;
  with none, the pooled ones.
* What the runs near it leave unknown. The location rests on N_j runs near x_j (the same
  kernel) and the model's curve, counted as one run more: the spread grows by the factor
  1 + 1/(N_j + 1), the predictive variance of a mean of N_j + 1 observations. A candidate the
  job never ran (N_j near 0) is wider, both ways, than one it ran many times; no two
  candidates share a width by construction.
* Extrapolation. Beyond the scale-outs the job ran, the model's own interval grows with the
  distance (forward CV stretched by the log distance; no speed-up beyond a single scale-out;
  between no and linear speed-up below the range): its growth from the first candidate past
  the edge, read as a log sd, adds in quadrature.

P(meet) at x_j is P(runtime <= target) under this distribution; the upper bound at level p its
p-quantile, so that "the upper bound is within the target" and "P(meet) >= p" are one
statement. Pure: no I/O, plain Python (no numpy on the cached predict path).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from cobell_cli.core.calibration import (
    Error,
    InterferenceModel,
    Overlaps,
    RatioDistribution,
    error_record,
    held_out_errors,
    ratio_bound,
    scale_out_of,
    stranger_factors,
)

# Kernel bandwidth in log scale-out: an error at 24 executors says about as much of 20 (weight
# 0.6) as of 24, little of 12 (weight 0.01). A design value, see docs/model.md.
LOCAL_BANDWIDTH = 0.2
# Pseudo-errors of the pooled location and spread in each candidate's own: a local estimate
# needs about as many errors as a quantile does (uncertainty.MIN_RESIDUALS) to outweigh them.
PRIOR_ERRORS = 5.0
MIN_LOG_SD = 1e-3  # a spread below 0.1 % is a perfect fit's, not a measured one


class Shape:
    """The pooled errors' standardised shape: G(z) = P(Z <= z) and its quantile, Z the log
    ratio less the pooled log mean, over the pooled log sd."""

    def __init__(self, ratios: Sequence[float]) -> None:
        self.distribution = RatioDistribution(ratios)
        self.n = len(self.distribution.ordered)
        self.log_mean = self.distribution.log_mean
        self.log_sd = self.distribution.log_sd

    @classmethod
    def of(cls, ratios: Sequence[float]) -> Shape | None:
        return cls(ratios) if ratios else None

    @property
    def degenerate(self) -> bool:
        """Errors all alike (a model that fits its runs exactly): a normal shape instead."""
        return self.log_sd <= MIN_LOG_SD

    def cdf(self, z: float) -> float:
        if self.degenerate:
            return _normal().cdf(z)
        return self.distribution.meet_probability(math.exp(self.log_mean + self.log_sd * z))

    def quantile(self, p: float) -> float:
        """The z whose cdf is at least p (the conformal rank, rounded up; calibration.py)."""
        if self.degenerate:
            return _normal().inv_cdf(p)
        bound = ratio_bound(self.distribution.ordered, p)
        return (math.log(bound) - self.log_mean) / self.log_sd


@dataclass(frozen=True)
class Candidate:
    """One candidate's distribution: log(runtime) = log(center_s) + location + scale · Z,
    scale = hypot(spread · sqrt(1 + 1 / (runs_near + 1)), extrapolation)."""

    scale_out: float
    center_s: float
    location: float
    spread: float  # the local errors' sd, shrunk to the pooled one
    weight: float  # the errors behind `spread`: kernel weights plus PRIOR_ERRORS
    runs_near: float  # N_j: kernel-weighted runs near the scale-out
    extrapolation: float  # the model's own log sd beyond its width at the range's edge

    @property
    def scale(self) -> float:
        inflate = math.sqrt(1.0 + 1.0 / (self.runs_near + 1.0))
        return math.hypot(self.spread * inflate, self.extrapolation)

    def after_run(self) -> Candidate:
        """The distribution once one more run here lands at its location: one more error of
        no deviation, one more run near, inside the observed range (no errors: the model's
        interval, unchanged)."""
        if math.isinf(self.weight):
            return self
        return replace(self, spread=self.spread * math.sqrt(self.weight / (self.weight + 1)),
                       weight=self.weight + 1, runs_near=self.runs_near + 1,
                       extrapolation=0.0)


class Predictive:
    """The candidates' distributions over one shape; P(meet) and quantiles per candidate."""

    def __init__(self, candidates: Sequence[Candidate], shape: Shape | None) -> None:
        self.candidates = tuple(candidates)
        self.shape = shape
        self._quantiles: dict[float, float] = {}

    @property
    def errors(self) -> int:
        """How many held-out errors the distributions rest on (0: the model's interval)."""
        return self.shape.n if self.shape is not None else 0

    def meet_probability(self, j: int, threshold_s: float) -> float:
        """P(runtime at candidate j <= threshold_s)."""
        return self._probability(self.candidates[j], threshold_s)

    def meet_probability_after_run(self, j: int, threshold_s: float) -> float:
        """P(meet) at candidate j once one more run there lands where it is centred."""
        return self._probability(self.candidates[j].after_run(), threshold_s)

    def _probability(self, c: Candidate, threshold_s: float) -> float:
        if threshold_s <= 0 or c.center_s <= 0:
            return 0.0
        gap = math.log(threshold_s / c.center_s) - c.location
        if c.scale <= 0:
            return 1.0 if gap >= 0 else 0.0
        return self._cdf(gap / c.scale)

    def quantile_s(self, j: int, p: float) -> float:
        """The runtime candidate j stays below with probability p (its upper bound at p)."""
        c = self.candidates[j]
        return c.center_s * math.exp(min(c.location + c.scale * self._quantile(p), 700.0))

    def _cdf(self, z: float) -> float:
        """G(z): the pooled errors' shape at z pooled sds from their mean (normal without)."""
        if self.shape is None:
            return _normal().cdf(z)
        return self.shape.cdf(z)

    def _quantile(self, p: float) -> float:
        if p not in self._quantiles:
            self._quantiles[p] = (_normal().inv_cdf(p) if self.shape is None
                                  else self.shape.quantile(p))
        return self._quantiles[p]


def predictive(
    scale_outs: Sequence[float],
    centers_s: Sequence[float],
    model_log_sd: Sequence[float],
    run_scale_outs: Sequence[float],
    errors: Sequence[Error],
    observed: tuple[float, float],
    bandwidth: float = LOCAL_BANDWIDTH,
    prior_errors: float = PRIOR_ERRORS,
    pair_log_sd: Sequence[float] | None = None,
) -> Predictive:
    """Each candidate's distribution (see the module doc).

    `centers_s`: the prediction per candidate, co-runners and stranger factor included;
    `model_log_sd`: the model's own interval per candidate as a log sd (its upper half-width
    over the normal quantile of its level), for the extrapolation term and, without errors,
    as the whole spread; `run_scale_outs`: the scale-outs of the runs the model was fitted
    on; `observed`: the smallest and largest of them; `pair_log_sd`: the uncertainty of the
    running co-runners' slow-down at each candidate (the pairs' delta method), which the
    errors, measured at the overlaps past runs had, do not hold.
    """
    errors = [e for e in errors if e.ratio > 0]
    shape = Shape.of([e.ratio for e in errors])
    placed = [(math.log(e.scale_out), math.log(e.ratio)) for e in errors
              if e.scale_out is not None and e.scale_out > 0]
    runs = [math.log(x) for x in run_scale_outs if x > 0]
    extra = _extrapolation_sd(scale_outs, model_log_sd, observed)
    if pair_log_sd is not None:
        extra = [math.hypot(e, p) for e, p in zip(extra, pair_log_sd, strict=True)]
    # Runs share scale-outs (a 1000-run history has a few dozen): each candidate's kernel is
    # computed once per distinct one and looked up per run, the same numbers summed in the
    # same order as one exp per run (~45 ms of a cached predict at 1000 runs).
    near_errors = NearErrors.of([s for s, _ in placed], [e for _, e in placed])
    points = {*runs, *near_errors.at_s}
    out = []
    for x, center, ext, sd in zip(scale_outs, centers_s, extra, model_log_sd, strict=True):
        t = math.log(x)
        at = {p: _kernel(t - p, bandwidth) for p in points}
        near = sum(map(at.__getitem__, runs))
        if shape is None:  # the model's interval alone: it knows its runs already
            out.append(Candidate(float(x), float(center), 0.0, sd, math.inf, math.inf, 0.0))
            continue
        location, spread, weight = _local(near_errors, shape, prior_errors, at)
        out.append(Candidate(float(x), float(center), location, spread, weight, near, ext))
    return Predictive(out, shape)


@dataclass(frozen=True)
class NearErrors:
    """The placed errors (`at_s`: each one's log scale-out; `log_errors`), and per distinct
    scale-out their count, mean and sum of squared deviations (`groups`): a history has a few
    dozen scale-outs for its thousand errors, so each candidate's kernel sums run over those
    (the same sums, ~25 ms of a cached predict at 10 000 runs done per error)."""

    at_s: tuple[float, ...]
    log_errors: tuple[float, ...]
    groups: tuple[tuple[float, int, float, float], ...]  # (log scale-out, n, mean, M2)

    @classmethod
    def of(cls, at_s: Sequence[float], log_errors: Sequence[float]) -> NearErrors:
        by_at: dict[float, list[float]] = {}
        for at, e in zip(at_s, log_errors, strict=True):
            by_at.setdefault(at, []).append(e)
        groups = []
        for at, es in by_at.items():
            mean = math.fsum(es) / len(es)
            groups.append((at, len(es), mean, math.fsum((e - mean) ** 2 for e in es)))
        return cls(tuple(at_s), tuple(log_errors), tuple(groups))


def _local(errors: NearErrors, shape: Shape, prior_errors: float,
           kernel_at: Mapping[float, float]) -> tuple[float, float, float]:
    """The kernel-weighted mean and sd of the log errors near a candidate, shrunk to the
    pooled ones by `prior_errors` pseudo-errors, and the total weight behind them
    (`kernel_at`: the kernel at each error's log scale-out). The weighted sums by group:
    sum w (e - m)^2 over a group of n at one scale-out is w (M2 + n (mean - m)^2)."""
    pooled_sd = max(shape.log_sd, MIN_LOG_SD)
    weighted = [(kernel_at[at] * n, mean, kernel_at[at] * m2) for at, n, mean, m2 in errors.groups]
    total = sum(w for w, _, _ in weighted) + prior_errors
    mean = (sum(w * m for w, m, _ in weighted) + prior_errors * shape.log_mean) / total
    spread = (sum(wm2 + w * (m - mean) ** 2 for w, m, wm2 in weighted)
              + prior_errors * (pooled_sd ** 2 + (shape.log_mean - mean) ** 2)) / total
    return mean, math.sqrt(spread), total


def _extrapolation_sd(scale_outs: Sequence[float], model_log_sd: Sequence[float],
                      observed: tuple[float, float]) -> list[float]:
    """Per candidate, how much the model's own log sd has grown beyond its value at the first
    candidate past the nearer edge of the observed range (0 inside the range)."""
    lo, hi = observed
    below = [j for j, x in enumerate(scale_outs) if x < lo]
    above = [j for j, x in enumerate(scale_outs) if x > hi]
    out = [0.0] * len(scale_outs)
    if below:
        edge = model_log_sd[below[-1]]
        for j in below:
            out[j] = max(0.0, model_log_sd[j] - edge)
    if above:
        edge = model_log_sd[above[0]]
        for j in above:
            out[j] = max(0.0, model_log_sd[j] - edge)
    return out


def _kernel(d: float, bandwidth: float) -> float:
    return math.exp(-0.5 * (d / bandwidth) ** 2)


@cache
def _normal() -> Any:
    from cobell_cli.core.normal import StandardNormal  # NormalDist's numbers, no statistics

    return StandardNormal()

@dataclass(frozen=True)
class Calibrated:
    """The candidates' distributions and the record behind them: `calibration` says where the
    errors came from (None: no errors, the model's interval alone) and which co-runners were
    charged the most harmful pair."""

    predictive: Predictive
    calibration: dict[str, Any] | None

    @property
    def has_errors(self) -> bool:
        return self.predictive.shape is not None


def calibrated_distribution(
    *,
    runs: Sequence[Mapping[str, Any]],
    scale_outs: Sequence[float],
    predicted_s: Sequence[float],
    upper_s: Sequence[float],
    interval_confidence: float,
    overlaps: Sequence[Overlaps] | None,
    model: InterferenceModel,
    fit: Callable[[Sequence[Mapping[str, Any]]], InterferenceModel],
    confidence: float,
    refit: bool,
    pair_log_sd: Sequence[float] | None = None,
) -> Calibrated:
    """Each candidate's distribution from the model's prediction and interval (`upper_s`, the
    upper end of its two-sided interval at `interval_confidence`), the job's held-out errors
    (`refit` allows CV+ refits where the model has none of its own) and the stranger factor
    (calibration.stranger_factors) on the prediction. `confidence`: the level the record's
    ratio quantile is given at."""
    found = held_out_errors(runs, model, fit, refit)
    factors, strangers = stranger_factors(scale_outs, overlaps, model)
    z = _normal().inv_cdf((1 + interval_confidence) / 2)
    model_sd = [math.log(u / p) / z if p > 0 and u > p else 0.0
                for p, u in zip(predicted_s, upper_s, strict=True)]
    centers = [float(p) * f for p, f in zip(predicted_s, factors, strict=True)]
    xs = [x for x in (scale_out_of(r) for r in runs) if x is not None]
    observed = (getattr(model, "scale_out_range_", None)
                or ((min(xs), max(xs)) if xs else (min(scale_outs), max(scale_outs))))
    dist = predictive(scale_outs, centers, model_sd, xs, found[1] if found else [],
                      (float(observed[0]), float(observed[1])), pair_log_sd=pair_log_sd)
    record = (error_record(found[0], [e.ratio for e in found[1]], confidence)
              if found is not None else None)
    if strangers:
        record = {**(record or {}), "strangers": strangers}
    return Calibrated(dist, record)
