"""The CV's shared subset solve (core/model/subset_fits.py) against fit_theta, one NNLS per
(split, subset): the same curves to rounding, fit_theta's own path where the optimum need not
be unique, and the shared path taken on ordinary runs (else the speed-up is gone unseen)."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cobell_cli.core.model.parametric import FEATURES, evaluate, fit_theta
from cobell_cli.core.model.subset_fits import subset_thetas

SUBSETS = [c for k in range(1, 5) for c in combinations(FEATURES, k)]


def runs(seed: int, levels: tuple[int, ...], reps: int, noise: float,
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.repeat(np.array(levels, float), reps)
    truth = 30.0 + 900.0 / x + 4.0 * np.log(x) + 0.3 * x
    y = truth * np.exp(rng.normal(0.0, noise, x.size))
    w = rng.choice([1.0, 1.0, 1.0, 0.6, 0.0], x.size)  # bisquare weights, one rejected run
    return x, y, w


def leave_one_level_out(x: np.ndarray) -> list[np.ndarray]:
    return [x != v for v in np.unique(x)] + [x < v for v in np.unique(x)[2:]]


def assert_as_fit_theta(x: np.ndarray, y: np.ndarray, w: np.ndarray,
                        rows: list[np.ndarray]) -> int:
    """Every shared θ predicts as fit_theta's to 1e-9 relative; returns how many were shared."""
    thetas = subset_thetas(x, y, w, rows, SUBSETS)
    shared = 0
    grid = np.arange(1.0, 129.0)
    for r, per_split in zip(rows, thetas, strict=True):
        for feats, theta in zip(SUBSETS, per_split, strict=True):
            if np.isnan(theta).any():
                continue
            shared += 1
            mask = np.array([f in feats for f in FEATURES])
            assert (theta[~mask] == 0).all() and (theta >= 0).all()
            ref = fit_theta(x[r], y[r], feats, sample_weight=w[r])
            np.testing.assert_allclose(evaluate(theta, grid), evaluate(ref, grid), rtol=1e-9)
    return shared


@pytest.mark.parametrize("seed", range(6))
def test_the_shared_solve_gives_fit_theta_s_curves_on_ordinary_runs(seed: int) -> None:
    x, y, w = runs(seed, (2, 4, 6, 8, 12, 16, 24, 32, 48, 64), reps=3, noise=0.05)
    rows = leave_one_level_out(x)
    shared = assert_as_fit_theta(x, y, w, rows)
    assert shared >= 0.9 * len(rows) * len(SUBSETS)  # the fast path is the usual one


def test_columns_that_are_not_clearly_independent_are_left_to_fit_theta() -> None:
    # Two scale-outs: four columns on two distinct rows span two dimensions, so every
    # subset of three or four has many optima and fit_theta's active-set path picks one.
    x, y, w = runs(0, (4, 8), reps=4, noise=0.05)
    thetas = subset_thetas(x, y, np.ones_like(x), [np.ones_like(x, bool)], SUBSETS)
    wide = [j for j, s in enumerate(SUBSETS) if len(s) >= 3]
    assert np.isnan(thetas[0, wide]).all()
    assert_as_fit_theta(x, y, w, [np.ones_like(x, bool)])


def test_a_split_without_weight_is_left_to_fit_theta() -> None:
    x, y, _ = runs(1, (2, 4, 8, 16), reps=2, noise=0.05)
    w = np.where(x == 2, 1.0, 0.0)  # only scale-out 2 keeps a weight
    rows = [x != 2, np.ones_like(x, bool)]
    thetas = subset_thetas(x, y, w, rows, SUBSETS)
    assert np.isnan(thetas[0]).all() and not np.isnan(thetas[1, 0]).any()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n_levels=st.integers(3, 9), reps=st.integers(1, 4),
       noise=st.sampled_from([0.0, 0.01, 0.1, 0.4]))
def test_the_shared_solve_matches_fit_theta_wherever_it_answers(
        seed: int, n_levels: int, reps: int, noise: float) -> None:
    rng = np.random.default_rng(seed)
    levels = tuple(sorted(rng.choice(np.arange(1, 200), n_levels, replace=False).tolist()))
    x, y, w = runs(seed, levels, reps, noise)
    assert_as_fit_theta(x, y, w, leave_one_level_out(x))
