"""Every Ernest feature subset fitted on every CV split at once: the θ of fit_theta, in a few
array operations instead of one NNLS per (split, subset).

The cross-validation of the scale-out curve (curve_select.py) fits each of up to 15 feature
subsets on each of ~20 splits, and a planner that must fit does so ~6 times (the model and
its five held-out refits, held_out.py): thousands of 4-column NNLS problems, each costing far
more in numpy call overhead than in arithmetic: a predict that must fit on history/example.csv's
sgd spent ~70 % of its fitting there (0.80 -> 0.43 s CPU for the whole command with this).

Why it is the same answer: on clearly independent columns NNLS has one optimum, and it is the
least-squares solution on its own support. A least-squares solution on a subset T of the
columns that is positive is a feasible point whose objective is -mᵀx_T (m = Aᵀb, x_T =
G_T⁻¹m_T); so the optimum over S is the positive x_T, T ⊆ S, with the largest mᵀx_T (or 0).
The 15 subsets T are solved once per split and shared by every S. Where the columns are not
clearly independent (the optimum need not be unique, and fit_theta's active-set path picks
one), or the weights are degenerate, the result is NaN: fit_theta answers those.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

from cobell_cli.core.model.parametric import FEATURES, basis

# Least squared distance of each unit column from the span of the ones before it (Cholesky's
# pivot², relative to the column's squared norm) for the shared solve: stricter than
# parametric.WARM_START_INDEPENDENCE² (1e-12), so every problem answered here is one that
# fit_theta answers by its unique optimum (from its warm start).
INDEPENDENCE = 1e-8
_K = len(FEATURES)
SUBSETS = tuple(c for k in range(1, _K + 1) for c in combinations(range(_K), k))
_POSITION = {t: i for i, t in enumerate(SUBSETS)}


def subset_thetas(x: np.ndarray, y: np.ndarray, w: np.ndarray, rows: Sequence[np.ndarray],
                  subsets: Sequence[tuple[str, ...]]) -> np.ndarray:
    """θ (splits, subsets, 4) of fit_theta(x[r], y[r], s, sample_weight=w[r]) (relative L2
    error) for every row mask r and feature subset s; NaN where fit_theta must answer."""
    out = np.full((len(rows), len(subsets), _K), np.nan)
    if not len(rows) or not subsets:
        return out
    weight = np.where(np.array(rows, dtype=bool), np.sqrt(np.clip(w, 0.0, None)) / y, 0.0)
    design = basis(x)[None, :, :] * weight[:, :, None]  # (splits, runs, 4)
    target = y[None, :] * weight
    norms = np.sqrt(np.einsum("srk,srk->sk", design, design))
    usable = (norms > 1e-12 * np.maximum(1.0, norms.max(axis=1, keepdims=True))).all(axis=1)
    usable &= (target != 0).any(axis=1)
    if not usable.any():
        return out
    unit = design[usable] / norms[usable][:, None, :]
    solutions, gains, clear = _all_subsets(unit, target[usable])
    for j, s in enumerate(subsets):
        cols = tuple(FEATURES.index(f) for f in s)
        inside = np.array([set(t) <= set(cols) for t in SUBSETS])
        g = np.where(inside[:, None], gains, -np.inf)  # (T, splits)
        best = np.argmax(g, axis=0)
        picked = g[best, np.arange(g.shape[1])] > 0.0
        coef = np.where(picked[:, None], solutions[best, np.arange(g.shape[1])], 0.0)
        # All zero: fit_theta's flat fallback, its own path; never on positive runtimes.
        ok = clear[_POSITION[cols]] & picked
        out[np.flatnonzero(usable), j] = np.where(ok[:, None], coef / norms[usable], np.nan)
    return out


def _all_subsets(unit: np.ndarray, target: np.ndarray,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For every subset T of the columns, per split: the least-squares solution x_T (zeros off
    T; refined once against the design, as active_set_nnls does), its gain mᵀx_T (-inf where
    x_T is not positive), and whether T's columns are clearly independent."""
    gram = np.einsum("sri,srj->sij", unit, unit)
    moment = np.einsum("sri,sr->si", unit, target)
    n = len(unit)
    solutions = np.zeros((len(SUBSETS), n, _K))
    gains = np.full((len(SUBSETS), n), -np.inf)
    minors = np.ones((len(SUBSETS), n))
    for k in range(1, _K + 1):
        which = [i for i, t in enumerate(SUBSETS) if len(t) == k]
        idx = np.array([SUBSETS[i] for i in which])  # (T_k, k)
        g = gram[:, idx[:, :, None], idx[:, None, :]]  # (splits, T_k, k, k)
        m = moment[:, idx]  # (splits, T_k, k)
        minors[which] = np.linalg.det(g).T
        sol = _solve(g, m)
        a = unit[:, :, idx]  # (splits, runs, T_k, k)
        resid = target[:, :, None] - np.einsum("srtk,stk->srt", a, sol)
        refined = sol + _solve(g, np.einsum("srtk,srt->stk", a, resid))
        keep = (refined > 0.0).all(axis=2) & np.isfinite(refined).all(axis=2)
        x = np.where(keep[:, :, None], refined, sol)
        positive = (sol > 0.0).all(axis=2)  # (splits, T_k)
        gain = np.einsum("stk,stk->st", m, sol)
        for col, i in enumerate(which):
            solutions[i][:, idx[col]] = x[:, col]
            gains[i] = np.where(positive[:, col], gain[:, col], -np.inf)
    return solutions, gains, _independent(gram, minors)


def _independent(gram: np.ndarray, minors: np.ndarray) -> np.ndarray:
    """(T, splits): each column of T lies clearly outside the span of the ones before it;
    Cholesky's squared pivots are ratios of leading minors, and T's leading sets are subsets."""
    clear = np.ones_like(minors, dtype=bool)
    for i, t in enumerate(SUBSETS):
        previous = np.ones(minors.shape[1])
        for k in range(1, len(t) + 1):
            minor = minors[_POSITION[t[:k]]]
            clear[i] &= minor > INDEPENDENCE * gram[:, t[k - 1], t[k - 1]] * previous
            previous = minor
    return clear


def _solve(g: np.ndarray, m: np.ndarray) -> np.ndarray:
    """g⁻¹m per matrix; NaN for a singular one (numpy refuses a batch that holds one)."""
    try:
        return np.linalg.solve(g, m[..., None])[..., 0]
    except np.linalg.LinAlgError:
        out = np.full(m.shape, np.nan)
        for i in np.ndindex(g.shape[:-2]):
            try:
                out[i] = np.linalg.solve(g[i], m[i])
            except np.linalg.LinAlgError:
                continue
        return out
