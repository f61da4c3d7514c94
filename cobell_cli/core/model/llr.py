"""Local linear regression with a Gaussian kernel, for interpolating between scale-outs.

Runs are first reduced to one (weighted) level per distinct scale-out, so leaving one
scale-out out is leaving one point out, and every bandwidth and every held-out scale-out is
computed in one numpy broadcast instead of a Python loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cobell_cli.core.sorted_values import distinct


def aggregate(scale_out: np.ndarray, values: np.ndarray, weight: np.ndarray | None = None,
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct scale-outs, the weighted mean value at each, and the summed weight."""
    levels, index = np.unique(np.asarray(scale_out, float), return_inverse=True)
    w = np.ones(len(values)) if weight is None else np.asarray(weight, float)
    wsum = np.bincount(index, weights=w, minlength=levels.size)
    vsum = np.bincount(index, weights=w * values, minlength=levels.size)
    # A level whose runs were all rejected as outliers falls back to the plain mean.
    plain = np.bincount(index, weights=values, minlength=levels.size) / np.bincount(index)
    mean = np.where(wsum > 0, vsum / np.where(wsum > 0, wsum, 1.0), plain)
    return levels, mean, wsum


def local_linear(t: np.ndarray, v: np.ndarray, w: np.ndarray, t_query: np.ndarray,
                 bandwidths: np.ndarray, *, leave_out_same: bool = False,
                 with_slope: bool = False, gap_floor: bool = True) -> Any:
    """Local linear estimates, shape (len(bandwidths), len(t_query)); with_slope also
    returns the local slopes (0 where the line is undetermined).

    leave_out_same drops the training point at the query location: that is leave-one-
    scale-out cross-validation when the queries are the training points themselves.
    Where only one point carries weight the local line is undetermined and the local
    constant (weighted mean) answers instead.
    """
    t = np.asarray(t, float)
    h = np.asarray(bandwidths, float)[:, None, None]
    d = t[None, None, :] - np.asarray(t_query, float)[None, :, None]  # (1, Q, J)
    active = np.broadcast_to(np.asarray(w, float)[None, None, :] > 0, (1, d.shape[1], t.size))
    if leave_out_same:
        active = active & (np.abs(d) > 1e-12)
    # Floor each query's bandwidth at half the distance to its second-nearest point: in a
    # gap a tiny bandwidth would leave one point, and the estimate would jump to it.
    dist = np.sort(np.where(active, np.abs(d), np.inf), axis=-1)
    second = dist[..., 1:2] if t.size > 1 else dist[..., :1]
    if gap_floor:
        h = np.maximum(h, np.where(np.isfinite(second), 0.5 * second, 0.0))
    expo = -0.5 * (d / h) ** 2  # (H, Q, J)
    expo = np.where(active, expo, -np.inf)
    top = np.max(expo, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    k = np.where(active, np.asarray(w, float) * np.exp(expo - top), 0.0)
    s0 = k.sum(-1)
    s1 = (k * d).sum(-1)
    s2 = (k * d * d).sum(-1)
    t0 = (k * v).sum(-1)
    t1 = (k * d * v).sum(-1)
    den = s0 * s2 - s1 * s1
    safe_s0 = np.where(s0 > 0, s0, 1.0)
    const = np.where(s0 > 0, t0 / safe_s0, np.nan)
    ok = den > 1e-9 * np.maximum(s0 * s2, 1e-300)
    linear = (s2 * t0 - s1 * t1) / np.where(ok, den, 1.0)
    value = np.where(ok, linear, const)
    if not with_slope:
        return value
    slope = np.where(ok, (s0 * t1 - s1 * t0) / np.where(ok, den, 1.0), 0.0)
    return value, slope


def edge_extrapolate(t: np.ndarray, v: np.ndarray, w: np.ndarray, t_query: np.ndarray,
                     bandwidths: np.ndarray, slope_bounds: tuple[float, float] = (-1.0, 1.0),
                     ) -> np.ndarray:
    """Continue the local line at the nearest edge of the data, shape (H, Q).

    On (log x, log y) this is a local power law: it carries the scaling the job shows at its
    largest scale-outs onwards, which the Ernest basis cannot do when scaling improves with
    x. The slope is clipped: on log-log, -1 is perfect linear speed-up, and no job keeps
    doing better than that; +1 is a cost growing linearly with x, Ernest's steepest term.
    """
    t = np.asarray(t, float)
    tq = np.asarray(t_query, float)
    lo_hi = np.array([t.min(), t.max()])
    value, slope = local_linear(t, v, w, lo_hi, bandwidths, with_slope=True)  # (H, 2)
    slope = np.clip(slope, *slope_bounds)
    edge = ((tq - lo_hi[0]) > (lo_hi[1] - tq)).astype(int)  # the nearer edge: 0 low, 1 high
    return value[:, edge] + slope[:, edge] * (tq - lo_hi[edge])[None, :]


def bandwidth_grid(t: np.ndarray, size: int = 16) -> np.ndarray:
    """Bandwidths from a tenth of the closest spacing... to the whole span, geometrically."""
    levels = distinct(np.asarray(t, float))
    if levels.size < 2:
        return np.array([1.0])
    span = float(levels[-1] - levels[0])
    gap = float(np.min(np.diff(levels)))
    return np.geomspace(max(gap * 0.25, span * 1e-3), span, size)


class LocalLinearModel:
    """Gaussian-kernel local linear regression on (log x, log y) by default.

    Log scale-out makes the bandwidth relative (4→8 is as far as 32→64), and log runtime keeps
    every prediction positive and makes the fit relative, as the errors users care about are.
    """

    def __init__(self, bandwidth: float, *, log_x: bool = True, log_y: bool = True,
                 gap_floor: bool = True) -> None:
        self.bandwidth = bandwidth
        self.log_x = log_x
        self.log_y = log_y
        self.gap_floor = gap_floor

    def _t(self, x: np.ndarray | Sequence[float]) -> np.ndarray:
        x = np.asarray(x, float)
        return np.log(x) if self.log_x else x

    def fit(self, scale_out: np.ndarray, runtime_s: np.ndarray,
            sample_weight: np.ndarray | None = None) -> LocalLinearModel:
        values = np.log(runtime_s) if self.log_y else np.asarray(runtime_s, float)
        levels, mean, wsum = aggregate(scale_out, values, sample_weight)
        self.levels_ = levels
        self.t_, self.v_, self.w_ = self._t(levels), mean, np.maximum(wsum, 1e-12)
        return self

    def predict(self, scale_out: np.ndarray | Sequence[float]) -> np.ndarray:
        est = local_linear(self.t_, self.v_, self.w_, self._t(scale_out),
                           np.array([self.bandwidth]), gap_floor=self.gap_floor)[0]
        return np.exp(est) if self.log_y else est
