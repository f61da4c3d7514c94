"""`cobell predict` end to end: real SQLite history, stand-in YARN RM on loopback."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.cli_support import cobell
from tests.yarn_standin import StandinRM

EXAMPLE = Path(__file__).resolve().parents[1] / "history" / "example.csv"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "h.db"
    result = cobell("--db", path, "history", "import", EXAMPLE)
    assert result.exit_code == 0, result.stderr
    return path


def predict_json(db: Path, *args: str) -> dict:
    result = cobell("--db", db, "predict", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_offline_prediction_says_so_and_meets_target(db: Path) -> None:
    plan = predict_json(db, "-j", "sgd", "-t", "300", "--max-scale-out", "24", "--cluster", "none")
    assert plan["phase"] == "model" and plan["feasible"]
    assert plan["predicted_s"] <= 300
    chosen = plan["scale_out"]
    by_x = {c["scale_out"]: c for c in plan["candidates"]}
    assert by_x[chosen]["meets_target"]
    assert all(not by_x[x]["meets_target"] for x in by_x if x < chosen)
    assert plan["cluster_ok"] is False
    assert any("NO CLUSTER INFORMATION" in w for w in plan["warnings"])


def test_co_runner_on_yarn_raises_the_scale_out(db: Path, yarn_rm: StandinRM) -> None:
    yarn_rm.now_s = time.time()
    alone = predict_json(db, "-j", "sgd", "-t", "300", "--max-scale-out", "24", "--cluster", "none")
    app_id = yarn_rm.add_app(
        "nightly wordcount",
        tags="cobell,cobell-job:wordcount",
        executors=10,
        duration_s=3600,
        start_s=yarn_rm.now_s - 30,
    )
    busy = predict_json(
        db, "-j", "sgd", "-t", "300", "--max-scale-out", "24", "--rm-url", yarn_rm.url
    )
    assert busy["cluster_ok"] is True
    (view,) = busy["co_runners"]
    assert view["app_id"] == app_id and view["job"] == "wordcount" and view["has_history"]
    assert view["scale_out"] == 10
    for candidate in busy["candidates"]:
        assert 0.0 <= candidate["overlap_ratio"][app_id] <= 1.0
    assert busy["scale_out"] > alone["scale_out"]
    table = cobell("--db", db, "predict", "-j", "sgd", "-t", "300", "--rm-url", yarn_rm.url)
    assert "wordcount" in table.stdout and "decision: scale-out" in table.stdout


def test_dead_rm_is_exit_4_unless_allowed(db: Path, dead_rm_url: str) -> None:
    args = ["--db", db, "predict", "-j", "sgd", "-t", "300", "--rm-url", dead_rm_url]
    failed = cobell(*args)
    assert failed.exit_code == 4
    assert dead_rm_url in failed.stderr and failed.stderr.count("\n") == 1
    allowed = cobell(*args, "--allow-no-cluster", "--json")
    assert allowed.exit_code == 0, allowed.stderr
    plan = json.loads(allowed.stdout)
    assert plan["cluster_ok"] is False
    assert any("WITHOUT co-runner information" in w for w in plan["warnings"])


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["-j", "sgd", "-t", "0"], 2, "--target-runtime must be > 0"),
        (["-j", "sgd", "-t", "100", "--min-scale-out", "9", "--max-scale-out", "3"], 2, "larger"),
        (["-j", "nope", "-t", "100"], 2, "no runs of job 'nope'"),
        (["-j", "sgd", "-t", "100", "--input-size", "lots"], 2, "not a size"),
        (["-j", "sgd", "-t", "100", "--confidence", "2"], 2, "between 0 and 1"),
        (["-j", "sgd"], 2, "Missing option"),
    ],
)
def test_bad_requests_are_usage_errors(db: Path, args, code, needle) -> None:
    result = cobell("--db", db, "predict", "--cluster", "none", *args)
    assert result.exit_code == code, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr


def test_strict_infeasible_target_exits_3(db: Path) -> None:
    args = ["--db", db, "predict", "-j", "sgd", "-t", "20", "--max-scale-out", "8", "--cluster"]
    loose = cobell(*args, "none", "--json")
    assert loose.exit_code == 0
    plan = json.loads(loose.stdout)
    assert plan["feasible"] is False and plan["scale_out"] == 8
    strict = cobell(*args, "none", "--strict")
    assert strict.exit_code == 3 and "meets the 20 s target" in strict.stderr


def test_confidence_never_lowers_the_scale_out(db: Path) -> None:
    base = ["-j", "sgd", "-t", "300", "--max-scale-out", "24", "--cluster", "none"]
    point = predict_json(db, *base)
    careful = predict_json(db, *base, "--confidence", "0.95")
    assert careful["scale_out"] >= point["scale_out"]
    assert careful["upper_s"] <= 300


def test_no_history_file_is_exit_5(tmp_path: Path) -> None:
    result = cobell("--db", tmp_path / "none.db", "predict", "-j", "x", "-t", "5")
    assert result.exit_code == 5 and "no history at" in result.stderr
