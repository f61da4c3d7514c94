"""CoBell's interference model, generalised to several co-runners:

    g(x, ov) = f(x) · (1 + S(e)),   e_k = (a_k + b_k/x) · ov_k,   θ, a_k, b_k >= 0

S combines the co-runners' effects: their sum (the paper's form), the largest, or a
saturating union (combine.py); with one co-runner all are e_1. Interference can only slow a
job down (a, b >= 0), and in the paper it hurts more at small scale-outs, where the framework
has fewer places to spread the load (b/x); `scaled=False` drops b/x where the data say the
effect does not shrink with the job's scale-out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cobell_cli.core.model.combine import SATURATION, combine, effects, gradient, linear_weights
from cobell_cli.core.model.parametric import (
    FEATURES,
    evaluate,
    feature_mask,
    fit_theta,
    nnls_fit,
)
from cobell_cli.core.model.robust import BISQUARE_C, bisquare, robust_scale
from cobell_cli.core.sorted_values import distinct

ALTERNATIONS = 12  # each alternation is two exact NNLS steps; the objective never increases
IRLS_ROUNDS = 4
MIN_RUNS_PER_LEVEL = 3  # runs per stretch between two knots of the broken-line f
MIN_KNOTS = 3


@dataclass(frozen=True)
class AloneCurve:
    """f(x) the interference fit separated the pairs from: Ernest's θ, or a broken line in
    log x through values at knots (flat beyond the outer knots)."""

    theta: np.ndarray | None = None
    knots: np.ndarray | None = None
    values: np.ndarray | None = None

    def __call__(self, scale_out: np.ndarray) -> np.ndarray:
        x = np.asarray(scale_out, float)
        if self.theta is not None:
            return evaluate(self.theta, x)
        return np.interp(np.log(x), np.log(self.knots), self.values)

    @property
    def n_params(self) -> int:
        return int(np.count_nonzero(self.theta) if self.theta is not None else self.knots.size)


def knots(scale_out: np.ndarray) -> np.ndarray | None:
    """Knots for a broken-line f, or None for Ernest's curve: the smallest and largest
    scale-out, and in between each scale-out that closes a stretch of >= MIN_RUNS_PER_LEVEL
    runs (with >= 3 runs everywhere, every scale-out has its own level). (a, b) are then
    learned from how overlap moves runtimes near one scale-out, and a curve Ernest's four
    terms cannot follow (a job that stops scaling) is not read as interference shrinking
    with x: that read gave co-runners with a few runs b near 10 where the truth was <= 2.5.
    Fewer than MIN_KNOTS knots: Ernest's curve."""
    levels, counts = np.unique(scale_out, return_counts=True)
    chosen = [0]
    since = 0
    for j in range(1, levels.size - 1):
        since += int(counts[j])
        if since >= MIN_RUNS_PER_LEVEL:
            chosen.append(j)
            since = 0
    if levels.size > 1:
        chosen.append(levels.size - 1)
    return levels[chosen] if len(chosen) >= MIN_KNOTS else None


def _fit_broken_line(x: np.ndarray, y: np.ndarray, w: np.ndarray, multiplier: np.ndarray,
                     at: np.ndarray) -> AloneCurve:
    """Values at the knots minimising Σ w·((y − f(x)·m)/y)², f >= 0: NNLS on hat functions."""
    t, tk = np.log(x), np.log(at)
    hats = np.column_stack([np.interp(t, tk, np.eye(tk.size)[j]) for j in range(tk.size)])
    values = nnls_fit(hats * multiplier[:, None], y, np.sqrt(w) / y)
    # A knot no run supports comes out 0; a runtime is never 0, so floor it.
    return AloneCurve(knots=at, values=np.maximum(values, 1e-9 * float(y.min())))


def slowdown(scale_out: np.ndarray, overlap: np.ndarray, a: np.ndarray, b: np.ndarray,
             rule: str = "additive", saturation: float = SATURATION) -> np.ndarray:
    """1 + S for every run: the factor by which co-runners stretched it."""
    x = np.asarray(scale_out, float)
    if overlap.shape[1] == 0:
        return np.ones_like(x)
    return 1.0 + combine(effects(x, overlap, a, b), rule, saturation)


def _fit_ab(x: np.ndarray, y: np.ndarray, overlap: np.ndarray, f: np.ndarray,
            w: np.ndarray, scaled: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) given f: an exact NNLS in relative error, since g is linear in them (for a
    non-additive rule, `overlap` carries the rule's current linear weights)."""
    k = overlap.shape[1]
    cols = [f[:, None] * overlap]
    if scaled:
        cols.append(f[:, None] * overlap / x[:, None])
    coef = nnls_fit(np.hstack(cols), y - f, np.sqrt(w) / y)
    return coef[:k], (coef[k:] if scaled else np.zeros(k))


def _alternate(x: np.ndarray, y: np.ndarray, overlap: np.ndarray, features: Sequence[str],
               w: np.ndarray, curve: AloneCurve, rounds: int, rule: str = "additive",
               scaled: bool = True, start: tuple[np.ndarray, np.ndarray] | None = None,
               ) -> tuple[AloneCurve, np.ndarray, np.ndarray]:
    a, b = start if start is not None else (np.zeros(overlap.shape[1]),) * 2
    for _ in range(rounds):
        # The first step of a fresh fit is additive: at a = b = 0 no co-runner is "largest".
        weights = (linear_weights(effects(x, overlap, a, b), rule) if np.any(a) or np.any(b)
                   else np.ones_like(overlap))
        a, b = _fit_ab(x, y, overlap * weights, curve(x), w, scaled)
        curve = _fit_curve(x, y, features, w, slowdown(x, overlap, a, b, rule), curve.knots)
    return curve, a, b


def _fit_curve(x: np.ndarray, y: np.ndarray, features: Sequence[str], w: np.ndarray,
               multiplier: np.ndarray | None, at: np.ndarray | None) -> AloneCurve:
    m = np.ones_like(y) if multiplier is None else multiplier
    if at is not None:
        return _fit_broken_line(x, y, w, m, at)
    return AloneCurve(theta=fit_theta(x, y, features, sample_weight=w, multiplier=multiplier))


def fit_interference(scale_out: np.ndarray, runtime_s: np.ndarray, overlap: np.ndarray,
                     features: Sequence[str] = FEATURES, *, robust: bool = False,
                     rule: str = "additive", scaled: bool = True,
                     rounds: int = ALTERNATIONS, at: np.ndarray | None = None,
                     ) -> tuple[AloneCurve, np.ndarray, np.ndarray, np.ndarray]:
    """(f, a, b, weights) of g fitted in relative error; f is Ernest's curve, or with knots
    `at` a broken line through them (see `knots`).

    Start: θ from the runs without co-runners (when there are enough), then alternating
    exact NNLS steps for (a, b) and θ; with `robust`, bisquare reweighting on log residuals
    drops runs that no (θ, a, b) explains (a candidate, not the default: docs/model.md).
    No joint nonlinear polish follows (scipy's curve_fit did until Nov 2026): it changed
    none of the default model's numbers in bench.coverage, colocation and real_colocation,
    moved the paper-form baseline's a little either way, and importing it cost ~0.33 s of
    every predict that fits. So the final model is fitted as the cross-validation refits
    that chose its form are (interference_form.interference_cv).
    """
    x = np.asarray(scale_out, float)
    y = np.asarray(runtime_s, float)
    ov = np.asarray(overlap, float).reshape(x.size, -1)
    k = ov.shape[1]
    w = np.ones_like(y)
    alone = ov.sum(axis=1) == 0
    n_free = int(feature_mask(features).sum())
    start = alone if distinct(x[alone]).size >= min(n_free, 2) and alone.sum() >= 3 else None
    if at is not None:  # start from the runs alone where there are some, as θ does
        curve = _fit_broken_line(x, y, np.where(alone, 1.0, 1e-6), np.ones_like(y), at)
    else:
        curve = AloneCurve(theta=fit_theta(x[start] if start is not None else x,
                                           y[start] if start is not None else y, features))
    if k == 0 or not np.any(ov > 0):
        curve = _fit_curve(x, y, features, w, None, at)
        a = b = np.zeros(k)
    else:
        curve, a, b = _alternate(x, y, ov, features, w, curve, rounds, rule, scaled)
    if robust and y.size >= 6:
        for _ in range(IRLS_ROUNDS):
            pred = np.maximum(curve(x) * slowdown(x, ov, a, b, rule), 1e-12 * y.min())
            resid = np.log(y / pred)
            w = bisquare(resid / (BISQUARE_C * robust_scale(resid)))
            if k and np.any(ov > 0):
                curve, a, b = _alternate(x, y, ov, features, w, curve, 3, rule, scaled,
                                         start=(a, b))
            else:
                curve = _fit_curve(x, y, features, w, None, at)
    return curve, a, b, w


def pair_covariance(scale_out: np.ndarray, runtime_s: np.ndarray, overlap: np.ndarray,
                    f: np.ndarray, a: np.ndarray, b: np.ndarray, w: np.ndarray,
                    rule: str = "additive", scaled: bool = True, curve_params: int = 1,
                    ) -> np.ndarray:
    """Sampling covariance (k, 2, 2) of each co-runner's (a, b) at the fit, f held fixed.

    Gauss-Newton in relative error: σ²·(DᵀWD)⁻¹ with D the derivative of g/y in (a, b)
    (through the rule's gradient), σ² the weighted residual variance on the degrees of
    freedom the fit left (`curve_params`: what f used). A tiny ridge makes
    directions the data cannot resolve (a traded against b over few scale-outs, a co-runner
    never the bottleneck) huge rather than singular: exactly what partial pooling must see.
    """
    x = np.asarray(scale_out, float)
    y = np.asarray(runtime_s, float)
    k = overlap.shape[1]
    out = np.zeros((k, 2, 2))
    if k == 0:
        return out
    e = effects(x, overlap, a, b)
    lin = overlap * gradient(e, rule)
    scale = (f / y)[:, None]
    cols = [scale * lin] + ([scale * lin / x[:, None]] if scaled else [])
    design = np.hstack(cols)
    resid = (y - f * (1.0 + combine(e, rule))) / y
    used = w > 1e-6
    # The curve's parameters were fitted too: with few runs per parameter σ² would be
    # read from an overfit and every pair would look certain.
    n_params = int(np.count_nonzero(np.concatenate([a, b]))) + curve_params
    dof = max(int(used.sum()) - n_params, 1)
    sigma2 = float(np.sum(w * resid**2) / dof)
    info = design.T @ (design * w[:, None])
    ridge = 1e-9 * max(float(np.trace(info)) / info.shape[0], 1e-12)
    cov = sigma2 * np.linalg.inv(info + ridge * np.eye(info.shape[0]))
    for i in range(k):
        out[i, 0, 0] = cov[i, i]
        if scaled:
            out[i, 0, 1] = out[i, 1, 0] = cov[i, k + i]
            out[i, 1, 1] = cov[k + i, k + i]
    return out
