"""np.unique's distinct values and np.median, as numpy computes them, without numpy.ma.

numpy 2 imports numpy.ma (~8 ms, on every `cobell predict` that fits) the first time
`np.unique(x)` without return_* options asks `np.ma.is_masked(x)`, and the first time
`np.median` checks its result for NaN (`np.ma.isMaskedArray`). The model's fit needs
neither question answered: its arrays are plain float arrays. tests/test_sorted_values.py
holds both functions to numpy's on every input it generates, NaN and -0.0 included.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


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
