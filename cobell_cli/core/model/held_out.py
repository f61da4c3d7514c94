"""Held-out errors of a runtime model by K-fold refits: what the planner calibrates on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from cobell_cli.core.calibration import JACKKNIFE_MAX_FITS
from cobell_cli.core.model.data import RunData


class _Refitted(Protocol):
    def size_weight(self, job: Any, scale_out: float | None) -> float: ...
    def predict(self, scale_outs: Any, overlaps: Any = None) -> np.ndarray: ...


def refit_ratios(raw: RunData, loo_ratios: np.ndarray,
                 refit: Callable[[RunData], _Refitted]) -> np.ndarray | None:
    """runtime / prediction of each run by a model `refit` without its fold: runs i, i + K,
    ... form fold i of K = JACKKNIFE_MAX_FITS. A fold that cannot be fitted keeps the
    first-order `loo_ratios`; None with fewer than two runs."""
    k = min(JACKKNIFE_MAX_FITS, raw.n)
    if k < 2:
        return None
    out = np.asarray(loo_ratios, float).copy()  # where a fold cannot be fitted
    index = np.arange(raw.n)
    for fold in range(k):
        test = index % k == fold
        try:
            inner = refit(raw.subset(~test))
        except ValueError:
            continue
        out[test] = raw.runtime_s[test] / inner.predict(raw.scale_out[test],
                                                        _held_out_rows(raw, test, inner))
    return out


def _held_out_rows(raw: RunData, test: np.ndarray, inner: _Refitted,
                   ) -> list[dict[str, float]]:
    """The test runs' overlaps as the refitted model reads them (weighed by size if it does)."""
    sizes = (raw.co_scale_out[test] if raw.co_scale_out is not None
             else np.zeros_like(raw.overlap[test]))
    return [{c: float(v) * inner.size_weight(c, float(z) or None)
             for c, v, z in zip(raw.co_runners, r, zs, strict=True) if v > 0}
            for r, zs in zip(raw.overlap[test], sizes, strict=True)]
