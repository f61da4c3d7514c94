"""From fitted runtime models to seen pairs, and from a chosen structure to a job's priors.

`pair_effects` reads, from a job's model description (`RuntimeModel.describe()`, or a cached
`ModelTable`'s), each co-runner the model has a pair of its own for: its unpooled (a, b) as
the effect at the model's reference scale-out and the sampling variance of that effect (what
the job's own runs say, before partial pooling moved it). The pooled class is no pair.

`PairPriors` answers, for one job, the (a, b) and covariance of co-runners the job's model has
no pair of its own for, from the structure (structure.py): the runtime model consults it in
`interference` and `pair_covariance` (its `pair_prior`), so the point prediction and the
interval (delta method) use it, and a pair's own runs take over as soon as the model has a
pair of its own. The calibrated bound charges such a co-runner at least the most harmful pair
the model holds (calibration.stranger_factors): the prior is chosen for its point accuracy.
The predicted effect is split into a and b as the job's pooled pair splits it; its variance is
the structure's held-out error.
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cobell_cli.core.profile_effects.structure import PairEffect, Structure

POOLED_KEY = "*"  # core/model/data.py POOLED: the "any other job" class

Pair = tuple[float, float]
Cov = tuple[float, float, float]


def pair_effects(victim: str, description: Mapping[str, Any]) -> list[PairEffect]:
    """The seen pairs of one job's model (its description): effect a + b/x_ref, unpooled."""
    out = []
    for co_runner, p in (description.get("interference") or {}).items():
        if co_runner in (POOLED_KEY, victim) or not isinstance(p, Mapping):
            continue
        unpooled = p.get("unpooled") or {"a": p.get("a", 0.0), "b": p.get("b", 0.0)}
        x_ref = float(p.get("reference_scale_out") or 1.0)
        effect = float(unpooled["a"]) + float(unpooled["b"]) / x_ref
        sd = float(p.get("effect_sd_own", p.get("effect_sd", 0.0)) or 0.0)
        if math.isfinite(effect) and math.isfinite(sd):
            out.append(PairEffect(victim, str(co_runner), effect, sd * sd))
    return out


def pooled_split(description: Mapping[str, Any]) -> tuple[float, float, float]:
    """(share of a, share of b, x_ref): how the job's pooled effect at x_ref splits into a
    and b/x_ref; (1, 0, 1) when the model has no pooled pair (the effect does not shrink)."""
    pairs = description.get("interference") or {}
    pool = (description.get("combination") or {}).get("pooling") or {}
    mean = pool.get("mean") or pairs.get(POOLED_KEY)
    x_ref = next((float(p.get("reference_scale_out") or 1.0) for p in pairs.values()
                  if isinstance(p, Mapping)), 1.0)
    if not mean:
        return 1.0, 0.0, x_ref
    a, b = max(float(mean["a"]), 0.0), max(float(mean["b"]), 0.0)
    total = a + b / x_ref
    if total <= 0:
        return 1.0, 0.0, x_ref
    return a / total, (b / x_ref) / total, x_ref


@dataclass(frozen=True)
class PairPriors:
    """One job's priors per co-runner job: (a, b) and (var a, cov, var b). Callable as the
    runtime model's `pair_prior`: job -> ((a, b), cov) or None."""

    victim: str
    pairs: Mapping[str, tuple[Pair, Cov]] = field(default_factory=dict)
    form: str = "pooled"

    def __call__(self, job: Any) -> tuple[Pair, Cov] | None:
        return self.pairs.get("" if job is None else str(job).strip())

    def describe(self) -> dict[str, Any]:
        return {"form": self.form,
                "pairs": {k: {"a": p[0], "b": p[1], "sd_effect": math.sqrt(max(c[0], 0.0))}
                          for k, (p, c) in self.pairs.items()}}


def priors_for(victim: str, co_runners: Iterable[str], structure: Structure,
               description: Mapping[str, Any]) -> PairPriors:
    """The victim's priors for the co-runner jobs its model has no pair of its own for.
    None of them when the structure chose the pooled form (today's behaviour stands)."""
    own = {k for k in (description.get("interference") or {}) if k != POOLED_KEY}
    if structure.form == "pooled":
        return PairPriors(victim, {}, "pooled")
    share_a, share_b, x_ref = pooled_split(description)
    var = structure.residual_sd_ ** 2
    out: dict[str, tuple[Pair, Cov]] = {}
    for k in co_runners:
        if k in own or k == victim or k in out:
            continue
        effect = structure.predict(victim, k)
        if effect is None or not math.isfinite(effect):
            continue
        effect = max(effect, 0.0)
        pair = (effect * share_a, effect * share_b * x_ref)
        # all of the effect's variance along the pooled split's direction
        ca, cb = share_a, share_b * x_ref
        out[k] = (pair, (var * ca * ca, var * ca * cb, var * cb * cb))
    return PairPriors(victim, out, structure.form)


class PriorFit:
    """`fit` whose model of `job` (its runs) consults its priors for `co_runners`
    (`pair_prior`); models of other jobs come back as `fit` made them. `attached_`: the
    priors last given to the job's model (what `predict --json` reports)."""

    def __init__(self, fit: Callable[..., Any], job: str, co_runners: Iterable[str],
                 structure: Structure) -> None:
        self.fit, self.job, self.structure = fit, job, structure
        self.co_runners = list(co_runners)
        self.attached_: PairPriors | None = None

    def __call__(self, runs: Sequence[Mapping[str, Any]], **params: Any) -> Any:
        model = self.fit(runs, **params)
        if runs and all(r.get("job", self.job) == self.job for r in runs):
            priors = priors_for(self.job, self.co_runners, self.structure, model.describe())
            model.pair_prior = priors if priors.pairs else None
            self.attached_ = priors
        return model

    def describe(self) -> dict[str, Any]:
        """The structure and the priors the job's model got."""
        out: dict[str, Any] = {"structure": self.structure.describe()}
        out["priors"] = self.attached_.describe()["pairs"] if self.attached_ else {}
        return out
