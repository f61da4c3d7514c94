"""The evaluation protocols, shared by the benchmarks and the CLI (`cobell model eval`).

A split is (train mask, test mask); every method is trained and scored on the same splits.
loso, extrap and sparse3 ask about scale-outs (Bell's protocols); nested asks how well the
whole fitting procedure predicts runs it did not see: K interleaved folds of runs, each method
fitted, with every choice it makes by CV (cobell's curves and interference form), on the other
folds only. That is nested cross-validation of cobell's selection: the inner CVs choose, the
outer folds judge the choice, so its error is not the optimistic CV score of the pick.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from cobell_cli.core.model.data import RunData
from cobell_cli.core.model.metrics import all_metrics
from cobell_cli.core.sorted_values import median

PROTOCOLS = ("loso", "extrap", "sparse3")  # Bell's protocols over scale-outs
NESTED = "nested"
EVAL_PROTOCOLS = (NESTED, *PROTOCOLS)  # what `cobell model eval --protocol` offers
SPARSE_DRAWS = 5
SPARSE_POINTS = 3
NESTED_FOLDS = 10  # K of the outer folds (fewer runs: leave one run out)
MIN_RUNS_NESTED = 3
PAPER_FIT = {"combination": "additive", "scaled": True, "pooling": False, "propagate": False,
             "alone_curve": "ernest"}  # CoBell as published: additive a + b/x from Ernest's f


def splits(scale_out: np.ndarray, protocol: str, seed: int = 0,
           ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    levels, index = np.unique(scale_out, return_inverse=True)
    n = levels.size
    if protocol == NESTED:
        yield from nested_folds(scale_out.size)
    elif protocol == "loso":
        for j in range(1, n - 1):
            yield index != j, index == j
    elif protocol == "extrap":
        if n >= 2:
            cut = n // 2
            yield index < cut, index >= cut
    elif protocol == "sparse3":
        if n > SPARSE_POINTS:
            rng = np.random.default_rng(seed)
            for _ in range(SPARSE_DRAWS):
                chosen = rng.choice(n, SPARSE_POINTS, replace=False)
                train = np.zeros(scale_out.size, bool)
                for j in chosen:
                    train[rng.choice(np.flatnonzero(index == j))] = True
                yield train, ~np.isin(index, chosen)
    else:
        raise ValueError(f"unknown protocol {protocol!r}; choose from {EVAL_PROTOCOLS}")


def nested_folds(n_runs: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """NESTED_FOLDS interleaved folds of the runs in history order (fewer runs: one run per
    fold); none below MIN_RUNS_NESTED runs."""
    if n_runs < MIN_RUNS_NESTED:
        return
    k = min(NESTED_FOLDS, n_runs)
    fold = np.arange(n_runs) % k
    for j in range(k):
        yield fold != j, fold == j


def noise_floor(data: RunData, test: np.ndarray) -> np.ndarray:
    """Predict each test run by the mean of the other repetitions at its scale-out."""
    x, y = data.scale_out, data.runtime_s
    pred = np.full(int(test.sum()), np.nan)
    for out, i in enumerate(np.flatnonzero(test)):
        same = (x == x[i]) & (np.arange(x.size) != i)
        if same.any():
            pred[out] = y[same].mean()
    return pred


Method = Callable[[RunData], Callable[[RunData], np.ndarray]]


def _ernest(train: RunData) -> Callable[[RunData], np.ndarray]:
    from cobell_cli.core.model.baselines import ErnestModel

    m = ErnestModel().fit(train.scale_out, train.runtime_s)
    return lambda test: m.predict(test.scale_out)


def _bell(train: RunData) -> Callable[[RunData], np.ndarray]:
    from cobell_cli.core.model.baselines import BellModel

    m = BellModel().fit(train.scale_out, train.runtime_s)
    return lambda test: m.predict(test.scale_out)


def _cobell(train: RunData) -> Callable[[RunData], np.ndarray]:
    from cobell_cli.core.model.select import fit_runtime_model

    m = fit_runtime_model(train)
    return lambda test: m.predict(test.scale_out, _overlap_dicts(test))


def _paper(train: RunData) -> Callable[[RunData], np.ndarray]:
    from cobell_cli.core.model.select import fit_runtime_model

    m = fit_runtime_model(train, **PAPER_FIT)
    return lambda test: m.predict(test.scale_out, _overlap_dicts(test))


def _overlap_dicts(data: RunData) -> list[dict[str, float]]:
    return [{k: float(r) for k, r in zip(data.co_runners, row, strict=True) if r > 0}
            for row in data.overlap]


# Ernest and Bell ignore co-runners; cobell and the paper's fit see the test runs' overlaps.
METHODS: dict[str, Method] = {"ernest": _ernest, "bell": _bell, "cobell": _cobell}
NESTED_METHODS: dict[str, Method] = {"cobell": _cobell, "paper": _paper, "bell": _bell}


def evaluate(data: RunData, protocol: str, methods: dict[str, Method] | None = None,
             seed: int = 0) -> dict[str, list[dict[str, float]]]:
    """Per method, one metrics dict per split (mape in %, mae_s, rmse_s)."""
    if methods is None:
        methods = NESTED_METHODS if protocol == NESTED else METHODS
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in methods}
    # The repetitions' mean ignores co-runners: a floor only where runs differ by scale-out
    # alone (Bell's protocols, run on the Bell data); nested CV judges co-located runs too.
    floor = protocol != NESTED
    if floor:
        results["noise_floor"] = []
    for train, test in splits(data.scale_out, protocol, seed):
        tr, te = data.subset(train), data.subset(test)
        for name, method in methods.items():
            predict = method(tr)
            results[name].append(all_metrics(te.runtime_s, predict(te)))
        if floor:
            nf = noise_floor(data, test)
            ok = np.isfinite(nf)
            if ok.any():
                results["noise_floor"].append(all_metrics(te.runtime_s[ok], nf[ok]))
    return results


def summarise(per_split: list[dict[str, float]], key: str = "mape") -> dict[str, float]:
    """Mean, median and standard error of the mean of `key` over the splits."""
    values = np.array([s[key] for s in per_split], float)
    if values.size == 0:
        return {"mean": float("nan"), "median": float("nan"), "se": float("nan"), "splits": 0}
    se = float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")
    return {"mean": float(values.mean()), "median": float(median(values)), "se": se,
            "splits": int(values.size)}


def evaluation_rows(data: RunData, protocol: str, seed: int = 0) -> list[dict[str, Any]]:
    """One row per method that had splits, as `cobell model eval` prints them: splits, mean
    MAPE with its standard error over the splits, median MAPE, mean MAE and RMSE."""
    rows = []
    for method, per_split in evaluate(data, protocol, seed=seed).items():
        if not per_split:
            continue
        s = summarise(per_split)
        rows.append({"method": method, "splits": s["splits"], "mape_pct": s["mean"],
                     "mape_se_pct": s["se"], "median_mape_pct": s["median"],
                     "mae_s": float(np.mean([p["mae_s"] for p in per_split])),
                     "rmse_s": float(np.mean([p["rmse_s"] for p in per_split]))})
    return rows
