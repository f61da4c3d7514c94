"""How far above the point prediction a confident plan must look: the upper runtime bound.

The runtime model's own interval comes from cross-validating the scale-out curve; it knows
nothing about how wrong the interference term can be. Two corrections, both pure:

* Calibration on real errors. Once the job has a record of what `cobell submit` planned and
  what happened (>= CALIBRATION_MIN_RUNS model-planned runs), a bound on the next
  runtime / predicted from the recorded ratios (conformal; Student t while they are few)
  bounds the next run (`outcome_calibration`). Before that record exists,
  the same quantile of the whole interference model's leave-one-out errors on its training
  runs stands in (`jackknife_calibration`): each run is predicted, at its measured overlaps,
  by the model fitted without it, so the error of the (a, b) pairs and of the alone curve
  they were separated from counts, not only the scale-out curve's.
* Strangers. A co-runner job met too rarely to have its own (a, b) gets the pooled pair,
  which averages jobs the target happened to meet and can be far below what this one does.
  Until it is known, the upper bound charges it the most harmful pair the model has.

Pure: no I/O, no clock; plain Python, so the planner need not carry numpy for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

CALIBRATION_MIN_RUNS = 5  # fewer recorded outcomes say too little about the error's tail
CALIBRATION_RECENT_RUNS = 30  # the model improves as history grows: judge it on recent runs
JACKKNIFE_MIN_RUNS = 4  # leave-one-out needs a model fitted on at least three runs
JACKKNIFE_MAX_FITS = 10  # more runs: CV+ with this many interleaved folds bounds the cost
POOLED_KEY = "*"  # the pooled co-runner class in the model's description (model/data.py)

Overlaps = Mapping[Any, float]


class InterferenceModel(Protocol):
    """What the calibration needs of a fitted runtime model (see plan.RuntimeModel)."""

    def predict(self, scale_outs: Any, overlaps: Any = None) -> Any: ...

    def interference(self, job: Any) -> tuple[float, float]: ...

    def describe(self) -> dict: ...


def ratio_bound(ratios: Sequence[float], confidence: float) -> float:
    """An upper bound on the next of n exchangeable ratios, holding with probability >= p.

    Split conformal when n allows it: the ceil((n + 1)·p)-th smallest, no distributional
    assumption. With fewer ratios than that rank needs (n < 32 at p = 0.97) conformal can only
    say "unbounded", and the largest seen covers just n/(n + 1); then the normal-theory
    prediction bound for log ratios (Student t, n - 1 degrees of freedom), never below the
    largest ratio seen.
    """
    if not ratios:
        raise ValueError("no ratios to bound")
    n = len(ratios)
    rank = math.ceil((n + 1) * confidence)
    ordered = sorted(ratios)
    if rank <= n:
        return ordered[rank - 1]
    if n < 3:
        return ordered[-1]
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / (n - 1))
    t = student_t_quantile(confidence, n - 1)
    return max(ordered[-1], math.exp(mean + t * sd * math.sqrt(1 + 1 / n)))


def student_t_quantile(p: float, dof: int) -> float:
    """Student's t quantile by the Cornish-Fisher expansion around the normal one
    (Abramowitz & Stegun 26.7.5); scipy.stats is not imported for it (~0.4 s per predict)."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(p)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / dof + g2 / dof**2 + g3 / dof**3 + g4 / dof**4


def outcome_calibration(
    runs: Sequence[Mapping[str, Any]], confidence: float
) -> dict[str, Any] | None:
    """A bound on runtime / predicted from the job's earlier model-planned runs.

    `cobell submit` records the prediction it planned on (`predicted_s`, `model` = phase) next to
    the measured runtime, so their ratios are the model's real out-of-sample errors, overlap
    prediction included. None when there are too few.
    """
    ratios = [
        float(r["runtime_s"]) / float(r["predicted_s"])
        for r in runs
        if r.get("model") == "model"
        and (r.get("predicted_s") or 0) > 0
        and (r.get("runtime_s") or 0) > 0
    ][-CALIBRATION_RECENT_RUNS:]
    if len(ratios) < CALIBRATION_MIN_RUNS:
        return None
    return {
        "source": "outcomes",
        "runs": len(ratios),
        "confidence": confidence,
        "ratio_quantile": ratio_bound(ratios, confidence),
    }


def jackknife_ratios(
    runs: Sequence[Mapping[str, Any]],
    fit: Callable[[Sequence[Mapping[str, Any]]], InterferenceModel],
    max_fits: int = JACKKNIFE_MAX_FITS,
) -> list[float]:
    """runtime / prediction of every run by the model fitted without it (its fold).

    Up to `max_fits` runs this is leave-one-out; beyond, runs i, i + k, i + 2k, ... form
    fold i of k = max_fits (CV+), so the cost stays at k fits however long the history.
    A fold whose remaining runs cannot be fitted (ValueError) contributes nothing.
    """
    k = min(len(runs), max_fits)
    ratios: list[float] = []
    for fold in range(k):
        held = [r for i, r in enumerate(runs) if i % k == fold]
        rest = [r for i, r in enumerate(runs) if i % k != fold]
        try:
            model = fit(rest)
        except ValueError:
            continue
        for r in held:
            pred = float(model.predict([float(r["scale_out"])], r.get("overlaps") or {})[0])
            if pred > 0:
                ratios.append(float(r["runtime_s"]) / pred)
    return ratios


def jackknife_calibration(
    runs: Sequence[Mapping[str, Any]],
    fit: Callable[[Sequence[Mapping[str, Any]]], InterferenceModel],
    confidence: float,
) -> dict[str, Any] | None:
    """`ratio_bound` of the leave-one-out ratios: what `outcome_calibration` would say if
    the model had planned its own training runs. None with too few runs to leave one out."""
    if len(runs) < JACKKNIFE_MIN_RUNS:
        return None
    ratios = jackknife_ratios(runs, fit)
    if len(ratios) < JACKKNIFE_MIN_RUNS:
        return None
    return {
        "source": "jackknife",
        "runs": len(ratios),
        "confidence": confidence,
        "ratio_quantile": ratio_bound(ratios, confidence),
    }


def _rc(pair: tuple[float, float], scale_out: float) -> float:
    a, b = pair
    return a + b / scale_out


def stranger_factors(
    scale_outs: Sequence[float],
    overlaps: Sequence[Overlaps] | None,
    model: InterferenceModel,
) -> tuple[list[float], list[str]]:
    """Per candidate, (1 + Σ rc_bound·ov) / (1 + Σ rc·ov), and the co-runners it widened for.

    rc_bound is the co-runner's own a + b/x when the model has its pair; for a stranger (a
    job without its own pair, pooled, or an unknown app) the largest a + b/x of any pair the
    model holds, pooled included. Factors >= 1; all 1 when the model names no pairs.
    """
    ones = [1.0] * len(scale_outs)
    pairs = (model.describe() or {}).get("interference")
    if not overlaps or not isinstance(pairs, Mapping) or not pairs:
        return ones, []
    own = {str(job) for job in pairs if job != POOLED_KEY}
    all_pairs = [(float(p["a"]), float(p["b"])) for p in pairs.values()]
    factors: list[float] = []
    strangers: set[str] = set()
    for x, row in zip(scale_outs, overlaps, strict=True):
        model_rc = bound_rc = 0.0
        for job, ratio in (row or {}).items():
            rc = _rc(model.interference(job), x)
            model_rc += rc * ratio
            if job is not None and str(job) in own:
                bound_rc += rc * ratio
            else:
                bound_rc += max(rc, *(_rc(p, x) for p in all_pairs)) * ratio
                if ratio > 0:
                    strangers.add("unknown app" if job is None else str(job))
        factors.append((1.0 + bound_rc) / (1.0 + model_rc))
    return factors, sorted(strangers)


def calibrated_upper(
    *,
    runs: Sequence[Mapping[str, Any]],
    scale_outs: Sequence[float],
    predicted_s: Sequence[float],
    upper_s: Sequence[float],
    overlaps: Sequence[Overlaps] | None,
    model: InterferenceModel,
    fit: Callable[[Sequence[Mapping[str, Any]]], InterferenceModel],
    confidence: float,
    jackknife: bool,
) -> tuple[list[float], dict[str, Any] | None]:
    """The upper bound per candidate and the calibration record behind it (None: none used).

    upper = max(the model's interval, predicted · calibrated ratio) · stranger factor: the
    stranger factor swaps an (a, b) guess for a worse plausible one, the ratio is the error
    of the model on top of whatever (a, b) it uses. `jackknife` allows the leave-one-out
    stand-in (it costs up to JACKKNIFE_MAX_FITS fits) while the outcome record is too short.
    """
    calibration = outcome_calibration(runs, confidence)
    if calibration is None and jackknife:
        calibration = jackknife_calibration(runs, fit, confidence)
    ratio = calibration["ratio_quantile"] if calibration is not None else 0.0
    factors, strangers = stranger_factors(scale_outs, overlaps, model)
    upper = [
        max(float(u), float(p) * ratio) * f
        for u, p, f in zip(upper_s, predicted_s, factors, strict=True)
    ]
    if strangers:
        calibration = {**(calibration or {}), "strangers": strangers}
    return upper, calibration


__all__ = [
    "CALIBRATION_MIN_RUNS",
    "CALIBRATION_RECENT_RUNS",
    "JACKKNIFE_MAX_FITS",
    "calibrated_upper",
    "jackknife_calibration",
    "jackknife_ratios",
    "outcome_calibration",
    "ratio_bound",
    "stranger_factors",
    "student_t_quantile",
]
