"""Outliers and regime changes: what real runtimes do that least squares cannot survive.

Outliers are judged within a scale-out (against the other repetitions), so no model has to
be trusted to find them; regime changes are judged across scale-outs, against what the
larger scale-outs imply.
"""

from __future__ import annotations

import numpy as np

from cobell_cli.core.model.parametric import FEATURES, evaluate, fit_theta
from cobell_cli.core.sorted_values import median

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
    return max(1.4826 * float(median(np.abs(residual))), MIN_RELATIVE_SCALE)


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
        dev[members] = logy[members] - median(logy[members])
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
        typical = np.array([median(runtime_s[index == j]) for j in range(m)])
        if np.all(typical > REGIME_RATIO * implied):
            best = m
    return [float(v) for v in levels[:best]]



# Slack beyond the physical bounds before two runs are judged incompatible. Chosen by
# leave-one-job-out on the Bell data's sparse3 protocol (picked without the held-out job:
# 1.05 in all six folds from {1.05, 1.1, 1.2, 1.5, off}); about 1.5 sigma of the difference of
# two runs at the 2-5 % run-to-run noise of a quiet cluster.
PHYSICAL_TOLERANCE = 1.05


def physically_impossible_levels(scale_out: np.ndarray, runtime_s: np.ndarray,
                                 weight: np.ndarray | None = None,
                                 tolerance: float = PHYSICAL_TOLERANCE) -> list[float]:
    """The scale-out whose runtime no plausible scale-out curve joins to the others, if any.

    Between scale-outs x_i < x_j the runtime falls at most like linear speed-up
    (y_j >= y_i·x_i/x_j) and grows at most linearly (y_j <= y_i·x_j/x_i, Ernest's steepest
    term). A pair further apart than that (times `tolerance`) holds a run that does not show
    the job's normal speed: a straggler, or a cliff (spilling at a small scale-out) that the
    other scale-outs do not share. Either way it must not bend the curve through the others.
    The level in the most such pairs is rejected; in a tie the slower run of the pair, since
    on a shared cluster runs are far more often delayed than sped up. With a handful of single
    runs this is the only evidence against a run; at most one level is rejected, so that the
    curve keeps two.
    """
    w = np.ones_like(runtime_s) if weight is None else weight
    levels, index = np.unique(scale_out, return_inverse=True)
    if levels.size < 3:
        return []
    logy = np.log(runtime_s)
    level_v = np.array([np.average(logy[index == j], weights=np.maximum(w[index == j], 1e-12))
                        for j in range(levels.size)])
    t = np.log(levels)
    slack = np.log(tolerance)
    conflicts = np.zeros(levels.size, int)
    slow = np.zeros(levels.size, int)
    for i in range(levels.size):
        for j in range(i + 1, levels.size):
            change = level_v[j] - level_v[i]
            if abs(change) > t[j] - t[i] + slack:
                conflicts[[i, j]] += 1
                slow[i if change < 0 else j] += 1
    if not conflicts.any():
        return []
    order = np.lexsort((level_v, slow, conflicts))  # most conflicts, then slow side, slowest
    return [float(levels[order[-1]])]
