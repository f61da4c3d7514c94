"""CoBell's interference model, generalised to several co-runners:

    g(x, ov) = f(x) · (1 + Σ_k (a_k + b_k/x) · ov_k),   θ, a_k, b_k >= 0

Interference can only slow a job down (a, b >= 0), and it hurts more at small scale-outs,
where the framework has fewer places to spread the load (b/x).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import curve_fit

from cobell_cli.core.model.parametric import (
    FEATURES,
    basis,
    evaluate,
    feature_mask,
    fit_theta,
    nnls_fit,
)
from cobell_cli.core.model.robust import BISQUARE_C, bisquare, robust_scale

ALTERNATIONS = 12  # each alternation is two exact NNLS steps; the objective never increases
IRLS_ROUNDS = 4


def slowdown(scale_out: np.ndarray, overlap: np.ndarray, a: np.ndarray, b: np.ndarray,
             ) -> np.ndarray:
    """1 + rc for every run: the factor by which co-runners stretched it."""
    x = np.asarray(scale_out, float)
    if overlap.shape[1] == 0:
        return np.ones_like(x)
    return 1.0 + overlap @ a + (overlap / x[:, None]) @ b


def _fit_ab(x: np.ndarray, y: np.ndarray, overlap: np.ndarray, f: np.ndarray,
            w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a, b) given f: an exact NNLS in relative error, since g is linear in them."""
    k = overlap.shape[1]
    design = np.hstack([f[:, None] * overlap, f[:, None] * overlap / x[:, None]])
    coef = nnls_fit(design, y - f, np.sqrt(w) / y)
    return coef[:k], coef[k:]


def _alternate(x: np.ndarray, y: np.ndarray, overlap: np.ndarray, features: Sequence[str],
               w: np.ndarray, theta: np.ndarray, rounds: int,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    a = b = np.zeros(overlap.shape[1])
    for _ in range(rounds):
        a, b = _fit_ab(x, y, overlap, evaluate(theta, x), w)
        theta = fit_theta(x, y, features, sample_weight=w,
                          multiplier=slowdown(x, overlap, a, b))
    return theta, a, b


def fit_interference(scale_out: np.ndarray, runtime_s: np.ndarray, overlap: np.ndarray,
                     features: Sequence[str] = FEATURES, *, robust: bool = True,
                     polish: bool = True,
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(θ, a, b, weights) of g fitted in relative error.

    Start: θ from the runs without co-runners (when there are enough), then alternating
    exact NNLS steps for (a, b) and θ; bisquare reweighting on log residuals drops runs
    that no (θ, a, b) explains; finally scipy's trust-region-reflective curve_fit polishes
    all parameters jointly within the bounds, as in the paper.
    """
    x = np.asarray(scale_out, float)
    y = np.asarray(runtime_s, float)
    ov = np.asarray(overlap, float).reshape(x.size, -1)
    k = ov.shape[1]
    w = np.ones_like(y)
    alone = ov.sum(axis=1) == 0
    n_free = int(feature_mask(features).sum())
    start = alone if np.unique(x[alone]).size >= min(n_free, 2) and alone.sum() >= 3 else None
    theta = fit_theta(x[start] if start is not None else x,
                      y[start] if start is not None else y, features)
    if k == 0 or not np.any(ov > 0):
        theta = fit_theta(x, y, features)
        a = b = np.zeros(k)
    else:
        theta, a, b = _alternate(x, y, ov, features, w, theta, ALTERNATIONS)
    if robust and y.size >= 6:
        for _ in range(IRLS_ROUNDS):
            pred = evaluate(theta, x) * slowdown(x, ov, a, b)
            resid = np.log(y / pred)
            w = bisquare(resid / (BISQUARE_C * robust_scale(resid)))
            if k and np.any(ov > 0):
                theta, a, b = _alternate(x, y, ov, features, w, theta, 3)
            else:
                theta = fit_theta(x, y, features, sample_weight=w)
    if polish and k and np.any(ov > 0):
        theta, a, b = _polish(x, y, ov, features, w, theta, a, b)
    return theta, a, b, w


def _polish(x: np.ndarray, y: np.ndarray, ov: np.ndarray, features: Sequence[str],
            w: np.ndarray, theta: np.ndarray, a: np.ndarray, b: np.ndarray,
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mask = feature_mask(features)
    k = ov.shape[1]
    keep = w > 1e-6
    n_params = int(mask.sum()) + 2 * k
    if keep.sum() <= n_params:
        return theta, a, b
    phi = basis(x[keep])[:, mask]
    ovk, xk = ov[keep], x[keep]
    # Scale parameters to order one so the trust region sees a well-conditioned problem.
    scale = np.concatenate([np.maximum(theta[mask], 1e-6 * y.mean()), np.maximum(a, 1e-3),
                            np.maximum(b, 1e-3)])

    def model(_: np.ndarray, *p: float) -> np.ndarray:
        q = np.asarray(p) * scale
        th, aa, bb = q[: mask.sum()], q[mask.sum(): mask.sum() + k], q[mask.sum() + k:]
        return (phi @ th) * (1.0 + ovk @ aa + (ovk / xk[:, None]) @ bb)

    p0 = np.concatenate([theta[mask], a, b]) / scale
    sigma = y[keep] / np.sqrt(w[keep])
    try:
        p, _ = curve_fit(model, xk, y[keep], p0=p0, sigma=sigma, bounds=(0.0, np.inf),
                         method="trf", maxfev=200 * n_params)
    except (RuntimeError, ValueError):
        return theta, a, b
    q = p * scale
    before = _loss(model(None, *p0), y[keep], sigma)
    after = _loss(model(None, *p), y[keep], sigma)
    if not np.all(np.isfinite(q)) or after > before:
        return theta, a, b
    theta = np.zeros(len(FEATURES))
    theta[mask] = q[: mask.sum()]
    return theta, q[mask.sum(): mask.sum() + k], q[mask.sum() + k:]


def _loss(pred: np.ndarray, y: np.ndarray, sigma: np.ndarray) -> float:
    return float(np.sum(((pred - y) / sigma) ** 2))
