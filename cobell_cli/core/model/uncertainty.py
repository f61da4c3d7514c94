"""Relative prediction intervals from cross-validation residuals (log ratios y / ŷ)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cobell_cli.core.calibration import ratio_bound, student_t_quantile
from cobell_cli.core.normal import StandardNormal
from cobell_cli.core.sorted_values import quantile

MIN_RESIDUALS = 5  # fewer and quantiles are noise: use the prior width
# Prior 90 % half-width in log space for sparse histories (2 scale-outs or few residuals):
# the 90th percentile of |log(y/ŷ)| measured on the sparse3 protocol, 10 seeds, Bell data
# (bench/results/accuracy.md, "interval" section: 0.252 after the sparse fixes, was 0.274).
PRIOR_LOG_HALF_WIDTH = 0.25
MAX_LOG_FACTOR = 200.0  # e^200 ~ 7e86: as good as unbounded, and finite times any runtime


class RelativeInterval:
    """Quantiles of log(y/ŷ) for interpolation (inner) and extrapolation (outer) separately,
    because predicting outside the observed scale-outs is the riskier question."""

    def __init__(self, inner: np.ndarray, outer: np.ndarray, *,
                 single_scale_out: float | None = None, outer_log_distance: float = 0.0,
                 scale_out_range: tuple[float, float] | None = None) -> None:
        self.inner = np.asarray(inner, float)
        self.outer = np.asarray(outer, float)
        self.single_scale_out = single_scale_out
        # Typical log distance of the CV extrapolations behind `outer`: a query further from
        # the data gets proportionally wider bounds (errors of a wrong slope grow linearly
        # in log x).
        self.outer_log_distance = outer_log_distance
        self.scale_out_range = scale_out_range

    @classmethod
    def default(cls, n_scale_outs: int, single_scale_out: float | None = None,
                ) -> RelativeInterval:
        return cls(np.array([]), np.array([]), single_scale_out=single_scale_out)

    def _bounds(self, resid: np.ndarray, confidence: float) -> tuple[float, float]:
        """Log bounds holding for a new run with probability `confidence`, both tails alike.

        Each tail is the split-conformal bound of calibration.ratio_bound, the one the planner
        calibrates with: the ceil((n + 1)·p)-th smallest residual, or a Student t bound never
        inside the extreme residual while n is too small for that rank. np.quantile's
        interpolated quantile is too narrow for the 20-40 residuals a history gives (measured
        coverage of the 90 % interval, bench/results/accuracy.md: loso 0.83 -> 0.86, extrap
        0.54 -> 0.58).
        """
        z = PRIOR_LOG_HALF_WIDTH * _z_ratio(confidence)
        if resid.size < MIN_RESIDUALS:
            return -z, z
        tail = (1 + confidence) / 2
        hi = math.log(ratio_bound(np.exp(resid).tolist(), tail))
        lo = -math.log(ratio_bound(np.exp(-resid).tolist(), tail))
        return min(lo, 0.0), max(hi, 0.0)

    def factors(self, x: np.ndarray, inside: np.ndarray, confidence: float,
                ) -> tuple[np.ndarray, np.ndarray]:
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must be in (0, 1), got {confidence}")
        outer = self.outer if self.outer.size >= MIN_RESIDUALS else np.concatenate(
            [self.outer, self.inner])
        il, ih = self._bounds(self.inner, confidence)
        ol, oh = self._bounds(outer, confidence)
        # Outside the range, never narrower than inside.
        ol, oh = min(ol, il), max(oh, ih)
        stretch = np.ones_like(x, dtype=float)
        if self.scale_out_range is not None and self.outer_log_distance > 0:
            lo_x, hi_x = self.scale_out_range
            dist = np.maximum(np.log(lo_x / x), np.log(x / hi_x))
            stretch = np.maximum(1.0, dist / self.outer_log_distance)
        low = np.where(inside, il, ol * stretch)
        high = np.where(inside, ih, oh * stretch)
        # Far outside the range the stretched bound may pass exp's limit: cap it finite
        # (a factor of e^200 says the same as infinity, without the overflow warning).
        low_f = np.exp(np.maximum(low, -MAX_LOG_FACTOR))
        high_f = np.exp(np.minimum(high, MAX_LOG_FACTOR))
        if self.single_scale_out is not None:
            # One observation: the point guess assumes perfect scaling; the upper bound
            # assumes none (no faster than observed), the lower bound perfect scaling.
            x0 = self.single_scale_out
            high_f = high_f * np.maximum(1.0, x / x0)
        return low_f, high_f

    def describe(self) -> dict[str, Any]:
        def q(r: np.ndarray) -> list[float] | None:
            if r.size < MIN_RESIDUALS:
                return None
            return [float(v) for v in quantile(np.exp(r) - 1, [0.05, 0.5, 0.95])]
        return {"inner_relative_error_q05_q50_q95": q(self.inner),
                "outer_relative_error_q05_q50_q95": q(self.outer),
                "residuals": [int(self.inner.size), int(self.outer.size)],
                "outer_log_distance": float(self.outer_log_distance)}


def _z_ratio(confidence: float) -> float:
    """Scale the prior width (given for 90 %) to another confidence, Gaussian-style."""
    quantile = StandardNormal().inv_cdf  # NormalDist's, without importing statistics
    return quantile((1 + confidence) / 2) / quantile(0.95)


# Scores a run class needs to calibrate on its own: the tail quantile of n scores holds the next
# with a probability of sd sqrt(p(1 - p) / (n + 2)), 3.4 % at n = 40 for p = 0.95; classes of
# ~20 swung a class's coverage by +-5 % (bench.coverage, 50-run histories). A smaller class
# borrows all runs with co-runners, then all runs.
CLASS_MIN_SCORES = 40
SD_REFERENCE_CONFIDENCE = 0.9  # the curve interval read as a log sd: half-width / z(0.95)


class ConformalScale:
    """Held-out errors of the whole model in units of its own predictive sd, per run class.

    Score of training run i: its leave-one-out log(runtime / predicted) over the model's
    log sd at that run (curve and pairs in quadrature), upper and lower tail apart. The
    quantile of a class's scores says how many of the model's sds a new run of that class
    may lie away (normalised, Mondrian split conformal): a model whose sd is too wide gets
    q < z, one that misses an error source (combination rules with many co-runners) q > z.
    Classes: co_runner_effects.co_runner_class.
    """

    def __init__(self, scores_hi: np.ndarray, scores_lo: np.ndarray,
                 classes: np.ndarray) -> None:
        self.scores_hi = np.asarray(scores_hi, float)
        self.scores_lo = np.asarray(scores_lo, float)
        self.classes = np.asarray(classes, int)
        self._cache: dict[tuple[int, float], tuple[float, float] | None] = {}

    def members(self, k: int) -> np.ndarray:
        """The runs class k calibrates on (see CLASS_MIN_SCORES)."""
        for mask in (self.classes == k, self.classes >= 1 if k >= 1 else self.classes == 0):
            if mask.sum() >= CLASS_MIN_SCORES:
                return mask
        return np.ones_like(self.classes, bool)

    def quantiles(self, k: int, confidence: float) -> tuple[float, float] | None:
        """(q_lo, q_hi) for a run of class k at the two-sided `confidence`; None with fewer
        than MIN_RESIDUALS scores in all."""
        key = (int(k), float(confidence))
        if key not in self._cache:
            self._cache[key] = self._quantiles(*key)
        return self._cache[key]

    def _quantiles(self, k: int, confidence: float) -> tuple[float, float] | None:
        if self.scores_hi.size < MIN_RESIDUALS:
            return None
        mask = self.members(k)
        tail = (1 + confidence) / 2
        hi = score_bound(self.scores_hi[mask], tail)
        lo = score_bound(self.scores_lo[mask], tail)
        return max(lo, 0.0), max(hi, 0.0)

    def describe(self) -> dict[str, Any]:
        return {"runs_per_class": [int((self.classes == k).sum()) for k in range(4)],
                "q90_per_class": [self.quantiles(k, 0.9) for k in range(4)]}


def score_bound(scores: np.ndarray, p: float) -> float:
    """A bound the next of n exchangeable scores stays below with probability p.

    The order statistic at rank (n + 1)·p, interpolated between its neighbours: the k-th
    smallest of n holds the next with probability exactly k / (n + 1), so this is the
    nominal level, not the conservative ceil rank the planner's decisions use
    (calibration.ratio_bound): with the 20-60 scores of a run class the ceil rank is the
    largest score, and a 90 % interval would cover 95-97 %. With too few scores for the
    rank, the normal-theory prediction bound, never below the largest score.
    """
    ordered = np.sort(np.asarray(scores, float))
    n = ordered.size
    position = (n + 1) * p  # 1-based
    if position <= n:
        k = max(math.floor(position), 1)
        if k >= n:
            return float(ordered[-1])
        return float(ordered[k - 1] + (position - k) * (ordered[k] - ordered[k - 1]))
    if n < 3:
        return float(ordered[-1])
    t = student_t_quantile(p, n - 1)
    bound = ordered.mean() + t * ordered.std(ddof=1) * math.sqrt(1 + 1 / n)
    return float(max(ordered[-1], bound))


def curve_log_sd(interval: RelativeInterval, x: np.ndarray, inside: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The scale-out curve's interval read as a log sd per tail (lower, upper)."""
    low_f, high_f = interval.factors(x, inside, SD_REFERENCE_CONFIDENCE)
    z = StandardNormal().inv_cdf((1 + SD_REFERENCE_CONFIDENCE) / 2)
    return -np.log(low_f) / z, np.log(high_f) / z
