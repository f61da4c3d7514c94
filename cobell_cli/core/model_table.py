"""A fitted runtime model's own answers on whole scale-outs, kept as a table.

Planning only ever asks a model about whole scale-outs (the candidates, a co-runner's
executors), so a fitted model can be tabulated once and answer later without numpy or scipy:
that is what makes a cached `cobell predict` cheap (`cobell_cli.store.model_cache`). The table holds
the model's predictions alone (no co-runner) and its interval bounds at one confidence; the
interference factor 1 + S (the model's combination rule over (a_k + b_k/x)·ov_k) and the
pairs' uncertainty are applied on top through co_runner_effects, as the model itself does.
Anything outside the table (a fractional or larger scale-out, another confidence) is passed
to the real model, fitted on first need, so answers never differ from the model's.

Pure: no I/O. `tabulate` is the only function that touches a numpy-backed model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cobell_cli.core.co_runner_effects import factor_and_sd
from cobell_cli.output import jsonable

Overlaps = Mapping[Any, float] | Sequence[Mapping[Any, float] | None] | None
TABLE_FORMAT = 2  # 2: the model's leave-one-out ratios (loo_ratios)
STRANGER = "\x00stranger"  # a co-runner job name no history can hold: the model's default pair


class ModelTable:
    """The `plan.RuntimeModel` contract answered from a table of a fitted model."""

    def __init__(
        self,
        *,
        alone_s: Sequence[float],
        lower_s: Sequence[float],
        upper_s: Sequence[float],
        confidence: float,
        pairs: Mapping[str, Sequence[float]],
        default_pair: Sequence[float],
        scale_out_range: Sequence[float],
        description: Mapping[str, Any],
        loo_ratios: Sequence[float] | None = None,
        fallback: Callable[[], Any] | None = None,
        combination: str = "additive",
        pair_cov: Mapping[str, Sequence[float]] | None = None,
        default_cov: Sequence[float] = (0.0, 0.0, 0.0),
    ) -> None:
        if not len(alone_s) == len(lower_s) == len(upper_s):
            raise ValueError("alone_s, lower_s and upper_s must cover the same scale-outs")
        self.alone_s = [float(v) for v in alone_s]  # index i: scale-out i + 1
        self.lower_s = [float(v) for v in lower_s]
        self.upper_s = [float(v) for v in upper_s]
        self.confidence = float(confidence)
        self.pairs = {str(k): (float(v[0]), float(v[1])) for k, v in pairs.items()}
        self.default_pair = (float(default_pair[0]), float(default_pair[1]))
        self.scale_out_range_ = (float(scale_out_range[0]), float(scale_out_range[1]))
        self.description = dict(description)
        # The model's held-out runtime / predicted ratios, for the planner's calibration.
        self.loo_ratios_ = None if loo_ratios is None else [float(v) for v in loo_ratios]
        self.combination = str(combination)
        self.pair_cov = {str(k): _cov(v) for k, v in (pair_cov or {}).items()}
        self.default_cov = _cov(default_cov)
        self._fallback = fallback
        self._model: Any = None

    @property
    def grid_max(self) -> int:
        return len(self.alone_s)

    # -- the RuntimeModel contract --------------------------------------------------------

    def predict(self, scale_outs: Any, overlaps: Overlaps = None) -> list[float]:
        xs = _floats(scale_outs)
        if not self._covers(xs):
            return _floats(self._real().predict(scale_outs, overlaps))
        factors = [f for f, _ in self._factors(xs, overlaps)]
        return [self.alone_s[int(x) - 1] * f for x, f in zip(xs, factors, strict=True)]

    def predict_interval(
        self, scale_outs: Any, overlaps: Overlaps = None, confidence: float | None = None
    ) -> tuple[list[float], list[float]]:
        xs = _floats(scale_outs)
        tabulated = confidence is not None and float(confidence) == self.confidence
        if not (tabulated and self._covers(xs)):
            real = self._real()
            lower, upper = real.predict_interval(scale_outs, overlaps, confidence=confidence)
            return _floats(lower), _floats(upper)
        lower, upper = [], []
        for x, (f, sd) in zip(xs, self._factors(xs, overlaps), strict=True):
            i = int(x) - 1
            lo, hi = widen(self.alone_s[i], self.lower_s[i], self.upper_s[i], sd, self.confidence)
            lower.append(lo * f)
            upper.append(hi * f)
        return lower, upper

    def interference(self, job: Any) -> tuple[float, float]:
        name = None if job is None else str(job).strip()
        return self.pairs.get(name, self.default_pair) if name is not None else self.default_pair

    def pair_covariance(self, job: Any) -> tuple[float, float, float]:
        name = None if job is None else str(job).strip()
        return self.pair_cov.get(name, self.default_cov) if name is not None else self.default_cov

    def describe(self) -> dict[str, Any]:
        return dict(self.description)

    # -- storage ----------------------------------------------------------------------------

    def to_payload(self) -> dict[str, Any]:
        return {
            "format": TABLE_FORMAT,
            "alone_s": self.alone_s,
            "lower_s": self.lower_s,
            "upper_s": self.upper_s,
            "confidence": self.confidence,
            "pairs": {k: list(v) for k, v in self.pairs.items()},
            "default_pair": list(self.default_pair),
            "scale_out_range": list(self.scale_out_range_),
            "description": self.description,
            "loo_ratios": self.loo_ratios_,
            "combination": self.combination,
            "pair_cov": {k: list(v) for k, v in self.pair_cov.items()},
            "default_cov": list(self.default_cov),
        }

    @classmethod
    def from_payload(
        cls, payload: Mapping[str, Any], fallback: Callable[[], Any] | None = None
    ) -> ModelTable:
        """Raises ValueError (or KeyError/TypeError) for anything not written by to_payload."""
        if payload.get("format") != TABLE_FORMAT:
            raise ValueError(f"unknown model table format {payload.get('format')!r}")
        return cls(
            alone_s=payload["alone_s"],
            lower_s=payload["lower_s"],
            upper_s=payload["upper_s"],
            confidence=payload["confidence"],
            pairs=payload["pairs"],
            default_pair=payload["default_pair"],
            scale_out_range=payload["scale_out_range"],
            description=payload["description"],
            loo_ratios=payload["loo_ratios"],
            fallback=fallback,
            combination=payload.get("combination", "additive"),
            pair_cov=payload.get("pair_cov"),
            default_cov=payload.get("default_cov", (0.0, 0.0, 0.0)),
        )

    # -- internals --------------------------------------------------------------------------

    def _covers(self, xs: Sequence[float]) -> bool:
        return all(x.is_integer() and 1 <= x <= self.grid_max for x in xs)

    def _real(self) -> Any:
        if self._model is None:
            if self._fallback is None:
                raise ValueError("this model table has no fitted model to answer off its grid")
            self._model = self._fallback()
        return self._model

    def _factors(self, xs: Sequence[float], overlaps: Overlaps) -> list[tuple[float, float]]:
        """(1 + S, sd of its log) per scale-out, validated as the model validates."""
        if overlaps is None:
            return [(1.0, 0.0)] * len(xs)
        rows = [overlaps] * len(xs) if isinstance(overlaps, Mapping) else list(overlaps)
        if len(rows) != len(xs):
            raise ValueError(
                f"{len(rows)} overlap dicts for {len(xs)} scale-outs; give one dict for all "
                "or one per scale-out"
            )
        return [
            factor_and_sd(x, row, self.interference, self.pair_covariance, self.combination)
            for x, row in zip(xs, rows, strict=True)
        ]


def tabulate(model: Any, grid_max: int, confidence: float) -> ModelTable:
    """Ask a fitted model everything planning may ask on scale-outs 1..grid_max."""
    grid = list(range(1, grid_max + 1))
    lower, upper = model.predict_interval(grid, None, confidence=confidence)
    description = jsonable(model.describe())
    names = description.get("interference") or {}
    # A model without parameter uncertainty (a baseline) widens nothing.
    cov = getattr(model, "pair_covariance", lambda _: (0.0, 0.0, 0.0))
    pairs = {name: model.interference(name) for name in names}
    return ModelTable(
        alone_s=_floats(model.predict(grid, None)),
        lower_s=_floats(lower),
        upper_s=_floats(upper),
        confidence=confidence,
        pairs=pairs,
        default_pair=model.interference(STRANGER),
        scale_out_range=[float(v) for v in model.scale_out_range_],
        description=description,
        loo_ratios=_loo(model),
        combination=getattr(model, "combination_", "additive"),
        pair_cov={name: cov(name) for name in names},
        default_cov=cov(STRANGER),
    )


def widen(alone: float, lower: float, upper: float, sd: float, confidence: float,
          ) -> tuple[float, float]:
    """The curve's log half-widths and z·sd of the interference term, added in quadrature
    (their errors come from different parameters); RuntimeModel.predict_interval does the
    same, vectorised."""
    if sd <= 0 or alone <= 0:
        return lower, upper
    from statistics import NormalDist

    z = NormalDist().inv_cdf((1 + confidence) / 2) * sd
    lo, hi = math.log(lower / alone), math.log(upper / alone)
    return alone * math.exp(-math.hypot(lo, z)), alone * math.exp(math.hypot(hi, z))


def _cov(v: Sequence[float]) -> tuple[float, float, float]:
    return float(v[0]), float(v[1]), float(v[2])


def _loo(model: Any) -> list[float] | None:
    ratios = getattr(model, "loo_ratios_", None)
    return None if ratios is None else [float(v) for v in ratios]


def _floats(values: Any) -> list[float]:
    if isinstance(values, int | float):
        return [float(values)]
    if hasattr(values, "tolist"):
        values = values.tolist()
        if not isinstance(values, list):
            return [float(values)]
    return [float(v) for v in values]
