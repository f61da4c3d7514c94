"""The standard normal's cdf and quantile: the numbers `statistics.NormalDist()` gives, without
importing `statistics`, which loads fractions and decimal (~3 ms of a ~0.13 s cached predict,
whose P(meet) and bounds are read off these two functions; tests/test_normal.py)."""

from __future__ import annotations

import math

try:  # CPython's accelerator: the very function NormalDist.inv_cdf calls
    from _statistics import _normal_dist_inv_cdf
except ImportError:  # another interpreter: NormalDist itself answers
    _normal_dist_inv_cdf = None

_SQRT2 = math.sqrt(2.0)  # as statistics computes it


class StandardNormal:
    """NormalDist(0, 1)'s `cdf` and `inv_cdf`, bit for bit, its errors included."""

    def cdf(self, x: float) -> float:
        return 0.5 * (1.0 + math.erf(x / _SQRT2))

    def inv_cdf(self, p: float) -> float:
        if _normal_dist_inv_cdf is None or not 0.0 < p < 1.0:  # p outside (0, 1): its error
            from statistics import NormalDist

            return NormalDist().inv_cdf(p)
        return float(_normal_dist_inv_cdf(p, 0.0, 1.0))
