"""CoBell's runtime model: interference normalisation, then the scale-out curve chosen by CV.

1. (a_k, b_k) per co-runner from the parametric interference fit; how concurrent co-runners
   combine (added, the largest, saturating) and whether their effect shrinks with the job's
   scale-out (a + b/x, or a) are chosen by K-fold CV on the runs with co-runners; each pair
   is then shrunk toward the pooled pair by its evidence (pooling.py). The pairs are
   separated from Ernest's curve, as in the paper, by least squares in relative error
   without reweighting (a broken line in log x and bisquare reweighting are candidates that
   did not win out of sample, issue 34). Runtimes are normalised by (1 + S), the paper's
   two-phase approach, so everything after sees "alone" runtimes.
2. Outlier repetitions get bisquare weights; a cliff at the smallest scale-outs is a
   separate regime, kept for interpolation but kept out of the curve that extrapolates.
3. Interpolation: Ernest feature subsets (fitted in relative error) and local linear
   regressions compete in interior leave-one-scale-out CV, as in Bell.
4. Extrapolation: the parametric candidates compete in forward CV (train on the smaller
   scale-outs, test on the larger ones), which is the question extrapolation asks.
5. Below the smallest observed scale-out, no fitted curve is trusted (a curve that rises with
   x, from noise or unrecorded co-runners, would promise a faster run on fewer nodes): the
   runtime there continues Amdahl's law from the lower edge, never below the edge's runtime.
   With the job's event-log profiles, the what-if replay (core/whatif/) times a
   correction exp(c0 + c1·log x) fitted to the runs is one more candidate in both CVs; with
   a single scale-out it replaces the 1/x guess as the prior (it knows the stages' waves).
6. The CV residuals of the chosen models give a relative prediction interval; below the
   range it also spans "no speed-up" to "linear speed-up" from the smallest scale-out. With
   co-runners it widens by the pairs' posterior uncertainty (delta method), added to the
   curve's conformal half-width in quadrature (log space).

RuntimeModel is the estimator (fit / predict / predict_interval / describe); each step is
a module of its own: co_runner_runs.py and interference_form.py (step 1), curve_select.py and
curves.py (steps 3-4), edges.py (step 5 and the cliff of step 2), bounds.py and held_out.py
(step 6), pair_report.py (what describe() says about the pairs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from cobell_cli.core.co_runner_effects import factor_and_sd, size_weight
from cobell_cli.core.jsonable import jsonable
from cobell_cli.core.model.bounds import co_runner_bounds, conformal_scale, curve_bounds
from cobell_cli.core.model.co_runner_runs import pool_rare, size_references, weigh_by_size
from cobell_cli.core.model.curve_select import MIN_SCALE_OUTS_FOR_CV, CurveOptions, choose_curves
from cobell_cli.core.model.curves import log_levels
from cobell_cli.core.model.data import POOLED, RunData, co_runner_key, prepare_runs
from cobell_cli.core.model.edges import below_range, edge_parallel_fraction, through_regime
from cobell_cli.core.model.held_out import refit_ratios
from cobell_cli.core.model.interference import fit_interference, knots, slowdown
from cobell_cli.core.model.interference_form import (
    FormOptions,
    choose_form,
    choose_terms,
    pool_pairs,
)
from cobell_cli.core.model.loo import loo_ratios
from cobell_cli.core.model.pair_report import describe_pairs, describe_pool
from cobell_cli.core.model.parametric import AMDAHL, FEATURES
from cobell_cli.core.model.pooling import Pooled, positive_pair_cov
from cobell_cli.core.model.robust import (
    physically_impossible_levels,
    regime_change_scale_outs,
    repetition_weights,
)
from cobell_cli.core.model.uncertainty import ConformalScale
from cobell_cli.core.sorted_values import distinct

_BROKEN_LINE = {"auto": None, "broken-line": True, "ernest": False}  # FormOptions.broken_line
REFIT_MAX_RUNS = 100  # up to here the held-out errors come from refits (held_out_ratios)

Overlaps = Mapping[Any, float] | Sequence[Mapping[Any, float]] | None


class RuntimeModel:
    """Predicts a job's runtime at a scale-out, given the co-runners it will overlap with.

    Built by fit_runtime_model(); follows the estimator contract (learned values end in _).
    """

    def __init__(self, *, confidence_default: float = 0.9, combination: str = "additive",
                 scaled: bool | None = None, pooling: bool = True,
                 propagate: bool = True, alone_curve: str = "ernest",
                 calibrate: bool = True, sized: bool | None = False,
                 whatif: Any = None, selection: str = "one-se", llr: bool = True,
                 power_law: bool = True, regimes: bool = True, reweigh: bool = False,
                 repetition_outliers: bool = True, level_line: bool = True,
                 full_terms: bool | None = False) -> None:
        self.confidence_default = confidence_default
        # The defaults keep what earned its parameters out of sample (bench/results/
        # selection.md, docs/model.md): the other combination rules and the size weights did
        # not on any data set not generated by them, so the paper's additive rule on plain
        # overlaps is the default ("auto" / None: the CV chooses them); b/x, the paper's own
        # form, stays the CV's candidate (the one-SE rule takes it only when it wins by a
        # standard error); the broken line and the reweighting lost to the plain fit on the
        # real co-located runs (issue 34), so they are offered only when asked for.
        self.combination = combination  # "auto" (CV) or one of combine.RULES
        self.scaled = scaled  # None: CV decides between a + b/x and a
        self.pooling = pooling  # shrink each pair toward the pooled one (empirical Bayes)
        self.propagate = propagate  # widen the interval by the pairs' uncertainty
        # f the pairs are separated from: "ernest" (the paper's), "auto" (the interference
        # CV decides between Ernest's curve and a broken line where every stretch of
        # scale-outs has runs, see interference.knots) or "broken-line" (wherever there are
        # knots)
        self.alone_curve = alone_curve
        # the interval calibrated on the model's held-out errors per run class (uncertainty.py)
        self.calibrate = calibrate
        # a co-runner's effect in proportion to its scale-out (None: CV decides; see fit)
        self.sized = sized
        # a fitted core.whatif.WhatIfModel (anything with replay(scale_out) -> seconds):
        # its replay joins the candidate curves
        self.whatif = whatif
        # how every CV choice picks: "one-se" (the simplest form within one standard error
        # of the best, one_se.py) or "best" (the lowest CV error)
        self.selection = selection
        self.llr = llr  # LLR among the interpolating curves
        self.power_law = power_law  # the edge's power law among the extrapolating curves
        self.regimes = regimes  # a cliff at the smallest scale-outs is a regime of its own
        # bisquare reweighting (IRLS) of the interference fit's runs on their log residuals:
        # off by default (it cost 1.0 point on the real co-located runs, issue 34)
        self.reweigh = reweigh
        # bisquare weights of each run against the other repetitions at its scale-out
        self.repetition_outliers = repetition_outliers
        # with three scale-outs, the broken line through their levels among the
        # interpolating curves (curve_select.three_scale_outs)
        self.level_line = level_line
        # below five scale-outs, Ernest's four terms for the f the pairs are separated from:
        # False (Amdahl's two), None (the interference CV decides against Amdahl's two,
        # interference_form.choose_terms), True (always). None is a candidate, not the
        # default: it won profiles dev (-0.90 +- 0.73) but not the held-out sets by a
        # standard error (bench/results/profiles_gap.md)
        self.full_terms = full_terms
        # job -> ((a, b), (var a, cov, var b)) or None: the pair of a co-runner job this model
        # has no pair of its own for, from the jobs' resource profiles (core/profile_effects/
        # priors.py); None: the pooled pair, as before. Set after fitting (PriorFit).
        self.pair_prior: Any = None

    # ---- fitting -------------------------------------------------------------------
    def fit(self, runs: Iterable[Any]) -> RuntimeModel:
        """Steps 1-6 of the module docstring, in order."""
        raw = prepare_runs(runs)
        plain = pool_rare(raw)
        x, y = plain.scale_out, plain.runtime_s
        self._count_runs(plain)
        self.size_reference_ = size_references(plain)
        base = self._separation_terms(plain)
        robust_w, data = self._fit_interference(plain, base)
        y_alone = y / slowdown(x, data.overlap, self.a_, self.b_, self.combination_)
        w = repetition_weights(x, y_alone) if self.repetition_outliers else np.ones_like(x)
        self._fit_regime(x, y_alone, w)
        self._fit_curves(x, y_alone, w)
        alone = self._alone(x)  # held-out errors for the planner's calibration (model/loo.py)
        # First order: the leverage is that of the additive form at the fitted pairs.
        fitted = alone * slowdown(x, data.overlap, self.a_, self.b_, self.combination_)
        self.loo_ratios_ = loo_ratios(x, y, fitted, alone, data.overlap, self.a_, self.b_,
                                      robust_w, self.own_weight_)
        self._raw, self._pooled_data = raw, data
        self._held_out: np.ndarray | None = None
        self._scale: ConformalScale | None = None
        return self

    def _count_runs(self, plain: RunData) -> None:
        """What the model was fitted on: runs, scale-outs, and each co-runner's runs and
        overlap seconds, as describe() reports them."""
        x, y = plain.scale_out, plain.runtime_s
        self.n_runs_ = plain.n
        self.n_runs_alone_ = int(np.count_nonzero(~np.any(plain.overlap > 0, axis=1)))
        self.scale_out_range_ = (float(x.min()), float(x.max()))
        self.n_scale_outs_ = int(distinct(x).size)
        self.co_runners_ = plain.co_runners
        self.interference_runs_ = {k: int((plain.overlap[:, i] > 0).sum())
                                   for i, k in enumerate(plain.co_runners)}
        self.overlap_s_ = {k: float(plain.overlap[:, i] @ y)
                           for i, k in enumerate(plain.co_runners)}

    def _separation_terms(self, plain: RunData) -> Sequence[str]:
        """Ernest's terms of the f the pairs are separated from: all four from five
        scale-outs on; below, Amdahl's two or (from three scale-outs, where four terms can
        rise with x) all four, as full_terms says or the interference CV chooses."""
        self.terms_cv_: dict[str, float] = {}
        if self.n_scale_outs_ >= MIN_SCALE_OUTS_FOR_CV + 1:
            return FEATURES
        if self.n_scale_outs_ < 3 or self.full_terms is False:
            return AMDAHL
        if self.full_terms:
            return FEATURES
        base, self.terms_cv_ = choose_terms(plain, [AMDAHL, FEATURES], self.pooling,
                                            self.selection)
        return base

    def _fit_interference(self, plain: RunData, base: Sequence[str],
                          ) -> tuple[np.ndarray, RunData]:
        """Sizes, rule and b/x by CV (interference_form.py), the final fit, then partial
        pooling of the pairs; returns the robust fit's weights per run and the runs as
        fitted (overlaps weighed by the co-runners' sizes when the CV chose that)."""
        x, y = plain.scale_out, plain.runtime_s
        sized = weigh_by_size(plain, self.size_reference_)
        options = FormOptions(self.combination, self.scaled, self.sized, self.pooling,
                              _BROKEN_LINE[self._alone_curve()], self.selection)
        (rule, scaled, self.sized_, self.broken_line_), self.interference_cv_ = choose_form(
            plain, sized, base, options, self.size_reference_)
        data = sized if self.sized_ else plain
        ov = data.overlap
        best = (rule, scaled)
        self.combination_, self.scaled_ = best
        curve, a, b, w = fit_interference(x, y, ov, base, robust=self.reweigh, rule=best[0],
                                          scaled=best[1], at=self._knots(x))
        self.interference_curve_ = "broken line" if curve.theta is None else "ernest"
        self.separation_terms_ = tuple(base)
        self.a_unpooled_, self.b_unpooled_ = a, b
        self._store_pairs(pool_pairs(x, y, ov, curve, a, b, w, best, self.pooling))
        self.reference_scale_out_ = float(x.min())  # where b/x matters most
        return w, data

    def _store_pairs(self, pooled: Pooled) -> None:
        """The pooled pairs, their uncertainty and the pool, as predict and describe read them."""
        self.a_, self.b_ = pooled.pairs[:, 0], pooled.pairs[:, 1]
        self.pair_cov_ = pooled.cov
        self.own_weight_ = pooled.own_weight
        self.sampling_cov_ = pooled.sampling_cov
        self.pool_mean_, self.pool_tau2_ = pooled.mean, pooled.tau2

    def _alone_curve(self) -> str:
        if self.alone_curve not in _BROKEN_LINE:
            raise ValueError("alone_curve must be 'auto', 'broken-line' or 'ernest', got "
                             f"{self.alone_curve!r}")
        return self.alone_curve

    def _knots(self, x: np.ndarray) -> np.ndarray | None:
        return knots(x) if self.broken_line_ else None

    def _fit_regime(self, x: np.ndarray, y_alone: np.ndarray, w: np.ndarray) -> None:
        """The cliff at the smallest scale-outs, if any: its scale-outs, their mean log
        runtimes and the first normal scale-out, which edges.through_regime follows below
        that one."""
        self.regime_scale_outs_ = regime_change_scale_outs(x, y_alone, w) if self.regimes else []
        if self.regime_scale_outs_:
            rows = np.isin(x, self.regime_scale_outs_)
            _, v, _ = log_levels(x[rows], y_alone[rows], w[rows])
            self.regime_log_runtime_ = v
            levels = distinct(x)
            self.first_normal_scale_out_ = float(levels[~np.isin(levels,
                                                                  self.regime_scale_outs_)][0])

    def _fit_curves(self, x: np.ndarray, y_alone: np.ndarray, w: np.ndarray) -> None:
        """The scale-out curves on the runtimes alone (curve_select.py), then the lower
        edge's runtime and parallel share (edges.py)."""
        # Too few scale-outs for the regime check: a wild run is only seen against physics.
        rejected = (physically_impossible_levels(x, y_alone, w)
                    if self.n_scale_outs_ < MIN_SCALE_OUTS_FOR_CV else [])
        kept = ~np.isin(x, rejected)
        choice = choose_curves(x, y_alone, w, rejected=rejected,
                               regime_scale_outs=self.regime_scale_outs_,
                               scale_out_range=self.scale_out_range_,
                               replay=None if self.whatif is None else self.whatif.replay,
                               options=CurveOptions(self.llr, self.power_law, self.selection,
                                                  self.level_line))
        self.interp_, self.extrap_ = choice.interp, choice.extrap
        self.interval_, self.cv_ = choice.interval, choice.cv
        if rejected:
            self.cv_["rejected_scale_outs"] = rejected
        lo = np.array([self.scale_out_range_[0]])
        self.edge_runtime_s_ = float(self._inside(lo)[0])
        self._edge_runs = (x[kept], y_alone[kept], w[kept])
        self._edge_fraction: float | None = None

    @property
    def edge_parallel_fraction_(self) -> float:
        """The lower edge's parallel share (edges.py), fitted on first need: only a
        prediction below the range reads it, and most of the held-out refits never make
        one (an L1 fit of up to 26 solves each, a sixth of a must-fit predict at 50 runs)."""
        if self._edge_fraction is None:
            self._edge_fraction = edge_parallel_fraction(*self._edge_runs)
        return self._edge_fraction

    @edge_parallel_fraction_.setter
    def edge_parallel_fraction_(self, share: float) -> None:
        """A counterfactual share (bench/studies/sparse_limits.py sets and restores it)."""
        self._edge_fraction = share

    # ---- held-out errors -----------------------------------------------------------
    def held_out_ratios(self) -> np.ndarray:
        """runtime / prediction of each training run by a model that did not see it.

        Up to REFIT_MAX_RUNS runs: K-fold refits (held_out.py), in the chosen combination
        form, computed on first need (the planner asks for the job it plans, and for a
        co-runner whose driver answers: its model's error weighs the live progress; a
        cached model carries them). Beyond: the one-fit first-order estimate (`loo_ratios_`,
        model/loo.py), which leaves out that the curve and its knots were chosen on the same
        runs: at 50 runs it covered 81.6 % of fresh runs with a nominal 90 % interval where
        ten refits covered 90.7 % (bench.simulator, 20 co-runner jobs); from 200 runs on,
        both 88-94 %. Five refits (calibration.JACKKNIFE_MAX_FITS), not ten: measured 1 Dec
        2026 on the held-out seeds (`python -m bench.heldout --base main` on a checkout with
        five, 303 s), by one standard error ten win only allocation simulator's cost (+0.19
        +- 0.18 % executor-seconds a run with five); five win deadline nodesim (-4.0 +- 1.6
        %, beyond two), memory nodesim (-1.0 +- 0.8 % MB-s) and node types (-0.33 +- 0.22 %);
        allocation nodesim splits (late -0.64 +- 0.47 points, cost +0.26 +- 0.17 %). The
        development seed's gate: 42 figures worse, 18 better, only looked at. By the rule
        that keeps a component only where it wins out of sample, the simpler five; they also
        bring a must-fit predict at 50 runs within issue 34's latency goal (0.22 -> 0.15 s
        in-process).
        """
        if self._held_out is None:
            self._held_out = (refit_ratios(self._raw, self.loo_ratios_, self._refit)
                              if self.n_runs_ <= REFIT_MAX_RUNS else None)
            if self._held_out is None:
                self._held_out = np.asarray(self.loo_ratios_, float)
        return self._held_out

    def _refit(self, runs: RunData) -> RuntimeModel:
        """This model's chosen form fitted to other runs, uncalibrated (no refits of refits)."""
        return RuntimeModel(
            confidence_default=self.confidence_default, combination=self.combination_,
            scaled=bool(self.scaled_), pooling=self.pooling, propagate=self.propagate,
            alone_curve="broken-line" if self.broken_line_ else "ernest", calibrate=False,
            sized=self.sized_,
            whatif=self.whatif, selection=self.selection, llr=self.llr,
            power_law=self.power_law, regimes=self.regimes, reweigh=self.reweigh,
            repetition_outliers=self.repetition_outliers, level_line=self.level_line,
            full_terms=(len(self.separation_terms_) > len(AMDAHL)
                        if self.full_terms is None else self.full_terms),
        ).fit(runs)

    @property
    def conformal_(self) -> ConformalScale:
        """The held-out errors as scores on the model's own log sd (uncertainty.py)."""
        if self._scale is None:
            data = self._pooled_data
            rows = [{k: float(v) for k, v in zip(data.co_runners, r, strict=True) if v > 0}
                    for r in data.overlap]
            pair_sd = self._factor_sd(data.scale_out, rows)[1]
            self._scale = conformal_scale(self.interval_, data.scale_out, pair_sd,
                                          self.held_out_ratios(), self._raw.overlap)
        return self._scale

    # ---- prediction ----------------------------------------------------------------
    def size_weight(self, job: Any, scale_out: float | None) -> float:
        """The factor on an app's overlap ratio the model's pairs expect: its scale-out over
        its job's usual one when the model weighs co-runner sizes, else 1."""
        refs = self.size_reference_ if self.sized_ else None
        return size_weight(refs, co_runner_key(job), scale_out)

    def _inside(self, x: np.ndarray) -> np.ndarray:
        """The fitted curves: interpolation inside the range, extrapolation outside."""
        lo, hi = self.scale_out_range_
        inside = (x >= lo) & (x <= hi)
        out = self.extrap_.predict(x)
        if inside.any():
            out[inside] = self.interp_.predict(x[inside])
        if self.regime_scale_outs_:
            out = through_regime(x, out, self.regime_scale_outs_, self.regime_log_runtime_,
                                 self.first_normal_scale_out_, self.interp_.predict)
        return out

    def _alone(self, x: np.ndarray) -> np.ndarray:
        """The runtime without co-runners: the curves, continued below the range (edges.py)."""
        out = self._inside(x)
        x0 = self.scale_out_range_[0]
        below = x < x0
        if below.any() and not self.regime_scale_outs_:
            out[below] = below_range(x[below], x0, self.edge_runtime_s_,
                                     self.edge_parallel_fraction_)
        return out

    def _factor_sd(self, x: np.ndarray, overlaps: Overlaps) -> tuple[np.ndarray, np.ndarray]:
        """(1 + S, sd of its log from the pairs' uncertainty) per scale-out."""
        if overlaps is None:
            return np.ones_like(x), np.zeros_like(x)
        factor, sd = np.ones_like(x), np.zeros_like(x)
        for i, row in enumerate(_rows(overlaps, x.size)):
            factor[i], sd[i] = factor_and_sd(x[i], row, self.interference,
                                             self.pair_covariance, self.combination_)
        return factor, sd

    def predict(self, scale_outs: Sequence[float] | np.ndarray, overlaps: Overlaps = None,
                ) -> np.ndarray:
        """Runtime in seconds per scale-out; overlaps: {co_runner_job: ratio}, for all
        scale-outs, or a list with one such dict per scale-out."""
        x = _scale_outs(scale_outs)
        return self._alone(x) * self._factor_sd(x, overlaps)[0]

    def predict_interval(self, scale_outs: Sequence[float] | np.ndarray,
                         overlaps: Overlaps = None, confidence: float | None = None,
                         ) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) seconds: the model's own bounds (the curve's CV residuals, below
        the observed range at least from "no speed-up" to "linear speed-up" from its edge,
        the pairs' uncertainty in quadrature), calibrated on the model's held-out errors per
        run class (co_runner_effects.calibrated_interval)."""
        x = _scale_outs(scale_outs)
        c = self.confidence_default if confidence is None else confidence
        parts = self.interval_parts(x, c)
        factor, sd = self._factor_sd(x, overlaps)
        return co_runner_bounds(parts, factor, sd, _rows(overlaps, x.size), c,
                                self.class_quantiles)

    def class_quantiles(self, k: int, confidence: float) -> tuple[float, float] | None:
        """The conformal quantiles (q_lo, q_hi) for a run of class k (None: uncalibrated)."""
        return self.conformal_.quantiles(k, confidence) if self.calibrate else None

    def interval_parts(self, scale_outs: Sequence[float] | np.ndarray, confidence: float,
                       ) -> dict[str, np.ndarray]:
        """What the interval is built from, per scale-out, before co-runners and calibration:
        the prediction alone, the curve's bounds at `confidence`, its log sd per tail, and
        whether the scale-out lies within the fitted range (model_table tabulates these)."""
        x = _scale_outs(scale_outs)
        return curve_bounds(x, self._alone(x), self.interval_, self.scale_out_range_,
                            self.edge_runtime_s_, bool(self.regime_scale_outs_), confidence)

    # ---- the co-runners' pairs -----------------------------------------------------
    def pair_covariance(self, job: Any) -> tuple[float, float, float]:
        """(var a, cov(a, b), var b) of the pair interference(job) answers with. A job with
        its own pair: the pair's posterior covariance. A job answered by the pooled class
        (met rarely, or never): that class pair averages many jobs, so this one job may differ
        from it by the spread between jobs, added to the class pair's own uncertainty. Either
        is held to what a, b >= 0 allow (pooling.positive_pair_cov)."""
        prior = self._prior(job)
        if prior is not None:
            return prior[1] if self.propagate else (0.0, 0.0, 0.0)
        if not self.propagate or not self.co_runners_:
            return 0.0, 0.0, 0.0
        i = self._pair_index(job)
        own = i is not None and self.co_runners_[i] != POOLED
        c = self.pair_cov_[i] if i is not None else np.zeros((2, 2))
        if not own:
            c = c + np.diag(self._between_jobs())
        lo, hi = self.scale_out_range_
        c = positive_pair_cov(c, self.interference(job), (1.0 / hi, 1.0 / lo))
        return float(c[0, 0]), float(c[0, 1]), float(c[1, 1])

    def _between_jobs(self) -> np.ndarray:
        """Variance of (a, b) between co-runner jobs: pooling's τ², else the pairs' spread."""
        tau2 = self.pool_tau2_
        if np.all(np.isfinite(tau2)):
            return np.asarray(tau2, float)
        if len(self.co_runners_) < 2:
            return np.zeros(2)
        return np.var(np.column_stack([self.a_, self.b_]), axis=0)

    def _pair_index(self, job: Any) -> int | None:
        names = self.co_runners_
        key = co_runner_key(job)
        if key in names and key != POOLED:
            return names.index(key)
        if POOLED in names:
            return names.index(POOLED)
        return None

    def _prior(self, job: Any) -> Any:
        """The profile prior for a job without a pair of its own (None: none, or own pair)."""
        if self.pair_prior is None:
            return None
        key = co_runner_key(job)
        if key == POOLED or (key in self.co_runners_):
            return None
        return self.pair_prior(key)

    def interference(self, job: Any) -> tuple[float, float]:
        """(a, b) for a co-runner job: its own pair when it had enough runs, else its profile
        prior (pair_prior) if any, else the pooled pair; with no pooled runs, the run-weighted
        mean of the known pairs; else (0, 0)."""
        prior = self._prior(job)
        if prior is not None:
            return float(prior[0][0]), float(prior[0][1])
        names = self.co_runners_
        i = self._pair_index(job)
        if i is not None:
            return float(self.a_[i]), float(self.b_[i])
        if names:
            n = np.array([self.interference_runs_[k] for k in names], float)
            return float(n @ self.a_ / n.sum()), float(n @ self.b_ / n.sum())
        return 0.0, 0.0

    def handover(self) -> dict[str, float]:
        """Where the runs end and the extrapolating curve takes over, with both curves' alone
        runtimes there. They are chosen separately (as in Bell), so predict may step at the
        edge; continuing the extrapolation from the interpolation's value lost out of sample
        (bench gate --only accuracy: forward-extrapolation MAPE 9.50 % -> 10.34 %, Bell data)."""
        hi = np.array([self.scale_out_range_[1]])
        return {"scale_out": float(hi[0]),
                "interpolation_s": float(self.interp_.predict(hi)[0]),
                "extrapolation_s": float(self.extrap_.predict(hi)[0])}

    def describe(self) -> dict[str, Any]:
        return {
            "n_runs": self.n_runs_,
            "n_runs_alone": self.n_runs_alone_,
            "n_scale_outs": self.n_scale_outs_,
            "scale_out_range": list(self.scale_out_range_),
            "interpolation": self.interp_.describe(),
            "extrapolation": self.extrap_.describe(),
            "handover": self.handover(),
            "regime_scale_outs": list(self.regime_scale_outs_),
            "interference": describe_pairs(self),
            "combination": {"rule": self.combination_, "scaled": bool(self.scaled_),
                            "sized": bool(self.sized_),
                            "size_reference": dict(self.size_reference_) if self.sized_ else {},
                            "separated_from": self.interference_curve_,
                            "separation_terms": list(self.separation_terms_),
                            "terms_cv_mean_abs_log_error": dict(self.terms_cv_),
                            "cv_mean_abs_log_error": dict(self.interference_cv_),
                            "pooling": describe_pool(self.pool_mean_, self.pool_tau2_)},
            "cv": jsonable(self.cv_),
            "interval": self.interval_.describe(),
        }


def _rows(overlaps: Overlaps, n: int) -> list[Mapping[Any, float] | None]:
    """One overlap dict (or None) per scale-out."""
    if overlaps is None or isinstance(overlaps, Mapping):
        return [overlaps] * n
    rows = list(overlaps)
    if len(rows) != n:
        raise ValueError(f"{len(rows)} overlap dicts for {n} scale-outs; give one "
                         "dict for all or one per scale-out")
    return rows


def _scale_outs(scale_outs: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.atleast_1d(np.asarray(scale_outs, dtype=float))
    if x.size and (not np.all(np.isfinite(x)) or np.any(x <= 0)):
        raise ValueError("scale-outs must be positive numbers")
    return x


def fit_runtime_model(runs: Iterable[Any], **params: Any) -> RuntimeModel:
    """Fit CoBell's runtime model to a job's past runs (see the module docstring)."""
    return RuntimeModel(**params).fit(runs)
