"""The CoBell paper's parametric model fitted as the paper fits it: all parameters at once.

    g(x, ov) = (θ0 + θ1/x + θ2·log x + θ3·x) · (1 + Σ_k (a_k + b_k/x)·ov_k),   θ, a, b >= 0

Section IV-A of the paper: "SciPy's curve_fit function is used to solve the bounded,
non-linear optimization problem of CoBell's extended runtime model", trust-region reflective
(Branch et al.). curve_fit with bounds is `scipy.optimize.least_squares(method="trf")` on the
residuals in seconds, which is what this does. The benchmarks' peer for cobell's interference
fit (issue 34, item 3); scipy is allowed here, never on predict's path.

The co-runner columns are the ones cobell fits (`prepare_runs`, then `pool_rare`: co-runner
jobs met too rarely share one pooled pair), so the two differ only in how they fit. The
optimum is non-convex in (θ, a, b): two starts (Ernest's NNLS curve on the runs with a = b =
0.1, and curve_fit's own default of all ones), the lower cost kept. No constant here was
fitted on any data set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from cobell_cli.core.model.co_runner_runs import pool_rare
from cobell_cli.core.model.data import POOLED, co_runner_key, prepare_runs
from cobell_cli.core.model.parametric import FEATURES, basis, fit_theta

START_PAIR = 0.1  # a_k = b_k at the first start: a mild slowdown, inside the bounds


class JointModel:
    """g fitted jointly by bounded least squares; predict(scale_outs, overlaps) as
    RuntimeModel's (one dict of {co-runner job: overlap ratio} for all, or one per scale-out)."""

    def fit(self, runs: Iterable[Any]) -> JointModel:
        from scipy.optimize import least_squares

        data = pool_rare(prepare_runs(runs))
        x, y, ov = data.scale_out, data.runtime_s, data.overlap
        self.co_runners_ = data.co_runners
        self.share_ = (ov > 0).sum(axis=0) / max(int((ov > 0).sum()), 1)
        k = ov.shape[1]

        def residual(p: np.ndarray) -> np.ndarray:
            return _g(p, x, ov) - y

        starts = [np.concatenate([fit_theta(x, y, FEATURES), np.full(2 * k, START_PAIR)]),
                  np.ones(len(FEATURES) + 2 * k)]
        fits = [least_squares(residual, p0, bounds=(0.0, np.inf), method="trf")
                for p0 in starts]
        self.params_ = min(fits, key=lambda f: f.cost).x
        return self

    def predict(self, scale_outs: Sequence[float],
                overlaps: Mapping[Any, float] | Sequence[Mapping[Any, float]] | None = None,
                ) -> np.ndarray:
        x = np.atleast_1d(np.asarray(scale_outs, float))
        rows = [overlaps] * x.size if overlaps is None or isinstance(overlaps, Mapping) \
            else list(overlaps)
        ov = np.array([self._row(r) for r in rows]).reshape(x.size, len(self.co_runners_))
        return _g(self.params_, x, ov)

    def _row(self, overlaps: Mapping[Any, float] | None) -> np.ndarray:
        """One run's overlap per fitted co-runner column. A job the fit never met counts as
        the pooled class where there is one, else as the run-weighted mean of the pairs (g
        is linear in ov, so its ratio spread over the columns by their shares of the runs),
        as RuntimeModel.interference answers."""
        names = list(self.co_runners_)
        out = np.zeros(len(names))
        for job, ratio in (overlaps or {}).items():
            key = co_runner_key(job)
            if ratio <= 0:
                continue
            if key in names and key != POOLED:
                out[names.index(key)] += float(ratio)
            elif POOLED in names:
                out[names.index(POOLED)] += float(ratio)
            else:
                out += float(ratio) * self.share_
        return out


def _g(p: np.ndarray, x: np.ndarray, ov: np.ndarray) -> np.ndarray:
    k = ov.shape[1]
    n = len(FEATURES)
    a, b = p[n:n + k], p[n + k:]
    return (basis(x) @ p[:n]) * (1.0 + ov @ a + (ov / x[:, None]) @ b)


def fit_joint(runs: Iterable[Any]) -> JointModel:
    """The paper's joint fit of g to a job's runs."""
    return JointModel().fit(runs)
