"""The prediction interval assembled: the curve's bounds (widened below the observed range),
the co-runners' factor and the pairs' uncertainty, calibrated per run class on the model's
held-out errors (co_runner_effects.calibrated_interval)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from cobell_cli.core.co_runner_effects import (
    MAX_CLASS,
    calibrated_interval,
    co_runner_class,
    widen,
)
from cobell_cli.core.model.uncertainty import ConformalScale, RelativeInterval, curve_log_sd

Quantiles = Callable[[int, float], tuple[float, float] | None]


def curve_bounds(x: np.ndarray, alone: np.ndarray, interval: RelativeInterval,
                 scale_out_range: tuple[float, float], edge_runtime_s: float,
                 has_regime: bool, confidence: float) -> dict[str, np.ndarray]:
    """The curve's bounds per scale-out at `confidence`, its log sd per tail, and whether the
    scale-out lies within the fitted range. Below the range (without a regime cliff) they
    span at least "no speed-up" to "linear speed-up" from the edge's runtime."""
    lo, hi = scale_out_range
    inside = (x >= lo) & (x <= hi)
    low_f, high_f = interval.factors(x, inside, confidence)
    lower, upper = alone * low_f, alone * high_f
    below = x < lo
    if below.any() and not has_regime:
        edge_low, edge_high = interval.factors(np.array([lo]), np.array([True]), confidence)
        y0 = edge_runtime_s
        lower[below] = y0 * edge_low[0]
        upper[below] = y0 * lo / x[below] * edge_high[0]
    sd_lo, sd_hi = curve_log_sd(interval, x, inside)
    return {"alone": alone, "lower": lower, "upper": upper, "curve_sd_lo": sd_lo,
            "curve_sd_hi": sd_hi, "inside": inside}


def co_runner_bounds(parts: Mapping[str, np.ndarray], factor: np.ndarray, sd: np.ndarray,
                     rows: Sequence[Mapping[Any, float] | None], confidence: float,
                     quantiles: Quantiles) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) seconds per scale-out: the curve's bounds times the co-runners' factor,
    widened by the pairs' log sd `sd`, then calibrated with the run class's quantiles."""
    lower, upper = np.empty_like(factor), np.empty_like(factor)
    for i, row in enumerate(rows):
        alone = float(parts["alone"][i])
        model_lo, model_hi = widen(alone, float(parts["lower"][i]), float(parts["upper"][i]),
                                   float(sd[i]), confidence)
        lower[i], upper[i] = calibrated_interval(
            alone * factor[i], (model_lo * factor[i], model_hi * factor[i]),
            (float(parts["curve_sd_lo"][i]), float(parts["curve_sd_hi"][i])),
            float(sd[i]), quantiles(co_runner_class(row), confidence),
            bool(parts["inside"][i]))
    return lower, upper


def conformal_scale(interval: RelativeInterval, x: np.ndarray, pair_sd: np.ndarray,
                    held_out_ratios: np.ndarray, overlap: np.ndarray) -> ConformalScale:
    """The held-out errors of the training runs as scores on the model's own log sd (curve
    and pairs in quadrature), classed by how many co-runners each run had."""
    sd_lo, sd_hi = curve_log_sd(interval, x, np.ones_like(x, bool))
    log_ratio = np.log(held_out_ratios)
    floor = 1e-3  # a model claiming less than 0.1 % of log sd is not taken at its word
    scores_hi = log_ratio / np.maximum(np.hypot(sd_hi, pair_sd), floor)
    scores_lo = -log_ratio / np.maximum(np.hypot(sd_lo, pair_sd), floor)
    classes = np.minimum((overlap > 0).sum(axis=1), MAX_CLASS)
    return ConformalScale(scores_hi, scores_lo, classes)
