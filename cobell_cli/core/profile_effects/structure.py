"""How much a co-runner slows a job, from the two jobs' resource profiles (shares.py).

Every pair the history has seen gives one observation: the effect e_jk = a + b/x_ref of
co-runner k on job j at j's reference scale-out, as j's runtime model estimated it from the
runs they overlapped, with its sampling variance. A form predicts e_jk for any pair, seen or
not; the candidates, fewest fitted parameters first (the paper's pooled effect before its
extensions):

* pooled   e_jk = μ_j, job j's pooled effect (what cobell does today for an unseen pair);
* dot      e_jk = c · (u_j · u_k): the more two jobs ask of the same resources, the more they
           collide (Paragon's and Bubble-Up's sensitivity times pressure, with one weight;
           u without the `wait` class, which presses on nothing);
* relative e_jk = μ_j · (u_j · u_k) / mean over j's seen co-runners k' of (u_j · u_k'): job j's
           own level, moved by how much k presses on what j needs compared with the co-runners
           j has met (dot where j has met none);
* diagonal e_jk = Σ_r w_r u_jr u_kr, w >= 0: a weight per resource class.

`choose` picks one by leave-one-pair-out cross-validation (mean absolute error, each pair
weighted by the precision of its estimate) and the one-standard-error rule (CONVENTIONS
"Models"), then shrinks it toward the victim's pooled level by the weight its held-out
predictions earn (`shrink_`: 0 is the pooled effect, 1 the form's own). `residual_sd_`
is the spread of its held-out errors (what the bound widens by). Small and replaceable: the
generic nested-CV machinery of core/model/ takes its place when it lands.
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cobell_cli.core.profile_effects.shares import CLASSES, vector

FORMS = ("pooled", "dot", "relative", "diagonal")  # fewest fitted parameters first
# The classes two jobs collide on: waiting presses on nothing and suffers from nothing.
PRESSED = tuple(c for c in CLASSES if c != "wait")
N_PARAMS = {"pooled": 0, "dot": 1, "relative": 1, "diagonal": len(PRESSED)}
# Fewer seen pairs cannot say which form generalises: pooled. Set by hand at 533024c, not
# measured out of sample: the largest form has len(PRESSED) = 4 parameters, and the one-SE
# rule's standard error over fewer held-out pairs says next to nothing.
MIN_PAIRS = 4


@dataclass(frozen=True)
class PairEffect:
    """One seen pair: co-runner `co_runner`'s effect on `victim` at the victim's reference
    scale-out, and the variance of that estimate."""

    victim: str
    co_runner: str
    effect: float
    variance: float


@dataclass
class Structure:
    """A fitted form: predicts e_jk for a (victim, co-runner) pair from their profiles."""

    form: str = "pooled"
    profiles: Mapping[str, Sequence[float]] = field(default_factory=dict)
    weights_: np.ndarray | None = None  # c (dot, relative) or w (diagonal)
    victim_level_: dict[str, float] = field(default_factory=dict)  # μ_j
    victim_dot_: dict[str, float] = field(default_factory=dict)  # mean u_j · u_k' over seen k'
    global_level_: float = 0.0
    cv_error_: dict[str, float] = field(default_factory=dict)  # mean abs error per form
    cv_se_: dict[str, float] = field(default_factory=dict)
    residual_sd_: float = 0.0  # rms held-out error of the chosen form
    shrink_: float = 1.0  # weight of the form against the victim's pooled level
    n_pairs_: int = 0

    def fit(self, pairs: Sequence[PairEffect]) -> Structure:
        """The chosen form's parameters on `pairs` (weighted by their precision)."""
        self.n_pairs_ = len(pairs)
        levels = _levels(pairs)
        self.victim_level_, self.global_level_ = levels
        self.victim_dot_ = self._victim_dots(pairs)
        if self.form in ("dot", "relative", "diagonal"):
            self.weights_ = _fit_weights(self.form, pairs, self.profiles)
        return self

    def knows(self, job: str) -> bool:
        return job in self.profiles

    def _u(self, job: str) -> np.ndarray:
        return _pressed(self.profiles[job])

    def predict(self, victim: str, co_runner: str) -> float | None:
        """e_jk, shrunk toward the victim's pooled level by `shrink_`; None when the form
        needs a profile one of the two jobs lacks."""
        level = self.victim_level_.get(victim, self.global_level_)
        raw = self._form(victim, co_runner, level)
        return None if raw is None else level + self.shrink_ * (raw - level)

    def _form(self, victim: str, co_runner: str, level: float) -> float | None:
        if self.form == "pooled":
            return level
        if not (self.knows(victim) and self.knows(co_runner)):
            return None
        u, v = self._u(victim), self._u(co_runner)
        w = self.weights_ if self.weights_ is not None else np.zeros(len(PRESSED))
        if self.form == "diagonal":
            return float(np.sum(w * u * v))
        dot = float(u @ v)
        seen = self.victim_dot_.get(victim)
        if self.form == "relative" and victim in self.victim_level_ and seen:
            return level * dot / seen
        return float(w[0] * dot)

    def _victim_dots(self, pairs: Sequence[PairEffect]) -> dict[str, float]:
        out: dict[str, list[float]] = {}
        for p in pairs:
            if self.knows(p.victim) and self.knows(p.co_runner):
                u, v = self._u(p.victim), self._u(p.co_runner)
                out.setdefault(p.victim, []).append(float(u @ v))
        return {j: float(np.mean(v)) for j, v in out.items() if np.mean(v) > 0}

    def describe(self) -> dict[str, object]:
        return {
            "form": self.form,
            "pairs": self.n_pairs_,
            "weights": None if self.weights_ is None else [float(w) for w in self.weights_],
            "classes": list(PRESSED),
            "cv_mean_abs_error": dict(self.cv_error_),
            "shrink": self.shrink_,
            "residual_sd": self.residual_sd_,
        }


def _pressed(profile: Sequence[float]) -> np.ndarray:
    """A profile vector (CLASSES order) reduced to the classes jobs collide on."""
    return np.array([float(profile[CLASSES.index(c)]) for c in PRESSED])


def _precision(p: PairEffect, floor: float) -> float:
    return 1.0 / (max(p.variance, 0.0) + floor)


def _variance_floor(pairs: Sequence[PairEffect]) -> float:
    """A pair's weight is capped: one pair with many runs should not decide the form alone."""
    v = [p.variance for p in pairs if math.isfinite(p.variance) and p.variance > 0]
    return float(np.median(v)) if v else 1e-4


def _levels(pairs: Sequence[PairEffect]) -> tuple[dict[str, float], float]:
    """μ_j per victim (precision-weighted mean of its pairs' effects) and over all pairs."""
    floor = _variance_floor(pairs)
    by: dict[str, list[tuple[float, float]]] = {}
    for p in pairs:
        by.setdefault(p.victim, []).append((p.effect, _precision(p, floor)))
    levels = {j: sum(e * w for e, w in v) / sum(w for _, w in v) for j, v in by.items()}
    every = [(p.effect, _precision(p, floor)) for p in pairs]
    total = sum(e * w for e, w in every) / sum(w for _, w in every) if every else 0.0
    return levels, float(total)


def _fit_weights(form: str, pairs: Sequence[PairEffect],
                 profiles: Mapping[str, Sequence[float]]) -> np.ndarray:
    """Non-negative weights of the dot (one) or diagonal (one per class) form, in weighted
    least squares on the pairs whose two jobs have profiles."""
    from cobell_cli.core.model.parametric import nnls_fit

    rows, y, w = [], [], []
    floor = _variance_floor(pairs)
    for p in pairs:
        if p.victim in profiles and p.co_runner in profiles:
            u, v = _pressed(profiles[p.victim]), _pressed(profiles[p.co_runner])
            rows.append(u * v if form == "diagonal" else [float(u @ v)])
            y.append(p.effect)
            w.append(math.sqrt(_precision(p, floor)))
    k = len(PRESSED) if form == "diagonal" else 1
    if not rows:
        return np.zeros(k)
    return np.asarray(nnls_fit(np.asarray(rows, float), np.asarray(y, float), np.asarray(w)))


@dataclass(frozen=True)
class _HeldOut:
    """One pair predicted without it: by the form, by the pooled level; its effect, weight."""

    pred: float
    pooled: float
    effect: float
    weight: float

    @property
    def error(self) -> float:
        return self.pred - self.effect


def _held_out(form: str, pairs: Sequence[PairEffect],
              profiles: Mapping[str, Sequence[float]]) -> list[_HeldOut]:
    """Leave-one-pair-out: each pair (both directions held out) predicted by the form fitted
    on the others; pairs the form cannot predict (a profile missing) count with pooled's."""
    out = []
    floor = _variance_floor(pairs)
    for i, p in enumerate(pairs):
        rest = [q for j, q in enumerate(pairs) if j != i
                and {q.victim, q.co_runner} != {p.victim, p.co_runner}]
        if not rest:
            continue
        pooled = Structure("pooled", profiles).fit(rest).predict(p.victim, p.co_runner)
        pred = Structure(form, profiles).fit(rest).predict(p.victim, p.co_runner)
        assert pooled is not None
        out.append(_HeldOut(float(pooled if pred is None else pred), float(pooled), p.effect,
                            _precision(p, floor)))
    return out


def _shrink(held: Sequence[_HeldOut]) -> float:
    """The weight λ in [0, 1] of the form against the pooled level that fits the held-out
    pairs best (weighted least squares of e - μ on ê - μ): how far the evidence says the
    form's departures from the pooled effect are to be believed."""
    d = np.array([h.pred - h.pooled for h in held])
    y = np.array([h.effect - h.pooled for h in held])
    w = np.array([h.weight for h in held])
    den = float(np.sum(w * d * d))
    return 1.0 if den <= 0 else float(np.clip(np.sum(w * d * y) / den, 0.0, 1.0))


def choose(pairs: Sequence[PairEffect], profiles: Mapping[str, Sequence[float]],
           forms: Sequence[str] = FORMS) -> Structure:
    """The form by leave-one-pair-out CV, the simplest within one standard error of the best,
    fitted on all pairs. Fewer than MIN_PAIRS pairs, or no profiles: pooled."""
    usable = [p for p in pairs if math.isfinite(p.effect)]
    if len(usable) < MIN_PAIRS or not profiles:
        return Structure("pooled", profiles).fit(usable)
    held = {f: _held_out(f, usable, profiles) for f in forms}
    mean, se = {}, {}
    for f, h in held.items():
        if h:
            mean[f], se[f] = _weighted_mean_se([abs(x.error) for x in h], [x.weight for x in h])
    best = min(mean, key=mean.get)
    chosen = next(f for f in forms if f in mean and mean[f] <= mean[best] + se[best])
    out = Structure(chosen, profiles).fit(usable)
    out.cv_error_, out.cv_se_ = mean, se
    h = held[chosen]
    out.shrink_ = _shrink(h) if chosen != "pooled" else 1.0
    d = np.array([x.pooled + out.shrink_ * (x.pred - x.pooled) - x.effect for x in h])
    w = np.array([x.weight for x in h])
    out.residual_sd_ = float(np.sqrt(np.sum(w * d * d) / np.sum(w)))
    return out


def _weighted_mean_se(values: Sequence[float], weights: Sequence[float]) -> tuple[float, float]:
    """Precision-weighted mean of the held-out errors and its standard error (a pair its runs
    barely pin down says little about which form is right)."""
    v, w = np.asarray(values, float), np.asarray(weights, float)
    w = w / w.sum()
    mean = float(w @ v)
    n_eff = 1.0 / float(np.sum(w * w))
    var = float(w @ (v - mean) ** 2) * n_eff / max(n_eff - 1.0, 1.0)
    return mean, math.sqrt(var / n_eff) if n_eff > 1 else math.inf


def profile_vectors(profiles: Mapping[str, Mapping[str, float] | None],
                    ) -> dict[str, list[float]]:
    """{job: its profile as a vector in CLASSES order}, jobs without a profile left out."""
    return {job: vector(p) for job, p in profiles.items() if p}
