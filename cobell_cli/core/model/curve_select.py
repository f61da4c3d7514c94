"""The scale-out curve of a job's alone runtimes, chosen by cross-validation (select.py,
steps 3-6): the curve that interpolates, the one that extrapolates, their CV scores, and the
relative interval their CV residuals give.

Interpolation asks about a scale-out between observed ones, so its candidates compete in
interior leave-one-scale-out CV (as in Bell); extrapolation asks about larger ones, so its
candidates compete in forward CV (train on the smaller scale-outs, test on the larger).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from cobell_cli.core.model.curves import Curve, Replay, log_levels, whatif_curve
from cobell_cli.core.model.llr import aggregate, bandwidth_grid, edge_extrapolate, local_linear
from cobell_cli.core.model.parametric import AMDAHL, FEATURES, evaluate, fit_power_law, fit_theta
from cobell_cli.core.model.uncertainty import RelativeInterval

GROWING = ("const", "lin")
MIN_SCALE_OUTS_FOR_LLR = 5  # three interior points for CV, else parametric only
MIN_SCALE_OUTS_FOR_CV = 4  # below this, Amdahl's law is the documented prior
WHATIF_KEY = ("whatif",)  # the what-if candidate among the CV's feature subsets

Key = Any  # a candidate: a feature subset, WHATIF_KEY, ("llr", h) or ("powerlaw", h)
Residuals = dict[Key, list[np.ndarray]]  # log(y / ŷ) per candidate, one array per CV split
Split = tuple[np.ndarray, np.ndarray]  # (train rows, test rows) of one CV split


@dataclass
class CurveChoice:
    """What RuntimeModel stores as interp_, extrap_, interval_ and cv_."""

    interp: Curve
    extrap: Curve
    interval: RelativeInterval
    cv: dict[str, Any]


def choose_curves(x: np.ndarray, y: np.ndarray, w: np.ndarray, *, rejected: Sequence[float],
                  regime_scale_outs: Sequence[float], scale_out_range: tuple[float, float],
                  replay: Replay | None) -> CurveChoice:
    """The curves for alone runtimes y with repetition weights w, by how many scale-outs
    there are (rejected: scale-outs physics rules out, left out where two remain; replay:
    the what-if's, a candidate when given)."""
    n_levels = np.unique(x).size
    kept = ~np.isin(x, rejected)
    if n_levels == 1:
        return one_scale_out(x, y, w, replay)
    if n_levels - len(rejected) == 2:
        return two_scale_outs(x[kept], y[kept], w[kept])
    if n_levels < MIN_SCALE_OUTS_FOR_CV:
        return three_scale_outs(x, y, w, replay)
    return cross_validated(x, y, w, regime_scale_outs, scale_out_range, replay)


def one_scale_out(x: np.ndarray, y: np.ndarray, w: np.ndarray, replay: Replay | None,
                  ) -> CurveChoice:
    """One scale-out: Amdahl with the whole runtime parallel (y·x0/x) as the point guess;
    the interval's upper bound assumes no speed-up at all, so a planner that reads the
    upper bound does not over-promise from a single observation."""
    interval = RelativeInterval.default(1, single_scale_out=float(x[0]))
    if replay is not None:
        curve = whatif_curve(x, y, w, replay)
        return CurveChoice(curve, curve, interval,
                           {"note": "one scale-out: the what-if replay through its level, "
                                    "interval without speed-up"})
    level = float(np.exp(np.average(np.log(y), weights=np.where(w > 0, w, 1e-9))))
    theta = np.zeros(len(FEATURES))
    theta[1] = level * float(x[0])
    curve = Curve("parametric", theta, ("inv",))
    return CurveChoice(curve, curve, interval,
                       {"note": "one scale-out: runtime scaled by 1/x, interval without "
                                "speed-up"})


def two_scale_outs(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> CurveChoice:
    """Two scale-outs: between them the log-log line through both levels; outside,
    the two-parameter Ernest curve (Amdahl's law if the runtime falls, const + x if it
    grows) when it passes through both, else that line with its slope clipped."""
    t, v, ws = log_levels(x, y, w)
    h = float(t[1] - t[0])
    interp = Curve("llr", bandwidth=h, t=t, v=v, w=ws)
    extrap = Curve("powerlaw", bandwidth=h, t=t, v=v, w=ws)
    level = np.exp(v)
    for feats in (AMDAHL, GROWING):
        theta = fit_theta(np.exp(t), level, feats)
        if np.all(np.abs(evaluate(theta, np.exp(t)) / level - 1) < 0.01):
            extrap = Curve("parametric", theta, feats)
            break
    return CurveChoice(interp, extrap, RelativeInterval.default(2),
                       {"note": "2 scale-outs: a curve through both levels, no CV possible"})


def three_scale_outs(x: np.ndarray, y: np.ndarray, w: np.ndarray, replay: Replay | None,
                     ) -> CurveChoice:
    """Three scale-outs: Amdahl's law or a power law, both fitted by least absolute
    relative error (a wild single run cannot drag them), chosen by leave-one-scale-out
    CV over all three scale-outs; too few points for anything more flexible."""
    levels, index = np.unique(x, return_inverse=True)
    kinds = ["amdahl", "power"] + (["whatif"] if replay is not None else [])
    resid: dict[str, list[np.ndarray]] = {kind: [] for kind in kinds}
    scores: dict[str, float] = {}
    for kind in kinds:
        errs = []
        for j in range(levels.size):
            test = index == j
            pred = _sparse_fit(kind, x, y, w, ~test, replay).predict(x[test])
            errs.append(_split_error(pred, y[test], w[test]))
            resid[kind].append(np.log(y[test] / pred))
        scores[kind] = float(np.mean(errs))
    best = min(scores, key=scores.get)
    curve = _sparse_fit(best, x, y, w, np.ones_like(x, bool), replay)
    r = np.concatenate(resid[best])
    return CurveChoice(curve, curve, RelativeInterval(r, r),
                       {"loso_mre": scores, "interpolation": best, "extrapolation": best})


def _sparse_fit(kind: str, x: np.ndarray, y: np.ndarray, w: np.ndarray, rows: np.ndarray,
                replay: Replay | None) -> Curve:
    if kind == "amdahl":
        theta = fit_theta(x[rows], y[rows], AMDAHL, sample_weight=w[rows], loss="l1")
        return Curve("parametric", theta, AMDAHL)
    if kind == "whatif":
        return whatif_curve(x[rows], y[rows], w[rows], replay)
    return Curve("power", np.array(fit_power_law(x[rows], y[rows], w[rows])))


def _split_error(pred: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean relative error: rejected outliers do not vote on the model."""
    err = np.abs(pred - y) / y
    wsum = w.sum()
    return float((err * w).sum() / wsum) if wsum > 0 else float(err.mean())


@dataclass(frozen=True)
class _Runs:
    """The runs the curves are chosen on, with each run's index among the distinct
    scale-outs; `normal` marks the runs outside the regime below the first normal
    scale-out, the ones the parametric curves are fitted to."""

    x: np.ndarray
    y: np.ndarray
    w: np.ndarray
    levels: np.ndarray
    index: np.ndarray
    normal: np.ndarray

    @classmethod
    def of(cls, x: np.ndarray, y: np.ndarray, w: np.ndarray,
           regime_scale_outs: Sequence[float]) -> _Runs:
        levels, index = np.unique(x, return_inverse=True)
        return cls(x, y, w, levels, index, ~np.isin(x, regime_scale_outs))

    def fit_param(self, train: np.ndarray, feats: tuple[str, ...]) -> np.ndarray:
        """θ of an Ernest subset on the training runs, regime runs left out unless that
        leaves fewer than two scale-outs."""
        rows = train & self.normal
        if np.unique(self.x[rows]).size < 2:
            rows = train
        return fit_theta(self.x[rows], self.y[rows], feats, sample_weight=self.w[rows])

    def error(self, pred: np.ndarray, test: np.ndarray) -> float:
        return _split_error(pred, self.y[test], self.w[test])

    def log_residuals(self, pred: np.ndarray | float, test: np.ndarray) -> np.ndarray:
        """log(y / ŷ) of the test runs that kept a weight."""
        return np.log(self.y[test] / pred)[self.w[test] > 0]

    def interior_splits(self, interior: np.ndarray) -> list[Split]:
        """Leave-one-scale-out: each interior scale-out tested on the runs at all others."""
        return [(~(self.index == j), self.index == j) for j in interior]

    def forward_splits(self) -> list[Split]:
        return [(self.index < j, self.index >= j) for j in self.forward_cuts()]

    def forward_cuts(self) -> range:
        """j of the forward splits: train on the scale-outs below the j-th, test on the rest."""
        d = self.levels.size
        return range(max(2, (d + 1) // 2), d)


def cross_validated(x: np.ndarray, y: np.ndarray, w: np.ndarray,
                    regime_scale_outs: Sequence[float], scale_out_range: tuple[float, float],
                    replay: Replay | None) -> CurveChoice:
    """Four or more scale-outs: the interpolating curve by interior leave-one-scale-out CV,
    the extrapolating one by forward CV, the interval from the winners' CV residuals."""
    runs = _Runs.of(x, y, w, regime_scale_outs)
    subsets = _subsets(min(len(FEATURES), runs.levels.size - 2))
    scores, resid = _interior_scores(runs, _interior(runs, regime_scale_outs), subsets, replay)
    interp_key = min(scores, key=scores.get)
    fwd_scores, fwd_resid = _forward_scores(runs, subsets, replay)
    extrap_key = min(fwd_scores, key=fwd_scores.get)
    extrap = _extrapolation_curve(runs, extrap_key, replay)
    interp = _interpolation_curve(runs, interp_key, replay)
    cv = {"interior_loso_mre": {_name(k): v for k, v in scores.items()},
          "forward_mre": {_name(k): v for k, v in fwd_scores.items() if np.isfinite(v)},
          "interpolation": _name(interp_key), "extrapolation": _name(extrap_key),
          "interpolation_mre": scores[interp_key], "extrapolation_mre": fwd_scores[extrap_key]}
    interval = _interval(resid[interp_key], fwd_resid[extrap_key], _forward_log_distances(runs),
                         scale_out_range)
    return CurveChoice(interp, extrap, interval, cv)


def _subsets(max_size: int) -> list[tuple[str, ...]]:
    out = []
    for size in range(1, min(max_size, len(FEATURES)) + 1):
        out.extend(combinations(FEATURES, size))
    return out


def _interior(runs: _Runs, regime_scale_outs: Sequence[float]) -> np.ndarray:
    """Indices of the interior scale-outs held out in turn. Regime scale-outs are answered
    by their own observations (RuntimeModel._regime), so they are not test sets."""
    d = runs.levels.size
    return np.array([j for j in range(1, d - 1) if runs.levels[j] not in regime_scale_outs],
                    dtype=int)


def _interior_scores(runs: _Runs, interior: np.ndarray, subsets: list[tuple[str, ...]],
                     replay: Replay | None) -> tuple[dict[Key, float], Residuals]:
    """Mean relative error and residuals of each interpolation candidate, held out one
    interior scale-out at a time: the Ernest subsets, the what-if, the best LLR bandwidth."""
    splits = runs.interior_splits(interior)
    err, resid = _parametric_errors(runs, splits, subsets)
    scores = {feats: float(np.mean(e)) for feats, e in err.items()}
    if replay is not None and interior.size:
        errs, resid[WHATIF_KEY] = _whatif_errors(runs, splits, replay)
        scores[WHATIF_KEY] = float(np.mean(errs))
    if runs.levels.size >= MIN_SCALE_OUTS_FOR_LLR:
        key, scores_llr, resid_llr = _interior_llr(runs, interior)
        scores[key], resid[key] = scores_llr, resid_llr
    return scores, resid


def _interior_llr(runs: _Runs, interior: np.ndarray,
                  ) -> tuple[tuple[str, float], float, list[np.ndarray]]:
    """The local linear regression's best bandwidth on a grid: its key, error, residuals."""
    x, y, w, index = runs.x, runs.y, runs.w, runs.index
    t = np.log(runs.levels)
    _, v, ws = aggregate(x, np.log(y), w)
    grid = bandwidth_grid(t)
    est = np.exp(local_linear(t, v, ws, t[interior], grid, leave_out_same=True))
    llr_err = np.zeros(grid.size)
    for col, j in enumerate(interior):
        test = index == j
        rel = np.abs(est[:, col][:, None] - y[test][None, :]) / y[test][None, :]
        ww = w[test]
        llr_err += (rel * ww).sum(1) / max(ww.sum(), 1e-12)
    llr_err /= interior.size
    hb = int(np.argmin(llr_err))
    resid = [runs.log_residuals(est[hb, col], index == j) for col, j in enumerate(interior)]
    return ("llr", float(grid[hb])), float(llr_err[hb]), resid


def _forward_scores(runs: _Runs, subsets: list[tuple[str, ...]], replay: Replay | None,
                    ) -> tuple[dict[Key, float], Residuals]:
    """Mean relative error and residuals of each extrapolation candidate in forward CV:
    the Ernest subsets, the what-if, the power law from the upper edge (best bandwidth)."""
    splits = runs.forward_splits()
    err, resid = _parametric_errors(runs, splits, subsets)
    if replay is not None:
        err[WHATIF_KEY], resid[WHATIF_KEY] = _whatif_errors(runs, splits, replay)
    edge = _forward_powerlaw(runs)
    if edge is not None:
        key, score, edge_resid = edge
        err[key], resid[key] = [score], edge_resid
    return {k: float(np.mean(e)) for k, e in err.items() if e}, resid


def _parametric_errors(runs: _Runs, splits: list[Split], subsets: list[tuple[str, ...]],
                       ) -> tuple[dict[Key, list[float]], Residuals]:
    """Each Ernest subset's relative error and residuals on each split's test runs."""
    err: dict[Key, list[float]] = {feats: [] for feats in subsets}
    resid: Residuals = {feats: [] for feats in subsets}
    for train, test in splits:
        for feats in subsets:
            pred = evaluate(runs.fit_param(train, feats), runs.x[test])
            err[feats].append(runs.error(pred, test))
            resid[feats].append(runs.log_residuals(pred, test))
    return err, resid


def _whatif_errors(runs: _Runs, splits: list[Split], replay: Replay,
                   ) -> tuple[list[float], list[np.ndarray]]:
    """The what-if curve's relative error and residuals on each split's test runs."""
    x, y, w = runs.x, runs.y, runs.w
    errs, res = [], []
    for train, test in splits:
        pred = whatif_curve(x[train], y[train], w[train], replay).predict(x[test])
        errs.append(runs.error(pred, test))
        res.append(runs.log_residuals(pred, test))
    return errs, res


def _forward_powerlaw(runs: _Runs) -> tuple[tuple[str, float], float, list[np.ndarray]] | None:
    """The power law continuing the upper edge's local slope (llr.edge_extrapolate), its
    bandwidth by forward CV on the normal runs: key, error, residuals (None: no split has
    two normal scale-outs to train on)."""
    x, y, w = runs.x, runs.y, runs.w
    grid = bandwidth_grid(np.log(runs.levels))
    pl_err = []
    pl_resid: list[list[np.ndarray]] = [[] for _ in grid]
    for j in runs.forward_cuts():
        train, test = (runs.index < j) & runs.normal, runs.index >= j
        if np.unique(x[train]).size < 2:
            continue
        t, v, ws = log_levels(x[train], y[train], w[train])
        est = np.exp(edge_extrapolate(t, v, ws, np.log(x[test]), grid))
        rel = np.abs(est - y[test][None, :]) / y[test][None, :]
        pl_err.append((rel * w[test]).sum(1) / max(w[test].sum(), 1e-12))
        for hb in range(grid.size):
            pl_resid[hb].append(runs.log_residuals(est[hb], test))
    if not pl_err:
        return None
    mean_err = np.mean(pl_err, axis=0)
    hb = int(np.argmin(mean_err))
    return ("powerlaw", float(grid[hb])), float(mean_err[hb]), pl_resid[hb]


def _forward_log_distances(runs: _Runs) -> list[np.ndarray]:
    """log(x / the largest training scale-out) of each forward split's test runs."""
    return [np.log(runs.x[runs.index >= j] / runs.levels[j - 1]) for j in runs.forward_cuts()]


def _extrapolation_curve(runs: _Runs, key: Key, replay: Replay | None) -> Curve:
    x, y, w = runs.x, runs.y, runs.w
    if key == WHATIF_KEY:
        return whatif_curve(x, y, w, replay)
    if key[0] == "powerlaw":
        t, v, ws = log_levels(x[runs.normal], y[runs.normal], w[runs.normal])
        return Curve("powerlaw", bandwidth=key[1], t=t, v=v, w=ws)
    return Curve("parametric", runs.fit_param(np.ones_like(x, bool), key), key)


def _interpolation_curve(runs: _Runs, key: Key, replay: Replay | None) -> Curve:
    x, y, w = runs.x, runs.y, runs.w
    if key == WHATIF_KEY:
        return whatif_curve(x, y, w, replay)
    if isinstance(key, tuple) and key and key[0] == "llr":
        _, v, ws = aggregate(x, np.log(y), w)
        return Curve("llr", bandwidth=key[1], t=np.log(runs.levels), v=v,
                     w=np.maximum(ws, 1e-12))
    return Curve("parametric", runs.fit_param(np.ones_like(x, bool), key), key)


def _interval(inner_resid: list[np.ndarray], outer_resid: list[np.ndarray],
              distances: list[np.ndarray], scale_out_range: tuple[float, float],
              ) -> RelativeInterval:
    """The interval from the chosen curves' CV residuals; the outer one widens with the
    log distance of a query beyond the range, relative to the forward splits' median."""
    inner = np.concatenate(inner_resid) if inner_resid else np.array([])
    outer = np.concatenate(outer_resid) if outer_resid else np.array([])
    dist = float(np.median(np.concatenate(distances))) if distances else 0.0
    return RelativeInterval(inner, outer, outer_log_distance=dist,
                            scale_out_range=scale_out_range)


def _name(key: Key) -> str:
    if isinstance(key, tuple) and key and key[0] in ("llr", "powerlaw"):
        return f"{key[0]}(h={key[1]:.3g})"
    return "+".join(key)
