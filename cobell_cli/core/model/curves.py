"""The scale-out curves a runtime model can choose: f(x) on normalised ("alone") runtimes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cobell_cli.core.model.llr import aggregate, edge_extrapolate, local_linear
from cobell_cli.core.model.parametric import FEATURES, evaluate
from cobell_cli.core.sorted_values import distinct

Replay = Callable[[int], float]  # scale-out -> the what-if's replayed seconds


def replays(replay: Replay, x: np.ndarray) -> np.ndarray:
    """The what-if's replayed runtime at each (whole) scale-out."""
    return np.array([replay(max(1, round(float(v)))) for v in np.atleast_1d(x)], float)


@dataclass
class Curve:
    """f(x) on normalised runtimes: a parametric θ, or an LLR (log x, log y) with bandwidth."""

    kind: str
    theta: np.ndarray | None = None
    features: tuple[str, ...] = ()
    bandwidth: float = 0.0
    t: np.ndarray | None = None
    v: np.ndarray | None = None
    w: np.ndarray | None = None
    replay: Any = None  # kind "whatif": scale-out -> the what-if's replayed seconds

    def predict(self, x: np.ndarray) -> np.ndarray:
        if self.kind == "parametric":
            return evaluate(self.theta, x)
        if self.kind == "whatif":
            return replays(self.replay, x) * np.exp(self.theta[0] + self.theta[1] * np.log(x))
        if self.kind == "power":
            return np.exp(self.theta[0] + self.theta[1] * np.log(x))
        if self.kind == "levels":
            return np.exp(through_levels(self.t, self.v, np.log(x)))
        if self.kind == "powerlaw":
            return np.exp(edge_extrapolate(self.t, self.v, self.w, np.log(x),
                                           np.array([self.bandwidth]))[0])
        est = local_linear(self.t, self.v, self.w, np.log(x), np.array([self.bandwidth]))[0]
        return np.exp(est)

    def describe(self) -> dict[str, Any]:
        if self.kind == "parametric":
            return {"kind": "parametric", "features": list(self.features),
                    "theta": dict(zip(FEATURES, (float(v) for v in self.theta), strict=True))}
        if self.kind == "power":
            return {"kind": "power", "c": float(np.exp(self.theta[0])),
                    "exponent": float(self.theta[1])}
        if self.kind == "levels":
            return {"kind": "levels", "scale_outs": [float(v) for v in np.exp(self.t)],
                    "runtime_s": [float(v) for v in np.exp(self.v)]}
        if self.kind == "whatif":
            return {"kind": "what-if", "c0": float(self.theta[0]),
                    "c1_log_scale_out": float(self.theta[1])}
        return {"kind": self.kind, "bandwidth_log_scale_out": float(self.bandwidth)}


def through_levels(t: np.ndarray, v: np.ndarray, t_query: np.ndarray) -> np.ndarray:
    """The broken line through the points (t, v) (log scale-out, mean log runtime per level):
    between two levels the log-log line through both, as with two scale-outs; beyond the
    outer levels the outer segment continued with its slope clipped to [-1, 1] (no better
    than linear speed-up, no cost growing faster than x, as llr.edge_extrapolate)."""
    t, v = np.asarray(t, float), np.asarray(v, float)
    tq = np.atleast_1d(np.asarray(t_query, float))
    out = np.interp(tq, t, v)
    if t.size < 2:
        return out
    for edge, other, beyond in ((0, 1, tq < t[0]), (-1, -2, tq > t[-1])):
        slope = float(np.clip((v[edge] - v[other]) / (t[edge] - t[other]), -1.0, 1.0))
        out[beyond] = v[edge] + slope * (tq[beyond] - t[edge])
    return out


def whatif_curve(x: np.ndarray, y: np.ndarray, w: np.ndarray, replay: Replay) -> Curve:
    """The what-if replay times exp(c0 + c1·log x), weighted least squares on
    log(y / replay); the constant alone (c1 = 0) with fewer than 3 scale-outs."""
    t = np.log(x)
    r = np.log(y / replays(replay, x))
    ww = np.where(w > 0, w, 1e-9)
    if distinct(x).size < 3:
        return Curve("whatif", np.array([np.average(r, weights=ww), 0.0]), replay=replay)
    tm, rm = np.average(t, weights=ww), np.average(r, weights=ww)
    slope = float(np.sum(ww * (t - tm) * (r - rm)) / np.sum(ww * (t - tm) ** 2))
    return Curve("whatif", np.array([rm - slope * tm, slope]), replay=replay)


def log_levels(x: np.ndarray, y: np.ndarray, w: np.ndarray,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log scale-out, weighted mean log runtime, weight) per distinct scale-out."""
    levels, v, ws = aggregate(x, np.log(y), w)
    return np.log(levels), v, np.maximum(ws, 1e-12)
