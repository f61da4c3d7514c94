"""A job's runtime model through the Python API (cobell_cli/api/models.py), on a real SQLite
history: the same model, errors and what-if `cobell model ...` prints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cobell_cli import api
from cobell_cli.errors import UsageError
from tests.cli_support import cobell

LOGS = Path(__file__).parent / "data" / "eventlogs" / "logs"
SINGLE = LOGS / "app-20261122233927-0000.zstd"  # etl: 2 executors, two jobs


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """'sgd': 60 succeeded runs on f(x) = 30 + 2000/x with noise, and one failed; 'broken':
    failed only; 'flat': one scale-out."""
    rng = np.random.default_rng(3)
    records = [{"job": "sgd", "status": "succeeded", "scale_out": int(x),
                "runtime_s": (30 + 2000 / x) * float(np.exp(rng.normal(0, 0.02)))}
               for x in rng.choice(np.arange(2, 33, 2), 60)]
    records += [{"job": "sgd", "status": "failed", "scale_out": 8, "runtime_s": 9e5},
                {"job": "broken", "status": "failed", "scale_out": 8, "runtime_s": 12.0},
                {"job": "flat", "status": "succeeded", "scale_out": 4, "runtime_s": 50.0},
                {"job": "flat", "status": "succeeded", "scale_out": 4, "runtime_s": 52.0}]
    path = tmp_path / "h.db"
    with api.open_history(path) as history:
        history.insert_runs(records, keep_ids=False)
    return path


def read(db: Path, job: str) -> api.ModelInput:
    with api.open_history(db, create=False, read_only=True) as history:
        return api.model_input(history, job)


def test_model_input_is_the_succeeded_runs(db: Path) -> None:
    data = read(db, "sgd")
    assert len(data.runs) == 60 and data.whatif is None  # no event-log profiles here
    with pytest.raises(UsageError, match="'broken' has no succeeded runs"):
        read(db, "broken")
    with pytest.raises(UsageError, match="'nope' is not in the history"):
        read(db, "nope")


def test_the_fitted_model_finds_the_curve(db: Path) -> None:
    model = api.fit_model(read(db, "sgd"))
    predicted = model.predict(np.array([4.0, 16.0]))
    assert predicted == pytest.approx([30 + 2000 / 4, 30 + 2000 / 16], rel=0.05)


def test_describe_is_what_model_show_prints(db: Path) -> None:
    settings = api.load_settings(db=str(db))
    described = api.describe_model(read(db, "sgd"), settings)
    assert described["job"] == "sgd" and described["n_runs"] == 60
    assert described["model_cache"] == {"hits": 0, "misses": 1}  # the cache is on by default
    shown = json.loads(cobell("--db", db, "model", "show", "--job", "sgd", "--json").stdout)
    assert shown["model_cache"] == {"hits": 1, "misses": 0}  # what the API call left
    assert {k: v for k, v in shown.items() if k != "model_cache"} == json.loads(
        json.dumps({k: v for k, v in described.items() if k != "model_cache"}))


def test_evaluate_is_what_model_eval_prints(db: Path) -> None:
    rows = api.evaluate_model(read(db, "sgd"), "extrap")
    assert {r["method"] for r in rows} >= {"cobell", "ernest", "bell"}
    assert all(r["splits"] >= 1 and r["mape_pct"] >= 0 for r in rows)
    printed = json.loads(cobell("--db", db, "model", "eval", "--job", "sgd", "-p", "extrap",
                                "--json").stdout)
    assert printed["rows"] == json.loads(json.dumps(rows))
    with pytest.raises(UsageError, match="'flat' has 1 distinct scale-out: too few"):
        api.evaluate_model(read(db, "flat"), "loso")
    with pytest.raises(UsageError, match="unknown protocol"):
        api.evaluate_model(read(db, "sgd"), "kfold")


def test_whatif_of_a_real_event_log(tmp_path: Path) -> None:
    pytest.importorskip("zstandard", reason="the recorded logs are zstd: needs the eventlog extra")
    profiles = api.cluster_profiles(tmp_path / "none.db")
    assert profiles == [] and not (tmp_path / "none.db").exists()
    result = api.whatif(SINGLE, [1, 4], profiles)
    assert result["app_id"] == "app-20261122233927-0000" and result["observed_scale_out"] == 2
    assert [p["scale_out"] for p in result["predictions"]] == [1, 4]
    printed = json.loads(cobell("--db", tmp_path / "none.db", "model", "whatif", "--event-log",
                                SINGLE, "-x", "4", "-x", "1", "--json").stdout)
    assert printed["predictions"] == result["predictions"]
    assert api.whatif(SINGLE)["predictions"][-1]["scale_out"] == 8  # 1, 2, 4, 8 by default
