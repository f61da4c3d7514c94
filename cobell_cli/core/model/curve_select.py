"""The scale-out curve of a job's alone runtimes, chosen by cross-validation (select.py,
steps 3-6): the curve that interpolates, the one that extrapolates, their CV scores, and the
relative interval their CV residuals give.

Interpolation asks about a scale-out between observed ones and at them, so its candidates
compete in interior leave-one-scale-out CV (as in Bell) joined by half-repetition splits at the
two edges; extrapolation asks about larger ones, so its candidates compete in forward CV
(train on the smaller scale-outs, test on the larger). Each CV picks the simplest candidate
within one standard error of the best (one_se.py): Ernest's subsets by their number of terms,
then the extensions (the what-if, the power law, LLR).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from cobell_cli.core.model.curves import Curve, Replay, log_levels, whatif_curve
from cobell_cli.core.model.llr import aggregate, bandwidth_grid, edge_extrapolate, local_linear
from cobell_cli.core.model.one_se import CvErrors, choose
from cobell_cli.core.model.parametric import (
    AMDAHL,
    FEATURES,
    evaluate,
    evaluate_many,
    fit_power_law,
    fit_theta,
)
from cobell_cli.core.model.subset_fits import subset_thetas
from cobell_cli.core.model.uncertainty import RelativeInterval
from cobell_cli.core.sorted_values import distinct, median

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


@dataclass(frozen=True)
class CurveOptions:
    """Which candidates compete and how the winner is picked (RuntimeModel's switches)."""

    llr: bool = True  # local linear regression for interpolation (Bell's)
    power_law: bool = True  # the power law continued from the upper edge, for extrapolation
    selection: str = "one-se"  # one_se.choose: "one-se" or "best"
    level_line: bool = True  # the broken line through the levels at three scale-outs


def choose_curves(x: np.ndarray, y: np.ndarray, w: np.ndarray, *, rejected: Sequence[float],
                  regime_scale_outs: Sequence[float], scale_out_range: tuple[float, float],
                  replay: Replay | None, options: CurveOptions | None = None) -> CurveChoice:
    """The curves for alone runtimes y with repetition weights w, by how many scale-outs
    there are (rejected: scale-outs physics rules out, left out where two remain; replay:
    the what-if's, a candidate when given)."""
    options = CurveOptions() if options is None else options
    n_levels = distinct(x).size
    kept = ~np.isin(x, rejected)
    if n_levels == 1:
        return one_scale_out(x, y, w, replay)
    if n_levels - len(rejected) == 2:
        return two_scale_outs(x[kept], y[kept], w[kept])
    if n_levels < MIN_SCALE_OUTS_FOR_CV:
        return three_scale_outs(x, y, w, replay, options.selection, options.level_line)
    return cross_validated(x, y, w, regime_scale_outs, scale_out_range, replay, options)


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
                     selection: str = "one-se", level_line: bool = True) -> CurveChoice:
    """Three scale-outs: Amdahl's law or a power law, both fitted by least absolute
    relative error (a wild single run cannot drag them), chosen by leave-one-scale-out
    CV over all three scale-outs (Amdahl's law, Ernest's, unless the power law is better by
    more than a standard error); too few points for anything more flexible to extrapolate.
    Interpolation, at and between the three, also has the broken line through their mean
    runtimes (as with two scale-outs): a job that slows down past some scale-out (more
    executors than cores) follows neither monotone curve. It competes in K-fold CV over the
    runs (interpolation_folds) and is taken only when better by a standard error (`level_line`
    False: not offered)."""
    levels, index = np.unique(x, return_inverse=True)
    kinds = ["amdahl", "power"] + (["whatif"] if replay is not None else [])
    splits = [(index != j, index == j) for j in range(levels.size)]
    preds = {kind: [_sparse_fit(kind, x, y, w, tr, replay).predict(x[te]) for tr, te in splits]
             for kind in kinds}
    scores = {kind: _relative_errors(y, w, splits, preds[kind]) for kind in kinds}
    best = choose(scores, _sparse_rank, selection)
    curve = _sparse_fit(best, x, y, w, np.ones_like(x, bool), replay)
    offered = level_line and index.size > levels.size
    interp_scores = _interpolation_scores(x, y, w, replay,
                                          [*kinds, "levels"] if offered else kinds)
    interp_key = choose(interp_scores, _sparse_rank, selection)
    interp = _sparse_fit(interp_key, x, y, w, np.ones_like(x, bool), replay)
    r = np.concatenate([np.log(y[te] / p) for (_, te), p in zip(splits, preds[best],
                                                                  strict=True)])
    return CurveChoice(interp, curve, RelativeInterval(r, r),
                       {"loso_mre": {k: v.mean for k, v in scores.items()},
                        "interpolation_cv_mre": {k: v.mean for k, v in interp_scores.items()},
                        "interpolation": interp_key, "extrapolation": best})


INTERPOLATION_FOLDS = 10  # K of the three-scale-out interpolation CV (at most one per run)


def interpolation_folds(index: np.ndarray) -> np.ndarray:
    """The fold of each run: the runs of each scale-out dealt out in turn, so every fold holds
    out a few repetitions and keeps the rest (a scale-out with one run is held out whole)."""
    k = min(INTERPOLATION_FOLDS, index.size)
    order = np.argsort(index, kind="stable")
    folds = np.empty(index.size, int)
    folds[order] = np.arange(index.size) % k
    return folds


def _interpolation_scores(x: np.ndarray, y: np.ndarray, w: np.ndarray, replay: Replay | None,
                          kinds: Sequence[str]) -> dict[str, CvErrors]:
    """Each candidate's relative errors on the runs held out by interpolation_folds."""
    folds = interpolation_folds(np.unique(x, return_inverse=True)[1])
    splits = [(folds != f, folds == f) for f in distinct(folds)]
    return {kind: _relative_errors(y, w, splits, [_sparse_fit(kind, x, y, w, tr, replay)
                                                  .predict(x[te]) for tr, te in splits])
            for kind in kinds}


def _relative_errors(y: np.ndarray, w: np.ndarray, splits: list[Split],
                     preds: list[np.ndarray]) -> CvErrors:
    return CvErrors.of([np.abs(p - y[te]) / y[te] for (_, te), p in
                        zip(splits, preds, strict=True)], [w[te] for _, te in splits])


def _sparse_rank(kind: str) -> tuple[int, int]:
    """One-SE order of the sparse candidates: Amdahl's law, then the other two-parameter
    curves, then the broken line (a level per scale-out)."""
    return (3, 1) if kind == "levels" else (2, int(kind != "amdahl"))


def _sparse_fit(kind: str, x: np.ndarray, y: np.ndarray, w: np.ndarray, rows: np.ndarray,
                replay: Replay | None) -> Curve:
    if kind == "amdahl":
        theta = fit_theta(x[rows], y[rows], AMDAHL, sample_weight=w[rows], loss="l1")
        return Curve("parametric", theta, AMDAHL)
    if kind == "whatif":
        return whatif_curve(x[rows], y[rows], w[rows], replay)
    if kind == "levels":
        t, v, ws = log_levels(x[rows], y[rows], w[rows])
        return Curve("levels", t=t, v=v, w=ws)
    return Curve("power", np.array(fit_power_law(x[rows], y[rows], w[rows])))


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
        """θ of an Ernest subset on the training runs (param_rows)."""
        rows = self.param_rows(train)
        return fit_theta(self.x[rows], self.y[rows], feats, sample_weight=self.w[rows])

    def param_rows(self, train: np.ndarray) -> np.ndarray:
        """The training runs a parametric curve is fitted to: regime runs left out unless
        that leaves fewer than two scale-outs."""
        rows = train & self.normal
        return rows if distinct(self.x[rows]).size >= 2 else train

    def scores(self, splits: list[Split], preds: list[np.ndarray]) -> CvErrors:
        """Relative error of each test run of each split, with the runs' weights (the splits'
        test runs gathered once, then one vector operation: each candidate of each CV of each
        refit is scored here)."""
        if len(preds) != len(splits):
            raise ValueError(f"{len(preds)} predictions for {len(splits)} splits")
        if not splits:
            return CvErrors.of([], [])
        test = np.concatenate([te.nonzero()[0] for _, te in splits])
        y = self.y[test]
        return CvErrors(np.abs(np.concatenate(preds) - y) / y, self.w[test])

    def log_residuals(self, pred: np.ndarray | float, test: np.ndarray) -> np.ndarray:
        """log(y / ŷ) of the test runs that kept a weight."""
        return np.log(self.y[test] / pred)[self.w[test] > 0]

    def interior_splits(self, interior: np.ndarray) -> list[Split]:
        """Leave-one-scale-out: each interior scale-out tested on the runs at all others."""
        return [(~(self.index == j), self.index == j) for j in interior]

    def edge_splits(self, regime_scale_outs: Sequence[float]) -> list[Split]:
        """Half the repetitions at the smallest and at the largest scale-out held out in
        turn (the other half stays): the interpolating curve answers at its edges too, and
        an interior-only CV cannot see a curve that misses them (a constant through three
        flat scale-outs, 33 % off at the first; real co-location runs, Nov 2026)."""
        out = []
        for j in {0, self.levels.size - 1}:
            if self.levels[j] in regime_scale_outs:
                continue
            rows = np.flatnonzero((self.index == j) & (self.w > 0))
            if rows.size < 2:
                continue
            for half in (rows[0::2], rows[1::2]):
                test = np.zeros(self.x.size, bool)
                test[half] = True
                out.append((~test, test))
        return out

    def forward_splits(self) -> list[Split]:
        return [(self.index < j, self.index >= j) for j in self.forward_cuts()]

    def forward_cuts(self) -> range:
        """j of the forward splits: train on the scale-outs below the j-th, test on the rest."""
        d = self.levels.size
        return range(max(2, (d + 1) // 2), d)


def complexity(key: Key, n_levels: int) -> tuple[int, int]:
    """Sort key of a candidate for the one-SE rule: fitted parameters, then the paper's
    (Ernest's) curves before the extensions. An LLR has about one parameter per level."""
    if key == WHATIF_KEY:
        return 2, 1
    if isinstance(key, tuple) and key and key[0] == "powerlaw":
        return 2, 1
    if isinstance(key, tuple) and key and key[0] == "llr":
        return max(n_levels, len(FEATURES) + 1), 1
    return len(key), 0


def cross_validated(x: np.ndarray, y: np.ndarray, w: np.ndarray,
                    regime_scale_outs: Sequence[float], scale_out_range: tuple[float, float],
                    replay: Replay | None, options: CurveOptions = CurveOptions(),
                    ) -> CurveChoice:
    """Four or more scale-outs: the interpolating curve by leave-one-scale-out CV on the
    interior scale-outs plus half-repetition splits at the edges, the extrapolating one by
    forward CV, each the simplest within one standard error of the best (one_se.py); the
    interval from the winners' interior and forward CV residuals."""
    runs = _Runs.of(x, y, w, regime_scale_outs)
    subsets = _subsets(min(len(FEATURES), runs.levels.size - 2))
    interior = runs.interior_splits(_interior(runs, regime_scale_outs))
    splits = interior + runs.edge_splits(regime_scale_outs)
    preds = _interpolation_preds(runs, splits, len(interior), subsets, replay, options.llr)
    scores = {k: runs.scores(splits, p) for k, p in preds.items()}

    def rank(k: Key) -> tuple[int, int]:
        return complexity(k, runs.levels.size)

    interp_key = choose(scores, rank, options.selection)
    fwd_splits = runs.forward_splits()
    fwd_preds, fwd_splits_of = _forward_preds(runs, fwd_splits, subsets, replay,
                                              options.power_law)
    fwd_scores = {k: runs.scores(fwd_splits_of[k], p) for k, p in fwd_preds.items()}
    extrap_key = choose(fwd_scores, rank, options.selection)
    extrap = _extrapolation_curve(runs, extrap_key, replay)
    interp = _interpolation_curve(runs, interp_key, replay)
    cv = {"interpolation_cv_mre": {_name(k): v.mean for k, v in scores.items()},
          "forward_mre": {_name(k): v.mean for k, v in fwd_scores.items()
                          if np.isfinite(v.mean)},
          "interpolation": _name(interp_key), "extrapolation": _name(extrap_key),
          "interpolation_mre": scores[interp_key].mean,
          "extrapolation_mre": fwd_scores[extrap_key].mean,
          "selection": options.selection}
    inner = [runs.log_residuals(p, te) for (_, te), p in
             zip(interior, preds[interp_key][:len(interior)], strict=True)]
    outer = [runs.log_residuals(p, te) for (_, te), p in
             zip(fwd_splits_of[extrap_key], fwd_preds[extrap_key], strict=True)]
    interval = _interval(inner, outer, _forward_log_distances(runs), scale_out_range)
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


Preds = dict[Key, list[np.ndarray]]  # per candidate, per split: ŷ at the split's test runs


def _interpolation_preds(runs: _Runs, splits: list[Split], n_interior: int,
                         subsets: list[tuple[str, ...]], replay: Replay | None, llr: bool,
                         ) -> Preds:
    """Each interpolation candidate's predictions on every split: the Ernest subsets, the
    what-if, the LLR at its best bandwidth."""
    preds = _parametric_preds(runs, splits, subsets)
    if not splits:
        return preds
    if replay is not None:
        preds[WHATIF_KEY] = _whatif_preds(runs, splits, replay)
    if llr and runs.levels.size >= MIN_SCALE_OUTS_FOR_LLR:
        key, llr_preds = _llr_preds(runs, splits, n_interior)
        preds[key] = llr_preds
    return preds


def _llr_preds(runs: _Runs, splits: list[Split], n_choose: int,
               ) -> tuple[tuple[str, float], list[np.ndarray]]:
    """The local linear regression on (log x, log y) of each split's training levels, at the
    bandwidth (on a grid) with the lowest mean relative error on the first `n_choose`
    splits, the interior ones, as in Bell (at an edge whose other repetitions stay, the
    narrowest bandwidth is always right)."""
    x, y, w = runs.x, runs.y, runs.w
    grid = bandwidth_grid(np.log(runs.levels))
    per_split = []
    for train, test in splits:
        levels, v, ws = aggregate(x[train], np.log(y[train]), w[train])
        per_split.append(np.exp(local_linear(np.log(levels), v, ws, np.log(x[test]), grid)))
    chosen = slice(0, n_choose or len(splits))
    hb = _best_bandwidth(y, w, per_split[chosen], splits[chosen])
    return ("llr", float(grid[hb])), [e[hb] for e in per_split]


def _best_bandwidth(y: np.ndarray, w: np.ndarray, ests: list[np.ndarray],
                    splits: list[Split]) -> int:
    """Index of the bandwidth whose estimates (H, test runs) per split have the lowest
    weighted mean relative error over all the splits' test runs."""
    rel = np.concatenate([np.abs(e - y[te][None, :]) / y[te][None, :]
                          for e, (_, te) in zip(ests, splits, strict=True)], axis=1)
    ww = np.concatenate([w[te] for _, te in splits])
    return int(np.argmin(rel @ ww / max(ww.sum(), 1e-12)))


def _forward_preds(runs: _Runs, splits: list[Split], subsets: list[tuple[str, ...]],
                   replay: Replay | None, power_law: bool,
                   ) -> tuple[Preds, dict[Key, list[Split]]]:
    """Each extrapolation candidate's predictions in forward CV, and the splits they are on:
    the Ernest subsets and the what-if on all, the power law from the upper edge (best
    bandwidth) on those with two normal scale-outs to train on."""
    preds = _parametric_preds(runs, splits, subsets)
    if replay is not None:
        preds[WHATIF_KEY] = _whatif_preds(runs, splits, replay)
    on = dict.fromkeys(preds, splits)
    edge = _forward_powerlaw(runs) if power_law else None
    if edge is not None:
        key, edge_splits, edge_preds = edge
        preds[key], on[key] = edge_preds, edge_splits
    return preds, on


def _parametric_preds(runs: _Runs, splits: list[Split], subsets: list[tuple[str, ...]],
                      ) -> Preds:
    """Each Ernest subset's predictions at each split's test runs."""
    preds: Preds = {feats: [] for feats in subsets}
    thetas = subset_thetas(runs.x, runs.y, runs.w, [runs.param_rows(tr) for tr, _ in splits],
                           subsets)
    for (train, test), per_split in zip(splits, thetas, strict=True):
        for j in np.flatnonzero(np.isnan(per_split).any(axis=1)):
            per_split[j] = runs.fit_param(train, subsets[j])  # the active-set NNLS decides
        for feats, p in zip(subsets, evaluate_many(per_split, runs.x[test]), strict=True):
            preds[feats].append(p)
    return preds


def _whatif_preds(runs: _Runs, splits: list[Split], replay: Replay) -> list[np.ndarray]:
    """The what-if curve's predictions at each split's test runs."""
    x, y, w = runs.x, runs.y, runs.w
    return [whatif_curve(x[train], y[train], w[train], replay).predict(x[test])
            for train, test in splits]


def _forward_powerlaw(runs: _Runs,
                      ) -> tuple[tuple[str, float], list[Split], list[np.ndarray]] | None:
    """The power law continuing the upper edge's local slope (llr.edge_extrapolate), its
    bandwidth by forward CV on the normal runs: key, the splits it was scored on, its
    predictions (None: no split has two normal scale-outs to train on)."""
    x, y, w = runs.x, runs.y, runs.w
    grid = bandwidth_grid(np.log(runs.levels))
    splits, ests = [], []
    for j in runs.forward_cuts():
        train, test = (runs.index < j) & runs.normal, runs.index >= j
        if distinct(x[train]).size < 2:
            continue
        t, v, ws = log_levels(x[train], y[train], w[train])
        ests.append(np.exp(edge_extrapolate(t, v, ws, np.log(x[test]), grid)))
        splits.append((train, test))
    if not splits:
        return None
    hb = _best_bandwidth(y, w, ests, splits)
    return ("powerlaw", float(grid[hb])), splits, [e[hb] for e in ests]


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
    dist = float(median(np.concatenate(distances))) if distances else 0.0
    return RelativeInterval(inner, outer, outer_log_distance=dist,
                            scale_out_range=scale_out_range)


def _name(key: Key) -> str:
    if isinstance(key, tuple) and key and key[0] in ("llr", "powerlaw"):
        return f"{key[0]}(h={key[1]:.3g})"
    return "+".join(key)
