"""The median as `statistics.median` computes it (sorted, the middle value or the mean of the
middle two), without importing `statistics`, which loads fractions and decimal (~3-7 ms of a
cached predict; tests/test_median.py holds it to statistics.median)."""

from __future__ import annotations

from collections.abc import Iterable


def median(values: Iterable[float]) -> float:
    """The middle value, or the mean of the middle two; ValueError for no values."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no median for empty data")
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
