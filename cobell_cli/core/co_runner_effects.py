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


def widen(alone: float, lower: float, upper: float, sd: float, confidence: float,
          ) -> tuple[float, float]:
    """The curve's log half-widths and z·sd of the interference term, added in quadrature
    (their errors come from different parameters). The model and its table both call this,
    so their bounds agree to the last bit."""
    if sd <= 0 or alone <= 0:
        return lower, upper
    from cobell_cli.core.normal import StandardNormal  # NormalDist's numbers, no statistics

    z = StandardNormal().inv_cdf((1 + confidence) / 2) * sd
    lo, hi = math.log(lower / alone), math.log(upper / alone)
    return alone * math.exp(-math.hypot(lo, z)), alone * math.exp(math.hypot(hi, z))


MAX_CLASS = 3  # runs with 3 or more co-runners form one calibration class
MAX_LOG_HALF_WIDTH = 30.0  # a degenerate history (runtimes 1, 1, 1, 31) stays finite


def co_runner_class(row: Mapping[Any, float] | None) -> int:
    """The calibration class of a run: how many co-runner jobs overlapped it (3 and more
    alike). Errors grow with the number of co-runners (their combination is the model's
    least certain part), so each class calibrates its own interval."""
    return min(sum(1 for r in (row or {}).values() if float(r) > 0), MAX_CLASS)


def calibrated_interval(
    predicted: float,
    model_bounds: tuple[float, float],
    curve_sd: tuple[float, float],
    pair_sd: float,
    quantiles: tuple[float, float] | None,
    inside: bool,
) -> tuple[float, float]:
    """The interval on the model's own log-scale, calibrated on held-out errors.

    The model's predictive sd of log runtime, the curve's (per tail) and the pairs' in
    quadrature, times the conformal quantiles of the same run class's held-out scores
    (uncertainty.ConformalScale): the prediction times exp(-q_lo·sd_lo), exp(q_hi·sd_hi).
    Outside the scale-outs the scores were measured at, never narrower than the model's
    own `model_bounds`. Without quantiles (too few held-out errors), the model's bounds.
    """
    if quantiles is None:
        return model_bounds
    lower = predicted * math.exp(-min(quantiles[0] * math.hypot(curve_sd[0], pair_sd),
                                      MAX_LOG_HALF_WIDTH))
    upper = predicted * math.exp(min(quantiles[1] * math.hypot(curve_sd[1], pair_sd),
                                     MAX_LOG_HALF_WIDTH))
    if inside:
        return lower, upper
    return min(lower, model_bounds[0]), max(upper, model_bounds[1])


def size_weight(references: Mapping[str, float] | None, job: str, scale_out: float | None,
                ) -> float:
    """How much more of the cluster a co-runner app presses on than its job usually does:
    its scale-out over its job's reference. 1 when the model does not weigh sizes, the job
    has no reference of its own (the pooled class mixes jobs of different usual sizes and is
    fitted unweighed) or the scale-out is unknown."""
    ref = (references or {}).get(job)
    if not ref or scale_out is None or not scale_out > 0:
        return 1.0
    return float(scale_out) / ref
