"""CoBell's runtime model: interference normalisation, then the scale-out curve chosen by CV.

1. (a_k, b_k) per co-runner from the parametric interference fit; how concurrent co-runners
   combine (added, the largest, saturating) and whether their effect shrinks with the job's
   scale-out (a + b/x, or a) are chosen by K-fold CV on the runs with co-runners; each pair
   is then shrunk toward the pooled pair by its evidence (pooling.py). The pairs are
   separated from a broken line in log x when the runs cover the scale-outs (else from
   Ernest's curve, as in the paper), so a misfit of the curve is not read as b/x. Runtimes are
   normalised by (1 + S), the paper's two-phase approach, so everything after sees "alone"
   runtimes.
2. Outlier repetitions get bisquare weights; a cliff at the smallest scale-outs is a
   separate regime, kept for interpolation but kept out of the curve that extrapolates.
3. Interpolation: Ernest feature subsets (fitted in relative error) and local linear
   regressions compete in interior leave-one-scale-out CV, as in Bell.
4. Extrapolation: the parametric candidates compete in forward CV (train on the smaller
   scale-outs, test on the larger ones), which is the question extrapolation asks.
5. Below the smallest observed scale-out, no fitted curve is trusted (a curve that rises with
   x, from noise or unrecorded co-runners, would promise a faster run on fewer nodes): the
   runtime there continues Amdahl's law from the lower edge, never below the edge's runtime.
   With the job's event-log profiles, the what-if replay (core/whatif.py) times a
   correction exp(c0 + c1·log x) fitted to the runs is one more candidate in both CVs; with
   a single scale-out it replaces the 1/x guess as the prior (it knows the stages' waves).
6. The CV residuals of the chosen models give a relative prediction interval; below the
   range it also spans "no speed-up" to "linear speed-up" from the smallest scale-out. With
   co-runners it widens by the pairs' posterior uncertainty (delta method), added to the
   curve's conformal half-width in quadrature (log space).

Steps 3-6 choose the curve in curve_select.py (the curves themselves are in curves.py);
RuntimeModel stores what it chose as interp_, extrap_, interval_ and cv_.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from cobell_cli.core.calibration import JACKKNIFE_MAX_FITS
from cobell_cli.core.co_runner_effects import (
    MAX_CLASS,
    calibrated_interval,
    co_runner_class,
    factor_and_sd,
    size_weight,
    widen,
)
from cobell_cli.core.model.combine import RULES
from cobell_cli.core.model.curve_select import MIN_SCALE_OUTS_FOR_CV, choose_curves
from cobell_cli.core.model.curves import log_levels
from cobell_cli.core.model.data import POOLED, RunData, co_runner_key, prepare_runs
from cobell_cli.core.model.interference import (
    AloneCurve,
    fit_interference,
    knots,
    pair_covariance,
    slowdown,
)
from cobell_cli.core.model.loo import loo_ratios
from cobell_cli.core.model.parametric import AMDAHL, FEATURES, fit_theta
from cobell_cli.core.model.pooling import Pooled, no_pooling, positive_pair_cov, shrink
from cobell_cli.core.model.robust import (
    physically_impossible_levels,
    regime_change_scale_outs,
    repetition_weights,
)
from cobell_cli.core.model.uncertainty import ConformalScale, curve_log_sd
from cobell_cli.output import jsonable

MIN_RUNS_PER_CO_RUNNER = 3  # fewer runs cannot pin down (a, b): they join the pool
MIN_EDGE_SCALE_OUTS = 3  # scale-outs the lower-edge Amdahl fit uses at least (all if fewer)
INTERFERENCE_FOLDS = 3  # K of the CV that chooses the combination rule and b/x
CV_ROUNDS = 4  # alternations per CV fit: enough to rank the forms, a third of the cost
MIN_RUNS_FOR_RULE_CV = 10  # runs with co-runners below which the paper's form is kept
RULE_MARGIN = 0.01  # another form must beat the paper's CV error by 1 % to replace it
REFIT_MAX_RUNS = 100  # up to here the held-out errors come from refits (held_out_ratios)
THIN_EVIDENCE_SD = 0.25 # own sd of a + b/x, relative to the pooled effect, that `model show`
# calls thin evidence

Overlaps = Mapping[Any, float] | Sequence[Mapping[Any, float]] | None


class RuntimeModel:
    """Predicts a job's runtime at a scale-out, given the co-runners it will overlap with.

    Built by fit_runtime_model(); follows the estimator contract (learned values end in _).
    """

    def __init__(self, *, confidence_default: float = 0.9, combination: str = "auto",
                 scaled: bool | None = None, pooling: bool = True,
                 propagate: bool = True, alone_curve: str = "auto",
                 calibrate: bool = True, sized: bool | None = None,
                 whatif: Any = None) -> None:
        self.confidence_default = confidence_default
        self.combination = combination  # "auto" (CV) or one of combine.RULES
        self.scaled = scaled  # None: CV decides between a + b/x and a
        self.pooling = pooling  # shrink each pair toward the pooled one (empirical Bayes)
        self.propagate = propagate  # widen the interval by the pairs' uncertainty
        # f the pairs are separated from: "auto" (a broken line when every stretch of
        # scale-outs has runs, see interference.knots) or "ernest" (the paper's)
        self.alone_curve = alone_curve
        # the interval calibrated on the model's held-out errors per run class (uncertainty.py)
        self.calibrate = calibrate
        # a co-runner's effect in proportion to its scale-out (None: CV decides; see fit)
        self.sized = sized
        # a fitted core.whatif.WhatIfModel (anything with replay(scale_out) -> seconds):
        # its replay joins the candidate curves
        self.whatif = whatif

    # ---- fitting -------------------------------------------------------------------
    def fit(self, runs: Iterable[Any]) -> RuntimeModel:
        raw = prepare_runs(runs)
        plain = _pool_rare(raw)
        x, y = plain.scale_out, plain.runtime_s
        self._count_runs(plain)
        base = FEATURES if self.n_scale_outs_ >= MIN_SCALE_OUTS_FOR_CV + 1 else AMDAHL
        self.size_reference_ = _size_references(plain)
        robust_w, data = self._fit_interference(plain, base)
        y_alone = y / slowdown(x, data.overlap, self.a_, self.b_, self.combination_)
        w = repetition_weights(x, y_alone)
        self._fit_regime(x, y_alone, w)
        # Too few scale-outs for the regime check: a wild run is only seen against physics.
        rejected = (physically_impossible_levels(x, y_alone, w)
                    if self.n_scale_outs_ < MIN_SCALE_OUTS_FOR_CV else [])
        kept = ~np.isin(x, rejected)
        choice = choose_curves(x, y_alone, w, rejected=rejected,
                               regime_scale_outs=self.regime_scale_outs_,
                               scale_out_range=self.scale_out_range_,
                               replay=None if self.whatif is None else self.whatif.replay)
        self.interp_, self.extrap_ = choice.interp, choice.extrap
        self.interval_, self.cv_ = choice.interval, choice.cv
        if rejected:
            self.cv_["rejected_scale_outs"] = rejected
        lo = np.array([self.scale_out_range_[0]])
        self.edge_runtime_s_ = float(self._inside(lo)[0])
        self.edge_parallel_fraction_ = _edge_parallel_fraction(x[kept], y_alone[kept],
                                                               w[kept])
        alone = self._alone(x)  # held-out errors for the planner's calibration (model/loo.py)
        # First order: the leverage is that of the additive form at the fitted pairs.
        fitted = alone * slowdown(x, data.overlap, self.a_, self.b_, self.combination_)
        self.loo_ratios_ = loo_ratios(x, y, fitted, alone, data.overlap, self.a_, self.b_,
                                      robust_w)
        self._raw, self._pooled_data = raw, data
        self._held_out: np.ndarray | None = None
        self._scale: ConformalScale | None = None
        return self

    def _count_runs(self, plain: RunData) -> None:
        """What the model was fitted on: runs, scale-outs, and each co-runner's runs and
        overlap seconds, as describe() reports them."""
        x, y = plain.scale_out, plain.runtime_s
        self.n_runs_ = plain.n
        self.scale_out_range_ = (float(x.min()), float(x.max()))
        self.n_scale_outs_ = int(np.unique(x).size)
        self.co_runners_ = plain.co_runners
        self.interference_runs_ = {k: int((plain.overlap[:, i] > 0).sum())
                                   for i, k in enumerate(plain.co_runners)}
        self.overlap_s_ = {k: float(plain.overlap[:, i] @ y)
                           for i, k in enumerate(plain.co_runners)}

    def _fit_regime(self, x: np.ndarray, y_alone: np.ndarray, w: np.ndarray) -> None:
        """The cliff at the smallest scale-outs, if any: its scale-outs, their mean log
        runtimes and the first normal scale-out, which _regime follows below that one."""
        self.regime_scale_outs_ = regime_change_scale_outs(x, y_alone, w)
        if self.regime_scale_outs_:
            rows = np.isin(x, self.regime_scale_outs_)
            _, v, _ = log_levels(x[rows], y_alone[rows], w[rows])
            self.regime_log_runtime_ = v
            levels = np.unique(x)
            self.first_normal_scale_out_ = float(levels[~np.isin(levels,
                                                                  self.regime_scale_outs_)][0])

    def held_out_ratios(self) -> np.ndarray:
        """runtime / prediction of each training run by a model that did not see it.

        Up to REFIT_MAX_RUNS runs: K-fold refits (runs i, i + K, ... form fold i of
        K = JACKKNIFE_MAX_FITS), in the chosen combination form, computed on first need (the
        planner asks for the job it plans, never for its co-runners). Beyond: the one-fit
        first-order estimate (`loo_ratios_`, model/loo.py), which leaves out that the curve and
        its knots were chosen on the same runs: at 50 runs it covered 81.6 % of fresh runs
        with a nominal 90 % interval where ten refits covered 90.7 % (bench.simulator, 20
        co-runner jobs); from 200 runs on, both 88-94 %.
        """
        if self._held_out is None:
            self._held_out = self._refit_ratios() if self.n_runs_ <= REFIT_MAX_RUNS else None
            if self._held_out is None:
                self._held_out = np.asarray(self.loo_ratios_, float)
        return self._held_out

    def _refit_ratios(self) -> np.ndarray | None:
        raw = self._raw
        k = min(JACKKNIFE_MAX_FITS, raw.n)
        if k < 2:
            return None
        out = np.asarray(self.loo_ratios_, float).copy()  # where a fold cannot be fitted
        index = np.arange(raw.n)
        for fold in range(k):
            test = index % k == fold
            try:
                inner = RuntimeModel(
                    confidence_default=self.confidence_default, combination=self.combination_,
                    scaled=bool(self.scaled_), pooling=self.pooling, propagate=self.propagate,
                    alone_curve=self.alone_curve, calibrate=False, sized=self.sized_,
                    whatif=self.whatif,
                ).fit(raw.subset(~test))
            except ValueError:
                continue
            sizes = (raw.co_scale_out[test] if raw.co_scale_out is not None
                     else np.zeros_like(raw.overlap[test]))
            rows = [{c: float(v) * inner.size_weight(c, float(z) or None)
                     for c, v, z in zip(raw.co_runners, r, zs, strict=True) if v > 0}
                    for r, zs in zip(raw.overlap[test], sizes, strict=True)]
            out[test] = raw.runtime_s[test] / inner.predict(raw.scale_out[test], rows)
        return out

    @property
    def conformal_(self) -> ConformalScale:
        """The held-out errors as scores on the model's own log sd (uncertainty.py)."""
        if self._scale is None:
            self._scale = self._conformal(self._pooled_data, self._raw)
        return self._scale

    def _conformal(self, data: RunData, raw: RunData) -> ConformalScale:
        x = data.scale_out
        rows = [{k: float(v) for k, v in zip(data.co_runners, r, strict=True) if v > 0}
                for r in data.overlap]
        sd_lo, sd_hi = curve_log_sd(self.interval_, x, np.ones_like(x, bool))
        pair = self._factor_sd(x, rows)[1]
        log_ratio = np.log(self.held_out_ratios())
        floor = 1e-3  # a model claiming less than 0.1 % of log sd is not taken at its word
        scores_hi = log_ratio / np.maximum(np.hypot(sd_hi, pair), floor)
        scores_lo = -log_ratio / np.maximum(np.hypot(sd_lo, pair), floor)
        classes = np.minimum((raw.overlap > 0).sum(axis=1), MAX_CLASS)
        return ConformalScale(scores_hi, scores_lo, classes)

    def _fit_interference(self, plain: RunData, base: Sequence[str],
                          ) -> tuple[np.ndarray, RunData]:
        """Sizes, rule and b/x by CV, the final fit, then partial pooling of the pairs;
        returns the robust fit's weights per run and the runs as fitted (overlaps weighed by
        the co-runners' sizes when the CV chose that)."""
        x, y = plain.scale_out, plain.runtime_s
        self.interference_cv_: dict[str, float] = {}
        sized = _sized(plain, self.size_reference_)
        rule, scaled, self.sized_ = self._choose_form(plain, sized, base)
        data = sized if self.sized_ else plain
        ov = data.overlap
        best = (rule, scaled)
        self.combination_, self.scaled_ = best
        curve, a, b, w = fit_interference(x, y, ov, base, rule=best[0], scaled=best[1],
                                          at=self._knots(x))
        self.interference_curve_ = "broken line" if curve.theta is None else "ernest"
        self.a_unpooled_, self.b_unpooled_ = a, b
        pooled = _pool(x, y, ov, curve, a, b, w, best, self.pooling)
        self.a_, self.b_ = pooled.pairs[:, 0], pooled.pairs[:, 1]
        self.pair_cov_ = pooled.cov
        self.own_weight_ = pooled.own_weight
        self.sampling_cov_ = pooled.sampling_cov
        self.reference_scale_out_ = float(x.min())  # where b/x matters most
        self.pool_mean_, self.pool_tau2_ = pooled.mean, pooled.tau2
        return w, data

    def _size_options(self, plain: RunData, sized: RunData) -> list[bool]:
        """Whether to weigh overlaps by co-runner size is a question only when some co-runner
        job ran at different scale-outs (and the caller did not fix the answer)."""
        if self.sized is not None:
            return [bool(self.sized) and sized is not plain]
        sizes = plain.co_scale_out
        if sized is plain or sizes is None:
            return [False]
        varies = any(np.ptp(col[col > 0]) > 0 for name, col in zip(plain.co_runners, sizes.T,
                                                                    strict=True)
                     if name in self.size_reference_ and np.any(col > 0))
        return [False, True] if varies else [False]

    def _choose_form(self, plain: RunData, sized: RunData, base: Sequence[str],
                     ) -> tuple[str, bool, bool]:
        """(rule, scaled, sized) by CV in two stages, to bound the cost: a + b/x against a,
        each on the plain overlaps and, where co-runner jobs ran at different scale-outs, on
        the overlaps weighed by the co-runner's scale-out over its usual one (the share of the
        cluster it presses on), under the paper's additive rule; then the other rules with
        the winner. The paper's form (plain overlaps) stays unless another beats its CV error
        by RULE_MARGIN."""
        x, y = plain.scale_out, plain.runtime_s
        matrices = {False: plain.overlap, True: sized.overlap}
        present = plain.overlap > 0
        rules = [self.combination] if self.combination != "auto" else list(RULES)
        if self.combination == "auto" and not np.any(present.sum(axis=1) >= 2):
            rules = ["additive"]  # no run with two co-runners: every rule is the same
        scaled = [True, False] if self.scaled is None else [bool(self.scaled)]
        sizes = self._size_options(plain, sized)
        if int(present.any(axis=1).sum()) < MIN_RUNS_FOR_RULE_CV:
            return rules[0], scaled[0], sizes[0]
        scores: dict[tuple[str, bool, bool], float] = {}

        def pick(forms: list[tuple[str, bool, bool]], incumbent: tuple[str, bool, bool],
                 ) -> tuple[str, bool, bool]:
            for form in forms:
                if form not in scores:
                    scores[form] = _interference_cv(x, y, matrices[form[2]], base, form[:2],
                                                    self.pooling, self.alone_curve == "auto")
            best = min(forms, key=scores.get)
            return incumbent if scores[incumbent] <= scores[best] * (1 + RULE_MARGIN) else best

        first = [(rules[0], s, z) for z in sizes for s in scaled]
        form = pick(first, first[0]) if len(first) > 1 else first[0]
        if len(rules) > 1:
            form = pick([(r, form[1], form[2]) for r in rules], form)
        if len(scores) > 1:
            self.interference_cv_ = {_form_name(f): v for f, v in scores.items()}
        return form

    def size_weight(self, job: Any, scale_out: float | None) -> float:
        """The factor on an app's overlap ratio the model's pairs expect: its scale-out over
        its job's usual one when the model weighs co-runner sizes, else 1."""
        refs = self.size_reference_ if self.sized_ else None
        return size_weight(refs, co_runner_key(job), scale_out)

    def _knots(self, x: np.ndarray) -> np.ndarray | None:
        if self.alone_curve not in ("auto", "ernest"):
            raise ValueError(f"alone_curve must be 'auto' or 'ernest', got {self.alone_curve!r}")
        return knots(x) if self.alone_curve == "auto" else None

    # ---- prediction ----------------------------------------------------------------
    def _inside(self, x: np.ndarray) -> np.ndarray:
        """The fitted curves: interpolation inside the range, extrapolation outside."""
        lo, hi = self.scale_out_range_
        inside = (x >= lo) & (x <= hi)
        out = self.extrap_.predict(x)
        if inside.any():
            out[inside] = self.interp_.predict(x[inside])
        if self.regime_scale_outs_:
            out = self._regime(x, out)
        return out

    def _alone(self, x: np.ndarray) -> np.ndarray:
        out = self._inside(x)
        below = x < self.scale_out_range_[0]
        if below.any() and not self.regime_scale_outs_:
            out[below] = self._below_range(x[below])
        return out

    def _below_range(self, x: np.ndarray) -> np.ndarray:
        """Below the smallest scale-out x0, two continuations share the edge's runtime y0
        and speed-up p (the parallel share of the runtime there, so the local elasticity
        is -p): Amdahl's law y0·(1 - p + p·x0/x), whose elasticity runs to -1 as x shrinks,
        and the power law y0·(x0/x)^p, which keeps it, as jobs whose shuffle and
        coordination costs shrink with x too tend to. Runs above x0 cannot tell them apart,
        so the prediction is their geometric mean. It is never below y0 (fewer nodes are not
        faster) nor above y0·x0/x (no better than linear speed-up), and never falls as x
        shrinks. On the Bell data, against Amdahl's law alone: sparse3 (10 seeds) 12.2 ->
        11.8 % MAPE; trained on the upper half of the scale-outs, predicting the lower half
        15.1 -> 14.3 % (the top four: 16.4 -> 16.7, the top three: 18.4 -> 18.5). Following
        the fitted curves within these bounds measured 23.8 % on the upper-half split."""
        x0 = self.scale_out_range_[0]
        p = self.edge_parallel_fraction_
        ratio = x0 / x
        return self.edge_runtime_s_ * np.sqrt((1.0 - p + p * ratio) * ratio ** p)

    def _regime(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Below the first normal scale-out, follow the observed regime levels (log-log
        interpolation up to the curve); below them, continue the first segment's slope,
        clipped to [-1, 0]: no better than linear speed-up, no faster with fewer nodes."""
        regime = np.asarray(self.regime_scale_outs_)
        levels = np.unique(np.concatenate([regime, [self._first_normal]]))
        boundary = float(levels[-1])
        region = x < boundary
        if not region.any():
            return out
        t = np.log(levels)
        v = np.concatenate([self.regime_log_runtime_,
                            np.log(self.interp_.predict(np.array([boundary])))])
        tq = np.log(x[region])
        est = np.interp(tq, t, v)
        slope = float(np.clip((v[1] - v[0]) / (t[1] - t[0]), -1.0, 0.0))
        below = tq < t[0]
        est[below] = v[0] + slope * (tq[below] - t[0])
        out = out.copy()
        out[region] = np.exp(est)
        return out

    @property
    def _first_normal(self) -> float:
        return self.first_normal_scale_out_

    def _factor_sd(self, x: np.ndarray, overlaps: Overlaps) -> tuple[np.ndarray, np.ndarray]:
        """(1 + S, sd of its log from the pairs' uncertainty) per scale-out."""
        if overlaps is None:
            return np.ones_like(x), np.zeros_like(x)
        factor, sd = np.ones_like(x), np.zeros_like(x)
        for i, row in enumerate(_rows(overlaps, x.size)):
            factor[i], sd[i] = factor_and_sd(x[i], row, self.interference,
                                             self.pair_covariance, self.combination_)
        return factor, sd

    def _factor(self, x: np.ndarray, overlaps: Overlaps) -> np.ndarray:
        return self._factor_sd(x, overlaps)[0]

    def predict(self, scale_outs: Sequence[float] | np.ndarray, overlaps: Overlaps = None,
                ) -> np.ndarray:
        """Runtime in seconds per scale-out; overlaps: {co_runner_job: ratio}, for all
        scale-outs, or a list with one such dict per scale-out."""
        x = _scale_outs(scale_outs)
        return self._alone(x) * self._factor(x, overlaps)

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
        lower, upper = np.empty_like(x), np.empty_like(x)
        for i, row in enumerate(_rows(overlaps, x.size)):
            alone = float(parts["alone"][i])
            model_lo, model_hi = widen(alone, float(parts["lower"][i]), float(parts["upper"][i]),
                                       float(sd[i]), c)
            lower[i], upper[i] = calibrated_interval(
                alone * factor[i], (model_lo * factor[i], model_hi * factor[i]),
                (float(parts["curve_sd_lo"][i]), float(parts["curve_sd_hi"][i])),
                float(sd[i]), self.class_quantiles(co_runner_class(row), c),
                bool(parts["inside"][i]))
        return lower, upper

    def class_quantiles(self, k: int, confidence: float) -> tuple[float, float] | None:
        """The conformal quantiles (q_lo, q_hi) for a run of class k (None: uncalibrated)."""
        return self.conformal_.quantiles(k, confidence) if self.calibrate else None

    def interval_parts(self, scale_outs: Sequence[float] | np.ndarray, confidence: float,
                       ) -> dict[str, np.ndarray]:
        """What the interval is built from, per scale-out, before co-runners and calibration:
        the prediction alone, the curve's bounds at `confidence`, its log sd per tail, and
        whether the scale-out lies within the fitted range (model_table tabulates these)."""
        x = _scale_outs(scale_outs)
        alone = self._alone(x)
        lo, hi = self.scale_out_range_
        inside = (x >= lo) & (x <= hi)
        low_f, high_f = self.interval_.factors(x, inside, confidence)
        lower, upper = alone * low_f, alone * high_f
        below = x < lo
        if below.any() and not self.regime_scale_outs_:
            edge_low, edge_high = self.interval_.factors(np.array([lo]), np.array([True]),
                                                         confidence)
            y0 = self.edge_runtime_s_
            lower[below] = y0 * edge_low[0]
            upper[below] = y0 * lo / x[below] * edge_high[0]
        sd_lo, sd_hi = curve_log_sd(self.interval_, x, inside)
        return {"alone": alone, "lower": lower, "upper": upper, "curve_sd_lo": sd_lo,
                "curve_sd_hi": sd_hi, "inside": inside}

    def pair_covariance(self, job: Any) -> tuple[float, float, float]:
        """(var a, cov(a, b), var b) of the pair interference(job) answers with. A job with
        its own pair: the pair's posterior covariance. A job answered by the pooled class
        (met rarely, or never): that class pair averages many jobs, so this one job may differ
        from it by the spread between jobs, added to the class pair's own uncertainty. Either
        is held to what a, b >= 0 allow (pooling.positive_pair_cov)."""
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

    def interference(self, job: Any) -> tuple[float, float]:
        """(a, b) for a co-runner job: its own pair when it had enough runs, else the pooled
        pair; with no pooled runs, the run-weighted mean of the known pairs; else (0, 0)."""
        names = self.co_runners_
        i = self._pair_index(job)
        if i is not None:
            return float(self.a_[i]), float(self.b_[i])
        if names:
            n = np.array([self.interference_runs_[k] for k in names], float)
            return float(n @ self.a_ / n.sum()), float(n @ self.b_ / n.sum())
        return 0.0, 0.0

    def describe(self) -> dict[str, Any]:
        return {
            "n_runs": self.n_runs_,
            "n_scale_outs": self.n_scale_outs_,
            "scale_out_range": list(self.scale_out_range_),
            "interpolation": self.interp_.describe(),
            "extrapolation": self.extrap_.describe(),
            "regime_scale_outs": list(self.regime_scale_outs_),
            "interference": {k: self._describe_pair(i, k) for i, k in enumerate(self.co_runners_)},
            "combination": {"rule": self.combination_, "scaled": bool(self.scaled_),
                            "sized": bool(self.sized_),
                            "size_reference": dict(self.size_reference_) if self.sized_ else {},
                            "separated_from": self.interference_curve_,
                            "cv_mean_abs_log_error": dict(self.interference_cv_),
                            "pooling": self._describe_pool()},
            "cv": jsonable(self.cv_),
            "interval": self.interval_.describe(),
        }

    def _effect_sd(self, cov: np.ndarray) -> float:
        """sd of a + b/x at the smallest observed scale-out under a pair covariance."""
        g = np.array([1.0, 1.0 / self.reference_scale_out_])
        return float(np.sqrt(max(g @ cov @ g, 0.0)))

    def _describe_pair(self, i: int, k: str) -> dict[str, Any]:
        """The pair and what it rests on. Thin: its own runs leave the effect at the smallest
        scale-out uncertain by more than THIN_EVIDENCE_SD of the pooled effect (a low own
        weight alone can also mean co-runners simply do not differ)."""
        c = self.pair_cov_[i]
        x_ref = self.reference_scale_out_
        mean = self.pool_mean_
        pooled_effect = max(float(mean[0] + mean[1] / x_ref), 1e-9)
        own_sd = self._effect_sd(self.sampling_cov_[i])
        return {"a": float(self.a_[i]), "b": float(self.b_[i]),
                "runs": self.interference_runs_[k],
                "overlap_s": self.overlap_s_[k],
                "own_weight": float(self.own_weight_[i]),
                "unpooled": {"a": float(self.a_unpooled_[i]), "b": float(self.b_unpooled_[i])},
                "sd": {"a": float(np.sqrt(max(c[0, 0], 0.0))),
                       "b": float(np.sqrt(max(c[1, 1], 0.0)))},
                "effect_sd_own": own_sd,
                "effect_sd": self._effect_sd(c),
                "reference_scale_out": x_ref,
                "thin": bool(own_sd > THIN_EVIDENCE_SD * pooled_effect)}

    def _describe_pool(self) -> dict[str, Any] | None:
        if not np.all(np.isfinite(self.pool_tau2_)):
            return None
        return {"mean": {"a": float(self.pool_mean_[0]), "b": float(self.pool_mean_[1])},
                "tau": {"a": float(np.sqrt(self.pool_tau2_[0])),
                        "b": float(np.sqrt(self.pool_tau2_[1]))}}


def _pool(x: np.ndarray, y: np.ndarray, ov: np.ndarray, curve: AloneCurve, a: np.ndarray,
          b: np.ndarray, w: np.ndarray, form: tuple[str, bool], pooling: bool) -> Pooled:
    cov = pair_covariance(x, y, ov, curve(x), a, b, w, form[0], form[1], curve.n_params)
    est = np.column_stack([a, b])
    if not pooling:
        return no_pooling(est, cov)
    return shrink(est, cov, active=np.array([True, form[1]]))


def _interference_cv(x: np.ndarray, y: np.ndarray, ov: np.ndarray, base: Sequence[str],
                     form: tuple[str, bool], pooling: bool, broken_line: bool) -> float:
    """Mean |log(y / ŷ)| on held-out runs with co-runners, interleaved K folds, each fold
    fitted (fast: no reweighting, no polish) and pooled as the final model will be."""
    busy = np.flatnonzero((ov > 0).any(axis=1))
    errs = []
    for fold in range(INTERFERENCE_FOLDS):
        test = np.zeros(x.size, bool)
        test[busy[fold::INTERFERENCE_FOLDS]] = True
        if not test.any():
            continue
        tr = ~test
        curve, a, b, w = fit_interference(x[tr], y[tr], ov[tr], base, robust=False,
                                          polish=False, rule=form[0], scaled=form[1],
                                          rounds=CV_ROUNDS,
                                          at=knots(x[tr]) if broken_line else None)
        pooled = _pool(x[tr], y[tr], ov[tr], curve, a, b, w, form, pooling)
        pred = curve(x[test]) * slowdown(x[test], ov[test], pooled.pairs[:, 0],
                                         pooled.pairs[:, 1], form[0])
        errs.append(np.abs(np.log(y[test] / np.maximum(pred, 1e-12 * y.min()))))
    return float(np.mean(np.concatenate(errs))) if errs else float("inf")


def _form_name(form: tuple[str, bool] | tuple[str, bool, bool]) -> str:
    sized = ", x co-runner size" if len(form) > 2 and form[2] else ""
    return f"{form[0]}, {'a + b/x' if form[1] else 'a'}{sized}"


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


def _edge_parallel_fraction(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Parallel share p = (b/x0)/(a + b/x0) of Amdahl's a + b/x, fitted (θ >= 0, so p is in
    [0, 1]) to the lower half of the scale-outs: how the runtime scales near the smallest
    one says most about the scale-outs below it. One scale-out: perfect scaling, as the
    point guess of curve_select.one_scale_out assumes."""
    levels = np.unique(x)
    if levels.size < 2:
        return 1.0
    k = max(min(MIN_EDGE_SCALE_OUTS, levels.size), (levels.size + 1) // 2)
    rows = x <= levels[k - 1]
    theta = fit_theta(x[rows], y[rows], AMDAHL, sample_weight=w[rows], loss="l1")
    parallel = theta[1] / levels[0]
    total = theta[0] + parallel
    return float(np.clip(parallel / total, 0.0, 1.0)) if total > 0 else 1.0


def _pool_rare(data: RunData) -> RunData:
    """Merge co-runners seen in fewer than MIN_RUNS_PER_CO_RUNNER runs into the pool."""
    if not data.co_runners:
        return data
    counts = (data.overlap > 0).sum(axis=0)
    keep = [i for i, k in enumerate(data.co_runners)
            if k != POOLED and counts[i] >= MIN_RUNS_PER_CO_RUNNER]
    rare = [i for i in range(len(data.co_runners)) if i not in keep]
    cols = [data.overlap[:, i] for i in keep]
    names = [data.co_runners[i] for i in keep]
    sizes = data.co_scale_out
    size_cols = [] if sizes is None else [sizes[:, i] for i in keep]
    if rare:
        cols.append(data.overlap[:, rare].sum(axis=1))
        names.append(POOLED)
        if sizes is not None:  # the pooled apps' overlap-weighted mean scale-out
            ov, z = data.overlap[:, rare], sizes[:, rare]
            known = np.where(z > 0, ov, 0.0).sum(axis=1)
            size_cols.append(np.divide((ov * z).sum(axis=1), known, out=np.zeros(data.n),
                                       where=known > 0))
    overlap = np.column_stack(cols) if cols else np.zeros((data.n, 0))
    co_scale_out = (None if sizes is None else
                    np.column_stack(size_cols) if size_cols else np.zeros((data.n, 0)))
    return RunData(data.scale_out, data.runtime_s, overlap, tuple(names), co_scale_out)


def _size_references(data: RunData) -> dict[str, float]:
    """Each co-runner job's usual scale-out: the overlap-weighted mean of the known ones. The
    pooled class has none: its sizes differ mostly between the jobs it mixes, which its pair
    already averages (weighing them cost 2-8 points of coverage with 60 co-runner jobs on 50
    runs, bench.coverage)."""
    sizes = data.co_scale_out
    if sizes is None:
        return {}
    out = {}
    for i, name in enumerate(data.co_runners):
        if name == POOLED:
            continue
        known = sizes[:, i] > 0
        weight = data.overlap[known, i].sum()
        if weight > 0:
            out[name] = float(data.overlap[known, i] @ sizes[known, i] / weight)
    return out


def _sized(data: RunData, references: Mapping[str, float]) -> RunData:
    """The runs with each overlap weighed by its co-runner's scale-out over its usual one
    (1 where unknown); `data` itself when no size is known."""
    if not references or data.co_scale_out is None:
        return data
    ref = np.array([references.get(name, 0.0) for name in data.co_runners])
    sizes = data.co_scale_out
    weight = np.where((sizes > 0) & (ref > 0), sizes / np.where(ref > 0, ref, 1.0), 1.0)
    return RunData(data.scale_out, data.runtime_s, data.overlap * weight, data.co_runners,
                   sizes)


def fit_runtime_model(runs: Iterable[Any], **params: Any) -> RuntimeModel:
    """Fit CoBell's runtime model to a job's past runs (see the module docstring)."""
    return RuntimeModel(**params).fit(runs)
