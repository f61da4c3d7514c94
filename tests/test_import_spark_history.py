"""`cobell history import --from-spark-history`: a REAL Spark History Server from the pyspark
wheel, over event logs recorded by real Spark runs (tests/data/eventlogs/record.py).

Run under the machine's Spark lock: `flock /tmp/cobell-spark.lock .venv/bin/python -m pytest
tests/test_import_spark_history.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from cobell_cli.cluster.fields import spark_time
from cobell_cli.run.local_cluster import find_spark_home
from cobell_cli.sources.spark_history import executor_counts
from tests.cli_support import cobell
from tests.spark_support import free_port, require_spark

LOGS = Path(__file__).parent / "data" / "eventlogs" / "logs"
APPS = 4  # etl, adhoc report, cobell:pi, broken (and `crashed`, which has no end event)


@pytest.fixture(scope="module")
def history_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A History Server on a free port over a copy of the recorded logs; stopped afterwards."""
    require_spark()
    if not LOGS.is_dir():
        pytest.skip(f"no recorded event logs at {LOGS} (run tests/data/eventlogs/record.py)")
    base = tmp_path_factory.mktemp("shs")
    logs = base / "logs"
    shutil.copytree(LOGS, logs)
    port = free_port()
    props = base / "shs.properties"
    props.write_text(
        f"spark.history.fs.logDirectory=file://{logs}\n"
        f"spark.history.ui.port={port}\n"
        "spark.history.fs.update.interval=1s\n"
        "spark.port.maxRetries=0\n"
    )
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(base)}
    env["SPARK_CONF_DIR"] = str(base)
    env["SPARK_DAEMON_MEMORY"] = "512m"
    spark_class = find_spark_home() / "bin" / "spark-class"
    cmd = [str(spark_class), "org.apache.spark.deploy.history.HistoryServer"]
    with (base / "shs.out").open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "--properties-file", str(props)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_apps(url, proc, base / "shs.out")
        yield url
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def _wait_for_apps(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the History Server exited: {log.read_text()[-2000:]}")
        try:
            apps = requests.get(f"{url}/api/v1/applications", timeout=2).json()
            if len(apps) >= APPS + 1:
                return
        except (requests.RequestException, ValueError):
            pass
        time.sleep(0.5)
    pytest.fail(f"the History Server did not list {APPS} apps in 120 s: {log.read_text()[-2000:]}")


def rows(db: Path, sql: str) -> list[sqlite3.Row]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def shs_import(db: Path, url: str, *args: str) -> dict:
    result = cobell(
        "--db", db, "history", "import", "--from-spark-history", url, "--since", "3650d",
        "--json", *args,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.spark
def test_history_server_apps_become_runs(tmp_path: Path, history_server: str) -> None:
    db = tmp_path / "h.db"
    summary = shs_import(db, history_server)
    assert summary["seen"] == APPS + 1 and summary["imported"] == APPS, summary
    assert summary["skipped_by_reason"] == {"no end event (running or crashed)": 1}
    assert summary["scale_out_from"] == {"executors": APPS}
    runs = {r["job"]: r for r in rows(db, "SELECT * FROM runs")}
    assert set(runs) == {"etl", "adhoc-report", "pi", "broken"}  # tag, name, cobell: name
    assert runs["etl"]["scale_out"] == 2 and runs["pi"]["scale_out"] == 1
    assert runs["adhoc-report"]["scale_out"] == 2
    assert runs["broken"]["status"] == "failed"
    for job in ("etl", "adhoc-report", "pi"):
        run = runs[job]
        assert run["status"] == "succeeded" and run["source"] == "spark-history"
        assert run["app_id"].startswith("app-") and run["target_s"] is None
        assert 0 < run["mean_scale_out"] <= run["scale_out"]
        assert 1 < run["runtime_s"] < 300
    # etl and adhoc report ran at the same time: a co-location on each side
    pairs = rows(
        db,
        "SELECT r.job, c.co_runner_job, c.overlap_s, c.overlap_ratio FROM colocations c "
        "JOIN runs r ON r.id = c.run_id ORDER BY r.job",
    )
    assert [(p["job"], p["co_runner_job"]) for p in pairs] == [
        ("adhoc-report", "etl"),
        ("etl", "adhoc-report"),
    ]
    assert all(p["overlap_s"] > 0 and 0 < p["overlap_ratio"] <= 1 for p in pairs)
    # each app's event log was downloaded next to the history, for the what-if
    for run in runs.values():
        log = Path(run["event_log"])
        assert log.is_relative_to(tmp_path / "event-logs") and log.exists()
        assert run["app_id"] in log.name
    assert Path(runs["etl"]["event_log"]).is_file()  # a single-file log
    assert Path(runs["pi"]["event_log"]).is_dir()  # a rolling log directory
    assert any(Path(runs["pi"]["event_log"]).glob("events_1_*"))
    # ... and folded into the what-if's profile, stored with the run in the same import
    assert summary["profiles"] == APPS and summary["unprofiled_by_reason"] == {}
    profiles = rows(
        db, "SELECT r.app_id, p.summary FROM run_profiles p JOIN runs r ON r.id = p.run_id"
    )
    assert len(profiles) == APPS
    for row in profiles:
        profile = json.loads(row["summary"])
        assert profile["app_id"] == row["app_id"] and profile["stages"]
    again = shs_import(db, history_server)
    assert again["imported"] == 0 and again["profiles"] == 0
    assert again["skipped_by_reason"]["already in the history"] == APPS
    assert rows(db, "SELECT count(*) FROM run_profiles")[0][0] == APPS


@pytest.mark.spark
def test_dry_run_and_since(tmp_path: Path, history_server: str) -> None:
    db = tmp_path / "h.db"
    assert shs_import(db, history_server, "--dry-run")["imported"] == APPS
    assert not db.exists()
    assert not (tmp_path / "event-logs").exists()
    kept = shs_import(db, history_server, "--no-download-logs")
    assert kept["imported"] == APPS and not (tmp_path / "event-logs").exists()
    assert kept["profiles"] == 0 and rows(db, "SELECT count(*) FROM run_profiles")[0][0] == 0
    assert {r[0] for r in rows(db, "SELECT event_log FROM runs")} == {None}
    future = cobell(
        "--db", db, "history", "import", "--from-spark-history", history_server,
        "--since", "2999-01-01", "--json",
    )  # fmt: skip
    assert future.exit_code == 0
    assert json.loads(future.stdout)["imported"] == 0  # only the crashed app, skipped


def test_history_server_down_is_one_line_exit_4(tmp_path: Path, dead_rm_url: str) -> None:
    db = tmp_path / "h.db"
    result = cobell(
        "--db", db, "history", "import", "--from-spark-history", dead_rm_url,
        env={"COBELL_RETRIES": "0"},
    )  # fmt: skip
    assert result.exit_code == 4 and "Spark History Server" in result.stderr
    assert "connection refused" in result.stderr and "Traceback" not in result.stderr
    assert not db.exists() or rows(db, "SELECT count(*) FROM runs")[0][0] == 0


def test_slow_history_server_gives_up_in_bounded_time(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        result = cobell(
            "--db", tmp_path / "h.db", "history", "import", "--from-spark-history", url,
            env={"COBELL_RETRIES": "0", "COBELL_TIMEOUT_S": "1"},
        )  # fmt: skip
        elapsed = time.monotonic() - started
    assert result.exit_code == 4 and "no answer within 1 s" in result.stderr
    assert elapsed < 10


def test_garbage_instead_of_a_history_server(tmp_path: Path, yarn_rm) -> None:
    yarn_rm.garbage = True
    result = cobell(
        "--db", tmp_path / "h.db", "history", "import", "--from-spark-history", yarn_rm.url
    )
    assert result.exit_code == 4 and "not JSON" in result.stderr
    yarn_rm.garbage = False  # the RM's own JSON: a 404 for /api/v1/applications
    wrong = cobell(
        "--db", tmp_path / "h.db", "history", "import", "--from-spark-history", yarn_rm.url
    )
    # it said "answered an application list that is not a list" for the 404
    assert wrong.exit_code == 4 and "not a list" not in wrong.stderr
    assert "answered HTTP 404" in wrong.stderr and "no History Server's REST API" in wrong.stderr


def test_executor_counts_peak_and_mean() -> None:
    t = 1_000_000.0
    ms = lambda s: int((t + s) * 1000)  # noqa: E731
    executors = [
        {"id": "driver", "addTime": ms(0)},
        {"id": "1", "addTime": ms(0), "removeTime": ms(50)},
        {"id": "2", "addTime": ms(10)},
        {"id": "3", "addTime": ms(50)},  # replaces 1 at the same instant: peak stays 2
    ]
    peak, mean = executor_counts(executors, t, t + 100)
    assert peak == 2 and mean == pytest.approx((50 + 90 + 50) / 100)
    assert spark_time("2026-11-22T23:25:17.123GMT") == pytest.approx(1795389917.123)
    assert spark_time("yesterday") is None and executor_counts([], t, t + 1) is None


@pytest.mark.spark
def test_yarn_import_takes_exact_executors_from_the_history_server(
    tmp_path: Path, history_server: str, yarn_rm
) -> None:
    known = requests.get(f"{history_server}/api/v1/applications", timeout=10).json()
    etl = next(a for a in known if a["name"] == "etl")
    yarn_rm.now_s = time.time()
    yarn_rm.add_app(
        "etl", app_id=etl["id"], executors=9, start_s=yarn_rm.now_s - 900, duration_s=300
    )
    other = yarn_rm.add_app("mr job", executors=3, start_s=yarn_rm.now_s - 900, duration_s=300)
    db = tmp_path / "h.db"
    result = cobell(
        "--db", db, "history", "import", "--from-yarn", "--rm-url", yarn_rm.url,
        "--from-spark-history", history_server, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["scale_out_from"] == {"executors (Spark History Server)": 1, "vcore-seconds": 1}
    by_app = {r["app_id"]: r for r in rows(db, "SELECT * FROM runs")}
    assert by_app[other]["scale_out"] == 3
    assert by_app[etl["id"]]["scale_out"] == 2  # the History Server's, not the RM's 9
    assert 0 < by_app[etl["id"]]["mean_scale_out"] <= 2


def test_yarn_import_keeps_estimates_when_the_history_server_is_down(
    tmp_path: Path, yarn_rm, dead_rm_url: str
) -> None:
    yarn_rm.now_s = time.time()
    for _ in range(3):
        yarn_rm.add_app("sgd", executors=4, start_s=yarn_rm.now_s - 900, duration_s=300)
    started = time.monotonic()
    result = cobell(
        "--db", tmp_path / "h.db", "history", "import", "--from-yarn", "--rm-url", yarn_rm.url,
        "--from-spark-history", dead_rm_url, "--json", env={"COBELL_RETRIES": "0"},
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["imported"] == 3 and summary["scale_out_from"] == {"vcore-seconds": 3}
    assert len(summary["warnings"]) == 1 and "connection refused" in summary["warnings"][0]
    assert result.stderr.count("estimated scale-outs kept") == 1
    assert time.monotonic() - started < 10


class DrippingServer:
    """Loopback HTTP that answers 200 with a long zip body, one byte every `every_s` (a slow
    History Server whose every read arrives within the timeout); counts the requests."""

    def __init__(self, every_s: float = 0.2) -> None:
        import threading

        self.every_s = every_s
        self.requests = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.requests += 1
            with conn:
                try:
                    conn.recv(65536)
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                        b"Content-Length: 100000\r\n\r\n"
                    )
                    while not self.stop.wait(self.every_s):
                        conn.sendall(b"P")
                except OSError:  # the client gave up
                    pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.mark.timeout(60)  # a download that never gives up fails here, not at the suite's 600 s
def test_a_dripping_log_download_gives_up_in_bounded_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cobell_cli.cluster.http import JsonClient
    from cobell_cli.sources import spark_history
    from cobell_cli.sources.record import ImportedApp, ImportSummary, store_imported
    from cobell_cli.store.history import History

    monkeypatch.setattr(spark_history, "DOWNLOAD_BUDGET_S", 1.0)
    drip = DrippingServer()
    try:
        client = JsonClient(what="Spark History Server", timeout_s=2.0, retries=0)
        server = spark_history.HistoryServer(drip.url, client)
        summary = ImportSummary("spark-history", "test")
        profiles = spark_history.LogProfiles(server, tmp_path / "logs")
        apps = [
            ImportedApp(f"app-{k}", "x", "x", "succeeded", 0.0, 10.0, "spark-history", 1)
            for k in range(3)
        ]
        started = time.monotonic()
        kept = [profiles(app) for app in apps]
        elapsed = time.monotonic() - started
    finally:
        drip.close()
    assert elapsed < 1.0 + 2.0 + 1.5  # the budget, one read's timeout, slack
    assert all(a.profile is None and a.event_log is None for a in kept)
    assert drip.requests == 1  # the server failed once: no more logs asked for
    with History.open(tmp_path / "h.db") as history:  # the runs are imported all the same
        store_imported(history, kept, summary)
    assert summary.imported == 3 and summary.profiles == 0
    assert dict(summary.unprofiled) == {
        "log not downloaded (not downloaded within 1 s)": 1,
        "log not downloaded (the server failed: not downloaded within 1 s)": 2,
    }
