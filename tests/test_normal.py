"""core/normal.py gives statistics.NormalDist()'s numbers, bit for bit, without importing
statistics on the cached predict path (tests/test_cached_path_imports.py)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from cobell_cli.core.normal import StandardNormal


def _probabilities() -> list[float]:
    rng = random.Random(2018)
    edges = [1e-300, 1e-12, 1e-6, 0.001, 0.025, 0.05, 0.1, 0.425, 0.5, 0.575, 0.9, 0.95,
             0.975, 0.99, 0.999, 1 - 1e-9, math.nextafter(1.0, 0.0), 5e-324]
    return edges + [rng.random() for _ in range(2000)]


@pytest.mark.parametrize("p", _probabilities()[:18])
def test_the_quantile_at_the_edges_is_normaldists(p: float) -> None:
    assert StandardNormal().inv_cdf(p) == statistics.NormalDist().inv_cdf(p)


def test_quantile_and_cdf_are_normaldists_to_the_last_bit() -> None:
    ours, theirs = StandardNormal(), statistics.NormalDist()
    ps = _probabilities()
    assert [ours.inv_cdf(p) for p in ps] == [theirs.inv_cdf(p) for p in ps]
    xs = [theirs.inv_cdf(p) for p in ps] + [-40.0, -8.5, -0.0, 0.0, 1e-300, 8.5, 40.0,
                                             math.inf, -math.inf]
    assert [ours.cdf(x) for x in xs] == [theirs.cdf(x) for x in xs]
    assert math.isnan(ours.cdf(math.nan)) and math.isnan(ours.inv_cdf(math.nan))


@pytest.mark.parametrize("p", [0.0, 1.0, -0.5, 2.0])
def test_a_probability_outside_0_1_raises_normaldists_error(p: float) -> None:
    with pytest.raises(statistics.StatisticsError, match=r"0\.0 < p < 1\.0"):
        StandardNormal().inv_cdf(p)
