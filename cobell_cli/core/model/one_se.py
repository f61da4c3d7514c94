"""The one-standard-error rule: among candidates whose cross-validated error is within one
standard error of the best, take the simplest.

A handful of runs cannot tell apart forms whose CV errors differ by less than the CV's own
noise, and picking the minimum there picks the luckiest form: its CV error is optimistic and
its extra parameters fit noise (Hastie, Tibshirani & Friedman, ESL §7.10). So every choice
the runtime model makes by CV (the scale-out curve, the interference form) goes to the
simplest candidate the data cannot reject. "Simplest" is a sort key per candidate: fewer
fitted parameters first, then the paper's form before its extensions.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class CvErrors:
    """One candidate's held-out errors, one per test run, with the runs' weights (robust
    weights: a rejected outlier does not vote)."""

    errors: np.ndarray
    weights: np.ndarray

    @classmethod
    def of(cls, parts: list[np.ndarray], weights: list[np.ndarray]) -> CvErrors:
        e = np.concatenate(parts) if parts else np.array([])
        w = np.concatenate(weights) if weights else np.array([])
        return cls(e, w)

    @property
    def n(self) -> int:
        return int(self.errors.size)

    @cached_property
    def mean(self) -> float:
        """Weighted mean error (inf without test runs: such a candidate cannot win)."""
        if self.errors.size == 0:
            return float("inf")
        w = self.weights
        if w.sum() <= 0:
            return float(self.errors.mean())
        return float(self.errors @ w / w.sum())

    @cached_property
    def se(self) -> float:
        """Standard error of the weighted mean, on the weights' effective sample size."""
        e, w = self.errors, self.weights
        if e.size < 2:
            return float("inf") if e.size == 0 else 0.0
        if w.sum() <= 0:
            w = np.ones_like(e)
        mean = e @ w / w.sum()
        var = float(((e - mean) ** 2) @ w / w.sum())
        n_eff = float(w.sum() ** 2 / (w @ w))
        return float(np.sqrt(var / max(n_eff - 1.0, 1.0)))


def simplest_within_one_se(scores: Mapping[K, CvErrors],
                           complexity: Callable[[K], tuple]) -> K:
    """The least complex candidate whose mean error is at most the best's plus its standard
    error; among equally complex ones the lowest error. Candidates without test runs lose."""
    finite = {k: s for k, s in scores.items() if np.isfinite(s.mean)}
    if not finite:
        return min(scores, key=complexity)
    best = min(finite, key=lambda k: finite[k].mean)
    limit = finite[best].mean + finite[best].se
    eligible = [k for k, s in finite.items() if s.mean <= limit + 1e-12]
    return min(eligible, key=lambda k: (complexity(k), finite[k].mean))


def choose(scores: Mapping[K, CvErrors], complexity: Callable[[K], tuple],
           rule: str = "one-se") -> K:
    """The candidate `rule` picks: "one-se" (simplest_within_one_se) or "best" (the lowest
    mean error, the rule before; kept so the benchmark can compare the two)."""
    if rule == "best":
        return min(scores, key=lambda k: (scores[k].mean, complexity(k)))
    if rule != "one-se":
        raise ValueError(f"selection must be 'one-se' or 'best', got {rule!r}")
    return simplest_within_one_se(scores, complexity)
