"""A scale-out curve times a runtime model's interference term: how a phase whose curve is
not the runtime model's own (the what-if replay; the bootstrap's few runs) still accounts
for the running co-runners whose effect on the job is known.

CoBell's model is g(x, ov) = f(x)·(1 + S), S the co-runners' combined (a_k + b_k/x)·ov_k.
Where the what-if predicts the job's runs better than the fitted f, it replaces f only; the
interference term, learned from the job's co-located runs (each co-runner job's own pair, or
the pooled pair for jobs met rarely), multiplies it as it multiplies any curve. The curve is
then corrected on the runs with their slow-down divided out (`normalized_runs`), so the
co-runners are not counted twice.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from cobell_cli.core.co_runner_effects import factor_and_sd, widen

Row = Mapping[Any, float] | None


def knows_interference(effects: Any, resolved: bool = False) -> bool:
    """Whether a fitted model has learned any co-runner's effect on the job: a pair of its
    own, or the pooled one (its description names at least one); `resolved`: one whose
    runs pin it down (not "thin" evidence: model/pair_report.py)."""
    if effects is None:
        return False
    pairs = (effects.describe() or {}).get("interference")
    if not isinstance(pairs, Mapping) or not pairs:
        return False
    return not resolved or any(isinstance(p, Mapping) and not p.get("thin", False)
                               for p in pairs.values())


def combination_rule(effects: Any) -> str:
    """The rule the model combines concurrent co-runners by (a fitted model's `combination_`,
    a cached table's `combination`)."""
    rule = getattr(effects, "combination_", None) or getattr(effects, "combination", None)
    return rule if rule in ("additive", "bottleneck", "saturating") else "additive"


def slowdown(effects: Any, scale_out: float, row: Row) -> tuple[float, float]:
    """(1 + S, sd of its log) of one run's overlaps {co-runner job: ratio} by the model's pairs."""
    return factor_and_sd(scale_out, row, effects.interference, _pair_cov(effects),
                         combination_rule(effects))


def normalized_runs(runs: Sequence[Mapping[str, Any]], effects: Any,
                    ) -> list[dict[str, Any]]:
    """The runs with each one's co-runner slow-down divided out: what f(x) alone predicts."""
    out = []
    for r in runs:
        factor = slowdown(effects, float(r["scale_out"]), r.get("overlaps") or {})[0]
        out.append({**r, "runtime_s": float(r["runtime_s"]) / factor, "overlaps": {}})
    return out


class CurveWithInterference:
    """`plan.RuntimeModel`: `curve`'s runtime alone times `effects`' interference term.

    `curve`: anything with predict / predict_interval (overlaps ignored), scale_out_range_
    and describe (a `WhatIfModel` corrected on normalized runs, or a runtime model whose
    alone curve is wanted); `effects`: a fitted runtime model or its cached table, whose
    pairs, their covariance and combination rule make the term. The interval is the curve's,
    widened by the pairs' uncertainty in quadrature, as the runtime model widens its own.
    """

    interference_known_ = True

    def __init__(self, curve: Any, effects: Any) -> None:
        self.curve = curve
        self.effects = effects
        self.scale_out_range_ = curve.scale_out_range_

    def _rows(self, overlaps: Any, n: int) -> list[Row]:
        if overlaps is None or isinstance(overlaps, Mapping):
            return [overlaps] * n
        rows = list(overlaps)
        if len(rows) != n:
            raise ValueError(f"{len(rows)} overlap dicts for {n} scale-outs")
        return rows

    def predict(self, scale_outs: Any, overlaps: Any = None) -> list[float]:
        xs = _scale_outs(scale_outs)
        alone = [float(v) for v in self.curve.predict(xs, None)]
        return [a * slowdown(self.effects, x, row)[0]
                for x, a, row in zip(xs, alone, self._rows(overlaps, len(xs)), strict=True)]

    def predict_interval(self, scale_outs: Any, overlaps: Any = None,
                         confidence: float = 0.9) -> tuple[list[float], list[float]]:
        xs = _scale_outs(scale_outs)
        alone = [float(v) for v in self.curve.predict(xs, None)]
        lows, highs = self.curve.predict_interval(xs, None, confidence=confidence)
        lower, upper = [], []
        for x, a, lo, hi, row in zip(xs, alone, lows, highs, self._rows(overlaps, len(xs)),
                                     strict=True):
            factor, sd = slowdown(self.effects, x, row)
            lo, hi = widen(a, float(lo), float(hi), sd, confidence)
            lower.append(lo * factor)
            upper.append(hi * factor)
        return lower, upper

    def held_out_ratios(self) -> list[float] | None:
        """The curve's held-out runtime / predicted ratios (on the normalized runs, so the
        interference term, applied to both sides, cancels)."""
        from cobell_cli.core.calibration import held_out_ratios

        return held_out_ratios(self.curve)

    def interference(self, job: Any) -> tuple[float, float]:
        return self.effects.interference(job)

    def pair_covariance(self, job: Any) -> tuple[float, float, float]:
        return _pair_cov(self.effects)(job)

    def size_weight(self, job: Any, scale_out: float | None) -> float:
        weigh = getattr(self.effects, "size_weight", None)
        return 1.0 if weigh is None else float(weigh(job, scale_out))

    def cache_key(self) -> str | None:
        key = getattr(self.curve, "cache_key", None)
        return key() if key is not None else None

    def describe(self) -> dict[str, Any]:
        own = self.effects.describe() or {}
        return {
            **(self.curve.describe() or {}),
            "interference": own.get("interference", {}),
            "combination": own.get("combination", {"rule": combination_rule(self.effects)}),
            "interference_from": "the runtime model fitted on the job's runs with their"
                                 " co-runners",
        }


def _pair_cov(effects: Any) -> Any:
    cov = getattr(effects, "pair_covariance", None)
    return cov if cov is not None else (lambda job: (0.0, 0.0, 0.0))


def _scale_outs(scale_outs: Any) -> list[float]:
    xs = [scale_outs] if isinstance(scale_outs, int | float) else list(scale_outs)
    out = [float(x) for x in xs]
    if any(not math.isfinite(x) or x <= 0 for x in out):
        raise ValueError("scale-outs must be positive numbers")
    return out
