"""The runtime alone where no fitted curve is trusted: below the smallest observed scale-out,
and through a cliff at the smallest scale-outs (robust.regime_change_scale_outs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from cobell_cli.core.model.parametric import AMDAHL, fit_theta
from cobell_cli.core.sorted_values import distinct

MIN_EDGE_SCALE_OUTS = 3  # scale-outs the lower-edge Amdahl fit uses at least (all if fewer)


def edge_parallel_fraction(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Parallel share p = (b/x0)/(a + b/x0) of Amdahl's a + b/x, fitted (θ >= 0, so p is in
    [0, 1]) to the lower half of the scale-outs: how the runtime scales near the smallest
    one says most about the scale-outs below it. One scale-out: perfect scaling, as the
    point guess of curve_select.one_scale_out assumes."""
    levels = distinct(x)
    if levels.size < 2:
        return 1.0
    k = max(min(MIN_EDGE_SCALE_OUTS, levels.size), (levels.size + 1) // 2)
    rows = x <= levels[k - 1]
    theta = fit_theta(x[rows], y[rows], AMDAHL, sample_weight=w[rows], loss="l1")
    parallel = theta[1] / levels[0]
    total = theta[0] + parallel
    return float(np.clip(parallel / total, 0.0, 1.0)) if total > 0 else 1.0


def below_range(x: np.ndarray, x0: float, y0: float, p: float) -> np.ndarray:
    """Below the smallest scale-out x0, two continuations share the edge's runtime y0
    and speed-up p (the parallel share of the runtime there, so the local elasticity
    is -p): Amdahl's law y0·(1 - p + p·x0/x), whose elasticity runs to -1 as x shrinks,
    and the power law y0·(x0/x)^p, which keeps it, as jobs whose shuffle and
    coordination costs shrink with x too tend to. Runs above x0 cannot tell them apart,
    so the prediction is their geometric mean. It is never below y0 (fewer nodes are not
    faster) nor above y0·x0/x (no better than linear speed-up), and never falls as x
    shrinks. On the Bell data, against Amdahl's law alone: sparse3 (10 seeds) 12.2 ->
    11.8 % MAPE; trained on the upper half of the scale-outs, predicting the lower half
    15.1 -> 14.3 % (the top four: 16.4 -> 16.7, the top three: 18.4 -> 18.5). Following
    the fitted curves within these bounds measured 23.8 % on the upper-half split."""
    ratio = x0 / x
    return y0 * np.sqrt((1.0 - p + p * ratio) * ratio ** p)


def through_regime(x: np.ndarray, out: np.ndarray, regime_scale_outs: Sequence[float],
                   regime_log_runtime: np.ndarray, first_normal: float,
                   interp: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Below the first normal scale-out, follow the observed regime levels (log-log
    interpolation up to the curve `interp`); below them, continue the first segment's slope,
    clipped to [-1, 0]: no better than linear speed-up, no faster with fewer nodes."""
    regime = np.asarray(regime_scale_outs)
    levels = distinct(np.concatenate([regime, [first_normal]]))
    boundary = float(levels[-1])
    region = x < boundary
    if not region.any():
        return out
    t = np.log(levels)
    v = np.concatenate([regime_log_runtime, np.log(interp(np.array([boundary])))])
    tq = np.log(x[region])
    est = np.interp(tq, t, v)
    slope = float(np.clip((v[1] - v[0]) / (t[1] - t[0]), -1.0, 0.0))
    below = tq < t[0]
    est[below] = v[0] + slope * (tq[below] - t[0])
    out = out.copy()
    out[region] = np.exp(est)
    return out
