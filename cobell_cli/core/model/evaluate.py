"""The evaluation protocols (loso, extrap, sparse3), shared by the benchmark and the CLI.

A split is (train mask, test mask); every method is trained and scored on the same splits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from cobell_cli.core.model.data import RunData
from cobell_cli.core.model.metrics import all_metrics

PROTOCOLS = ("loso", "extrap", "sparse3")
SPARSE_DRAWS = 5
SPARSE_POINTS = 3


def splits(scale_out: np.ndarray, protocol: str, seed: int = 0,
           ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    levels, index = np.unique(scale_out, return_inverse=True)
    n = levels.size
    if protocol == "loso":
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
        raise ValueError(f"unknown protocol {protocol!r}; choose from {PROTOCOLS}")


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


def _overlap_dicts(data: RunData) -> list[dict[str, float]]:
    return [{k: float(r) for k, r in zip(data.co_runners, row, strict=True) if r > 0}
            for row in data.overlap]


# Ernest and Bell ignore co-runners; cobell sees the overlaps of the test runs.
METHODS: dict[str, Method] = {"ernest": _ernest, "bell": _bell, "cobell": _cobell}


def evaluate(data: RunData, protocol: str, methods: dict[str, Method] | None = None,
             seed: int = 0) -> dict[str, list[dict[str, float]]]:
    """Per method, one metrics dict per split (mape in %, mae_s, rmse_s)."""
    methods = METHODS if methods is None else methods
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in methods}
    results["noise_floor"] = []
    for train, test in splits(data.scale_out, protocol, seed):
        tr, te = data.subset(train), data.subset(test)
        for name, method in methods.items():
            predict = method(tr)
            results[name].append(all_metrics(te.runtime_s, predict(te)))
        nf = noise_floor(data, test)
        ok = np.isfinite(nf)
        if ok.any():
            results["noise_floor"].append(all_metrics(te.runtime_s[ok], nf[ok]))
    return results


def summarise(per_split: list[dict[str, float]], key: str = "mape") -> dict[str, float]:
    values = np.array([s[key] for s in per_split], float)
    if values.size == 0:
        return {"mean": float("nan"), "median": float("nan"), "splits": 0}
    return {"mean": float(values.mean()), "median": float(np.median(values)),
            "splits": int(values.size)}
