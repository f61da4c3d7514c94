"""Several co-runners: combination rules chosen by CV, partial pooling of the pairs, and the
interval that carries their uncertainty; synthetic histories with a known truth."""

from __future__ import annotations

import numpy as np
import pytest

from cobell_cli.core.co_runner_effects import combine_row, gradient_row
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.model.combine import RULES, combine, gradient
from cobell_cli.core.model.parametric import basis
from cobell_cli.core.model.select import RuntimeModel
from cobell_cli.core.model_table import tabulate

THETA = np.array([60.0, 2400.0, 10.0, 0.8])
SCALE_OUTS = np.arange(4, 61, 4)


def f_true(x: float) -> float:
    return float((basis(np.array([float(x)])) @ THETA)[0])


def world(n_jobs: int, rng: np.random.Generator, b_max: float = 2.0,
          ) -> dict[str, tuple[float, float]]:
    return {f"co{i:02d}": (float(rng.uniform(0.05, 0.4)), float(rng.uniform(0.0, b_max)))
            for i in range(n_jobs)}


def history(n: int, pairs: dict[str, tuple[float, float]], rng: np.random.Generator, *,
            rule: str = "additive", max_co: int = 2, noise: float = 0.03,
            weights: np.ndarray | None = None) -> list[dict]:
    """Runs whose co-runners slow them by `rule` over (a + b/x)·ov; `weights`: how often
    each co-runner job shows up (thin ones rarely)."""
    names = list(pairs)
    p = None if weights is None else weights / weights.sum()
    runs = []
    for _ in range(n):
        x = int(rng.choice(SCALE_OUTS))
        k = int(rng.integers(0, max_co + 1))
        chosen = rng.choice(names, size=k, replace=False, p=p) if k else []
        ov = {str(j): float(rng.uniform(0.3, 1.0)) for j in chosen}
        e = [(pairs[j][0] + pairs[j][1] / x) * r for j, r in ov.items()]
        y = f_true(x) * (1 + combine_row(e, rule)) * float(np.exp(rng.normal(0, noise)))
        runs.append({"scale_out": x, "runtime_s": y, "overlaps": ov})
    return runs


def test_rules_agree_with_one_co_runner_and_the_two_implementations_agree() -> None:
    rng = np.random.default_rng(0)
    one = rng.uniform(0, 3, (50, 1))
    for rule in RULES:
        np.testing.assert_allclose(combine(one, rule), one[:, 0])
    many = rng.uniform(0, 1.5, (200, 4)) * (rng.random((200, 4)) < 0.7)
    for rule in RULES:
        rows = [combine_row(list(r), rule) for r in many]
        np.testing.assert_allclose(combine(many, rule), rows, rtol=1e-12)
        np.testing.assert_allclose(gradient(many, rule), [gradient_row(list(r), rule)
                                                          for r in many], rtol=1e-12)
    add, top, sat = (combine(many, r) for r in RULES)
    assert np.all(top <= sat + 1e-12) and np.all(sat <= add + 1e-12)
    assert np.any(sat < add - 1e-3) and np.any(top < sat - 1e-3)


@pytest.mark.parametrize("rule", RULES)
def test_gradient_matches_finite_differences(rule: str) -> None:
    rng = np.random.default_rng(1)
    e = rng.uniform(0.05, 0.9, (30, 3))
    h = 1e-7
    for k in range(3):
        step = np.zeros_like(e)
        step[:, k] = h
        numeric = (combine(e + step, rule) - combine(e - step, rule)) / (2 * h)
        np.testing.assert_allclose(gradient(e, rule)[:, k], numeric, atol=1e-5)


@pytest.mark.parametrize("truth", ["bottleneck", "saturating", "additive"])
def test_cv_chooses_the_rule_that_made_the_data(truth: str) -> None:
    rng = np.random.default_rng(2)
    pairs = world(4, rng, b_max=4.0)
    runs = history(300, pairs, rng, rule=truth, max_co=3, noise=0.02)
    m = fit_runtime_model(runs)
    assert m.combination_ == truth, m.interference_cv_
    fresh = history(200, pairs, rng, rule=truth, max_co=3, noise=0.0)
    xs = [r["scale_out"] for r in fresh]
    ovs = [r["overlaps"] for r in fresh]
    y = np.array([r["runtime_s"] for r in fresh])
    err = np.mean(np.abs(m.predict(xs, ovs) / y - 1))
    additive = RuntimeModel(combination="additive", scaled=True).fit(runs)
    err_additive = np.mean(np.abs(additive.predict(xs, ovs) / y - 1))
    assert err < 0.03
    if truth != "additive":
        assert err < 0.7 * err_additive


def test_cv_drops_b_over_x_when_the_effect_does_not_shrink() -> None:
    rng = np.random.default_rng(3)
    flat = {k: (a + 0.1, 0.0) for k, (a, _) in world(4, rng).items()}
    m = fit_runtime_model(history(300, flat, rng, noise=0.03))
    assert m.scaled_ is False and np.all(m.b_ == 0)
    steep = {k: (0.02, 6.0) for k in flat}
    m = fit_runtime_model(history(300, steep, rng, noise=0.03))
    assert m.scaled_ is True and m.combination_ == "additive"


def test_fit_follows_the_estimator_contract() -> None:
    rng = np.random.default_rng(4)
    runs = history(120, world(3, rng), rng)
    est = RuntimeModel(combination="bottleneck", scaled=False, pooling=False)
    assert est.fit(runs) is est
    assert (est.combination, est.scaled, est.pooling) == ("bottleneck", False, False)
    assert est.combination_ == "bottleneck" and est.scaled_ is False
    with pytest.raises(ValueError, match="unknown combination rule"):
        RuntimeModel(combination="max").fit(runs)


def thin_history(seed: int) -> tuple[list[dict], dict[str, tuple[float, float]]]:
    """200 runs, 40 co-runner jobs, most of them met in a handful of runs."""
    rng = np.random.default_rng(seed)
    pairs = world(40, rng)
    weights = np.where(np.arange(40) < 4, 12.0, 1.0)
    return history(200, pairs, rng, max_co=2, noise=0.05, weights=weights), pairs


def test_pooled_b_is_closer_to_the_truth_than_the_unpooled_for_thin_co_runners() -> None:
    """a + b/x kept (at 5 % noise the CV may rightly drop b/x, and then both b are 0)."""
    pooled_err, unpooled_err = [], []
    for seed in range(5):
        runs, pairs = thin_history(seed)
        m = RuntimeModel(scaled=True).fit(runs)
        for i, job in enumerate(m.co_runners_):
            if job in pairs and 3 <= m.interference_runs_[job] <= 8:
                pooled_err.append(abs(m.b_[i] - pairs[job][1]))
                unpooled_err.append(abs(m.b_unpooled_[i] - pairs[job][1]))
    assert len(pooled_err) >= 30
    assert np.mean(pooled_err) < 0.75 * np.mean(unpooled_err)
    assert max(pooled_err) < max(unpooled_err)


def test_interval_widens_with_thin_evidence_and_the_table_agrees() -> None:
    runs, pairs = thin_history(7)
    m = fit_runtime_model(runs)
    runs_of = m.interference_runs_
    named = [j for j in m.co_runners_ if j in pairs]
    thick = max(named, key=runs_of.get)
    thin = min(named, key=runs_of.get)
    assert runs_of[thick] >= 3 * runs_of[thin]
    desc = m.describe()["interference"]
    assert desc[thin]["own_weight"] < desc[thick]["own_weight"]
    assert desc[thin]["thin"] and desc[thin]["runs"] == runs_of[thin]
    width = {}
    for job in (thick, thin):
        lower, upper = m.predict_interval([8], {job: 0.8}, confidence=0.9)
        point = m.predict([8], {job: 0.8})
        width[job] = float(np.log(upper[0] / lower[0]))
        assert lower[0] < point[0] < upper[0]
    alone_low, alone_up = m.predict_interval([8], None, confidence=0.9)
    assert width[thin] > width[thick] > float(np.log(alone_up[0] / alone_low[0])) - 1e-9
    table = tabulate(m, 64, 0.9)
    for job in (thick, thin, "never-seen"):
        np.testing.assert_allclose(table.predict_interval([8, 20], {job: 0.6}, confidence=0.9),
                                   m.predict_interval([8, 20], {job: 0.6}, confidence=0.9),
                                   rtol=1e-9)


def test_a_curve_ernest_cannot_follow_is_not_read_as_b_over_x() -> None:
    """A job that spills below 12 nodes (1.6x slower there than its curve), co-runners whose
    effect does not shrink with x (b = 0): separated from Ernest's curve the misfit lands in
    b; from the broken line it does not."""
    rng = np.random.default_rng(11)
    pairs = {f"co{i}": (0.1 + 0.1 * i, 0.0) for i in range(4)}

    def f(x: float) -> float:
        return 3000.0 / x ** 0.8 * (1.6 if x < 12 else 1.0)

    runs = []
    for _ in range(240):
        x = int(rng.choice(SCALE_OUTS))
        k = int(rng.integers(0, 3))
        ov = {str(j): float(rng.uniform(0.3, 1.0))
              for j in rng.choice(list(pairs), size=k, replace=False)}
        y = f(x) * (1 + sum(pairs[j][0] * r for j, r in ov.items()))
        runs.append({"scale_out": x, "runtime_s": y * float(np.exp(rng.normal(0, 0.02))),
                     "overlaps": ov})
    b = {}
    for curve in ("auto", "ernest"):
        m = RuntimeModel(scaled=True, pooling=False, alone_curve=curve).fit(runs)
        b[curve] = float(np.mean(np.abs(m.b_unpooled_)))
    assert m.interference_curve_ == "ernest"
    assert b["auto"] < 0.2 < b["ernest"]
