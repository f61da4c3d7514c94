"""How the slow-downs of concurrent co-runners combine into one: the rules the model chooses
among by cross-validation.

Each co-runner k contributes an effect e_k = (a_k + b_k/x)·ov_k (or a_k·ov_k when its effect
does not shrink with the job's scale-out). The rules:

* additive: S = Σ_k e_k, the paper's form generalised (contention for one resource shared
  fairly: every co-runner takes its share);
* bottleneck: S = max_k e_k, the scarcest shared resource decides (two co-runners that both
  saturate the disk do not slow the job twice as much as one);
* saturating: S = max(e_max, C·(1 − Π_k (1 − min(e_k/C, 1)))), a union that approaches the
  cap C as co-runners pile up, additive while effects are small, never below the largest.

With one co-runner all three are e_1: the paper's single-co-runner model is the special case.
"""

from __future__ import annotations

import numpy as np

from cobell_cli.core.co_runner_effects import SATURATION

RULES = ("additive", "bottleneck", "saturating")


def effects(scale_out: np.ndarray, overlap: np.ndarray, a: np.ndarray, b: np.ndarray,
            ) -> np.ndarray:
    """e[r, k] = (a_k + b_k/x_r)·ov[r, k]."""
    x = np.asarray(scale_out, float)[:, None]
    return overlap * (a[None, :] + b[None, :] / x)


def combine(e: np.ndarray, rule: str = "additive", saturation: float = SATURATION,
            ) -> np.ndarray:
    """S per row of per-co-runner effects e (n, k)."""
    _check(rule)
    if e.shape[1] == 0:
        return np.zeros(e.shape[0])
    if rule == "additive":
        return e.sum(axis=1)
    top = e.max(axis=1)
    if rule == "bottleneck":
        return top
    union = saturation * (1.0 - np.prod(1.0 - np.minimum(e / saturation, 1.0), axis=1))
    return np.maximum(top, union)


def gradient(e: np.ndarray, rule: str = "additive", saturation: float = SATURATION,
             ) -> np.ndarray:
    """dS/de[r, k]: how much each co-runner's effect moves the combined one (delta method)."""
    _check(rule)
    if rule == "additive" or e.shape[1] == 0:
        return np.ones_like(e)
    top = _argmax_onehot(e)
    if rule == "bottleneck":
        return top
    u = np.minimum(e / saturation, 1.0)
    rest = 1.0 - u
    grad = np.empty_like(e)
    for k in range(e.shape[1]):
        grad[:, k] = np.prod(np.delete(rest, k, axis=1), axis=1) * (u[:, k] < 1.0)
    union_wins = combine(e, "saturating", saturation) > e.max(axis=1) + 1e-12
    return np.where(union_wins[:, None], grad, top)


def linear_weights(e: np.ndarray, rule: str = "additive", saturation: float = SATURATION,
                   ) -> np.ndarray:
    """w[r, k] with S = Σ_k w[r, k]·e[r, k] at these effects: fixed, they make S linear in
    (a, b) again, so the exact NNLS step of the additive fit can be iterated (like IRLS)."""
    _check(rule)
    if rule == "additive" or e.shape[1] == 0:
        return np.ones_like(e)
    if rule == "bottleneck":
        return _argmax_onehot(e)
    total = e.sum(axis=1)
    share = np.divide(combine(e, rule, saturation), total, out=np.ones_like(total),
                      where=total > 0)
    return np.repeat(share[:, None], e.shape[1], axis=1)


def _argmax_onehot(e: np.ndarray) -> np.ndarray:
    out = np.zeros_like(e)
    if e.size:
        out[np.arange(e.shape[0]), np.argmax(e, axis=1)] = 1.0
    return out


def _check(rule: str) -> None:
    if rule not in RULES:
        raise ValueError(f"unknown combination rule {rule!r}; use one of {', '.join(RULES)}")
