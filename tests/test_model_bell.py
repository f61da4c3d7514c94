"""The models on real runtimes (../shared/data/bell): baselines reproduce the published
anchors, and cobell's model keeps its measured advantage (a regression guard, not a tuning
target: the thresholds are the issue's goals, not our current numbers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.accuracy import load, run
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.model.evaluate import PROTOCOLS, summarise
from tests.conftest import BELL_DIR, require_shared


@pytest.fixture(scope="module")
def results() -> dict:
    """All protocols once per module (a few seconds); skips like `bell_dir` does."""
    return run(require_shared(BELL_DIR, "real runtime data"), PROTOCOLS, {"sparse3": [0]})


def mean_mape(results: dict, protocol: str, method: str) -> float:
    return summarise(results[protocol][method])["mean"]


@pytest.mark.parametrize(("protocol", "ernest", "bell", "floor"),
                         [("loso", 12.3, 8.9, 5.2), ("extrap", 34.5, 34.5, 7.1)])
def test_baselines_reproduce_the_published_anchors(results: dict, protocol: str, ernest: float,
                                                   bell: float, floor: float) -> None:
    assert mean_mape(results, protocol, "ernest") == pytest.approx(ernest, abs=0.05)
    assert mean_mape(results, protocol, "bell") == pytest.approx(bell, abs=0.05)
    assert mean_mape(results, protocol, "noise_floor") == pytest.approx(floor, abs=0.05)


def test_cobell_meets_the_interpolation_and_extrapolation_goals(results: dict) -> None:
    assert mean_mape(results, "loso", "cobell") <= 6.0
    assert mean_mape(results, "extrap", "cobell") <= 15.0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cobell_is_never_worse_than_bell(results: dict, protocol: str) -> None:
    ours = summarise(results[protocol]["cobell"])
    bell = summarise(results[protocol]["bell"])
    assert ours["mean"] <= bell["mean"] and ours["median"] <= bell["median"]


def test_pagerank_cliff_is_found_and_predictions_are_sane(bell_dir: Path) -> None:
    data = load(bell_dir / "pagerank.spark.csv")
    m = fit_runtime_model(data)
    assert m.regime_scale_outs_ == [4.0]
    pred = m.predict([4, 8, 30, 60, 120])
    assert np.all(np.isfinite(pred)) and np.all(pred > 0)
    assert pred[0] > 3 * pred[2]  # the cliff is still predicted at 4 nodes
    assert 200 < pred[4] < 320  # the flat tail is not dragged up by the cliff


@pytest.mark.parametrize("slowed_at_largest", [1.0, 1.5])
def test_fewer_nodes_than_ever_observed_are_never_predicted_faster(
        bell_dir: Path, slowed_at_largest: float) -> None:
    """The allocation benchmark's bug: fitted on sgd runs at scale-outs >= 20, a curve rising
    at the top (here: the runs at 40 slowed by a co-runner the history did not record) was
    continued downwards and predicted ~250 s at 4 nodes, where sgd takes ~670 s."""
    data = load(bell_dir / "sgd.spark.csv")
    x, y = data.scale_out, data.runtime_s
    keep = (x >= 20) & (x <= 40)
    slowed = np.where(x == 40, slowed_at_largest, 1.0)
    runs = [{"scale_out": float(a), "runtime_s": float(b)}
            for a, b in zip(x[keep], (y * slowed)[keep], strict=True)]
    m = fit_runtime_model(runs)
    truth_at_4 = float(np.median(y[x == 4]))
    at_4, at_min = m.predict([4, 20])
    assert at_4 >= at_min
    assert truth_at_4 / 2.5 <= at_4 <= 2.5 * truth_at_4
    lower, upper = m.predict_interval([4])
    assert lower[0] <= truth_at_4 <= upper[0]
