"""cobell's own NNLS (parametric.active_set_nnls) against scipy.optimize.nnls as the reference.

scipy stays a dependency; the model no longer imports it because its import alone costs
~0.33 s of every predict that fits (bench/results/latency.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy.optimize import nnls

from cobell_cli.core.model.parametric import active_set_nnls, nnls_fit, tall_nnls


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return nnls(a, b, maxiter=50 * a.shape[1] + 50)[0]


def objective(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
    return float(np.linalg.norm(a @ x - b))


def assert_same(a: np.ndarray, b: np.ndarray, x: np.ndarray, *, unique: bool = True) -> None:
    """Feasible, the reference's objective to rounding, and (where the optimum is unique)
    the reference's solution to rounding."""
    ref = reference(a, b)
    assert np.all(x >= 0.0)
    scale = max(float(np.linalg.norm(b)), 1e-300)
    assert objective(a, b, x) <= objective(a, b, ref) + 1e-12 * scale
    if unique:
        np.testing.assert_allclose(x, ref, rtol=0, atol=1e-9 * max(1.0, np.abs(ref).max()))


def kkt_violation(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
    """Largest breach of the optimality conditions: gradient <= 0 where x = 0, = 0 where x > 0."""
    grad = a.T @ (b - a @ x)
    return float(max(np.max(grad[x == 0], initial=0.0), np.max(np.abs(grad[x > 0]), initial=0.0)))


def test_random_problems_of_every_shape_match_scipy() -> None:
    rng = np.random.default_rng(0)
    for _ in range(2000):
        rows, cols = int(rng.integers(1, 60)), int(rng.integers(1, 20))
        a, b = rng.normal(size=(rows, cols)), rng.normal(size=rows)
        x = active_set_nnls(a, b)
        assert_same(a, b, x, unique=rows >= cols)


def test_sparse_nonnegative_truths_are_recovered() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        a = rng.random((40, 8))
        truth = rng.random(8) * (rng.random(8) < 0.5)
        x = active_set_nnls(a, a @ truth)
        np.testing.assert_allclose(x, truth, atol=1e-9)


def test_strictly_active_constraints_are_exactly_zero() -> None:
    rng = np.random.default_rng(6)
    for _ in range(200):
        a = rng.random((40, 6))
        b = a @ np.array([1.0, 2.0, 0.5, 0.0, 0.0, 1.0]) - 0.5 * a[:, 3] - 0.5 * a[:, 4]
        x = active_set_nnls(a, b)
        assert_same(a, b, x)
        assert x[3] == 0.0 and x[4] == 0.0  # bound, not merely small


def test_all_negative_solution_is_zero() -> None:
    rng = np.random.default_rng(2)
    a, b = rng.random((30, 5)), -rng.random(30) - 0.1
    x = active_set_nnls(a, b)
    assert np.all(x == 0.0)
    assert_same(a, b, x)


def zero_column(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    a[:, int(rng.integers(a.shape[1]))] = 0.0
    return a


def dependent_columns(a: np.ndarray, _: np.random.Generator) -> np.ndarray:
    a[:, 3] = a[:, 1] + a[:, 2]  # the solution is not unique
    a[:, 5] = 2.0 * a[:, 4]  # proportional pair, as a and b of a co-runner seen at one x
    return a


@pytest.mark.parametrize("degrade", [zero_column, dependent_columns])
def test_degenerate_designs_reach_the_optimum(
        degrade: Callable[[np.ndarray, np.random.Generator], np.ndarray]) -> None:
    rng = np.random.default_rng(3)
    for _ in range(150):
        a = degrade(rng.normal(size=(40, 8)), rng)
        b = rng.normal(size=40)
        x = active_set_nnls(a, b)
        assert_same(a, b, x, unique=False)
        assert kkt_violation(a, b, x) < 1e-9


def test_tall_100000_by_4_matches_scipy_on_the_full_matrix() -> None:
    rng = np.random.default_rng(5)
    a = rng.random((100_000, 4))
    b = a @ np.array([1.0, 0.0, 2.0, 0.5]) + rng.normal(0, 0.1, 100_000) - 0.3 * a[:, 1]
    x = tall_nnls(a, b)
    assert_same(a, b, x)
    assert x[1] == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_wide_interference_design_200_by_120_matches_scipy(seed: int) -> None:
    # 60 co-runners: a and b columns f·ov and f·ov/x, most runs overlapping one or two.
    rng = np.random.default_rng(seed)
    x = rng.choice([4.0, 8.0, 12.0, 16.0, 24.0, 32.0], 200)
    f = 100.0 + 2000.0 / x
    ov = np.zeros((200, 60))
    for i in range(200):
        ov[i, rng.choice(60, int(rng.integers(0, 3)), replace=False)] = rng.random()
    a_true, b_true = rng.random(60) * 0.5 * (rng.random(60) < 0.6), rng.random(60) * 3.0
    y = f * (1.0 + ov @ a_true + (ov / x[:, None]) @ b_true) * np.exp(rng.normal(0, 0.05, 200))
    design = np.hstack([f[:, None] * ov, f[:, None] * ov / x[:, None]])
    design, target = design / y[:, None], (y - f) / y  # relative error, as _fit_ab poses it
    used = np.linalg.norm(design, axis=0) > 0
    assert_same(design[:, used], target, active_set_nnls(design[:, used], target))
    np.testing.assert_allclose(nnls_fit(design, y - f, 1.0 / y)[~used], 0.0)


def test_degenerate_inputs() -> None:
    assert active_set_nnls(np.zeros((3, 0)), np.ones(3)).shape == (0,)
    assert np.all(active_set_nnls(np.zeros((3, 2)), np.ones(3)) == 0.0)
    assert np.all(active_set_nnls(np.ones((3, 2)), np.zeros(3)) == 0.0)
    np.testing.assert_allclose(active_set_nnls(np.array([[2.0]]), np.array([4.0])), [2.0])
