"""The one-fit leave-one-out ratios with the partial pooling's shrinkage (core/model/loo.py),
and the study that compares them with the unpooled leverage and the refits."""

from __future__ import annotations

import numpy as np
import pytest

from cobell_cli.core.model import select
from cobell_cli.core.model.loo import leverage, loo_ratios


def _history(seed: int = 3) -> tuple[np.ndarray, ...]:
    """Runs of one job among three co-runners: scale-outs, runtimes, overlaps and a fit."""
    rng = np.random.default_rng(seed)
    x = rng.choice([4.0, 8.0, 16.0, 32.0], size=30)
    overlap = np.zeros((30, 3))
    overlap[np.arange(30), rng.integers(0, 3, size=30)] = rng.uniform(0.2, 1.0, size=30)
    a, b = np.array([0.2, 0.1, 0.3]), np.array([0.5, 1.0, 0.2])
    alone = 20.0 + 400.0 / x
    fitted = alone * (1 + overlap @ a + (overlap / x[:, None]) @ b)
    runtime = fitted * np.exp(rng.normal(0, 0.05, size=30))
    return x, runtime, fitted, alone, overlap, a, b


def test_a_pair_held_at_the_pool_adds_no_leverage_and_a_free_one_adds_all() -> None:
    x, runtime, fitted, alone, overlap, a, b = _history()
    w = np.ones_like(x)
    free = loo_ratios(x, runtime, fitted, alone, overlap, a, b, w)
    assert np.allclose(loo_ratios(x, runtime, fitted, alone, overlap, a, b, w, np.ones(3)), free)
    held = loo_ratios(x, runtime, fitted, alone, overlap, a, b, w, np.zeros(3))
    half = loo_ratios(x, runtime, fitted, alone, overlap, a, b, w, np.full(3, 0.5))
    size = [np.abs(np.log(r)) for r in (held, half, free)]
    assert np.all(size[0] <= size[1] + 1e-12) and np.all(size[1] <= size[2] + 1e-12)
    assert size[0].sum() < size[1].sum() < size[2].sum()  # each shrinkage moves them


def test_a_ridge_penalty_is_a_pseudo_run_and_an_infinite_one_drops_the_column() -> None:
    rng = np.random.default_rng(0)
    design = rng.normal(size=(12, 2))
    w = np.ones(12)
    only_first = leverage(design[:, :1], w)
    assert np.allclose(leverage(design, w, np.array([0.0, np.inf])), only_first)
    lam = 0.7 * (design[:, 1] ** 2).sum()  # the penalty 0.7 of the column's sum of squares
    gram = design.T @ design + np.diag([0.0, lam])
    exact = np.einsum("ij,jk,ik->i", design, np.linalg.inv(gram), design)
    assert np.allclose(leverage(design, w, np.array([0.0, 0.7])), np.minimum(exact, 2 / 3))


def test_the_study_patches_its_variants_inside_and_restores_the_planners_own() -> None:
    from bench.studies import loo_pooling as lp

    before = (select.loo_ratios, select.REFIT_MAX_RUNS)
    x, runtime, fitted, alone, overlap, a, b = _history()
    w, shrunk = np.ones_like(x), np.full(3, 0.3)
    with lp.variant("unpooled leverage"):
        got = select.loo_ratios(x, runtime, fitted, alone, overlap, a, b, w, shrunk)
    assert np.allclose(got, loo_ratios(x, runtime, fitted, alone, overlap, a, b, w))
    with lp.variant(lp.REFITS):
        assert select.REFIT_MAX_RUNS >= 10**6
    with pytest.raises(RuntimeError), lp.variant("default"):
        raise RuntimeError("a failed fit")
    assert (select.loo_ratios, select.REFIT_MAX_RUNS) == before
    assert lp._seed_range("5-9") == [5, 6, 7, 8, 9] and lp._seed_range("2") == [2]
