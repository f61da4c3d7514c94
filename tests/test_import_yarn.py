"""`cobell history import --from-yarn`: the RM's finished apps over real HTTP on loopback."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from cobell_cli.cluster.http import JsonClient
from cobell_cli.cluster.yarn import YarnCluster
from cobell_cli.core.plan import similar_runs
from cobell_cli.sources.record import ImportSummary
from cobell_cli.sources.yarn_apps import import_from_yarn, read_finished
from cobell_cli.store.history import History
from tests.cli_support import cobell
from tests.yarn_standin import StandinRM

HOUR = 3600.0


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "h.db"


@pytest.fixture
def rm(yarn_rm: StandinRM) -> StandinRM:
    yarn_rm.now_s = time.time()
    return yarn_rm


def imported(db: Path, rm: StandinRM, *args: str) -> dict:
    result = cobell(
        "--db", db, "history", "import", "--from-yarn", "--rm-url", rm.url, "--json", *args
    )
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def rows(db: Path, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def test_finished_apps_become_runs_with_colocations(db: Path, rm: StandinRM) -> None:
    t0 = rm.now_s - 3 * HOUR
    a = rm.add_app(
        "etl", tags="cobell-job:nightly", executors=6, vcores=2, start_s=t0, duration_s=1000
    )
    b = rm.add_app("adhoc", executors=3, vcores=2, start_s=t0 + 500, duration_s=1000)
    c = rm.add_app("late", executors=2, vcores=2, start_s=t0 + 5000, duration_s=100)
    summary = imported(db, rm, "--vcores-per-container", "2")
    assert summary["imported"] == 3 and summary["skipped"] == 0
    assert summary["scale_out_from"] == {"vcore-seconds": 3}
    assert summary["colocations"] == 2  # a<->b, both ways; c overlapped nobody
    runs = {r["app_id"]: r for r in rows(db, "SELECT * FROM runs")}
    assert runs[a]["job"] == "nightly" and runs[b]["job"] == "adhoc"
    assert runs[a]["scale_out"] == 6 and runs[a]["mean_scale_out"] == pytest.approx(6.0)
    assert runs[b]["scale_out"] == 3 and runs[c]["scale_out"] == 2
    for run in runs.values():
        assert run["source"] == "yarn" and run["status"] == "succeeded"
        assert run["target_s"] is None and run["predicted_s"] is None and run["model"] is None
    assert runs[a]["runtime_s"] == pytest.approx(1000.0)
    assert runs[a]["started_at"] == pytest.approx(t0, abs=0.001)
    co = rows(db, "SELECT * FROM colocations WHERE run_id = ?", (runs[a]["id"],))
    assert [(r["co_runner_app_id"], r["overlap_s"], r["overlap_ratio"]) for r in co] == [
        (b, 500.0, 0.5)
    ]
    assert co[0]["co_runner_job"] == "adhoc" and co[0]["co_runner_scale_out"] == 3
    back = rows(
        db,
        "SELECT co_runner_app_id, co_runner_job FROM colocations WHERE run_id = ?",
        (runs[b]["id"],),
    )
    assert [tuple(r) for r in back] == [(a, "nightly")]


def stderr_on_a_terminal(argv: list[str]) -> bytes:
    """What a command that succeeds writes to stderr when stderr is a terminal (a pty)."""
    import os
    import pty
    import subprocess

    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=60) == 0
    os.close(leader)
    return seen


def test_import_is_idempotent_and_dry_run_writes_nothing(db: Path, rm: StandinRM) -> None:
    for k in range(3):
        rm.add_app("job", start_s=rm.now_s - HOUR * (k + 2), duration_s=600)
    dry = imported(db, rm, "--dry-run")
    assert dry["dry_run"] and dry["imported"] == 3
    assert not db.exists()  # a dry run opens the history read-only: not even created
    first = imported(db, rm)
    assert first["imported"] == 3
    again = imported(db, rm)
    assert again["imported"] == 0 and again["skipped_by_reason"] == {"already in the history": 3}
    assert rows(db, "SELECT count(*) FROM runs")[0][0] == 3
    listed = cobell("--db", db, "history", "list", "--columns", "id,job,source,app_id")
    assert listed.exit_code == 0 and "application_" in listed.stdout and "yarn" in listed.stdout


def test_statuses_since_and_hidden_usage(db: Path, rm: StandinRM) -> None:
    ok = rm.add_app("j", start_s=rm.now_s - 2 * HOUR, duration_s=60)
    failed = rm.add_app("j", start_s=rm.now_s - 2 * HOUR, duration_s=60, final_state="FAILED")
    killed = rm.add_app("j", start_s=rm.now_s - 2 * HOUR, duration_s=60, final_state="KILLED")
    rm.add_app("j", start_s=rm.now_s - 2 * HOUR, duration_s=60, acl_hidden=True)
    rm.add_app("old", start_s=rm.now_s - 50 * HOUR, duration_s=60)
    rm.add_app("still running", start_s=rm.now_s - 60, duration_s=600)
    summary = imported(db, rm, "--since", "1d")
    assert summary["imported"] == 3
    assert summary["skipped_by_reason"] == {"usage hidden (no vcore-seconds)": 1}
    status = {r["app_id"]: r["status"] for r in rows(db, "SELECT app_id, status FROM runs")}
    assert status == {ok: "succeeded", failed: "failed", killed: "killed"}


def test_job_identity_order(db: Path, rm: StandinRM, tmp_path: Path) -> None:
    start = rm.now_s - 2 * HOUR
    tagged = rm.add_app("Pi nightly", tags="cobell-job:pi", start_s=start, duration_s=10)
    patterned = rm.add_app("report-2026-11-01", start_s=start + 100, duration_s=10)
    other = rm.add_app("something else", start_s=start + 200, duration_s=10)
    config = tmp_path / "config.toml"
    config.write_text('job_patterns = { report = "^report-" }\n')
    result = cobell(
        "--config",
        config,
        "--db",
        db,
        "history",
        "import",
        "--from-yarn",
        "--rm-url",
        rm.url,
        "--job",
        "misc",
    )
    assert result.exit_code == 0, result.stderr
    jobs = {r["app_id"]: r["job"] for r in rows(db, "SELECT app_id, job FROM runs")}
    assert jobs == {tagged: "pi", patterned: "report", other: "misc"}
    name_only = cobell(
        "--db", db.with_name("b.db"), "history", "import", "--from-yarn", "--rm-url", rm.url
    )
    assert name_only.exit_code == 0
    names = {
        r["app_id"]: r["job"] for r in rows(db.with_name("b.db"), "SELECT app_id, job FROM runs")
    }
    assert names[other] == "something-else"  # an app name mapped to a job name


def test_paging_by_finish_time_windows_imports_every_app_once(db: Path, rm: StandinRM) -> None:
    start = rm.now_s - 10 * HOUR
    ids = {rm.add_app(f"a{k}", start_s=start + 60 * k, duration_s=30 + k % 7) for k in range(250)}
    client = JsonClient(what="YARN RM", retries=0)
    cluster = YarnCluster([rm.url], client)
    with History.open(db) as history:
        summary = import_from_yarn(history, cluster, since=start - 1, until=rm.now_s, page_size=40)
    assert summary.imported == 250 and summary.seen == 250
    assert {r[0] for r in rows(db, "SELECT app_id FROM runs")} == ids
    asked = [r["query"] for r in rm.requests if r["path"] == "/ws/v1/cluster/apps"]
    assert len(asked) > 250 // 40  # split into windows
    assert all("finishedTimeEnd" in q and q["limit"] == ["40"] for q in asked)


def test_empty_lists_in_all_documented_forms(db: Path, rm: StandinRM) -> None:
    rm.add_app("j", start_s=rm.now_s - HOUR, duration_s=10)
    # {"apps": null}, {"apps": {}}, {"apps": {"app": []}}, and {"apps": {"app": null}}
    for shape in ("null", "empty", "app_empty", "app_null"):
        rm.apps_shape = shape
        summary = imported(db, rm)
        assert summary["imported"] == 0 and summary["seen"] == 0, shape
    assert not db.exists() or rows(db, "SELECT count(*) FROM runs")[0][0] == 0
    rm.apps_shape = "normal"  # the same RM with its app listed: imported
    assert imported(db, rm)["imported"] == 1


def test_resource_seconds_map_and_max_completed(db: Path, rm: StandinRM) -> None:
    rm.usage, rm.max_completed = "map_only", 2
    for k in range(4):
        rm.add_app(f"j{k}", executors=5, start_s=rm.now_s - HOUR * (5 - k), duration_s=100)
    summary = imported(db, rm)
    assert summary["imported"] == 2  # the RM forgot the two oldest
    assert {r[0] for r in rows(db, "SELECT job FROM runs")} == {"j2", "j3"}
    assert {r[0] for r in rows(db, "SELECT scale_out FROM runs")} == {5}


@pytest.mark.parametrize(
    ("switch", "value", "needle"),
    [
        ("garbage", True, "not JSON"),
        ("apps_shape", "not_object", "does not understand"),
        ("fail_status", 503, "cannot get an answer"),
    ],
)
def test_garbage_from_the_rm_is_one_line_and_writes_nothing(
    db: Path, rm: StandinRM, switch: str, value: object, needle: str
) -> None:
    rm.add_app("j", start_s=rm.now_s - HOUR, duration_s=10)
    setattr(rm, switch, value)
    if switch == "fail_status":
        rm.fail_next = 100
    result = cobell(
        "--db",
        db,
        "history",
        "import",
        "--from-yarn",
        "--rm-url",
        rm.url,
        env={"COBELL_RETRIES": "0"},
    )
    assert result.exit_code == 4
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2  # the error and its hint
    assert rows(db, "SELECT count(*) FROM runs")[0][0] == 0


def test_dead_rm_is_exit_4(db: Path, dead_rm_url: str) -> None:
    result = cobell(
        "--db",
        db,
        "history",
        "import",
        "--from-yarn",
        "--rm-url",
        dead_rm_url,
        env={"COBELL_RETRIES": "0"},
    )
    assert result.exit_code == 4 and "connection refused" in result.stderr
    # the hint names what import takes: it has no --cluster to set to none
    assert "--rm-url" in result.stderr and "--cluster" not in result.stderr


def test_imported_runs_train_the_model_and_overlap_recorded_runs(db: Path, rm: StandinRM) -> None:
    start = rm.now_s - 20 * HOUR
    for k, x in enumerate((2, 4, 8, 2, 4, 8)):
        rm.add_app("sgd", executors=x, start_s=start + k * HOUR, duration_s=2400 / x + 100)
    with History.open(db) as history:
        own = history.start_run(
            job="wordcount",
            scale_out=3,
            status="succeeded",
            runtime_s=600.0,
            app_id="application_1_9",
            started_at=start + 60,
            finished_at=start + 660,
        )
    assert imported(db, rm)["imported"] == 6
    with History.open(db) as history:
        training = history.training_runs("sgd")
        backfilled = history.run(own)["colocations"]
    assert len(similar_runs(training, None)) == 6
    assert [c["co_runner_job"] for c in backfilled] == ["sgd"]
    plan = cobell("--db", db, "predict", "--json", "-j", "sgd", "-t", "700", "--cluster", "none")
    assert plan.exit_code == 0, plan.stderr
    decided = json.loads(plan.stdout)
    assert decided["phase"] == "model"


def test_read_finished_counts_what_it_cannot_use(rm: StandinRM) -> None:
    rm.raw_apps = json.dumps(
        {"apps": {"app": [{"id": "application_1_1", "state": "FINISHED"}, "nonsense", {}]}}
    ).encode()
    summary = ImportSummary(source="yarn", where="test")
    apps = read_finished(YarnCluster([rm.url], JsonClient(what="YARN RM")), 0, rm.now_s, summary)
    assert apps == [] and summary.seen == 3
    assert dict(summary.skipped) == {
        "not finished": 1,
        "not an app object": 1,
        "no application id": 1,
    }


def test_timeline_server_gives_exact_containers(db: Path, rm: StandinRM) -> None:
    rm.timeline = True
    app = rm.add_app("dyn", executors=4, start_s=rm.now_s - HOUR, duration_s=1000)
    summary = imported(db, rm, "--timeline-url", rm.url)
    assert summary["scale_out_from"] == {"containers (Timeline Server)": 1}
    (run,) = rows(db, "SELECT * FROM runs")
    assert run["app_id"] == app and run["scale_out"] == 4  # the peak, not the RM's mean
    # executors 1-2 live [2 s, 1000 s], 3-4 [2 s, 500 s]: (2 * 998 + 2 * 498) / 1000
    assert run["mean_scale_out"] == pytest.approx(2.992)
    assert "Timeline Server" in run["reason"]


def test_unknown_to_the_timeline_server_keeps_the_estimate(db: Path, rm: StandinRM) -> None:
    rm.add_app("j", executors=3, start_s=rm.now_s - HOUR, duration_s=100)
    summary = imported(db, rm, "--timeline-url", rm.url)  # timeline off: every app is a 404
    assert summary["scale_out_from"] == {"vcore-seconds": 1} and summary["warnings"] == []


def test_progress_on_a_terminal_only(db: Path, rm: StandinRM) -> None:
    import sys

    for k in range(30):
        rm.add_app(f"j{k}", start_s=rm.now_s - HOUR - k * 60, duration_s=30)
    argv = [sys.executable, "-m", "cobell_cli", "--db", str(db), "history", "import"]
    seen = stderr_on_a_terminal([*argv, "--from-yarn", "--rm-url", rm.url])
    assert b"reading" in seen and b"apps" in seen  # the progress count, drawn on the terminal
    assert b"imported 30 of 30 apps" in seen
    piped = cobell(
        "--db", db.with_name("c.db"), "history", "import", "--from-yarn", "--rm-url", rm.url
    )
    assert "reading" not in piped.stderr and "imported 30 of 30 apps" in piped.stderr


def test_concurrent_imports_import_every_app_once(db: Path, rm: StandinRM) -> None:
    import subprocess
    import sys

    for k in range(40):
        rm.add_app(f"j{k % 4}", start_s=rm.now_s - HOUR - k * 30, duration_s=100)
    argv = [sys.executable, "-m", "cobell_cli", "--db", str(db), "history", "import"]
    argv += ["--from-yarn", "--rm-url", rm.url, "--json"]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sum(o["imported"] for o in outs) == 40
    assert rows(db, "SELECT count(*), count(DISTINCT app_id) FROM runs")[0][:] == (40, 40)


def test_a_full_rm_says_older_apps_may_be_gone(db: Path, rm: StandinRM) -> None:
    from cobell_cli.sources.yarn_apps import RM_DEFAULT_RETENTION

    rm.max_completed = RM_DEFAULT_RETENTION
    for k in range(RM_DEFAULT_RETENTION + 5):
        rm.add_app("j", start_s=rm.now_s - 20 * HOUR + k * 60, duration_s=30)
    summary = imported(db, rm, "--since", "2d", "--dry-run")
    assert summary["seen"] == RM_DEFAULT_RETENTION
    (note,) = summary["warnings"]
    assert "max-completed-applications" in note


def test_import_speed_bench_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import import_speed

    assert import_speed.main(["--quick"]) == 0
    report = capsys.readouterr().out
    assert "| first import | 300 | 0 |" in report
    assert "| again (all already imported) | 0 | 300 |" in report
    # the event-log part: a 10 MiB generated log, plain and zstd, each one run and a profile
    rows = [line for line in report.splitlines() if line.startswith(("| plain", "| zstd"))]
    assert len(rows) == 2 and all("scale-out 16 (mean " in r for r in rows)
    tasks = {int(r.rstrip(" |").rsplit("|", 1)[1]) for r in rows}
    assert len(tasks) == 1 and tasks.pop() > 1000  # the same log, read whole either way


def test_learning_co_runners_from_a_dead_rm_is_one_warning(
    tmp_path: Path, dead_rm_url: str
) -> None:
    from cobell_cli.sources.co_runners import learn_co_runners

    cluster = YarnCluster([dead_rm_url], JsonClient(what="YARN RM", retries=0))
    warnings = learn_co_runners(tmp_path / "h.db", cluster, 0.0, time.time(), {"x"})
    assert len(warnings) == 1 and "finished co-runners not recorded" in warnings[0]
    assert "connection refused" in warnings[0] and not (tmp_path / "h.db").exists()


def test_learning_co_runners_skips_our_own_app(tmp_path: Path, rm: StandinRM) -> None:
    from cobell_cli.sources.co_runners import learn_co_runners

    ours = rm.add_app("ours", start_s=rm.now_s - 100, duration_s=50)
    theirs = rm.add_app("theirs", start_s=rm.now_s - 90, duration_s=20)
    cluster = YarnCluster([rm.url], JsonClient(what="YARN RM"))
    assert learn_co_runners(tmp_path / "h.db", cluster, rm.now_s - 100, rm.now_s, {ours}) == []
    assert [r[0] for r in rows(tmp_path / "h.db", "SELECT app_id FROM runs")] == [theirs]


def test_a_job_with_imported_runs_is_planned_by_its_model_from_its_first_submit(
    db: Path, rm: StandinRM, tmp_path: Path
) -> None:
    import sys

    start = rm.now_s - 20 * HOUR
    for k, x in enumerate((2, 4, 8, 2, 4, 8)):
        rm.add_app("sgd", executors=x, start_s=start + k * HOUR, duration_s=2400 / x + 100)
    assert imported(db, rm)["imported"] == 6
    marker = tmp_path / "ran-at"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('{{scale_out}}')"]
    result = cobell(
        "--db", db, "submit", "-j", "sgd", "-t", "700", "--cluster", "none",
        "--max-scale-out", "16", "--json", "--", *command,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    with History.open(db) as history:
        ours = history.run(outcome["run_id"])
        calibration_runs = [r for r in history.runs(job="sgd") if r["model"] == "model"]
    # the first submit of the job: planned by the model fitted on the imported runs, not by
    # the bootstrap's binary search; the runtime model predicts 2400/x + 100 <= 700 at x >= 4
    assert ours["model"] == "model" and ours["source"] == "cobell"
    assert ours["predicted_s"] is not None and ours["scale_out"] >= 4
    assert marker.read_text() == str(ours["scale_out"])
    # the imported runs stay what they are: no target, prediction or model, never calibration
    assert [r["id"] for r in calibration_runs] == [ours["id"]]
    imported_rows = rows(db, "SELECT target_s, predicted_s, model FROM runs WHERE source='yarn'")
    assert {tuple(r) for r in imported_rows} == {(None, None, None)}


def test_the_standin_serves_finished_apps_in_the_documented_shape(
    rm: StandinRM, yarn_fixtures: Path
) -> None:
    import requests

    documented = json.loads((yarn_fixtures / "apps.json").read_text())["apps"]["app"][0]
    app = rm.add_app("x", start_s=rm.now_s - 100, duration_s=50)
    rm.add_app("still running", start_s=rm.now_s - 10, duration_s=600)
    answer = requests.get(
        f"{rm.url}/ws/v1/cluster/apps", params={"states": "FINISHED,FAILED,KILLED"}, timeout=10
    ).json()
    (served,) = answer["apps"]["app"]
    assert served["id"] == app and set(documented) <= set(served)
    for key, value in documented.items():  # the same JSON kinds (numbers, texts, booleans)
        assert isinstance(served[key], bool) == isinstance(value, bool), key
        assert isinstance(served[key], str) == isinstance(value, str), key
    assert (served["state"], served["finalStatus"]) == (documented["state"], "SUCCEEDED")
    assert served["finishedTime"] == served["startedTime"] + served["elapsedTime"] > 0
    assert served["runningContainers"] <= 0 and served["allocatedVCores"] <= 0  # none held
    assert served["vcoreSeconds"] > 0  # what the import estimates the executors from


def test_the_documented_apps_document_imports(db: Path, rm: StandinRM, yarn_fixtures: Path) -> None:
    rm.raw_apps = (yarn_fixtures / "apps.json").read_bytes()  # Hadoop's own example, verbatim
    summary = imported(db, rm, "--since", "2016-10-01")
    assert summary["imported"] == 2 and summary["skipped"] == 0
    assert summary["colocations"] == 2  # the two apps overlapped: one row on each
    runs = {r["app_id"]: r for r in rows(db, "SELECT * FROM runs")}
    word_count = runs["application_1476912658570_0002"]
    assert word_count["job"] == "word-count" and word_count["status"] == "succeeded"
    assert word_count["runtime_s"] == pytest.approx(304.578)
    # 201 vcore-seconds over 304.6 s is 0.66 containers: the AM alone, at least 1 executor
    assert word_count["scale_out"] == 1 and word_count["mean_scale_out"] == 0.0
