"""Outliers and regime changes: what real runtimes do that least squares cannot survive.

Outliers are judged within a scale-out (against the other repetitions), so no model has to
be trusted to find them; regime changes are judged across scale-outs, against what the
larger scale-outs imply.
"""

from __future__ import annotations

import numpy as np

from cobell_cli.model.parametric import FEATURES, evaluate, fit_theta

BISQUARE_C = 4.685  # 95 % efficiency under Gaussian noise (Tukey's standard constant)
MIN_RELATIVE_SCALE = 1e-3  # runtimes are not measured better than 0.1 %
MIN_GROUP_FOR_OUTLIERS = 3  # a median of two says nothing about which one is odd
# A scale-out is a separate regime when its runtime is this many times what the larger
# scale-outs imply (a memory cliff, spilling, a different plan), not a smooth trend.
REGIME_RATIO = 1.5
MIN_SCALE_OUTS_LEFT = 4  # the normal regime needs enough scale-outs for Ernest's four terms


def bisquare(u: np.ndarray) -> np.ndarray:
    """Tukey's bisquare weight of standardised residuals u (0 beyond ±1)."""
    u = np.abs(u)
    return np.where(u < 1.0, (1.0 - u * u) ** 2, 0.0)


def robust_scale(residual: np.ndarray) -> float:
    """Normalised median absolute deviation around zero (residuals are already centred)."""
    if residual.size == 0:
        return MIN_RELATIVE_SCALE
    return max(1.4826 * float(np.median(np.abs(residual))), MIN_RELATIVE_SCALE)


def repetition_weights(scale_out: np.ndarray, runtime_s: np.ndarray) -> np.ndarray:
    """Bisquare weights of each run's log deviation from the median of its scale-out.

    Log deviations treat 2x slower and 2x faster alike; the scale is pooled over all
    scale-outs with enough repetitions, so one noisy scale-out cannot hide its outliers.
    Scale-outs with fewer than three runs keep weight 1.
    """
    levels, index = np.unique(scale_out, return_inverse=True)
    logy = np.log(runtime_s)
    counts = np.bincount(index, minlength=levels.size)
    dev = np.zeros_like(logy)
    judged = counts[index] >= MIN_GROUP_FOR_OUTLIERS
    if not judged.any():
        return np.ones_like(logy)
    for j in np.flatnonzero(counts >= MIN_GROUP_FOR_OUTLIERS):
        members = index == j
        dev[members] = logy[members] - np.median(logy[members])
    scale = robust_scale(dev[judged])
    weights = bisquare(dev / (BISQUARE_C * scale))
    weights[~judged] = 1.0
    return weights


def regime_change_scale_outs(scale_out: np.ndarray, runtime_s: np.ndarray,
                             weight: np.ndarray | None = None) -> list[float]:
    """The smallest scale-outs whose runtimes jump above what the larger ones imply.

    For m = 1, 2, ... the m smallest scale-outs are compared with Ernest's model fitted to
    the scale-outs above them; it already grows like 1/x towards small scale-outs, so points
    all REGIME_RATIO times above it are a cliff, not a steep but smooth curve. The largest
    such m wins (a cliff two scale-outs wide hides itself from a test of one); a regime must
    stay a minority of the scale-outs.
    """
    levels, index = np.unique(scale_out, return_inverse=True)
    w = np.ones_like(runtime_s) if weight is None else weight
    best = 0
    for m in range(1, min(levels.size - MIN_SCALE_OUTS_LEFT, levels.size // 2) + 1):
        rest = index >= m
        theta = fit_theta(scale_out[rest], runtime_s[rest], FEATURES, sample_weight=w[rest])
        implied = evaluate(theta, levels[:m])
        typical = np.array([np.median(runtime_s[index == j]) for j in range(m)])
        if np.all(typical > REGIME_RATIO * implied):
            best = m
    return [float(v) for v in levels[:best]]
