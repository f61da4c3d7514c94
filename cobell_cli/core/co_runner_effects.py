"""The combined slow-down of one run's co-runners and its parameter uncertainty, in plain
Python: the fitted model and its cached table (model_table.py) both answer through here, so
they never differ, and a cached predict needs no numpy.

Rules as in model/combine.py (which fits them, vectorised; tests hold the two equal).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

SATURATION = 1.0  # cap C of the saturating rule: the slow-down co-runners together approach
MAX_LOG_SD = 1.0  # an unresolved pair (one run, no pool) says "5x either way" at 90 %, no more
Pair = tuple[float, float]
Cov = tuple[float, float, float]  # var(a), cov(a, b), var(b)


def combine_row(e: Sequence[float], rule: str, saturation: float = SATURATION) -> float:
    if not e:
        return 0.0
    if rule == "additive":
        return float(sum(e))
    top = max(e)
    if rule == "bottleneck":
        return top
    if rule != "saturating":
        raise ValueError(f"unknown combination rule {rule!r}")
    rest = 1.0
    for v in e:
        rest *= 1.0 - min(v / saturation, 1.0)
    return max(top, saturation * (1.0 - rest))


def gradient_row(e: Sequence[float], rule: str, saturation: float = SATURATION,
                 ) -> list[float]:
    """dS/de_k: additive 1; bottleneck 1 for the largest; saturating the union's slope."""
    if rule == "additive" or not e:
        return [1.0] * len(e)
    top = max(range(len(e)), key=lambda k: e[k])
    onehot = [1.0 if k == top else 0.0 for k in range(len(e))]
    if rule == "bottleneck" or combine_row(e, rule, saturation) <= e[top] + 1e-12:
        return onehot
    u = [min(v / saturation, 1.0) for v in e]
    out = []
    for k in range(len(e)):
        prod = 1.0
        for j, uj in enumerate(u):
            if j != k:
                prod *= 1.0 - uj
        out.append(prod if u[k] < 1.0 else 0.0)
    return out


def factor_and_sd(
    scale_out: float,
    row: Mapping[Any, float] | None,
    pair: Callable[[Any], Pair],
    cov: Callable[[Any], Cov],
    rule: str = "additive",
    saturation: float = SATURATION,
) -> tuple[float, float]:
    """(1 + S, sd of log(1 + S)) for one run's overlaps {co_runner: ratio}.

    The sd is the delta method over each co-runner's (a, b) posterior covariance, pairs
    taken as independent: how far the interference term alone may be off. Capped at
    MAX_LOG_SD: a pair its runs cannot resolve has a near-infinite variance, and an interval
    wider than that cap says nothing more.
    """
    x = float(scale_out)
    effects: list[float] = []
    grads: list[tuple[float, float]] = []
    covs: list[Cov] = []
    for job, ratio in (row or {}).items():
        r = float(ratio)
        if not math.isfinite(r) or r < 0:
            raise ValueError(f"overlap ratio for {job!r} must be >= 0, got {ratio!r}")
        a, b = pair(job)
        effects.append((a + b / x) * r)
        grads.append((r, r / x))
        covs.append(cov(job))
    total = 1.0 + combine_row(effects, rule, saturation)
    var = 0.0
    for g, (da, db), (vaa, vab, vbb) in zip(gradient_row(effects, rule, saturation), grads,
                                           covs, strict=True):
        var += g * g * (da * da * vaa + 2 * da * db * vab + db * db * vbb)
    return total, min(math.sqrt(max(var, 0.0)) / total, MAX_LOG_SD)
