"""`cobell predict` end to end: real SQLite history, stand-in YARN RM on loopback."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from cobell_cli.core.calibration import DEFAULT_CONFIDENCE
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
        (["-j", "sgd"], 2, "give --target-runtime SECONDS or --deadline TIME"),
        (["-j", "sgd", "--deadline", "tomorrowish"], 2, "is not a time; use e.g. 06:00"),
        (["-j", "sgd", "--deadline", "+9d"], 2, "more than a week ahead"),
        (["-j", "sgd", "-t", "100", "--max-wait", "5min"], 2, "need --deadline"),
        (["-j", "sgd", "--deadline", "06:00", "--max-wait", "soon"], 2, "is not a duration"),
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
    point = predict_json(db, *base, "--confidence", "point")
    careful = predict_json(db, *base, "--confidence", "0.95")
    assert careful["scale_out"] >= point["scale_out"]
    assert careful["upper_s"] <= 300


def test_no_history_file_is_exit_5(tmp_path: Path) -> None:
    result = cobell("--db", tmp_path / "none.db", "predict", "-j", "x", "-t", "5")
    assert result.exit_code == 5 and "no history at" in result.stderr


def test_a_cached_model_plans_exactly_as_a_fresh_fit(db: Path) -> None:
    args = ("-j", "sgd", "-t", "300", "--max-scale-out", "24", "--cluster", "none")
    fresh = predict_json(db, *args, "--confidence", "0.9")
    cached = predict_json(db, *args, "--confidence", "0.9")
    # With no recorded outcomes yet, the model's own held-out ratios calibrate: one fit
    # through the cache (its refits on a short history are the model's own, in the table).
    fits = fresh.pop("model_cache")["misses"]
    assert fresh["calibration"]["source"] == "held-out" and fits == 1
    assert 0.9 <= fresh["meet_probability"] <= 1
    assert cached.pop("model_cache") == {"hits": fits, "misses": 0}
    assert cached.pop("now") >= fresh.pop("now")
    assert cached == fresh  # every candidate, bound, reason and model description
    assert predict_json(db, *args, "--confidence", "0.8")["model_cache"]["misses"] == fits


def test_model_show_reads_the_model_planning_cached_and_shows_the_same(db: Path) -> None:
    show = ("--db", db, "model", "show", "-j", "sgd", "--json")
    off = cobell(*show, env={"COBELL_MODEL_CACHE": "off"})
    assert off.exit_code == 0, off.stderr
    fresh = json.loads(off.stdout)
    assert fresh.pop("model_cache") is None
    predict_json(db, "-j", "sgd", "-t", "300", "--cluster", "none")  # fits, caches
    cached = json.loads(cobell(*show).stdout)
    assert cached.pop("model_cache") == {"hits": 1, "misses": 0}
    assert cached == fresh


def test_model_cache_off_and_history_window_from_the_environment(
    db: Path, tmp_path: Path
) -> None:
    args = ("-j", "sgd", "-t", "300", "--cluster", "none")
    env = {"COBELL_MODEL_CACHE": "off", "COBELL_HISTORY_WINDOW": "8"}
    result = cobell("--db", db, "predict", "--json", *args, env=env)
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["model_cache"] is None
    assert plan["usable_runs"] == 8 and plan["model"]["n_runs"] == 8
    assert not (tmp_path / "xdg-cache" / "cobell").exists()
    assert predict_json(db, *args)["usable_runs"] > 8  # default window: 1000 runs


def test_cached_models_of_job_and_co_runner_plan_as_fresh_fits(
    db: Path, yarn_rm: StandinRM
) -> None:
    from cobell_cli import api, config
    from cobell_cli.store.history import History

    now = yarn_rm.now_s = time.time()
    yarn_rm.add_app(
        "nightly wordcount",
        tags="cobell,cobell-job:wordcount",
        executors=10,
        duration_s=3600,
        start_s=now - 30,
    )
    settings = config.load({"db": str(db), "rm_url": [yarn_rm.url], "max_scale_out": 24})
    with History.open(db) as history:
        cluster = api.connect_cluster(settings, history.job_names())
        fresh, cached = (
            api.predict(history, cluster, settings, job="sgd", target_s=300, now=now).to_dict()
            for _ in range(2)
        )
    assert fresh.pop("model_cache") == {"hits": 0, "misses": 2}  # sgd and wordcount
    assert cached.pop("model_cache") == {"hits": 2, "misses": 0}
    assert cached["co_runners"][0]["overlap_ratio"] > 0
    assert cached == fresh


def test_a_cached_predict_loads_neither_numpy_nor_scipy_nor_sqlite_utils(db: Path) -> None:
    import subprocess
    import sys

    args = ["--db", str(db), "predict", "-j", "sgd", "-t", "300", "--cluster", "none", "--json"]
    probe = (
        "import sys\n"
        "from cobell_cli.cli import main\n"
        f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'sqlite_utils') if m in sys.modules),"
        " file=sys.stderr)\n"
    )
    loaded = []
    for _ in range(2):  # a miss (fits: loads numpy, not scipy), then a hit
        proc = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        loaded.append(proc.stderr.strip().splitlines()[-1])
        assert json.loads(proc.stdout)["phase"] == "model"
    assert loaded == ["['numpy']", "[]"]


def test_another_scale_out_range_reuses_the_cached_model(db: Path) -> None:
    args = ("-j", "sgd", "-t", "300", "--cluster", "none")
    assert predict_json(db, *args, "--max-scale-out", "12")["model_cache"]["misses"] == 1
    wide = predict_json(db, *args, "--max-scale-out", "200")
    assert wide["model_cache"] == {"hits": 1, "misses": 0}
    assert len(wide["candidates"]) == 200


def test_the_default_is_risk_aware_and_the_point_decision_stays_reachable(db: Path) -> None:
    base = ["-j", "sgd", "-t", "300", "--max-scale-out", "40", "--cluster", "none"]
    default = predict_json(db, *base)
    assert default["confidence"] == DEFAULT_CONFIDENCE and default["feasible"]
    assert default["meet_probability"] >= DEFAULT_CONFIDENCE
    same = predict_json(db, *base, "--confidence", str(DEFAULT_CONFIDENCE))
    assert default["scale_out"] == same["scale_out"]
    looser = predict_json(db, *base, "--confidence", "0.8")
    assert looser["scale_out"] <= default["scale_out"] and looser["meet_probability"] >= 0.8
    point = predict_json(db, *base, "--confidence", "point")
    assert point["confidence"] is None and point["scale_out"] <= default["scale_out"]
    assert point["meet_probability"] < default["meet_probability"]
    from_env = cobell("--db", db, "predict", "--json", *base, env={"COBELL_CONFIDENCE": "point"})
    assert json.loads(from_env.stdout)["scale_out"] == point["scale_out"]
    by_x = {c["scale_out"]: c for c in default["candidates"]}
    assert by_x[default["scale_out"]]["meet_probability"] == default["meet_probability"]


def test_the_table_shows_the_probability_and_the_policy(db: Path) -> None:
    base = ["-j", "sgd", "-t", "300", "--max-scale-out", "40", "--cluster", "none"]
    shown = cobell("--db", db, "predict", *base)
    assert shown.exit_code == 0, shown.stderr
    assert "P(meet)" in shown.stdout
    assert f"policy: P(meet) >= {DEFAULT_CONFIDENCE:.0%} (--confidence {DEFAULT_CONFIDENCE:g})" \
        in shown.stdout
    shown = cobell("--db", db, "predict", *base, "--all")
    # Each row's P(meet) is the estimate rounded down: never "90%" beside a 0.898 that fails.
    rows = {int(line.split()[0]): line.split() for line in shown.stdout.splitlines()
            if line.split() and line.split()[0].isdigit()}
    for c in predict_json(db, *base)["candidates"]:
        if c["meet_probability"] is not None:
            assert f"{math.floor(c['meet_probability'] * 100 + 1e-9)}%" in rows[c["scale_out"]]
    point = cobell("--db", db, "predict", *base, "--confidence", "point")
    assert "policy: point prediction (--confidence point)" in point.stdout


def test_the_policy_line_names_the_level_in_effect_during_the_bootstrap(tmp_path: Path) -> None:
    """A new job's first submit said `policy: point prediction (--confidence point)` while the
    default 0.9 was in effect: the bootstrap's binary search decides, and the line says so."""
    db = tmp_path / "new.db"
    args = ["submit", "-j", "newjob", "-t", "60", "--cluster", "none", "--dry-run", "--",
            "echo", "local[{scale_out}]"]
    shown = cobell("--db", db, *args)
    assert shown.exit_code == 0, shown.stderr
    (policy,) = [line for line in shown.stdout.splitlines() if line.startswith("policy:")]
    assert "--confidence point" not in policy and "point prediction" not in policy
    assert f"P(meet) >= {DEFAULT_CONFIDENCE:.0%}" in policy and "binary search" in policy
    point = cobell("--db", db, *args[:7], "--confidence", "point", *args[7:])
    assert "policy: point prediction (--confidence point)" in point.stdout
    as_json = cobell("--db", db, *args[:7], "--json", *args[7:])
    plan = json.loads(as_json.stdout.splitlines()[0])
    assert plan["policy"] == DEFAULT_CONFIDENCE and plan["confidence"] is None


@pytest.mark.parametrize("value", ["1.5", "0", "often"])
def test_a_bad_confidence_is_a_one_line_usage_error(db: Path, value: str) -> None:
    result = cobell("--db", db, "predict", "-j", "sgd", "-t", "300", "--confidence", value)
    assert result.exit_code == 2
    assert "or 'point'" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_new_job_during_the_search_has_no_probability(tmp_path: Path) -> None:
    job = ["-j", "new", "-t", "60", "--cluster", "none", "--dry-run"]
    command = ["--", "spark-submit", "--master", "yarn", "app.py"]
    result = cobell("--db", tmp_path / "h.db", "submit", *job, "--json", *command)
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["phase"] == "bootstrap-search" and plan["meet_probability"] is None
    shown = cobell("--db", tmp_path / "h.db", "submit", *job, *command)
    assert "unknown (binary search: no model yet)" in shown.stdout


@pytest.mark.parametrize(("written", "seconds"),
                         [("300", 300.0), ("5min", 300.0), ("1h30m", 5400.0), ("90s", 90.0)])
def test_the_target_is_a_duration_as_people_write_it(db: Path, written: str,
                                                      seconds: float) -> None:
    """--target-runtime took only seconds; it uses the one time parser (cobell_cli/timespec.py)."""
    shown = cobell("--db", db, "predict", "-j", "sgd", "-t", written, "--cluster", "none", "--json")
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["target_s"] == seconds


def test_a_target_that_is_no_duration_names_the_forms(db: Path) -> None:
    result = cobell("--db", db, "predict", "-j", "sgd", "-t", "soon", "--cluster", "none")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "--target-runtime 'soon' is not a duration" in line and "1h30m" in line


def _table_rows(text: str) -> dict[int, dict[str, str]]:
    """The candidates' table as {scale-out: {column: cell}} (columns split on 2+ spaces)."""
    import re

    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("scale-out"))
    header = re.split(r"\s{2,}", lines[start].strip())
    rows = {}
    for line in lines[start + 2:]:
        if not line[:1].isdigit():
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[int(cells[0])] = dict(zip(header, cells, strict=False))
    return rows


def test_the_table_shows_the_rows_around_the_decision_and_says_how_many_are_hidden(
    db: Path,
) -> None:
    """64 rows by default (100 000 for --max-scale-out 100000): now the decision's
    neighbourhood, the count of hidden rows, --all for every row; --json has every one."""
    base = ["-j", "sgd", "-t", "5min", "--cluster", "none"]
    plan = predict_json(db, *base)
    assert len(plan["candidates"]) == 64
    shown = cobell("--db", db, "predict", *base)
    rows = _table_rows(shown.stdout)
    assert plan["scale_out"] in rows and 2 <= len(rows) <= 7
    assert rows[plan["scale_out"]]["chosen"] == "<-"
    assert f"({64 - len(rows)} of 64 scale-outs not shown: --all" in shown.stdout
    every = _table_rows(cobell("--db", db, "predict", *base, "--all").stdout)
    assert sorted(every) == list(range(1, 65))
    assert "not shown" not in cobell("--db", db, "predict", *base, "--all").stdout


def test_each_candidate_costs_its_executor_seconds_in_the_table_and_json(db: Path) -> None:
    base = ["-j", "sgd", "-t", "5min", "--cluster", "none"]
    plan = predict_json(db, *base)
    for c in plan["candidates"]:
        assert c["executor_seconds"] == pytest.approx(c["scale_out"] * c["predicted_s"])
    assert plan["executor_seconds"] == pytest.approx(plan["scale_out"] * plan["predicted_s"])
    rows = _table_rows(cobell("--db", db, "predict", *base, "--all").stdout)
    for c in plan["candidates"]:
        assert rows[c["scale_out"]]["executor-s"] == f"{c['executor_seconds']:.0f}"


def test_meets_reads_the_upper_bound_the_table_shows(db: Path) -> None:
    """A row with P(meet) 92% read `meets: no` under the 0.9 policy (then the default), by a
    rule nobody saw: the table shows the upper bound that decides, and says that it does."""
    def surprising(plan: dict) -> list[dict]:
        return [c for c in plan["candidates"] if not c["meets_target"]
                and (c["meet_probability"] or 0) >= DEFAULT_CONFIDENCE]

    # a target just below a scale-out's upper bound, where its P(meet) may already reach the
    # default policy's level
    # (the model decides whether it is: try the scale-outs whose bound is near 5 min)
    bounds = predict_json(db, "-j", "sgd", "-t", "300", "--cluster", "none")["candidates"]
    tries = [math.ceil(c["upper_s"]) - 1 for c in bounds if 250 <= (c["upper_s"] or 0) <= 350]
    target = next((t for t in tries
                   if surprising(predict_json(db, "-j", "sgd", "-t", str(t), "--cluster", "none"))),
                  300)
    base = ["-j", "sgd", "-t", str(target), "--cluster", "none", "--all"]
    shown = cobell("--db", db, "predict", *base)
    assert "meets: upper bound <= target" in shown.stdout
    rows = _table_rows(shown.stdout)
    for row in rows.values():  # with or without such a row, the bound shown decides
        assert (row["meets"] == "yes") == (float(row["upper bound s"]) <= target), row
    point = _table_rows(cobell("--db", db, "predict", *base, "--confidence", "point").stdout)
    smallest_run = 4  # the example history's smallest scale-out of sgd
    for x, row in point.items():
        if x >= smallest_run:
            assert (row["meets"] == "yes") == (float(row["prediction s"]) <= 300), row


def test_no_cluster_information_is_said_once(db: Path) -> None:
    shown = cobell("--db", db, "predict", "-j", "sgd", "-t", "300", "--cluster", "none")
    assert (shown.stdout + shown.stderr).count("NO CLUSTER INFORMATION") == 1
    (line,) = [x for x in shown.stderr.splitlines() if "NO CLUSTER" in x]
    assert len(line) < 130 and line.count("cluster = none") == 1
