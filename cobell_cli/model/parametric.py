"""Ernest's scale-out model f(x) = θ0 + θ1/x + θ2·log x + θ3·x with θ >= 0, fitted by NNLS.

Every term is a communication pattern (serial, parallel, tree, all-to-one), so non-negative
coefficients keep the curve physically meaningful and monotone pieces from going negative.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import nnls

FEATURES: tuple[str, ...] = ("const", "inv", "log", "lin")
AMDAHL: tuple[str, ...] = ("const", "inv")  # serial + parallel: the prior for sparse data


def basis(scale_out: np.ndarray) -> np.ndarray:
    """All four Ernest features, one column each, in FEATURES order."""
    x = np.asarray(scale_out, dtype=float)
    return np.column_stack([np.ones_like(x), 1.0 / x, np.log(x), x])


def feature_mask(features: Sequence[str]) -> np.ndarray:
    unknown = set(features) - set(FEATURES)
    if unknown:
        raise ValueError(f"unknown features {sorted(unknown)}; choose from {FEATURES}")
    return np.array([f in features for f in FEATURES])


def nnls_fit(design: np.ndarray, target: np.ndarray, row_weight: np.ndarray | None = None,
             ) -> np.ndarray:
    """Weighted NNLS with column scaling, so 1/x and x living on different scales stay stable.

    Columns that are all zero (log x at x = 1 only) get a zero coefficient instead of a
    division by zero.
    """
    a = np.asarray(design, dtype=float)
    b = np.asarray(target, dtype=float)
    if row_weight is not None:
        a = a * row_weight[:, None]
        b = b * row_weight
    norms = np.linalg.norm(a, axis=0)
    ok = norms > 1e-12 * max(1.0, float(norms.max(initial=0.0)))
    coef = np.zeros(a.shape[1])
    if ok.any() and np.any(b != 0):
        sol, _ = nnls(a[:, ok] / norms[ok], b, maxiter=50 * a.shape[1] + 50)
        coef[ok] = sol / norms[ok]
    return coef


def fit_theta(scale_out: np.ndarray, runtime_s: np.ndarray, features: Sequence[str] = FEATURES,
              *, relative: bool = True, sample_weight: np.ndarray | None = None,
              multiplier: np.ndarray | None = None) -> np.ndarray:
    """θ (length 4, zeros for unused features) minimising squared (relative) error.

    relative=True weights each run by 1/runtime, i.e. minimises relative error, which is what
    users care about and keeps the long runs at small scale-outs from dominating the fit.
    `multiplier` fits y ≈ f(x)·m (the interference factor (1 + rc)), keeping the problem linear.
    """
    mask = feature_mask(features)
    design = basis(scale_out)[:, mask]
    if multiplier is not None:
        design = design * multiplier[:, None]
    w = np.ones_like(runtime_s, dtype=float)
    if relative:
        w = w / runtime_s
    if sample_weight is not None:
        w = w * np.sqrt(np.clip(sample_weight, 0.0, None))
    theta = np.zeros(len(FEATURES))
    theta[mask] = nnls_fit(design, runtime_s, w)
    if not np.any(theta > 0):
        # Degenerate (all weights zero or a pathological design): a flat curve at the
        # typical runtime is the least surprising answer, and it is never zero.
        theta[:] = 0.0
        theta[0] = float(np.median(runtime_s))
    return theta


def evaluate(theta: np.ndarray, scale_out: np.ndarray | Sequence[float]) -> np.ndarray:
    """f(x); floored at a tiny positive value so that no caller ever sees 0 or a negative."""
    values = basis(np.asarray(scale_out, dtype=float)) @ theta
    floor = 1e-9 * max(1.0, float(np.abs(theta).sum()))
    return np.maximum(values, floor)


class ParametricModel:
    """Ernest's model as a scikit-learn style estimator (fit returns self, learned values end
    in an underscore)."""

    def __init__(self, features: Sequence[str] = FEATURES, *, relative: bool = True) -> None:
        self.features = tuple(features)
        self.relative = relative

    def fit(self, scale_out: np.ndarray, runtime_s: np.ndarray,
            sample_weight: np.ndarray | None = None) -> ParametricModel:
        x = np.asarray(scale_out, dtype=float)
        y = np.asarray(runtime_s, dtype=float)
        self.theta_ = fit_theta(x, y, self.features, relative=self.relative,
                                sample_weight=sample_weight)
        return self

    def predict(self, scale_out: np.ndarray | Sequence[float]) -> np.ndarray:
        return evaluate(self.theta_, scale_out)
