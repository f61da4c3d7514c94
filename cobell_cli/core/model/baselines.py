"""The two published baselines, kept as plain as their papers so comparisons stay honest.

Ernest: NNLS on absolute runtimes with all four features. Bell: Ernest's model or a
Gaussian-kernel LLR (plain x and y), whichever has the lower mean relative error in interior
leave-one-scale-out cross-validation; LLR only interpolates, Ernest answers outside the range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from cobell_cli.core.model.data import prepare_runs
from cobell_cli.core.model.llr import LocalLinearModel, aggregate, bandwidth_grid, local_linear
from cobell_cli.core.model.parametric import FEATURES, ParametricModel

BELL_MIN_SCALE_OUTS_FOR_LLR = 4  # two interior points at least, else CV cannot choose


class ErnestModel(ParametricModel):
    def __init__(self) -> None:
        super().__init__(FEATURES, relative=False)


class BellModel:
    """Bell's selection between Ernest's model and LLR candidates (one per bandwidth)."""

    def fit(self, scale_out: np.ndarray, runtime_s: np.ndarray) -> BellModel:
        x = np.asarray(scale_out, float)
        y = np.asarray(runtime_s, float)
        self.parametric_ = ErnestModel().fit(x, y)
        self.range_ = (float(x.min()), float(x.max()))
        self.llr_: LocalLinearModel | None = None
        levels, index = np.unique(x, return_inverse=True)
        if levels.size < BELL_MIN_SCALE_OUTS_FOR_LLR:
            self.choice_ = "parametric"
            return self
        interior = np.arange(1, levels.size - 1)
        grid = bandwidth_grid(levels)
        _, mean, wsum = aggregate(x, y)
        llr_at = local_linear(levels, mean, wsum, levels[interior], grid, leave_out_same=True,
                              gap_floor=False)
        param_err, llr_err = [], []
        for col, j in enumerate(interior):
            test = index == j
            train = ~test
            fold = ErnestModel().fit(x[train], y[train])
            yt = y[test]
            param_err.append(np.mean(np.abs(fold.predict(x[test]) - yt) / yt))
            llr_err.append(np.mean(np.abs(llr_at[:, col][:, None] - yt[None, :]) / yt, axis=1))
        param_cv = float(np.mean(param_err))
        llr_cv = np.mean(np.array(llr_err), axis=0)
        best = int(np.nanargmin(llr_cv))
        self.cv_ = {"parametric": param_cv, "llr": float(llr_cv[best])}
        if llr_cv[best] < param_cv:
            self.choice_ = "llr"
            self.llr_ = LocalLinearModel(float(grid[best]), log_x=False, log_y=False,
                                         gap_floor=False).fit(x, y)
        else:
            self.choice_ = "parametric"
        return self

    def predict(self, scale_out: np.ndarray | Sequence[float]) -> np.ndarray:
        x = np.asarray(scale_out, float)
        out = self.parametric_.predict(x)
        if self.llr_ is not None:
            inside = (x >= self.range_[0]) & (x <= self.range_[1])
            if inside.any():
                out[inside] = self.llr_.predict(x[inside])
        return out


def fit_ernest(runs: Iterable[Any]) -> ErnestModel:
    data = prepare_runs(runs)
    return ErnestModel().fit(data.scale_out, data.runtime_s)


def fit_bell(runs: Iterable[Any]) -> BellModel:
    data = prepare_runs(runs)
    return BellModel().fit(data.scale_out, data.runtime_s)
