"""Executor memory at the edges: the event-log fold's peaks and failures, the history's
memory columns (migration, validation, CSV/JSON), the command's memory (parsed, injected,
replaced), and the YARN allocation read from the RM's configuration or yarn-site.xml."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cobell_cli.cluster.allocation import allocation_of, conf_values
from cobell_cli.cluster.yarnconf import site_allocation
from cobell_cli.core.memory.failures import memory_failure
from cobell_cli.core.memory.measure import memory_columns
from cobell_cli.errors import UsageError
from cobell_cli.run.launch import Injection, inject, user_memory, with_event_log, with_memory
from cobell_cli.sources.eventlog_profile import summarize
from cobell_cli.store.history import History
from cobell_cli.store.interchange import HistoryFile, to_csv, to_json

T0 = 1_700_000_000_000
MB = 1024 * 1024


def _metrics(heap_mb: float, storage_mb: float = 0.0) -> dict:
    return {"JVMHeapMemory": int(heap_mb * MB), "OnHeapStorageMemory": int(storage_mb * MB),
            "JVMOffHeapMemory": 50 * MB, "TotalGCTime": 1500}


def _log(tmp_path: Path, extra: list[dict], props: dict | None = None) -> Path:
    events = [
        {"Event": "SparkListenerApplicationStart", "App Name": "m", "App ID": "app-1",
         "Timestamp": T0},
        {"Event": "SparkListenerEnvironmentUpdate",
         "Spark Properties": props if props is not None else {"spark.executor.memory": "2g"}},
        {"Event": "SparkListenerExecutorAdded", "Executor ID": "1", "Timestamp": T0 + 1000,
         "Executor Info": {"Total Cores": 1}},
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": T0 + 2000,
         "Stage Infos": [{"Stage ID": 0, "Parent IDs": []}]},
        *extra,
        {"Event": "SparkListenerApplicationEnd", "Timestamp": T0 + 9000},
    ]
    path = tmp_path / "app-1"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def _task(executor: str, metrics: dict | None, reason: dict | None = None) -> dict:
    event = {"Event": "SparkListenerTaskEnd", "Stage ID": 0,
             "Task Info": {"Executor ID": executor, "Launch Time": T0 + 2000,
                           "Finish Time": T0 + 3000},
             "Task Metrics": {"Executor Run Time": 900, "JVM GC Time": 90,
                              "Shuffle Write Metrics": {"Shuffle Bytes Written": 4096}}}
    if metrics is not None:
        event["Task Executor Metrics"] = metrics
    if reason is not None:
        event["Task End Reason"] = reason
    return event


def test_the_fold_keeps_each_executors_peaks_from_every_metrics_event(tmp_path: Path) -> None:
    log = _log(tmp_path, [
        _task("1", _metrics(300, 40)),
        _task("2", _metrics(250)),
        {"Event": "SparkListenerStageExecutorMetrics", "Executor ID": "1", "Stage ID": 0,
         "Stage Attempt ID": 0, "Executor Metrics": _metrics(700, 10)},
        {"Event": "SparkListenerExecutorMetricsUpdate", "Executor ID": "2", "Metrics Updated": [],
         "Executor Metrics Updated": [{"Stage ID": 0, "Stage Attempt ID": 0,
                                       "Executor Metrics": _metrics(410)}]},
        {"Event": "SparkListenerStageExecutorMetrics", "Executor ID": "driver", "Stage ID": 0,
         "Stage Attempt ID": 0, "Executor Metrics": _metrics(5000)},  # not an executor
    ])
    memory = summarize(log).memory
    assert memory is not None
    peaks = {e.executor_id: e for e in memory.executors}
    assert set(peaks) == {"1", "2"}
    assert peaks["1"].heap_mb == pytest.approx(700) and peaks["1"].storage_mb == pytest.approx(40)
    assert peaks["2"].heap_mb == pytest.approx(410)
    assert memory.tasks == 2 and memory.task_gc_s == pytest.approx(0.18)
    assert memory.shuffle_write_bytes == 8192
    assert memory_columns(summarize(log)) == {"executor_memory_mb": 2048, "peak_memory_mb": 700.0}


def _gc(heap_mb: float, unified_mb: float, minor: int, major: int, major_ms: int) -> dict:
    return {"JVMHeapMemory": int(heap_mb * MB), "OnHeapUnifiedMemory": int(unified_mb * MB),
            "OnHeapExecutionMemory": int(unified_mb * MB), "MinorGCCount": minor,
            "MinorGCTime": 10 * minor, "MajorGCCount": major, "MajorGCTime": major_ms,
            "TotalGCTime": 10 * minor + major_ms}


def test_the_fold_keeps_each_spark_jobs_own_peaks_and_the_gc_it_did(tmp_path: Path) -> None:
    """Two actions of one application on two executors: each job's memory peaks are its own
    (the largest over its executors), its GC the counters' growth while it ran, summed over
    the executors; the application's peaks are the largest of all, its counters the last."""
    second = [
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": T0 + 5000,
         "Stage Infos": [{"Stage ID": 1, "Parent IDs": []}]},
        {**_task("1", _gc(400, 30, minor=9, major=1, major_ms=200)), "Stage ID": 1},
        {**_task("2", _gc(350, 60, minor=4, major=0, major_ms=0)), "Stage ID": 1},
    ]
    log = _log(tmp_path, [
        _task("1", _gc(900, 120, minor=5, major=0, major_ms=0)),
        _task("2", _gc(300, 10, minor=2, major=0, major_ms=0)),
        {"Event": "SparkListenerStageExecutorMetrics", "Executor ID": "1", "Stage ID": 0,
         "Stage Attempt ID": 0, "Executor Metrics": _gc(950, 150, minor=6, major=0,
                                                         major_ms=0)},
        *second,
    ])
    memory = summarize(log).memory
    assert memory is not None
    first, later = memory.job_metrics["0"], memory.job_metrics["1"]
    assert first["heap_mb"] == pytest.approx(950) and first["unified_mb"] == pytest.approx(150)
    assert later["heap_mb"] == pytest.approx(400) and later["unified_mb"] == pytest.approx(60)
    assert first["minor_gc"] == 6 + 2 and first["major_gc"] == 0  # from executor start
    assert later["minor_gc"] == (9 - 6) + (4 - 2)
    assert later["major_gc"] == 1 and later["major_gc_s"] == pytest.approx(0.2)
    assert later["gc_s"] == pytest.approx((90 + 200 - 60 + 40 - 20) / 1000)
    peaks = {e.executor_id: e for e in memory.executors}
    assert peaks["1"].major_gc == 1 and peaks["1"].minor_gc == 9
    assert peaks["1"].unified_mb == pytest.approx(150)


def test_a_stored_profile_with_the_old_heap_only_job_peaks_still_loads() -> None:
    """Profiles stored before job_metrics (`job_heap_mb`) load; the old key is dropped."""
    from cobell_cli.core.profile import AppProfile

    raw = {"app_id": "a", "app_name": "n", "start_ms": 0, "end_ms": 1000, "last_event_s": 1.0,
           "tags": [], "job_tag": None, "cores_per_executor": 1, "executors": [], "jobs": [],
           "stages": [], "local_mode": False,
           "memory": {"executors": [{"executor_id": "1", "heap_mb": 10.0}],
                      "job_heap_mb": {"0": 10.0}}}
    memory = AppProfile.from_dict(raw).memory
    assert memory is not None and memory.job_metrics == {}
    assert memory.executors[0].heap_mb == 10.0


def test_a_log_without_executor_metrics_has_no_peak_not_a_zero(tmp_path: Path) -> None:
    log = _log(tmp_path, [_task("1", None), _task("1", {"JVMHeapMemory": 0})], props={})
    profile = summarize(log)
    assert profile.memory is not None and profile.memory.executors == []
    assert memory_columns(profile) == {}


def test_the_fold_names_memory_failures_and_no_others(tmp_path: Path) -> None:
    oom = {"Reason": "ExceptionFailure", "Class Name": "java.lang.OutOfMemoryError",
           "Description": "Java heap space"}
    other = {"Reason": "ExceptionFailure", "Class Name": "java.io.IOException"}
    log = _log(tmp_path, [
        _task("1", _metrics(900), oom), _task("1", _metrics(100), other),
        {"Event": "SparkListenerExecutorRemoved", "Executor ID": "1", "Timestamp": T0 + 4000,
         "Removed Reason": "Command exited with code 52"},
    ])
    memory = summarize(log).memory
    assert memory is not None and len(memory.memory_failures) == 2
    assert memory_columns(summarize(log))["failure_reason"] == "memory"
    clean = _log(tmp_path, [_task("1", _metrics(100), other)])
    assert "failure_reason" not in memory_columns(summarize(clean))


@pytest.mark.parametrize("line", [
    "java.lang.OutOfMemoryError: Java heap space",
    "ExecutorLostFailure (executor 3 exited caused by one of the running tasks) Reason: "
    "Container killed by YARN for exceeding physical memory limits. 4.5 GB of 4.4 GB used.",
    "Executor app-20261125-0001/0 removed: Command exited with code 52",
    "Container [pid=123] is running 6012416B beyond the 'PHYSICAL' memory limit. "
    "Current usage: 1.1 GB of 1 GB physical memory used",
])
def test_memory_failure_lines(line: str) -> None:
    assert memory_failure(line)


@pytest.mark.parametrize("line", ["Task failed: java.io.FileNotFoundException", "exit code 1",
                                  "Lost executor 2: heartbeat timed out"])
def test_other_failures_are_not_memory(line: str) -> None:
    assert not memory_failure(line)


# --- the history ----------------------------------------------------------------------------


def test_memory_columns_round_trip_through_csv_and_json(tmp_path: Path) -> None:
    record = {"job": "etl", "status": "failed", "scale_out": 4, "input_bytes": 10,
              "executor_memory_mb": 2048, "executor_overhead_mb": 384, "peak_memory_mb": 1999.5,
              "failure_reason": "memory"}
    with History.open(tmp_path / "h.db") as history:
        history.insert_runs([record])
        runs = history.runs()
    for text, name in ((to_csv(runs), "runs.csv"), (to_json(runs), "runs.json")):
        path = tmp_path / name
        path.write_text(text)
        (back,) = list(HistoryFile.at(path))
        assert {k: back[k] for k in record} == record, name


@pytest.mark.parametrize(("field", "value", "says"), [
    ("executor_memory_mb", -1, "executor_memory_mb"),
    ("peak_memory_mb", 1e30, "peak_memory_mb"),
    ("peak_memory_mb", "NaN", "finite"),
    ("executor_memory_mb", 0, "executor_memory_mb"),
    ("failure_reason", "tired", "failure_reason"),
])
def test_absurd_memory_values_are_refused_naming_the_field(tmp_path, field, value, says) -> None:
    with History.open(tmp_path / "h.db") as history, pytest.raises(ValueError, match=says):
        history.insert_runs([{"job": "etl", "status": "failed", field: value}])


def test_the_database_refuses_absurd_memory_even_bypassing_cobell(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db"):
        pass
    conn = sqlite3.connect(tmp_path / "h.db")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO runs (job, status, peak_memory_mb) VALUES ('j', 'failed', -5)")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO runs (job, status, failure_reason) VALUES ('j', 'failed', 'x')")


def test_memory_runs_read_peaks_and_memory_failures_only(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        history.insert_runs([
            {"job": "etl", "status": "succeeded", "scale_out": 2, "runtime_s": 5,
             "input_bytes": 100, "peak_memory_mb": 700, "executor_memory_mb": 1024},
            {"job": "etl", "status": "succeeded", "scale_out": 2, "runtime_s": 5,
             "input_bytes": 100},  # no peak
            {"job": "etl", "status": "failed", "scale_out": 2, "input_bytes": 100,
             "executor_memory_mb": 512, "failure_reason": "memory"},
            {"job": "etl", "status": "failed", "scale_out": 2, "input_bytes": 100,
             "executor_memory_mb": 512},  # failed for another reason
        ])
        got = history.memory_runs("etl")
    assert [(r["status"], r["peak_memory_mb"]) for r in got] == [
        ("succeeded", 700.0), ("failed", None)]


def test_a_saved_profile_fills_the_runs_unknown_memory_columns(tmp_path: Path) -> None:
    log = _log(tmp_path, [_task("1", _metrics(900)), _task("1", _metrics(10), {
        "Reason": "ExceptionFailure", "Description": "java.lang.OutOfMemoryError"})])
    with History.open(tmp_path / "h.db") as history:
        ok, failed = history.insert_runs([
            {"job": "etl", "status": "succeeded", "scale_out": 1, "runtime_s": 9},
            {"job": "etl", "status": "failed", "scale_out": 1, "executor_memory_mb": 4096},
        ])
        history.save_profile(ok, summarize(log))
        history.save_profile(failed, summarize(log))
        first, second = history.run(ok), history.run(failed)
    assert first["peak_memory_mb"] == 900.0 and first["executor_memory_mb"] == 2048
    assert first["failure_reason"] is None  # it succeeded: a retried task is no failure
    assert second["executor_memory_mb"] == 4096  # what cobell recorded stays
    assert second["failure_reason"] == "memory"


# --- the command ----------------------------------------------------------------------------

YARN = ["spark-submit", "--master", "yarn"]
STANDALONE = ["spark-submit", "--master", "spark://h:7077"]


def test_user_memory_as_spark_submit_reads_it() -> None:
    assert user_memory([*YARN, "--executor-memory", "4g", "a.py"]).executor_memory_mb == 4096
    conf = user_memory([*YARN, "--conf", "spark.executor.memory=3072m",
                        "--conf", "spark.executor.memoryOverhead=1g", "a.py"])
    assert (conf.executor_memory_mb, conf.executor_overhead_mb) == (3072, 1024)
    inherited = user_memory([*YARN, "a.py"], {"spark.executor.memory": "6g"})
    assert inherited.executor_memory_mb == 6144 and inherited.given
    assert not user_memory([*YARN, "a.py", "--executor-memory", "1g"]).given  # the app's args
    assert not user_memory(["flink", "run", "x.jar"]).given


def test_an_unreadable_memory_string_is_a_usage_error_naming_the_forms() -> None:
    with pytest.raises(UsageError, match=r"--executor-memory.*4gigs.*512m"):
        user_memory([*YARN, "--executor-memory", "4gigs", "a.py"])
    with pytest.raises(UsageError, match=r"spark\.executor\.memoryOverhead"):
        user_memory([*YARN, "--conf", "spark.executor.memoryOverhead=lots", "a.py"])


def test_memory_is_injected_among_the_options_and_replaces_the_users_once() -> None:
    inj = with_memory(inject([*YARN, "app.py", "--executor-memory", "9g"], 4, "etl"), 1536, 512)
    app = inj.argv.index("app.py")
    assert inj.argv[app:] == ["app.py", "--executor-memory", "9g"]  # the app's own argument
    assert inj.argv[inj.argv.index("--executor-memory") + 1] == "1536m"
    assert "spark.executor.memoryOverhead=512m" in inj.argv[:app]
    user = with_memory(inject([*STANDALONE, "--executor-memory", "1g", "a.py"], 2, "e"),
                       2048, None)
    assert user.argv.count("--executor-memory") == 1 and "2048m" in user.argv
    assert any("replaced --executor-memory 1g" in w for w in user.warnings)
    assert not any("memoryOverhead" in t for t in user.argv)  # standalone has none
    flink = Injection(["flink", "run", "-p", "2", "x.jar"], "flink")
    assert with_memory(flink, 2048, 384) == flink


def test_event_logging_asks_for_the_peaks_unless_the_command_says_otherwise() -> None:
    argv = with_event_log([*STANDALONE, "a.py"], "file:///logs")
    assert "spark.eventLog.logStageExecutorMetrics=true" in argv
    assert "spark.executor.processTreeMetrics.enabled=true" in argv
    off = [*STANDALONE, "--conf", "spark.eventLog.logStageExecutorMetrics=false", "a.py"]
    assert "spark.eventLog.logStageExecutorMetrics=true" not in with_event_log(off, "file:///l")


# --- the cluster's allocation ---------------------------------------------------------------


def test_allocation_from_the_resourcemanagers_configuration() -> None:
    doc = {"properties": [
        {"key": "yarn.scheduler.minimum-allocation-mb", "value": "512"},
        {"key": "yarn.scheduler.maximum-allocation-mb", "value": "8192"},
        {"key": "yarn.resourcemanager.scheduler.class",
         "value": "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity."
                  "CapacityScheduler"},
    ]}
    got = allocation_of(conf_values(doc), "resourcemanager")
    assert got is not None and (got.step_mb, got.maximum_mb) == (512, 8192)
    fair = {**conf_values(doc), "yarn.resourcemanager.scheduler.class": "x.fair.FairScheduler",
            "yarn.resource-types.memory-mb.increment-allocation": "256"}
    assert allocation_of(fair, "resourcemanager").step_mb == 256  # type: ignore[union-attr]
    single = {"property": {"key": "yarn.scheduler.minimum-allocation-mb", "value": "2048"}}
    assert allocation_of(conf_values(single), "rm").step_mb == 2048  # type: ignore[union-attr]
    for junk in (None, [], {"properties": "x"}, {"properties": [{"value": 3}]}, "<xml/>"):
        assert conf_values(junk) == {}
    assert allocation_of({"yarn.scheduler.minimum-allocation-mb": "lots"}, "rm") is None


def test_allocation_from_yarn_site_xml(tmp_path: Path) -> None:
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.scheduler.minimum-allocation-mb</name>"
        "<value>${step}</value></property><property><name>step</name><value>768</value>"
        "</property></configuration>"
    )
    got = site_allocation({"YARN_CONF_DIR": str(tmp_path)})
    assert got is not None and got.step_mb == 768 and got.source == "yarn-site.xml"


class _ConfServer:
    """A ResourceManager's ConfServlet on loopback: /conf answers `doc` in JSON only to a
    request that accepts JSON (Hadoop 3 reads the Accept header and ignores `format`; the real
    RM answers XML otherwise), and XML, as an RM that serves only XML, when `doc` is a str."""

    def __init__(self, doc: object) -> None:
        import http.server
        import threading

        served = doc

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not self.path.startswith("/conf"):
                    self.send_error(404)
                    return
                xml = isinstance(served, str) or "json" not in self.headers.get("Accept", "")
                body = (served if isinstance(served, str) else "<configuration/>").encode() if xml \
                    else json.dumps(served).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/xml" if xml else "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_the_resourcemanagers_own_configuration_wins(tmp_path: Path, monkeypatch) -> None:
    from cobell_cli.cluster.http import JsonClient
    from cobell_cli.cluster.yarn import YarnCluster

    (tmp_path / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.scheduler.minimum-allocation-mb</name>"
        "<value>768</value></property></configuration>")
    monkeypatch.setenv("YARN_CONF_DIR", str(tmp_path))
    rm = _ConfServer({"properties": [
        {"key": "yarn.scheduler.minimum-allocation-mb", "value": "256"},
        {"key": "yarn.scheduler.maximum-allocation-mb", "value": "4096"}]})
    old = _ConfServer("<configuration/>")  # an RM that serves only XML
    try:
        got = YarnCluster([rm.url], JsonClient(what="YARN RM", retries=0)).allocation()
        assert (got.step_mb, got.maximum_mb, got.source) == (256, 4096, "resourcemanager")
        fallback = YarnCluster([old.url], JsonClient(what="YARN RM", retries=0)).allocation()
        assert (fallback.step_mb, fallback.source) == (768, "yarn-site.xml")
    finally:
        rm.close()
        old.close()
    monkeypatch.setenv("YARN_CONF_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path / "nowhere"))
    dead = YarnCluster(["http://127.0.0.1:9"], JsonClient(what="YARN RM", retries=0,
                                                          timeout_s=1, budget_s=2))
    if not Path("/etc/hadoop/conf/yarn-site.xml").exists():
        assert dead.allocation().source == "default"


class _HistoryServer:
    """A Spark History Server's REST API on loopback: one completed app whose executors
    carry `peakMemoryMetrics` (as /allexecutors answers them) and no event log to download."""

    def __init__(self, executors: list, properties: list) -> None:
        from tests.yarn_standin import LoopbackServer

        app = {"id": "app-1", "name": "etl", "attempts": [{
            "completed": True, "startTimeEpoch": 1_700_000_000_000,
            "endTimeEpoch": 1_700_000_600_000, "sparkUser": "ana"}]}
        self.answers = {
            "/api/v1/applications": [app], "/api/v1/applications/app-1/allexecutors": executors,
            "/api/v1/applications/app-1/environment": {"sparkProperties": properties},
            "/api/v1/applications/app-1/jobs": [{"status": "SUCCEEDED"}],
            "/api/v1/applications/app-1/stages": [{"inputBytes": 4 * 1024**3}]}
        self.server = LoopbackServer(self.handle)
        self.url = self.server.url
        self.server.start()

    def handle(self, method: str, path: str, query: dict, body: bytes) -> tuple:
        if path.endswith("/applications") and query.get("status") == ["running"]:
            return 200, {"Content-Type": "application/json"}, b"[]"
        if path not in self.answers:
            return 404, {}, b""
        return 200, {"Content-Type": "application/json"}, json.dumps(self.answers[path]).encode()

    def close(self) -> None:
        self.server.stop()


def test_the_history_servers_peak_memory_metrics_give_the_peak_without_a_log(
    tmp_path: Path,
) -> None:
    """Issue 26 item 1: where no event log is read (not downloaded, or without metrics), the
    History Server's /allexecutors `peakMemoryMetrics` gives the peak heap of the busiest
    executor (not the driver's), and the app's properties the reservation; an executor whose
    metrics are absent or absurd gives none."""
    from cobell_cli.cluster.http import JsonClient
    from cobell_cli.sources.record import ImportSummary, store_imported
    from cobell_cli.sources.spark_history import HistoryServer, read_apps

    mb = 1024 * 1024
    executors = [
        {"id": "driver", "addTime": "2023-11-14T22:13:20.000GMT",
         "peakMemoryMetrics": {"JVMHeapMemory": 3000 * mb}},
        {"id": "1", "addTime": "2023-11-14T22:13:25.000GMT",
         "peakMemoryMetrics": {"JVMHeapMemory": 1500 * mb, "JVMOffHeapMemory": 90 * mb}},
        {"id": "2", "addTime": "2023-11-14T22:13:25.000GMT",
         "peakMemoryMetrics": {"JVMHeapMemory": 1900.5 * mb}},
        {"id": "3", "addTime": "2023-11-14T22:13:25.000GMT",
         "peakMemoryMetrics": {"JVMHeapMemory": 1e30}},
        {"id": "4", "addTime": "2023-11-14T22:13:25.000GMT"}]
    properties = [["spark.executor.memory", "4g"], ["spark.executor.memoryOverhead", "512m"]]
    shs, without = _HistoryServer(executors, properties), _HistoryServer(executors[4:], [])
    client = JsonClient(what="Spark History Server", retries=0)
    try:
        summary = ImportSummary("spark-history", shs.url)
        [app] = read_apps(HistoryServer(shs.url, client), 0.0, summary)
        bare = read_apps(HistoryServer(without.url, client), 0.0, ImportSummary("x", "x"))
    finally:
        shs.close()
        without.close()
    assert app.memory == {"executor_memory_mb": 4096, "executor_overhead_mb": 512,
                          "peak_memory_mb": 1900.5}
    assert bare[0].memory == {}  # no metrics, no properties: nothing, never a guess
    with History.open(tmp_path / "h.db") as history:
        store_imported(history, [app], summary)
        row = history.runs()[0]
    assert (row["peak_memory_mb"], row["executor_memory_mb"]) == (1900.5, 4096)
