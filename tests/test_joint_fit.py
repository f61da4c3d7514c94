"""bench/joint_fit.py: the CoBell paper's model fitted as the paper fits it (all parameters at
once, bounded least squares), the peer cobell's interference fit is measured against."""

from __future__ import annotations

import numpy as np
import pytest

from bench.joint_fit import fit_joint

THETA = (12.0, 300.0, 4.0, 0.5)  # Ernest's θ0..θ3
PAIRS = {"etl": (0.4, 1.6), "scan": (0.1, 0.0)}


def _g(x: float, overlaps: dict[str, float]) -> float:
    f = THETA[0] + THETA[1] / x + THETA[2] * np.log(x) + THETA[3] * x
    return f * (1.0 + sum((PAIRS[k][0] + PAIRS[k][1] / x) * ov for k, ov in overlaps.items()))


def _runs(n: int, seed: int, noise: float) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        x = int(rng.choice([1, 2, 4, 8, 16]))
        ov = {k: float(rng.uniform(0.2, 1.0)) for k in PAIRS if rng.random() < 0.5}
        y = _g(x, ov) * float(np.exp(rng.normal(0.0, noise)))
        out.append({"id": i, "scale_out": x, "runtime_s": y, "overlaps": ov})
    return out


def test_runs_of_the_papers_form_are_recovered() -> None:
    model = fit_joint(_runs(40, 0, noise=0.0))
    for run in _runs(20, 1, noise=0.0):
        predicted = float(model.predict([run["scale_out"]], run["overlaps"])[0])
        assert predicted == pytest.approx(run["runtime_s"], rel=0.005)


def test_the_fit_is_a_least_squares_optimum_in_seconds() -> None:
    """With noise, no parameter set (the truth included) has a smaller sum of squared errors
    in seconds than the bounded least-squares optimum: a solver stuck short of it fails."""
    runs = _runs(40, 2, noise=0.05)
    model = fit_joint(runs)
    y = np.array([r["runtime_s"] for r in runs])
    fitted = np.array([float(model.predict([r["scale_out"]], r["overlaps"])[0]) for r in runs])
    truth = np.array([_g(r["scale_out"], r["overlaps"]) for r in runs])
    assert np.sum((fitted - y) ** 2) <= np.sum((truth - y) ** 2)
    assert np.all(model.params_ >= 0.0)  # θ, a, b >= 0, as the paper bounds them


def test_a_co_runner_the_fit_never_met_counts_as_the_run_weighted_mean_pair() -> None:
    model = fit_joint(_runs(40, 3, noise=0.0))
    x = 2.0
    alone = float(model.predict([x])[0])
    known = {k: float(model.predict([x], {k: 1.0})[0]) / alone - 1.0 for k in PAIRS}
    stranger = float(model.predict([x], {"never-seen": 1.0})[0]) / alone - 1.0
    assert min(known.values()) < stranger < max(known.values())
