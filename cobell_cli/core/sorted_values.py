"""np.unique's distinct values, np.median and np.quantile, as numpy computes them, without
numpy.ma.

numpy 2 imports numpy.ma (~8 ms, on every `cobell predict` that fits) the first time
`np.unique(x)` without return_* options asks `np.ma.is_masked(x)` (np.quantile asks it too,
through np.unique), and the first time `np.median` checks its result for NaN
(`np.ma.isMaskedArray`). The model's fit needs neither question answered: its arrays are
plain float arrays. tests/test_sorted_values.py holds these functions to numpy's on every
input it generates, NaN and -0.0 included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike  # not at run time: numpy.typing costs ~0.5 ms


def distinct(values: ArrayLike) -> np.ndarray:
    """`np.unique(values)`: the sorted distinct values, flattened (NaNs as one). With
    return_counts numpy takes its sorting path, which never asks numpy.ma."""
    return np.unique(values, return_counts=True)[0]


def median(values: ArrayLike) -> np.floating:
    """`np.median(values)` over all values: the middle one after sorting, or the mean of the
    middle two; NaN when any value is NaN (sorted last), as numpy's."""
    a = np.sort(np.asarray(values, dtype=float).ravel())
    n = a.size
    if n == 0:
        return np.mean(a)  # numpy's nan and its "Mean of empty slice" warning
    if np.isnan(a[-1]):
        return a[-1]
    mid = n // 2
    return np.mean(a[mid:mid + 1] if n % 2 else a[mid - 1:mid + 1])  # as numpy: -0.0 -> 0.0


def quantile(values: ArrayLike, q: ArrayLike) -> np.ndarray:
    """`np.quantile(values, q)` (its default "linear" method, over all values) for levels q
    (a sequence) in [0, 1], interpolated as numpy's `_lerp` does (from the upper neighbour
    when the weight is >= 0.5); numpy's own asks np.unique where to partition."""
    a = np.sort(np.asarray(values, dtype=float).ravel())
    virtual = (a.size - 1) * np.asarray(q, dtype=float)
    below, nxt = np.floor(virtual), np.floor(virtual) + 1
    for rows, at in ((virtual >= a.size - 1, -1), (virtual < 0, 0), (np.isnan(virtual), -1)):
        below[rows] = nxt[rows] = at
    below_i, next_i = below.astype(np.intp), nxt.astype(np.intp)
    gamma = virtual - below_i
    lo, hi = a[below_i], a[next_i]
    diff = hi - lo
    out = np.add(lo, diff * gamma)
    np.subtract(hi, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    if a.size and np.isnan(a[-1]):  # any NaN: every quantile is NaN, as numpy's
        out[...] = a[-1]
    return out
