"""The memory functions ("experts"): memory per executor as a function of one input feature.

After the mixture-of-experts paper (../shared/papers/memory-aware-colocation-moe.txt, Table 1)
plus the two forms practitioners reach for first: constant, linear, Napierian logarithm,
power and saturating exponential. Each is fitted in relative error (weights 1/y², so a 10 %
miss weighs the same at 600 MB as at 6 GB) with memory never falling as the input grows
(slopes >= 0). The feature z is the input each executor processes or the whole input
(select.py tries both); y is in MB.

Plain Python on purpose: a job has tens of runs, and `predict` must not import numpy for this.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Saturation scales tried, as multiples of the largest z seen: from "saturated already" to
# "still nearly linear". The fit picks the best; a finer grid only chases noise on few runs.
SATURATION_SCALES = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0)
# The power form's largest exponent: two runs at nearly equal inputs fit one in the millions
# (whose prediction overflows, or, clamped, falls to nothing below the inputs seen and makes
# the nested ratios absurd). Memory growing faster than the 4th power of the input is no
# expert's shape: such runs do not determine a power, as too few distinct inputs do not.
MAX_POWER = 4.0


@dataclass(frozen=True)
class Fitted:
    """One expert fitted: y = a + b·g(z) (g by name; `tau` for the saturating form)."""

    name: str
    a: float
    b: float
    tau: float | None = None

    def predict(self, z: float) -> float:
        if self.name == "power":
            return self.a * max(z, 1e-12) ** self.b
        return self.a + self.b * _basis(self.name, self.tau)(z)

    def describe(self) -> str:
        if self.name == "constant":
            return f"{self.a:.0f}"
        if self.name == "power":
            return f"{self.a:.3g}·z^{self.b:.3g}"
        term = {"linear": "z", "log": "ln z"}.get(self.name, f"(1 - e^(-z/{self.tau or 0:.3g}))")
        return f"{self.a:.0f} + {self.b:.4g}·{term}"


@dataclass(frozen=True)
class Expert:
    """A memory function's form: its name, how many parameters it fits, the paper's or not."""

    name: str
    params: int
    paper: bool  # one of the paper's Table 1 forms (preferred among equals)

    def fit(self, z: Sequence[float], y: Sequence[float]) -> Fitted | None:
        """The least relative-squared-error fit, or None when the runs cannot determine it
        (fewer distinct z than parameters, or z <= 0 where the form needs a logarithm)."""
        if len(set(z)) < self.params or min(y) <= 0:
            return None
        if self.name == "constant":
            return _fit_affine(self.name, [0.0] * len(z), y)
        if self.name in ("log", "power") and min(z) <= 0:
            return None
        if self.name == "power":
            return _fit_power(z, y)
        if self.name == "saturating":
            return _fit_saturating(z, y)
        return _fit_affine(self.name, [_basis(self.name, None)(v) for v in z], y)


# Fewer parameters first, the paper's forms before the extensions: the order the
# one-standard-error rule walks (select.py).
EXPERTS: tuple[Expert, ...] = (
    Expert("constant", 1, paper=False),
    Expert("linear", 2, paper=True),
    Expert("log", 2, paper=True),
    Expert("power", 2, paper=False),
    Expert("saturating", 3, paper=True),
)
EXPERT_NAMES: tuple[str, ...] = tuple(e.name for e in EXPERTS)


def expert(name: str) -> Expert:
    return next(e for e in EXPERTS if e.name == name)


def _basis(name: str, tau: float | None) -> Callable[[float], float]:
    if name == "constant":
        return lambda z: 0.0
    if name == "linear":
        return lambda z: z
    if name == "log":
        return lambda z: math.log(max(z, 1e-12))
    if name == "power":
        raise ValueError("power is multiplicative: use Fitted.predict")
    assert tau is not None
    return lambda z: 1.0 - math.exp(-z / tau)


def _fit_affine(name: str, g: Sequence[float], y: Sequence[float]) -> Fitted:
    """y = a + b·g by weighted least squares (w = 1/y²), b >= 0 (else the constant)."""
    return _affine(name, g, y)[0]


def _affine(name: str, g: Sequence[float], y: Sequence[float]) -> tuple[Fitted, float]:
    """The fit and its relative sum of squared errors."""
    w = [1.0 / (v * v) for v in y]
    sw = sum(w)
    sg = sum(wi * gi for wi, gi in zip(w, g, strict=True))
    sy = sum(wi * yi for wi, yi in zip(w, y, strict=True))
    sgg = sum(wi * gi * gi for wi, gi in zip(w, g, strict=True))
    sgy = sum(wi * gi * yi for wi, gi, yi in zip(w, g, y, strict=True))
    det = sw * sgg - sg * sg
    b = (sw * sgy - sg * sy) / det if det > 1e-12 * max(sw * sgg, 1e-300) else 0.0
    b = max(b, 0.0)
    a = (sy - b * sg) / sw
    sse = sum(((a + b * gi - yi) / yi) ** 2 for gi, yi in zip(g, y, strict=True))
    return Fitted(name, a, b), sse


def _fit_power(z: Sequence[float], y: Sequence[float]) -> Fitted | None:
    """y = a·z^b, least squares in logs (a relative error), b >= 0; None above MAX_POWER."""
    lz = [math.log(v) for v in z]
    ly = [math.log(v) for v in y]
    n = len(z)
    mz, my = sum(lz) / n, sum(ly) / n
    szz = sum((v - mz) ** 2 for v in lz)
    b = sum((u - mz) * (v - my) for u, v in zip(lz, ly, strict=True)) / szz
    if b > MAX_POWER:
        return None
    b = max(b, 0.0)
    return Fitted("power", math.exp(my - b * mz), b)


def _fit_saturating(z: Sequence[float], y: Sequence[float]) -> Fitted:
    """y = a + b·(1 - e^(-z/τ)), τ from a grid scaled to the data, (a, b >= 0) by LS."""
    best: tuple[float, Fitted] | None = None
    top = max(z)
    for scale in SATURATION_SCALES:
        tau = scale * top
        fit, err = _affine("saturating", [1.0 - math.exp(-v / tau) for v in z], y)
        if best is None or err < best[0] - 1e-12:
            best = (err, Fitted("saturating", fit.a, fit.b, tau))
    assert best is not None
    return best[1]
