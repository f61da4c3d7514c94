"""The errors behind --confidence (recorded, held-out, jackknife), the pooled shape and
P(meet), strangers; each candidate's distribution over them is tests/test_predictive.py's."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from scipy.stats import t as scipy_t

from cobell_cli.core.calibration import (
    JACKKNIFE_MAX_FITS,
    RECENT_OUTCOMES,
    jackknife_calibration,
    jackknife_ratios,
    meet_probability,
    outcome_calibration,
    ratio_bound,
    stranger_factors,
    student_t_cdf,
    student_t_quantile,
)
from cobell_cli.core.plan import plan
from cobell_cli.core.predictive import calibrated_distribution
from cobell_cli.core.running import RunningApp


class PairModel:
    """g(x, ov) = c/x · (1 + Σ (a_j + b_j/x)·ov_j) with named pairs and a pooled one, described
    like fit_runtime_model's result ({"interference": {job: {a, b, runs}}}, "*" = pooled)."""

    def __init__(self, c: float, pairs: Mapping[str, tuple[float, float]],
                 pooled: tuple[float, float] | None = None) -> None:
        self.c, self.pairs, self.pooled = c, dict(pairs), pooled
        self.scale_out_range_ = (1.0, 64.0)

    def interference(self, job: Any) -> tuple[float, float]:
        if job in self.pairs:
            return self.pairs[job]
        return self.pooled or (0.0, 0.0)

    def _factor(self, x: float, row: Mapping[Any, float]) -> float:
        return 1.0 + sum((self.interference(j)[0] + self.interference(j)[1] / x) * ov
                         for j, ov in row.items())

    def predict(self, scale_outs: Any, overlaps: Any = None) -> np.ndarray:
        xs = np.atleast_1d(np.asarray(scale_outs, dtype=float))
        rows = ([{}] * xs.size if overlaps is None
                else [overlaps] * xs.size if isinstance(overlaps, Mapping) else list(overlaps))
        return np.array([self.c / x * self._factor(x, r) for x, r in zip(xs, rows, strict=True)])

    def predict_interval(self, scale_outs: Any, overlaps: Any = None, confidence: float = 0.9,
                         ) -> tuple[np.ndarray, np.ndarray]:
        p = self.predict(scale_outs, overlaps)
        return 0.98 * p, 1.02 * p

    def describe(self) -> dict:
        named = {j: {"a": a, "b": b, "runs": 5} for j, (a, b) in self.pairs.items()}
        if self.pooled is not None:
            named["*"] = {"a": self.pooled[0], "b": self.pooled[1], "runs": 2}
        return {"interference": named}


def rec(i: int, ratio: float, model: str = "model") -> dict:
    return {"id": i, "runtime_s": 100.0 * ratio, "predicted_s": 100.0, "model": model}


# --- conformal quantile and the outcome record ---------------------------------------------


def test_ratio_bound_is_conformal_when_the_record_reaches_the_rank() -> None:
    ratios = [1.3, 0.9, 1.0, 1.1, 1.2]
    assert ratio_bound(ratios, 0.5) == 1.1  # ceil(6 · 0.5) = 3rd smallest
    assert ratio_bound(ratios, 0.6) == 1.2  # ceil(6 · 0.6) = 4th smallest
    with pytest.raises(ValueError):
        ratio_bound([], 0.9)


def test_ratio_bound_beyond_the_largest_when_too_few_for_the_confidence() -> None:
    """Five ratios cannot certify 97 %: the largest covers only 5/6, the bound must be above."""
    ratios = [1.3, 0.9, 1.0, 1.1, 1.2]
    logs = np.log(ratios)
    t = scipy_t.ppf(0.97, 4)
    expected = math.exp(logs.mean() + t * logs.std(ddof=1) * math.sqrt(1 + 1 / 5))
    assert ratio_bound(ratios, 0.97) == pytest.approx(expected, rel=1e-3)
    assert ratio_bound(ratios, 0.97) > max(ratios)
    assert ratio_bound([1.05, 1.05, 1.05, 1.05], 0.97) == pytest.approx(1.05)  # no spread
    assert ratio_bound([1.0, 1.2], 0.97) == 1.2  # too few for a spread: the largest


@pytest.mark.parametrize("dof", [3, 5, 9, 29])
@pytest.mark.parametrize("p", [0.8, 0.9, 0.97, 0.99])
def test_student_t_quantile_matches_scipy(p: float, dof: int) -> None:
    assert student_t_quantile(p, dof) == pytest.approx(scipy_t.ppf(p, dof), rel=5e-3)


def test_outcome_calibration_is_a_conformal_quantile_of_recorded_errors() -> None:
    few = [rec(i, 1.1) for i in range(4)]
    assert outcome_calibration(few, 0.9) is None  # too few to say anything
    ratios = [0.95, 1.0, 1.02, 1.05, 1.1, 1.2, 0.9, 1.0, 1.3, 0.98]
    runs = [rec(i, r) for i, r in enumerate(ratios)] + [rec(99, 5.0, "bootstrap-parametric")]
    cal = outcome_calibration(runs, 0.8)
    assert cal is not None and cal["source"] == "outcomes"
    assert cal["runs"] == 10  # bootstrap-phase predictions ignored co-runners: not counted
    assert cal["ratio_quantile"] == sorted(ratios)[8]  # ceil(11 * 0.8) = 9th smallest
    assert outcome_calibration(runs, 0.95)["ratio_quantile"] == ratio_bound(ratios, 0.95)


# --- leave-one-out on the interference model -----------------------------------------------


def _runs(truth: PairModel, spec: Sequence[tuple[int, dict[str, float]]]) -> list[dict]:
    return [{"id": i, "scale_out": x, "overlaps": ov,
             "runtime_s": float(truth.predict([x], ov)[0])} for i, (x, ov) in enumerate(spec)]


def mean_pair_fit(runs: Sequence[Mapping[str, Any]]) -> PairModel:
    """A real (if crude) estimator: c from the runs alone, one pooled a for all co-runners by
    least squares of runtime·x/c - 1 on the summed overlap."""
    alone = [r for r in runs if not r["overlaps"]]
    if not alone:
        raise ValueError("no run without co-runners")
    c = float(np.mean([r["runtime_s"] * r["scale_out"] for r in alone]))
    shared = [r for r in runs if r["overlaps"]]
    num = sum((r["runtime_s"] * r["scale_out"] / c - 1) * sum(r["overlaps"].values())
              for r in shared)
    den = sum(sum(r["overlaps"].values()) ** 2 for r in shared)
    return PairModel(c, {}, (max(num / den, 0.0) if den else 0.0, 0.0))


def test_jackknife_sees_interference_error_the_curve_cannot() -> None:
    truth = PairModel(3000.0, {"grep": (0.05, 0.0), "pagerank": (0.6, 0.0)})
    # As many runs as folds: leave-one-out, the ratios in run order.
    spec = [(10, {}), (20, {}), (15, {"grep": 1.0}), (25, {"grep": 1.0}), (18, {"pagerank": 1.0})]
    assert len(spec) == JACKKNIFE_MAX_FITS
    ratios = jackknife_ratios(_runs(truth, spec), mean_pair_fit)
    assert len(ratios) == len(spec)
    assert ratios[:2] == pytest.approx([1.0] * 2)  # the curve alone is exact
    # Without a grep run, the pooled a is the mean of grep's 0.05 and pagerank's 0.6: 1.325
    # times its solo runtime where the run took 1.05.
    assert ratios[2:4] == pytest.approx([1.05 / 1.325] * 2)
    # Fitted without it, the pooled a is grep's 0.05: the pagerank run is predicted at 1.05
    # times its solo runtime, not 1.6. The fitted curve's own residuals would all be zero.
    assert ratios[-1] == pytest.approx(1.6 / 1.05)
    cal = jackknife_calibration(_runs(truth, spec), mean_pair_fit, 0.9)
    assert cal is not None and cal["source"] == "jackknife" and cal["runs"] == len(spec)
    # Five ratios are too few for conformal's rank at 0.9: the Student-t bound, above the worst.
    assert cal["ratio_quantile"] == pytest.approx(ratio_bound(ratios, 0.9))
    assert cal["ratio_quantile"] > 1.6 / 1.05


def test_jackknife_needs_runs_and_skips_folds_it_cannot_fit() -> None:
    truth = PairModel(3000.0, {})
    assert jackknife_calibration(_runs(truth, [(10, {}), (20, {}), (30, {})]), mean_pair_fit,
                                 0.9) is None
    # Leaving out the only solo run leaves nothing to fit: that fold contributes nothing.
    spec = [(10, {}), (20, {"x": 1.0}), (30, {"x": 1.0}), (40, {"x": 1.0})]
    assert len(jackknife_ratios(_runs(truth, spec), mean_pair_fit)) == 3


def test_jackknife_cost_is_bounded_by_folds_and_every_run_is_held_out_once() -> None:
    truth = PairModel(3000.0, {})
    runs = _runs(truth, [(4 + i, {}) for i in range(37)])
    fitted_on: list[int] = []

    def counting_fit(rest: Sequence[Mapping[str, Any]]) -> PairModel:
        fitted_on.append(len(rest))
        return truth

    ratios = jackknife_ratios(runs, counting_fit)
    assert len(fitted_on) == JACKKNIFE_MAX_FITS
    assert sum(37 - n for n in fitted_on) == 37  # the folds partition the runs
    assert ratios == pytest.approx([1.0] * 37)


# --- strangers -----------------------------------------------------------------------------


def test_a_stranger_is_charged_the_most_harmful_pair() -> None:
    model = PairModel(3000.0, {"grep": (0.0, 0.0), "tpchq10": (0.0, 6.0)}, pooled=(0.06, 0.0))
    xs = [10.0, 30.0]
    known = [{"tpchq10": 1.0, "grep": 0.5}] * 2
    assert stranger_factors(xs, known, model) == ([1.0, 1.0], [])
    mixed = [{"pagerank": 0.9, "grep": 1.0}] * 2
    factors, strangers = stranger_factors(xs, mixed, model)
    assert strangers == ["pagerank"]
    for x, f in zip(xs, factors, strict=True):
        worst = max(0.06, 6.0 / x)  # tpchq10's b/x beats the pooled a at both scale-outs
        assert f == pytest.approx((1 + worst * 0.9) / (1 + 0.06 * 0.9))
    unknown_app = stranger_factors([30.0], [{None: 1.0}], model)
    assert unknown_app[1] == ["unknown app"] and unknown_app[0][0] > 1.0
    # A model that names no pairs gives nothing to bound a stranger by.
    assert stranger_factors(xs, mixed, PairModel(3000.0, {}))[0] == [1.0, 1.0]


def _upper(**kw: Any) -> tuple[list[float], dict | None]:
    found = calibrated_distribution(interval_confidence=0.9, **kw)
    dist = found.predictive
    return [dist.quantile_s(j, 0.9) for j in range(len(dist.candidates))], found.calibration


def test_the_distribution_prefers_the_record_and_widens_for_strangers() -> None:
    model = PairModel(3000.0, {"tpchq10": (0.0, 6.0)}, pooled=(0.05, 0.0))
    xs, ov = [10.0, 20.0], [{"tpchq10": 1.0}] * 2
    pred = [float(v) for v in model.predict(xs, ov)]
    hist = _runs(model, [(10, {}), (20, {}), (30, {}), (40, {})])
    kw: dict[str, Any] = dict(scale_outs=xs, predicted_s=pred, upper_s=[1.02 * p for p in pred],
                              model=model, fit=lambda runs: model, confidence=0.9)
    # No errors: the model's own two-sided 90 % interval, read at its one-sided 90 % level.
    upper, cal = _upper(runs=hist, overlaps=ov, refit=False, **kw)
    assert cal is None
    assert all(p < u < 1.02 * p for u, p in zip(upper, pred, strict=True))
    slow = [{**r, "runtime_s": 1.25 * r["runtime_s"]} for r in hist]  # the model is 25 % fast
    upper, cal = _upper(runs=slow, overlaps=ov, refit=True, **kw)
    assert cal["source"] == "jackknife" and upper == pytest.approx([1.25 * p for p in pred],
                                                                   rel=0.01)
    record = [rec(i, 1.1) for i in range(6)]
    upper, cal = _upper(runs=slow + record, overlaps=ov, refit=True, **kw)
    assert cal["source"] == "outcomes" and upper == pytest.approx([1.1 * p for p in pred],
                                                                  rel=0.01)
    known, _ = _upper(runs=hist, overlaps=ov, refit=False, **kw)
    upper, cal = _upper(runs=hist, overlaps=[{"wordcount": 1.0}] * 2, refit=False, **kw)
    assert cal == {"strangers": ["wordcount"]}
    assert all(u > k for u, k in zip(upper, known, strict=True))


def test_a_confident_plan_reserves_more_for_a_stranger_than_for_a_known_co_runner() -> None:
    """Same pooled estimate for both; only the stranger is bounded by tpchq10's harm."""
    pooled = (0.05, 0.0)
    model = PairModel(3000.0, {"tpchq10": (0.0, 6.0), "pagerank": pooled}, pooled=pooled)
    stranger = PairModel(3000.0, {"tpchq10": (0.0, 6.0)}, pooled=pooled)
    history = [{"id": i, "job": "sgd", "scale_out": x, "runtime_s": 3000.0 / x,
                "status": "succeeded", "started_at": float(i), "overlaps": {}}
               for i, x in enumerate([8, 12, 16, 24, 32, 48, 64])]
    app = RunningApp("app-1", "pr", "pagerank", None, None, "RUNNING", 0.0)

    def choose(m: PairModel, confidence: float | None) -> Any:
        return plan(job="sgd", history=history, now=10.0, target_s=150.0, min_scale_out=1,
                    max_scale_out=64, co_runners=[app], confidence=confidence,
                    fit=lambda runs: m)

    known_plan, stranger_plan = choose(model, 0.9), choose(stranger, 0.9)
    assert stranger_plan.calibration["strangers"] == ["pagerank"]
    assert stranger_plan.scale_out > known_plan.scale_out
    # The point prediction (no --confidence) is untouched by the stranger bound.
    assert choose(stranger, None).scale_out == choose(model, None).scale_out


# --- the probability of meeting the target ---------------------------------------------------


def test_student_t_cdf_inverts_the_quantile_and_matches_scipy() -> None:
    for dof in (3, 5, 12, 40):
        for p in (0.1, 0.5, 0.9, 0.97):
            assert student_t_cdf(student_t_quantile(p, dof), dof) == pytest.approx(p, abs=1e-6)
        assert student_t_cdf(2.0, dof) == pytest.approx(scipy_t.cdf(2.0, dof), abs=0.01)


def test_meet_probability_is_conformal_among_the_ratios() -> None:
    ratios = [0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.3, 1.5, 2.0]  # n = 9
    assert meet_probability(ratios, 0.8) == 0.0
    assert meet_probability(ratios, 1.0) == pytest.approx(3 / 10)
    assert meet_probability(ratios, 1.4) == pytest.approx(7 / 10)
    beyond = meet_probability(ratios, 2.5)  # past the largest: the t tail, at least n/(n+1)
    assert 0.9 <= beyond < meet_probability(ratios, 5.0) < 1.0
    with pytest.raises(ValueError):
        meet_probability([], 1.0)


def test_a_bound_at_level_p_means_a_probability_of_at_least_p() -> None:
    """The planner decides on ratio_bound and reports meet_probability: they must agree."""
    rng = np.random.default_rng(3)
    for n in (4, 7, 15, 40, 200):
        ratios = np.exp(rng.normal(0.05, 0.1, n)).tolist()
        for p in (0.5, 0.8, 0.9, 0.97, 0.99):
            bound = ratio_bound(ratios, p)
            assert meet_probability(ratios, bound) >= p - 1e-6, (n, p)
            assert meet_probability(ratios, bound * 1.0001) >= p
            # A lower threshold is never more probable.
            assert meet_probability(ratios, bound * 0.95) <= meet_probability(ratios, bound)


class LooModel(PairModel):
    """A PairModel that carries its own leave-one-out ratios, as fit_runtime_model's does."""

    def __init__(self, ratios: Sequence[float]) -> None:
        super().__init__(3000.0, {})
        self.loo_ratios_ = list(ratios)


def test_the_models_own_leave_one_out_ratios_spare_the_refits() -> None:
    model = LooModel([1.0, 1.1, 1.2, 1.3, 0.9, 1.05])
    hist = _runs(model, [(10, {}), (20, {}), (30, {}), (40, {}), (50, {})])

    def no_refit(runs: Sequence[Mapping[str, Any]]) -> Any:
        raise AssertionError("refitted although the model carries its leave-one-out ratios")

    xs, pred = [10.0, 20.0], [300.0, 150.0]
    found = calibrated_distribution(runs=hist, scale_outs=xs, predicted_s=pred, upper_s=pred,
                                    interval_confidence=0.8, overlaps=None, model=model,
                                    fit=no_refit, confidence=0.8, refit=True)
    assert found.calibration["source"] == "held-out"
    assert found.calibration["ratio_quantile"] == ratio_bound(model.loo_ratios_, 0.8)
    assert found.predictive.errors == len(model.loo_ratios_)
    # Recorded outcomes join the model's own ratios: the last RECENT_OUTCOMES of them only,
    # since older ones judge the model as it was on a shorter history.
    stale = [rec(i, 3.0) for i in range(5)]
    record = [rec(10 + i, 1.5) for i in range(RECENT_OUTCOMES)]
    later = calibrated_distribution(runs=hist + stale + record, scale_outs=xs,
                                    predicted_s=pred, upper_s=pred, interval_confidence=0.8,
                                    overlaps=None, model=model, fit=no_refit, confidence=0.8,
                                    refit=True)
    joined = model.loo_ratios_ + [1.5] * RECENT_OUTCOMES
    assert later.calibration["source"] == "held-out + outcomes"
    assert later.calibration["runs"] == len(joined)
    assert later.calibration["ratio_quantile"] == ratio_bound(joined, 0.8) == 1.5
    assert later.predictive.errors == len(joined)
    # The worse recent record lowers P(meet) at both candidates.
    for j in range(2):
        assert (later.predictive.meet_probability(j, 330.0)
                < found.predictive.meet_probability(j, 330.0))


def test_leave_one_out_ratios_of_a_real_fit_track_ten_fold_refits() -> None:
    """The one-fit estimate (model/loo.py) against the refits it replaces, on a history where
    some co-runners rest on few runs: their quantiles agree within 10 %."""
    from cobell_cli.core.model import fit_runtime_model

    rng = np.random.default_rng(11)
    truth = {f"co{i}": (rng.uniform(0, 0.5), rng.uniform(0, 4)) for i in range(8)}
    runs = []
    for i in range(120):
        x = int(rng.choice([4, 8, 12, 16, 24, 32, 40, 48]))
        ov: dict[str, float] = {}
        runtime = 30.0 + 3000.0 / x
        if rng.random() < 0.6:
            co = f"co{int(rng.integers(8))}"
            ov[co] = float(rng.random())
            runtime *= 1 + (truth[co][0] + truth[co][1] / x) * ov[co]
        runs.append({"id": i, "scale_out": x, "runtime_s": runtime * math.exp(rng.normal(0, 0.05)),
                     "status": "succeeded", "overlaps": ov})
    model = fit_runtime_model(runs)
    loo = list(model.loo_ratios_)
    assert len(loo) == len(runs)
    insample = [r["runtime_s"] / float(model.predict([r["scale_out"]], r["overlaps"])[0])
                for r in runs]
    # Held out, every error is at least as large as in sample, same sign.
    assert all(abs(math.log(h)) >= abs(math.log(s)) - 1e-9
               for h, s in zip(loo, insample, strict=True))
    refits = jackknife_ratios(runs, fit_runtime_model)
    for p in (0.9, 0.97):
        assert ratio_bound(loo, p) == pytest.approx(ratio_bound(refits, p), rel=0.10)
