"""A job's runtime per node type with shared structure: one scale-out curve, a factor per type.

    runtime(x, ov, t) = g(x, ov) · φ_t

g is cobell's runtime model (curve and co-runners, core/model/) fitted to every run of the job
with its runtime divided by its type's factor; φ_t is the geometric mean of runtime / g over
the job's runs on t, the job's most-run type (`base_`) at 1. A few rounds alternate the two.
For a type the job ran on only a little, φ_t is shrunk toward the prior the jobs' profiles and
the types' speeds give (speeds.py), PRIOR_RUNS runs' worth; for a type it never ran on, the
prior is all there is. Runs without a node label ran on `DEFAULT_TYPE`.
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from cobell_cli.core.nodetype.speeds import TypeFactor, TypeSpeeds

DEFAULT_TYPE = ""  # runs with no node label: the cluster's default partition
ROUNDS = 3
# How many runs on a type the prior is worth. Set by hand at 942641d; measured since by
# bench.studies.nodetype_constants (bench/results/nodetype_constants.md: a job's other runs on a
# type predicted from 1-2 of them): on bench.hetero's seed 2018 the grid's best was 10, with 1
# within one SE; on seed 7, which chose nothing, 1 was the best (7.73 vs 8.21 at 10), so 1 stays.
PRIOR_RUNS = 1.0


def node_type(run: Mapping[str, Any]) -> str:
    label = run.get("node_label")
    return DEFAULT_TYPE if label is None else str(label).strip()


class NodeTypeModel:
    """Runtime per (scale-out, co-runners, node type); the estimator contract (learned `_`)."""

    def __init__(self, *, fit: Callable[[Sequence[Mapping[str, Any]]], Any] | None = None,
                 prior_runs: float = PRIOR_RUNS) -> None:
        self.fit_curve = fit
        self.prior_runs = prior_runs

    def fit(self, runs: Sequence[Mapping[str, Any]], profile: Mapping[str, float] | None = None,
            speeds: TypeSpeeds | None = None) -> NodeTypeModel:
        fit_curve = self.fit_curve or _default_fit
        usable = [r for r in runs if float(r.get("runtime_s") or 0) > 0]
        types = [node_type(r) for r in usable]
        counts = {t: types.count(t) for t in sorted(set(types))}
        self.base_ = max(counts, key=lambda t: (counts[t], t == DEFAULT_TYPE))
        self.runs_per_type_ = counts
        self.profile_, self.speeds_ = profile, speeds
        log_phi = dict.fromkeys(counts, 0.0)
        for _ in range(ROUNDS if len(counts) > 1 else 1):
            scaled = [{**r, "runtime_s": float(r["runtime_s"]) / math.exp(log_phi[t])}
                      for r, t in zip(usable, types, strict=True)]
            self.curve_ = fit_curve(scaled)
            if len(counts) == 1:
                break
            log_phi = self._factors(usable, types)
        self.log_factor_ = log_phi
        return self

    def _factors(self, runs: Sequence[Mapping[str, Any]], types: Sequence[str]) -> dict[str, float]:
        """log φ_t: the mean log residual of the curve on each type, base at 0, shrunk toward
        the prior by how many runs back it."""
        resid: dict[str, list[float]] = {}
        for r, t in zip(runs, types, strict=True):
            pred = float(self.curve_.predict([float(r["scale_out"])], r.get("overlaps") or {})[0])
            resid.setdefault(t, []).append(math.log(float(r["runtime_s"]) / pred))
        base = float(np.mean(resid[self.base_]))
        out = {}
        for t, values in resid.items():
            own = float(np.mean(values)) - base
            prior = self._prior_log(t)
            n = len(values)
            out[t] = own if prior is None or t == self.base_ else (
                (n * own + self.prior_runs * prior) / (n + self.prior_runs))
        return out

    def _prior_log(self, t: str) -> float | None:
        if self.speeds_ is None or self.profile_ is None:
            return None
        ratio = self.speeds_.ratio(self.profile_, t, self.base_)
        return math.log(ratio) if ratio is not None and ratio > 0 else None

    def factor(self, t: str) -> tuple[float, str] | None:
        """(φ_t, where it comes from: "runs" or "profile"), None for a type nothing says about."""
        t = DEFAULT_TYPE if t is None else str(t).strip()
        if t in self.log_factor_:
            return math.exp(self.log_factor_[t]), "runs"
        prior = self._prior_log(t)
        return (math.exp(prior), "profile") if prior is not None else None

    def predict(self, scale_outs: Sequence[float], overlaps: Any = None,
                node_type: str = DEFAULT_TYPE) -> np.ndarray:
        """Runtime per scale-out on `node_type` (ValueError for a type nothing says about)."""
        phi = self.factor(node_type)
        if phi is None:
            raise ValueError(f"no runs on node type {node_type!r} and no profile prior for it")
        return np.asarray(self.curve_.predict(scale_outs, overlaps), float) * phi[0]

    def predict_interval(self, scale_outs: Sequence[float], overlaps: Any = None,
                         node_type: str = DEFAULT_TYPE, confidence: float = 0.9,
                         ) -> tuple[np.ndarray, np.ndarray]:
        phi = self.factor(node_type)
        if phi is None:
            raise ValueError(f"no runs on node type {node_type!r} and no profile prior for it")
        lo, hi = self.curve_.predict_interval(scale_outs, overlaps, confidence=confidence)
        return np.asarray(lo, float) * phi[0], np.asarray(hi, float) * phi[0]

    def type_factors(self, job: str) -> list[TypeFactor]:
        """The measured factors, for learning the types' speeds (speeds.py)."""
        return [TypeFactor(job, t, math.exp(v), self.runs_per_type_[t])
                for t, v in self.log_factor_.items()]

    def describe(self) -> dict[str, Any]:
        return {"base": self.base_, "runs": dict(self.runs_per_type_),
                "factors": {t: round(math.exp(v), 4) for t, v in self.log_factor_.items()}}


def _default_fit(runs: Sequence[Mapping[str, Any]]) -> Any:
    from cobell_cli.core.model import fit_runtime_model

    return fit_runtime_model(runs)
