"""A fitted runtime model's own answers on whole scale-outs, kept as a table.

Planning only ever asks a model about whole scale-outs (the candidates, a co-runner's
executors), so a fitted model can be tabulated once and answer later without numpy or scipy:
that is what makes a cached `cobell predict` cheap (`cobell_cli.store.model_cache`). The table holds
the model's predictions alone (no co-runner) and its interval bounds at one confidence; the
interference factor 1 + Σ_k (a_k + b_k/x)·ov_k is applied on top, as the model itself does.
Anything outside the table (a fractional or larger scale-out, another confidence) is passed
to the real model, fitted on first need, so answers never differ from the model's.

Pure: no I/O. `tabulate` is the only function that touches a numpy-backed model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

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
        factors = self._factors(xs, overlaps)
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
        factors = self._factors(xs, overlaps)
        idx = [int(x) - 1 for x in xs]
        return (
            [self.lower_s[i] * f for i, f in zip(idx, factors, strict=True)],
            [self.upper_s[i] * f for i, f in zip(idx, factors, strict=True)],
        )

    def interference(self, job: Any) -> tuple[float, float]:
        name = None if job is None else str(job).strip()
        return self.pairs.get(name, self.default_pair) if name is not None else self.default_pair

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

    def _factors(self, xs: Sequence[float], overlaps: Overlaps) -> list[float]:
        """1 + Σ_k (a_k + b_k/x)·ov_k per scale-out, validated as the model validates."""
        if overlaps is None:
            return [1.0] * len(xs)
        rows = [overlaps] * len(xs) if isinstance(overlaps, Mapping) else list(overlaps)
        if len(rows) != len(xs):
            raise ValueError(
                f"{len(rows)} overlap dicts for {len(xs)} scale-outs; give one dict for all "
                "or one per scale-out"
            )
        out = []
        for x, row in zip(xs, rows, strict=True):
            factor = 1.0
            for job, ratio in (row or {}).items():
                r = float(ratio)
                if not math.isfinite(r) or r < 0:
                    raise ValueError(f"overlap ratio for {job!r} must be >= 0, got {ratio!r}")
                a, b = self.interference(job)
                factor += (a + b / x) * r
            out.append(factor)
        return out


def tabulate(model: Any, grid_max: int, confidence: float) -> ModelTable:
    """Ask a fitted model everything planning may ask on scale-outs 1..grid_max."""
    grid = list(range(1, grid_max + 1))
    lower, upper = model.predict_interval(grid, None, confidence=confidence)
    description = jsonable(model.describe())
    pairs = {name: model.interference(name) for name in description.get("interference") or {}}
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
    )


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
