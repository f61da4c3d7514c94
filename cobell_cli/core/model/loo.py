"""Leave-one-out errors of the interference model from its one fit: no refits.

The planner calibrates its bound on how wrong the model is for a run it was not fitted on
(calibration.py). Refitting without each run (or each of K folds) costs K fits, several
seconds at a thousand runs; the first-order answer costs one QR. Linearise log g(x, ov) =
log f(x) + log(1 + Σ_k (a_k + b_k/x)·ov_k) in its free parameters at the fitted values: the
curve's Ernest terms (φ_j(x)/f(x)) and each co-runner's a_k and b_k (ov_k/(1 + rc) and
ov_k/(x(1 + rc))), weighted by the robust fit's weights. A least-squares fit's leave-one-out
residual is e_i / (1 - h_ii), with h the hat matrix of that design; a co-runner resting on few
runs gives them high leverage, so their held-out errors grow, as they do when refitted.

h is capped at 2/3, the leverage of a pair (a, b) resting on three runs: the model pools a
co-runner met in fewer runs (co_runner_runs.MIN_RUNS_PER_CO_RUNNER), so no held-out
prediction rests on fewer. Parameters at their bound (a or b = 0) are not free and add no leverage.

A pair the partial pooling shrinks (pooling.py: its own data's weight w < 1) follows its runs
only that much, refitted or not: its columns get the ridge penalty that shrinks a column's
estimate by w (λ = (1 - w)/w of the column's sum of squares, a pseudo-run per column), and h
is the penalised hat matrix's. Without it, 60 co-runner jobs met a few times each in 200 runs
held-out errors like an unpooled fit's and a 90 % interval covered 99 % (bench.coverage).
Measured against K-fold CV+ refits (calibration.JACKKNIFE_MAX_FITS; bench/results/latency.md,
"calibration"; coverage.md).
"""

from __future__ import annotations

import numpy as np

from cobell_cli.core.model.parametric import basis

MAX_LEVERAGE = 2 / 3


def leverage(design: np.ndarray, weight: np.ndarray,
             penalty: np.ndarray | None = None) -> np.ndarray:
    """Diagonal of the weighted hat matrix of `design` (rows: runs), capped at MAX_LEVERAGE;
    `penalty` (per column, inf: the column is fixed): a ridge λ of that many times the
    column's weighted sum of squares, as pseudo-runs below the runs."""
    n = design.shape[0]
    rows = design * np.sqrt(np.maximum(weight, 0.0))[:, None]
    squares = (rows**2).sum(axis=0)
    penalty = np.zeros(rows.shape[1]) if penalty is None else np.asarray(penalty, float)
    free = (squares > 0) & np.isfinite(penalty)
    rows = np.vstack([rows[:, free], np.diag(np.sqrt(squares[free] * penalty[free]))])
    if rows.shape[1] == 0:
        return np.zeros(n)
    q, r = np.linalg.qr(rows / np.linalg.norm(rows, axis=0))
    independent = np.abs(np.diag(r)) > 1e-10 * max(float(np.abs(np.diag(r)).max()), 1e-300)
    return np.minimum((q[:n, independent] ** 2).sum(axis=1), MAX_LEVERAGE)


def loo_ratios(
    scale_out: np.ndarray,
    runtime_s: np.ndarray,
    predicted_s: np.ndarray,
    alone_s: np.ndarray,
    overlap: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    weight: np.ndarray,
    own_weight: np.ndarray | None = None,
) -> np.ndarray:
    """runtime / leave-one-out prediction per training run (see the module doc);
    `own_weight`: each co-runner's pooling weight (None: unpooled, all 1)."""
    x = np.asarray(scale_out, float)
    slow = 1.0 + overlap @ a + (overlap / x[:, None]) @ b
    columns = [basis(x) / alone_s[:, None]]
    penalty = [np.zeros(columns[0].shape[1])]
    if overlap.shape[1]:
        own = np.ones(overlap.shape[1]) if own_weight is None else np.asarray(own_weight, float)
        shrunk = np.divide(1.0 - own, own, out=np.full(own.shape, np.inf), where=own > 0)
        columns += [(overlap / slow[:, None])[:, a > 0],
                    (overlap / (x * slow)[:, None])[:, b > 0]]
        penalty += [shrunk[a > 0], shrunk[b > 0]]
    h = leverage(np.hstack(columns), weight, np.concatenate(penalty))
    resid = np.log(np.asarray(runtime_s, float) / predicted_s)
    return np.exp(resid / (1.0 - h))
