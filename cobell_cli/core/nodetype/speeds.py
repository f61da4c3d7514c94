"""How fast each node type serves each resource, learned from the jobs that ran on several types.

A job spends its task time on resources in the proportions of its profile (time shares s_j,
core/profile_effects/shares.py, normalised to sum 1 over TIME_CLASSES). On node type t each
resource r takes c_tr times as long as on the reference type (c_ref = 1), so job j's runtime on
t relative to the reference is ρ_jt = Σ_r s_jr c_tr: RUPAM's reading of heterogeneity (a
job gains on the type that is fast at its bottleneck), Amdahl per resource.

`TypeSpeeds.fit` learns c_t for every type from the jobs' measured factors φ_jt (the per-type
factors of each job's own runs, factors.py) by non-negative least squares with a ridge toward
1 (no difference), so few jobs on a type move it little. `prior(shares, t, base)` is then the
expected factor of a job on a type it never ran on, relative to a type it did run on.
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from cobell_cli.core.profile_effects.shares import CLASSES

TIME_CLASSES = ("cpu", "disk", "network", "other")  # other: memory and waiting
# Weight of "no difference" (c_tr = 1) against one job's measured factor. Set by hand at
# 942641d; measured since by bench.studies.nodetype_constants (leave one type out): flat on
# bench.hetero's seed 2018 (10.7-11.0, best 1, 0.2 within one SE); on seed 7, which chose
# nothing, 0.2 was the best (10.1 vs 15.2 at 1), so 0.2 stays.
RIDGE = 0.2


def time_shares(profile: Mapping[str, float]) -> np.ndarray:
    """A profile's time split over TIME_CLASSES, summing to 1 (the byte classes are shares of
    a task's time in the sense of shares.py; what is left is `other`)."""
    cpu = float(profile.get("cpu", 0.0))
    disk = float(profile.get("disk", 0.0))
    net = float(profile.get("network", 0.0))
    other = float(profile.get("memory", 0.0)) + float(profile.get("wait", 0.0))
    v = np.array([cpu, disk, net, other])
    total = v.sum()
    return v / total if total > 0 else np.full(len(TIME_CLASSES), 1 / len(TIME_CLASSES))


@dataclass(frozen=True)
class TypeFactor:
    """One job's measured factor on one type, relative to its reference-type level."""

    job: str
    node_type: str
    factor: float
    runs: int


@dataclass
class TypeSpeeds:
    """c_t per node type (TIME_CLASSES order); the reference type's is all ones."""

    reference: str | None = None
    slowness_: dict[str, np.ndarray] = field(default_factory=dict)
    held_out_log_sd_: float = 0.0  # leave-one-job-out error of the ratios (log)

    def fit(self, factors: Sequence[TypeFactor],
            profiles: Mapping[str, Mapping[str, float]], held_out: bool = True) -> TypeSpeeds:
        """Each job's factors divided by its factor on the reference type (the type most jobs
        ran on), then per type an NNLS of those ratios on the jobs' time shares; with
        `held_out`, the log error of each job's ratios predicted without it (its sd widens
        the bound of a type a job never ran on)."""
        self._fit(factors, profiles)
        if held_out:
            self.held_out_log_sd_ = _held_out_sd(factors, profiles)
        return self

    def _fit(self, factors: Sequence[TypeFactor],
             profiles: Mapping[str, Mapping[str, float]]) -> TypeSpeeds:
        by_job: dict[str, dict[str, TypeFactor]] = {}
        for f in factors:
            by_job.setdefault(f.job, {})[f.node_type] = f
        counts: dict[str, int] = {}
        for per in by_job.values():
            for t in per:
                counts[t] = counts.get(t, 0) + 1
        if not counts:
            return self
        self.reference = max(sorted(counts), key=lambda t: counts[t])
        k = len(TIME_CLASSES)
        self.slowness_ = {self.reference: np.ones(k)}
        for t in sorted(counts):
            if t == self.reference:
                continue
            rows, target = [], []
            for job, per in by_job.items():
                if t in per and self.reference in per and job in profiles:
                    rows.append(time_shares(profiles[job]))
                    target.append(per[t].factor / per[self.reference].factor)
            self.slowness_[t] = _ridge_nnls(np.array(rows).reshape(-1, k), np.array(target))
        return self

    def ratio(self, profile: Mapping[str, float], node_type: str, base: str) -> float | None:
        """Expected runtime on `node_type` over runtime on `base` for a job of this profile;
        None when either type is unknown."""
        if node_type not in self.slowness_ or base not in self.slowness_:
            return None
        s = time_shares(profile)
        num, den = float(s @ self.slowness_[node_type]), float(s @ self.slowness_[base])
        return num / den if den > 0 and math.isfinite(num) else None

    def describe(self) -> dict[str, object]:
        return {"reference": self.reference, "classes": list(TIME_CLASSES),
                "held_out_log_sd": self.held_out_log_sd_,
                "slowness": {t: [round(float(v), 4) for v in c]
                             for t, c in self.slowness_.items()}}


def _held_out_sd(factors: Sequence[TypeFactor],
                 profiles: Mapping[str, Mapping[str, float]]) -> float:
    """rms log error of each job's measured ratios between its types, predicted by speeds
    fitted without the job."""
    jobs = sorted({f.job for f in factors})
    errors = []
    for job in jobs:
        mine = {f.node_type: f.factor for f in factors if f.job == job}
        if len(mine) < 2 or job not in profiles:
            continue
        rest = TypeSpeeds()._fit([f for f in factors if f.job != job], profiles)
        base = max(mine, key=lambda t: (t == rest.reference, t))
        for t, phi in mine.items():
            pred = rest.ratio(profiles[job], t, base) if t != base else None
            if pred:
                errors.append(math.log(pred) - math.log(phi / mine[base]))
    return float(np.sqrt(np.mean(np.square(errors)))) if errors else 0.0


def _ridge_nnls(rows: np.ndarray, target: np.ndarray) -> np.ndarray:
    """min Σ (s·c - ρ)² + RIDGE² Σ (c_r - 1)², c >= 0: NNLS on rows stacked with the ridge."""
    from cobell_cli.core.model.parametric import nnls_fit

    k = len(TIME_CLASSES)
    design = np.vstack([rows, RIDGE * np.eye(k)])
    y = np.concatenate([target, RIDGE * np.ones(k)])
    return np.asarray(nnls_fit(design, y))


__all__ = ["CLASSES", "TIME_CLASSES", "TypeFactor", "TypeSpeeds", "time_shares"]
