"""A fitted runtime model's own answers on whole scale-outs, kept as a table.

Planning only ever asks a model about whole scale-outs (the candidates, a co-runner's
executors), so a fitted model can be tabulated once and answer later without numpy or scipy:
that is what makes a cached `cobell predict` cheap (`cobell_cli.store.model_cache`). The table holds
the model's predictions alone (no co-runner), the curve's interval bounds at one confidence
and its log sd, and the conformal quantiles per run class at that confidence; the
interference factor 1 + S (the model's combination rule over (a_k + b_k/x)·ov_k), the
pairs' uncertainty and the calibration are applied on top through co_runner_effects, as the
model itself does.
Anything outside the table (a fractional or larger scale-out, another confidence) is passed
to the real model, fitted on first need, so answers never differ from the model's.

Pure: no I/O. `tabulate` is the only function that touches a numpy-backed model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cobell_cli.core.calibration import held_out_ratios
from cobell_cli.core.co_runner_effects import (
    MAX_CLASS,
    calibrated_interval,
    co_runner_class,
    factor_and_sd,
    size_weight,
    widen,
)
from cobell_cli.core.jsonable import jsonable

Overlaps = Mapping[Any, float] | Sequence[Mapping[Any, float] | None] | None
TABLE_FORMAT = 3  # 2: the model's leave-one-out ratios; 3: the curve's log sd, class quantiles
Quantiles = Sequence[Sequence[float] | None]
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
        curve_sd: Sequence[Sequence[float]] | None = None,
        class_quantiles: Quantiles | None = None,
        size_reference: Mapping[str, float] | None = None,
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
        self.combination = str(combination)
        self.pair_cov = {str(k): _cov(v) for k, v in (pair_cov or {}).items()}
        self.default_cov = _cov(default_cov)
        # The curve's log sd (lower, upper tail) per scale-out and the conformal quantiles
        # (q_lo, q_hi) per run class at `confidence`; none: the model's bounds uncalibrated.
        self.curve_sd = [(float(a), float(b)) for a, b in curve_sd or []]
        self.class_quantiles = [None if q is None else (float(q[0]), float(q[1]))
                                for q in class_quantiles or [None] * (MAX_CLASS + 1)]
        # each co-runner job's usual scale-out when the model weighs sizes (else empty)
        self.size_reference = {str(k): float(v) for k, v in (size_reference or {}).items()}
        # The model's held-out runtime / predicted ratios, for the planner's calibration.
        self.loo_ratios_ = None if loo_ratios is None else [float(v) for v in loo_ratios]
        self._fallback = fallback
        self._model: Any = None
        # job -> ((a, b), cov) or None for a job without its own pair: RuntimeModel.pair_prior
        self.pair_prior: Any = None

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
        rows = _rows(overlaps, len(xs))
        for x, row, (f, sd) in zip(xs, rows, self._factors(xs, overlaps), strict=True):
            i = int(x) - 1
            alone = self.alone_s[i]
            lo, hi = widen(alone, self.lower_s[i], self.upper_s[i], sd, self.confidence)
            inside = self.scale_out_range_[0] <= x <= self.scale_out_range_[1]
            lo, hi = calibrated_interval(
                alone * f, (lo * f, hi * f), self.curve_sd[i] if self.curve_sd else (0.0, 0.0),
                sd, self.class_quantiles[co_runner_class(row)], inside)
            lower.append(lo)
            upper.append(hi)
        return lower, upper

    def _prior(self, name: str | None) -> Any:
        if self.pair_prior is None or name is None or name in self.pairs:
            return None
        return self.pair_prior(name)

    def interference(self, job: Any) -> tuple[float, float]:
        name = None if job is None else str(job).strip()
        prior = self._prior(name)
        if prior is not None:
            return float(prior[0][0]), float(prior[0][1])
        return self.pairs.get(name, self.default_pair) if name is not None else self.default_pair

    def size_weight(self, job: Any, scale_out: float | None) -> float:
        return size_weight(self.size_reference, "" if job is None else str(job).strip(),
                           scale_out)

    def pair_covariance(self, job: Any) -> tuple[float, float, float]:
        name = None if job is None else str(job).strip()
        prior = self._prior(name)
        if prior is not None:
            return _cov(prior[1])
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
            "combination": self.combination,
            "pair_cov": {k: list(v) for k, v in self.pair_cov.items()},
            "default_cov": list(self.default_cov),
            "loo_ratios": self.loo_ratios_,
            "curve_sd": [list(v) for v in self.curve_sd],
            "class_quantiles": [None if q is None else list(q) for q in self.class_quantiles],
            "size_reference": self.size_reference,
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
            curve_sd=payload["curve_sd"],
            class_quantiles=payload["class_quantiles"],
            size_reference=payload["size_reference"],
        )

    # -- internals --------------------------------------------------------------------------

    def _covers(self, xs: Sequence[float]) -> bool:
        return all(x.is_integer() and 1 <= x <= self.grid_max for x in xs)

    def _real(self) -> Any:
        if self._model is None:
            if self._fallback is None:
                raise ValueError("this model table has no fitted model to answer off its grid")
            self._model = self._fallback()
        self._model.pair_prior = self.pair_prior  # off the grid: the same priors
        return self._model

    def _factors(self, xs: Sequence[float], overlaps: Overlaps) -> list[tuple[float, float]]:
        """(1 + S, sd of its log) per scale-out, validated as the model validates."""
        if overlaps is None:
            return [(1.0, 0.0)] * len(xs)
        rows = _rows(overlaps, len(xs))
        return [
            factor_and_sd(x, row, self.interference, self.pair_covariance, self.combination)
            for x, row in zip(xs, rows, strict=True)
        ]


def _rows(overlaps: Overlaps, n: int) -> list[Mapping[Any, float] | None]:
    if overlaps is None or isinstance(overlaps, Mapping):
        return [overlaps] * n
    rows = list(overlaps)
    if len(rows) != n:
        raise ValueError(
            f"{len(rows)} overlap dicts for {n} scale-outs; give one dict for all "
            "or one per scale-out"
        )
    return rows


def tabulate(model: Any, grid_max: int, confidence: float) -> ModelTable:
    """Ask a fitted model everything planning may ask on scale-outs 1..grid_max."""
    grid = list(range(1, grid_max + 1))
    parts = getattr(model, "interval_parts", None)
    curve_sd: list[list[float]] | None = None
    quantiles: Quantiles | None = None
    if parts is not None:  # cobell's model: its bounds before calibration, and the scale
        p = parts(grid, confidence)
        lower, upper = p["lower"], p["upper"]
        curve_sd = [[float(a), float(b)] for a, b in zip(p["curve_sd_lo"], p["curve_sd_hi"],
                                                         strict=True)]
        quantiles = [model.class_quantiles(k, confidence) for k in range(MAX_CLASS + 1)]
    else:  # a baseline: its own interval, uncalibrated
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
        combination=getattr(model, "combination_", "additive"),
        pair_cov={name: cov(name) for name in names},
        default_cov=cov(STRANGER),
        loo_ratios=held_out_ratios(model),
        curve_sd=curve_sd,
        class_quantiles=quantiles,
        size_reference=model.size_reference_ if getattr(model, "sized_", False) else None,
    )


def _cov(v: Sequence[float]) -> tuple[float, float, float]:
    return float(v[0]), float(v[1]), float(v[2])


def _floats(values: Any) -> list[float]:
    if isinstance(values, int | float):
        return [float(values)]
    if hasattr(values, "tolist"):
        values = values.tolist()
        if not isinstance(values, list):
            return [float(values)]
    return [float(v) for v in values]
