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

from cobell_cli.core.sorted_values import median

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
    all (b is not when the effect is not scaled with 1/x).

    μ is the generalised least-squares mean under each pair's full covariance T + V_k (a thin
    pair's a and b trade off against each other; only what its runs pin down, roughly its
    effect at its own scale-outs, should count), and T maximises the marginal likelihood of
    the estimates over a grid: the shrinkage strength is the data's, not a constant.
    """
    k = est.shape[0]
    if k < MIN_GROUPS:
        return no_pooling(est, cov)
    act = np.ones(2, bool) if active is None else np.asarray(active, bool)
    grids = [np.concatenate([[0.0], _scale(est[:, j]) * np.geomspace(1e-3, 10, GRID)])
             if act[j] else np.zeros(1) for j in range(2)]
    ta, tb = np.meshgrid(grids[0], grids[1], indexing="ij")
    tau2_grid = np.column_stack([ta.ravel(), tb.ravel()]) ** 2
    loglik, means = _marginal(est, cov, tau2_grid, act)
    i = int(np.argmax(loglik))
    tau2, mean = tau2_grid[i], means[i]
    prior = np.diag(np.where(act, tau2, 0.0))
    total = _inverse(prior[None] + cov, act)
    mean_cov = _pinv2(total.sum(axis=0), act)
    pairs = np.empty_like(est)
    post = np.empty_like(cov)
    weight = np.empty(k)
    for i in range(k):
        gain = prior @ total[i]
        pairs[i] = mean + gain @ (est[i] - mean)
        rest = np.eye(2) - gain
        post[i] = prior - gain @ prior + rest @ mean_cov @ rest.T
        weight[i] = float(np.diag(gain)[act].mean())
    pairs = np.maximum(pairs, 0.0)
    if not act[1]:
        pairs[:, 1] = 0.0
        post[:, 1, :] = post[:, :, 1] = 0.0
    return Pooled(pairs, post, np.clip(weight, 0.0, 1.0), mean, tau2, cov.copy())


GRID = 14  # τ values per component on a log grid (plus 0)


def _scale(values: np.ndarray) -> float:
    """A typical size of a component, so the τ grid fits its units."""
    return float(max(median(np.abs(values)), np.mean(np.abs(values)), 1e-3))


def _inverse(m: np.ndarray, act: np.ndarray) -> np.ndarray:
    """Inverses of (k, 2, 2) matrices on the active components (zero elsewhere)."""
    out = np.zeros_like(m)
    idx = np.flatnonzero(act)
    sub = m[:, idx[:, None], idx[None, :]]
    sub = sub + _jitter(sub) * np.eye(idx.size)
    out[:, idx[:, None], idx[None, :]] = np.linalg.inv(sub)
    return out


def _jitter(m: np.ndarray) -> float:
    """A diagonal nudge that keeps all-zero (co-runner never separable) blocks invertible."""
    return 1e-12 * max(1.0, float(np.max(np.abs(m))) if m.size else 1.0)


def _pinv2(m: np.ndarray, act: np.ndarray) -> np.ndarray:
    return _inverse(m[None], act)[0]


def _marginal(est: np.ndarray, cov: np.ndarray, tau2: np.ndarray, act: np.ndarray,
              ) -> tuple[np.ndarray, np.ndarray]:
    """Restricted log likelihood of the estimates under N(μ, T + V_k), μ at its GLS value,
    for every row of tau2 (g, 2) at once; returns (loglik (g,), μ (g, 2))."""
    idx = np.flatnonzero(act)
    prior = np.zeros((tau2.shape[0], 2, 2))
    prior[:, 0, 0], prior[:, 1, 1] = np.where(act, tau2, 0.0).T
    total = cov[None] + prior[:, None]  # (g, k, 2, 2)
    sub = total[..., idx[:, None], idx[None, :]]
    sub = sub + _jitter(sub) * np.eye(idx.size)
    inv = np.linalg.inv(sub)
    info = inv.sum(axis=1)  # (g, m, m)
    e = est[:, idx]
    mu = np.linalg.solve(info, np.einsum("gkij,kj->gi", inv, e)[..., None])[..., 0]
    r = e[None] - mu[:, None]
    quad = np.einsum("gki,gkij,gkj->g", r, inv, r)
    logdet = np.linalg.slogdet(sub)[1].sum(axis=1) + np.linalg.slogdet(info)[1]
    mean = np.zeros((tau2.shape[0], 2))
    mean[:, idx] = mu
    return -0.5 * (quad + logdet), mean


def positive_pair_cov(cov: np.ndarray, pair: tuple[float, float],
                      inverse_scale_outs: tuple[float, float]) -> np.ndarray:
    """The (2, 2) covariance of (a, b) with var(b) held to what a, b >= 0 allow.

    Runs of a co-runner at one scale-out pin its effect g = a + b/x there and leave a
    traded against b: the Gaussian covariance then says the effect at other scale-outs may
    be anything (the delta method gave intervals 3-9x the prediction a few nodes away, so
    no candidate "met" the target and the plan fell back on the fastest). But a, b >= 0
    confine b to [0, g*/u*] at the best-determined u* = 1/x* (a = g* - b·u* >= 0), and
    no variable on [0, B] has a variance above B²/4. So: in coordinates (g*, b), with u*
    the u in `inverse_scale_outs` (the job's 1/x range) where var(a + b·u) is least, var(b)
    is capped at ((ĝ* + sd(g*)) / u*)² / 4, its covariance with g* scaled alike.
    """
    va, cab, vb = float(cov[0, 0]), float(cov[0, 1]), float(cov[1, 1])
    if vb <= 0:
        return cov
    u = min(max(-cab / vb, inverse_scale_outs[0]), inverse_scale_outs[1])
    vg = max(va + 2 * u * cab + u * u * vb, 0.0)
    cgb = cab + u * vb
    g = pair[0] + pair[1] * u
    cap = ((g + np.sqrt(vg)) / u) ** 2 / 4
    if vb <= cap:
        return cov
    shrink = np.sqrt(cap / vb)
    vb, cgb = cap, cgb * shrink
    out = np.empty((2, 2))
    out[0, 0] = vg - 2 * u * cgb + u * u * vb
    out[0, 1] = out[1, 0] = cgb - u * vb
    out[1, 1] = vb
    return out
