"""Ernest's scale-out model f(x) = θ0 + θ1/x + θ2·log x + θ3·x with θ >= 0, fitted by NNLS.

Every term is a communication pattern (serial, parallel, tree, all-to-one), so non-negative
coefficients keep the curve physically meaningful and monotone pieces from going negative.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from cobell_cli.core.digest import blake2b
from cobell_cli.core.sorted_values import distinct, median

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
        sol = tall_nnls(a[:, ok] / norms[ok], b)
        coef[ok] = sol / norms[ok]
    return coef


def tall_nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NNLS solved on the thin-QR factor when the design is tall.

    min ||Ax - b|| over x >= 0 equals min ||Rx - Q'b|| (A = QR; the residuals differ by a
    constant), so thousands of runs become a k x k problem (bench/results/latency.md measured
    7.9 s -> 3.7 s at 100 000 runs with scipy's nnls).
    """
    rows, cols = a.shape
    if rows > 2 * cols:
        q, r = np.linalg.qr(a)
        a, b = r, q.T @ b
    return active_set_nnls(a, b)


def active_set_nnls(a: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """argmin ||Ax - b|| over x >= 0 by Lawson & Hanson's active-set method (Solving Least
    Squares Problems, 1974, ch. 23): exact up to rounding, as scipy.optimize.nnls.

    Written here because importing scipy.optimize costs ~0.33 s, more than half of every
    `cobell predict` that has to fit. The free-set solves use the normal equations (a few
    hundred columns at most; a solve costs microseconds where an SVD costs a millisecond);
    one step of iterative refinement against A itself wins back the digits that forming
    AᵀA loses.
    """
    rows, cols = a.shape
    if cols == 0:
        return np.zeros(0)
    gram, moment = a.T @ a, a.T @ b
    free, x = _warm_start(gram, moment)
    if not free.all():  # else the unconstrained optimum is feasible, hence the answer
        tol = 10.0 * EPS * max(rows, cols) * float(np.sqrt(gram.diagonal().max() * (b @ b)))
        free, x = _lawson_hanson(gram, moment, free, x, tol,
                                 3 * cols + 10 if max_iter is None else max_iter)
    if free.any():  # refine: the correction that the true residual b - Ax asks for
        refined = x + _free_solve(gram, a.T @ (b - a @ x), free)
        if (refined[free] > 0.0).all() and np.isfinite(refined).all():
            x = refined
    return x


def _lawson_hanson(gram: np.ndarray, moment: np.ndarray, free: np.ndarray, x: np.ndarray,
                   tol: float, max_iter: int) -> tuple[np.ndarray, np.ndarray]:
    """The active-set loop from a point x whose free set holds its least-squares solution,
    all positive. Each outer step frees the bound variable whose gradient most wants to
    grow; an inner loop steps back along the segment to the unconstrained solution on the
    free set until every free variable is positive. A variable that does not come out
    positive once freed (its column numerically in the span of the free ones) stays bound.
    """
    grad = moment - gram @ x  # Aᵀ(b - Ax): where the objective falls fastest
    for _ in range(max_iter):
        grad[free] = -np.inf
        j = int(np.argmax(grad))
        if grad[j] <= tol:
            break
        free[j] = True
        trial = _free_solve(gram, moment, free)
        if not trial[j] > 0.0:
            free[j] = False
            grad[j] = 0.0  # not again until x moves
            continue
        while (trial[free] <= 0.0).any():
            # Free variables are > 0 in x, so the step to the first one reaching 0 is > 0.
            blocked = np.flatnonzero(free & (trial <= 0.0))
            ratios = x[blocked] / (x[blocked] - trial[blocked])
            x = x + ratios.min() * (trial - x)
            x[blocked[np.argmin(ratios)]] = 0.0
            free &= x > 0.0
            x[~free] = 0.0
            trial = _free_solve(gram, moment, free)
        x = trial
        grad = moment - gram @ x
    return free, x


EPS = float(np.finfo(float).eps)
WARM_START_INDEPENDENCE = 1e-6  # least distance of a unit column from the others' span


def _warm_start(gram: np.ndarray, moment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A free set whose least-squares solution is positive, and that solution: all columns,
    dropping those that come out <= 0 until none does. Lawson & Hanson may start from any
    such point (their outer loop then certifies optimality), and here it usually is the
    answer after one to three solves instead of one solve per freed column.

    Only where the columns are clearly independent (Cholesky's pivots: each column's
    distance from the span of the ones before it); otherwise the solution need not be
    unique, and starting from nothing picks the one scipy's nnls picks.
    """
    cols = gram.shape[0]
    x, free = np.zeros(cols), np.ones(cols, dtype=bool)
    try:
        pivots = np.linalg.cholesky(gram).diagonal()
    except np.linalg.LinAlgError:
        return ~free, x
    if (pivots * pivots <= WARM_START_INDEPENDENCE**2 * gram.diagonal()).any():
        return ~free, x
    while free.any():
        trial = _free_solve(gram, moment, free)
        if (trial[free] > 0.0).all():
            return free, trial
        free &= trial > 0.0
    return free, x


def _free_solve(gram: np.ndarray, moment: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Unconstrained least squares on the free columns (zero elsewhere); NaN where the
    free columns are numerically dependent, so that the caller rejects the last one."""
    try:
        if free.all():
            return np.linalg.solve(gram, moment)
        out = np.zeros(gram.shape[0])
        idx = np.flatnonzero(free)
        out[idx] = np.linalg.solve(gram[idx[:, None], idx], moment[idx])
    except np.linalg.LinAlgError:
        return np.where(free, np.nan, 0.0)
    return out


L1_ROUNDS = 25  # IRLS rounds for the absolute-error fit; converged well before on our data
L1_FLOOR = 1e-4  # relative residual below which a run counts as fitted exactly


FIT_MEMO = 4096  # fits remembered (a 16-byte digest and 4 floats each)
_fits: OrderedDict[bytes, np.ndarray] = OrderedDict()


def fit_theta(scale_out: np.ndarray, runtime_s: np.ndarray, features: Sequence[str] = FEATURES,
              *, relative: bool = True, sample_weight: np.ndarray | None = None,
              multiplier: np.ndarray | None = None, loss: str = "l2") -> np.ndarray:
    """θ (length 4, zeros for unused features) minimising squared (relative) error; see
    `_fit_theta`.

    Remembered by the digest of every input: a plan's held-out refits and cross-validation
    fit the same subsets of runs again and again (in the gate's allocation cell
    simulator/single/sgd a quarter of the calls repeat an earlier one, most of them L1 fits
    of up to 26 solves), and a fit is a pure function of its inputs, so a repeat returns the
    very same numbers without solving again.
    """
    x, y = np.asarray(scale_out, float), np.asarray(runtime_s, float)
    key = _digest(x, y, sample_weight, multiplier, repr((tuple(features), relative, loss)))
    theta = _fits.get(key)
    if theta is None:
        theta = _fit_theta(x, y, features, relative=relative, sample_weight=sample_weight,
                           multiplier=multiplier, loss=loss)
        _fits[key] = theta
        if len(_fits) > FIT_MEMO:
            _fits.popitem(last=False)
    else:
        _fits.move_to_end(key)
    return theta.copy()  # the caller's to change; the remembered one stays as it was


def _digest(*parts: np.ndarray | str | None) -> bytes:
    h = blake2b(digest_size=16)
    for part in parts:
        if part is None:
            h.update(b"\0none")
        elif isinstance(part, str):
            h.update(part.encode())
        else:
            a = np.ascontiguousarray(part, dtype=float)
            h.update(repr(a.shape).encode())
            h.update(a.tobytes())
    return h.digest()


def _fit_theta(scale_out: np.ndarray, runtime_s: np.ndarray, features: Sequence[str],
               *, relative: bool, sample_weight: np.ndarray | None,
               multiplier: np.ndarray | None, loss: str) -> np.ndarray:
    """θ (length 4, zeros for unused features) minimising squared (relative) error.

    relative=True weights each run by 1/runtime, i.e. minimises relative error, which is what
    users care about and keeps the long runs at small scale-outs from dominating the fit.
    `multiplier` fits y ≈ f(x)·m (the interference factor (1 + rc)), keeping the problem linear.
    loss="l1" minimises the mean absolute (relative) error by iteratively reweighted NNLS:
    with one run per scale-out it is the only defence against a single wild run, since it
    follows the majority of the points instead of splitting the difference.
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
    coef = nnls_fit(design, runtime_s, w)
    if loss == "l1":
        scale = runtime_s if relative else np.ones_like(runtime_s)
        for _ in range(L1_ROUNDS):
            resid = np.abs(design @ coef - runtime_s) / scale
            last, coef = coef, nnls_fit(design, runtime_s, w / np.sqrt(np.maximum(resid, L1_FLOOR)))
            if np.array_equal(coef, last):
                break  # a fixed point: every further round would repeat this one exactly
    elif loss != "l2":
        raise ValueError(f"loss must be 'l1' or 'l2', got {loss!r}")
    theta[mask] = coef
    if not np.any(theta > 0):
        # Degenerate (all weights zero or a pathological design): a flat curve at the
        # typical runtime is the least surprising answer, and it is never zero.
        theta[:] = 0.0
        theta[0] = float(median(runtime_s))
    return theta


def evaluate(theta: np.ndarray, scale_out: np.ndarray | Sequence[float]) -> np.ndarray:
    """f(x); floored at a tiny positive value so that no caller ever sees 0 or a negative."""
    values = basis(np.asarray(scale_out, dtype=float)) @ theta
    floor = 1e-9 * max(1.0, float(np.abs(theta).sum()))
    return np.maximum(values, floor)


def evaluate_many(thetas: np.ndarray, scale_out: np.ndarray) -> np.ndarray:
    """evaluate() of each θ (rows of `thetas`) at the same scale-outs, in one product."""
    values = thetas @ basis(np.asarray(scale_out, dtype=float)).T
    floor = 1e-9 * np.maximum(1.0, np.abs(thetas).sum(axis=1))
    return np.maximum(values, floor[:, None])


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


POWER_SLOPE_BOUNDS = (-1.0, 1.0)  # linear speed-up at best, a linearly growing cost at worst


def fit_power_law(scale_out: np.ndarray, runtime_s: np.ndarray,
                  sample_weight: np.ndarray | None = None) -> tuple[float, float]:
    """(log c, s) of y = c·x^s fitted by least absolute deviation in log space.

    The slope is clipped to POWER_SLOPE_BOUNDS; then log c is the weighted median offset,
    which is the L1 optimum for a fixed slope.
    """
    lx = np.log(np.asarray(scale_out, float))
    ly = np.log(np.asarray(runtime_s, float))
    w = np.ones_like(ly) if sample_weight is None else np.asarray(sample_weight, float)
    if distinct(lx).size < 2:
        return float(_weighted_median(ly, w)), 0.0
    design = np.column_stack([np.ones_like(lx), lx])
    sw = np.sqrt(w)
    coef = np.linalg.lstsq(design * sw[:, None], ly * sw, rcond=None)[0]
    for _ in range(L1_ROUNDS):
        resid = np.abs(design @ coef - ly)
        rw = sw / np.sqrt(np.maximum(resid, L1_FLOOR))
        last, coef = coef, np.linalg.lstsq(design * rw[:, None], ly * rw, rcond=None)[0]
        if np.array_equal(coef, last):
            break  # a fixed point: every further round would repeat this one exactly
    slope = float(np.clip(coef[1], *POWER_SLOPE_BOUNDS))
    return float(_weighted_median(ly - slope * lx, w)), slope


def _weighted_median(values: np.ndarray, weight: np.ndarray) -> float:
    order = np.argsort(values)
    cum = np.cumsum(weight[order])
    if cum[-1] <= 0:
        return float(median(values))
    return float(values[order][np.searchsorted(cum, 0.5 * cum[-1])])
