"""Partial pooling of the co-runners' (a, b): empirical Bayes shrinkage toward the pooled pair.

A co-runner met in a handful of runs pins (a, b) down badly (a trades against b when its runs
span few scale-outs), and an unpooled NNLS fit then reads noise as b up to 9. Each pair is
treated as a draw from a common prior N(μ, T), T = diag(τ_a², τ_b²); its estimate θ_k has
the sampling covariance V_k of the fit. μ and T are estimated from all pairs (a
Paule-Mandel style moment fixed point), so the shrinkage strength comes from the data: the
posterior mean μ + T(T + V_k)⁻¹(θ_k − μ) moves each pair toward μ in proportion to how little
its own runs say, and its posterior covariance is what the prediction interval propagates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_GROUPS = 3  # fewer pairs cannot estimate how much co-runners differ: no pooling
ROUNDS = 50


@dataclass(frozen=True)
class Pooled:
    """Posterior pairs (k, 2), their covariance (k, 2, 2), the weight of each pair's own data
    (k,: 1 = its own estimate, 0 = the pooled pair), the prior mean μ (2,) and variance τ² (2,),
    and the sampling covariance of the unpooled estimates (k, 2, 2)."""

    pairs: np.ndarray
    cov: np.ndarray
    own_weight: np.ndarray
    mean: np.ndarray
    tau2: np.ndarray
    sampling_cov: np.ndarray


def no_pooling(est: np.ndarray, cov: np.ndarray) -> Pooled:
    k = est.shape[0]
    mean = est.mean(axis=0) if k else np.zeros(2)
    return Pooled(est.copy(), cov.copy(), np.ones(k), mean, np.full(2, np.inf), cov.copy())


def shrink(est: np.ndarray, cov: np.ndarray, active: np.ndarray | None = None) -> Pooled:
    """Empirical Bayes posterior of each pair; `active` marks the components estimated at
    all (b is not when the effect is not scaled with 1/x)."""
    k = est.shape[0]
    if k < MIN_GROUPS:
        return no_pooling(est, cov)
    act = np.ones(2, bool) if active is None else np.asarray(active, bool)
    var = np.maximum(np.stack([cov[:, 0, 0], cov[:, 1, 1]], axis=1), 1e-18)
    tau2 = np.array([np.var(est[:, j]) if act[j] else 0.0 for j in range(2)])
    mean = est.mean(axis=0)
    for _ in range(ROUNDS):
        w = 1.0 / (tau2[None, :] + var)
        mean = (w * est).sum(axis=0) / w.sum(axis=0)
        moment = (w * ((est - mean) ** 2 - var)).sum(axis=0) / w.sum(axis=0)
        new = np.where(act, np.maximum(moment, 0.0), 0.0)
        if np.allclose(new, tau2, rtol=1e-6, atol=1e-12):
            tau2 = new
            break
        tau2 = new
    prior = np.diag(np.maximum(tau2, 1e-18))
    pairs = np.empty_like(est)
    post = np.empty_like(cov)
    weight = np.empty(k)
    w = 1.0 / (tau2[None, :] + var)
    mean_var = np.diag(np.where(act, 1.0 / w.sum(axis=0), 0.0))
    for i in range(k):
        gain = prior @ np.linalg.inv(prior + cov[i] + 1e-18 * np.eye(2))
        pairs[i] = mean + gain @ (est[i] - mean)
        rest = np.eye(2) - gain
        post[i] = prior - gain @ prior + rest @ mean_var @ rest.T
        diag = np.diag(gain)
        weight[i] = float(diag[act].mean()) if act.any() else 1.0
    pairs = np.maximum(pairs, 0.0)
    if not act[1]:
        pairs[:, 1] = 0.0
        post[:, 1, :] = post[:, :, 1] = 0.0
    return Pooled(pairs, post, np.clip(weight, 0.0, 1.0), mean, tau2, cov.copy())
