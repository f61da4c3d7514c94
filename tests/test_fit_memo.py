"""fit_theta remembers its fits (parametric._fits) and ends its L1 rounds at a fixed point;
both exist for speed only, so each must give exactly the numbers of a fresh, full computation."""

from __future__ import annotations

import numpy as np
import pytest

from cobell_cli.core.model import parametric as pm

_every_solve = pm.nnls_fit  # the solver itself, for the tests that count its calls


def _history(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.repeat([2.0, 4.0, 8.0, 16.0, 32.0], 3)
    y = (20.0 + 400.0 / x) * rng.lognormal(0.0, 0.05, x.size)
    y[4] *= 3.0  # one wild run: what the L1 fit is for
    return x, y


def _every_round(x: np.ndarray, y: np.ndarray, features: tuple[str, ...]) -> np.ndarray:
    """The L1 fit as documented, all L1_ROUNDS rounds, no memory."""
    mask = pm.feature_mask(features)
    design, w = pm.basis(x)[:, mask], 1.0 / y
    coef = pm.nnls_fit(design, y, w)
    for _ in range(pm.L1_ROUNDS):
        resid = np.abs(design @ coef - y) / y
        coef = pm.nnls_fit(design, y, w / np.sqrt(np.maximum(resid, pm.L1_FLOOR)))
    theta = np.zeros(len(pm.FEATURES))
    theta[mask] = coef
    return theta


@pytest.fixture(autouse=True)
def _forget() -> None:
    pm._fits.clear()


@pytest.mark.parametrize("seed", range(5))
def test_the_l1_fit_gives_the_numbers_of_every_round(seed: int):
    x, y = _history(seed)
    assert np.array_equal(pm.fit_theta(x, y, pm.AMDAHL, loss="l1"),
                          _every_round(x, y, pm.AMDAHL))


@pytest.mark.parametrize("wild", [1.1, 1.5, 3.0])  # slower runs; 0.5 and 0.7 use every round
def test_at_a_fixed_point_the_l1_fit_stops_with_the_same_numbers(
        wild: float, monkeypatch: pytest.MonkeyPatch):
    """Three runs, two terms: the L1 fit goes through two runs exactly, their weights stop
    changing, and every further round would repeat the last one."""
    x = np.array([2.0, 4.0, 8.0])
    y = 20.0 + 400.0 / x
    y[1] *= wild
    expected = _every_round(x, y, pm.AMDAHL)
    solves = []
    monkeypatch.setattr(pm, "nnls_fit", lambda *a: solves.append(1) or _every_solve(*a))
    assert np.array_equal(pm.fit_theta(x, y, pm.AMDAHL, loss="l1"), expected)
    assert len(solves) < 1 + pm.L1_ROUNDS  # the exit ran



def test_the_power_law_stops_early_with_the_numbers_of_every_round():
    x, y = _history(7)
    lx, ly = np.log(x), np.log(y)
    design = np.column_stack([np.ones_like(lx), lx])
    coef = np.linalg.lstsq(design, ly, rcond=None)[0]
    for _ in range(pm.L1_ROUNDS):
        rw = 1.0 / np.sqrt(np.maximum(np.abs(design @ coef - ly), pm.L1_FLOOR))
        coef = np.linalg.lstsq(design * rw[:, None], ly * rw, rcond=None)[0]
    slope = float(np.clip(coef[1], *pm.POWER_SLOPE_BOUNDS))
    assert pm.fit_power_law(x, y) == (float(pm._weighted_median(ly - slope * lx,
                                                                  np.ones_like(ly))), slope)


def test_a_repeated_fit_is_remembered_and_the_callers_copy_is_its_own(
        monkeypatch: pytest.MonkeyPatch):
    x, y = _history(1)
    fits = []
    real = pm._fit_theta
    monkeypatch.setattr(pm, "_fit_theta", lambda *a, **k: fits.append(1) or real(*a, **k))
    first = pm.fit_theta(x, y, pm.FEATURES, sample_weight=np.ones_like(y))
    fresh = real(x, y, pm.FEATURES, relative=True, sample_weight=np.ones_like(y),
                 multiplier=None, loss="l2")
    assert np.array_equal(first, fresh)
    first[:] = -1.0  # a caller that changes its θ in place
    again = pm.fit_theta(x.astype(int), list(y), pm.FEATURES, sample_weight=np.ones_like(y))
    assert np.array_equal(again, fresh) and len(fits) == 1
    # any input that differs is a new fit: weights, multiplier, loss, features, relative
    pm.fit_theta(x, y, pm.FEATURES, sample_weight=np.full_like(y, 2.0))
    pm.fit_theta(x, y, pm.FEATURES, sample_weight=np.ones_like(y), multiplier=np.ones_like(y))
    pm.fit_theta(x, y, pm.FEATURES, sample_weight=np.ones_like(y), loss="l1")
    pm.fit_theta(x, y, pm.AMDAHL, sample_weight=np.ones_like(y))
    pm.fit_theta(x, y, pm.FEATURES, sample_weight=np.ones_like(y), relative=False)
    assert len(fits) == 6


def test_the_memory_is_bounded_and_forgets_the_oldest(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(pm, "FIT_MEMO", 2)
    x, y = _history(2)
    for k in (1.0, 2.0, 3.0):
        pm.fit_theta(x, k * y)
    assert len(pm._fits) == 2
    fits = []
    real = pm._fit_theta
    monkeypatch.setattr(pm, "_fit_theta", lambda *a, **k: fits.append(1) or real(*a, **k))
    pm.fit_theta(x, 3.0 * y)  # remembered
    pm.fit_theta(x, 1.0 * y)  # forgotten: fitted again
    assert len(fits) == 1
