"""What `model show` says about the co-runners' pairs: each pair, what it rests on, and the
pool it was shrunk toward (RuntimeModel.describe)."""

from __future__ import annotations

from typing import Any

import numpy as np

THIN_EVIDENCE_SD = 0.25  # own sd of a + b/x, relative to the pooled effect, that `model show`
# calls thin evidence


def effect_sd(cov: np.ndarray, reference_scale_out: float) -> float:
    """sd of a + b/x at the smallest observed scale-out under a pair covariance."""
    g = np.array([1.0, 1.0 / reference_scale_out])
    return float(np.sqrt(max(g @ cov @ g, 0.0)))


def describe_pairs(model: Any) -> dict[str, dict[str, Any]]:
    """Each co-runner's pair of a fitted RuntimeModel, by co-runner key."""
    return {k: _describe_pair(model, i, k) for i, k in enumerate(model.co_runners_)}


def _describe_pair(m: Any, i: int, k: str) -> dict[str, Any]:
    """The pair and what it rests on. Thin: its own runs leave the effect at the smallest
    scale-out uncertain by more than THIN_EVIDENCE_SD of the pooled effect (a low own
    weight alone can also mean co-runners simply do not differ)."""
    c = m.pair_cov_[i]
    x_ref = m.reference_scale_out_
    mean = m.pool_mean_
    pooled_effect = max(float(mean[0] + mean[1] / x_ref), 1e-9)
    own_sd = effect_sd(m.sampling_cov_[i], x_ref)
    return {"a": float(m.a_[i]), "b": float(m.b_[i]),
            "runs": m.interference_runs_[k],
            "overlap_s": m.overlap_s_[k],
            "own_weight": float(m.own_weight_[i]),
            "unpooled": {"a": float(m.a_unpooled_[i]), "b": float(m.b_unpooled_[i])},
            "sd": {"a": float(np.sqrt(max(c[0, 0], 0.0))),
                   "b": float(np.sqrt(max(c[1, 1], 0.0)))},
            "effect_sd_own": own_sd,
            "effect_sd": effect_sd(c, x_ref),
            "reference_scale_out": x_ref,
            "thin": bool(own_sd > THIN_EVIDENCE_SD * pooled_effect)}


def describe_pool(mean: np.ndarray, tau2: np.ndarray) -> dict[str, Any] | None:
    """The pool's mean pair and spread between jobs; None when the pairs were not pooled."""
    if not np.all(np.isfinite(tau2)):
        return None
    return {"mean": {"a": float(mean[0]), "b": float(mean[1])},
            "tau": {"a": float(np.sqrt(tau2[0])), "b": float(np.sqrt(tau2[1]))}}
