"""Reading live progress from real Spark drivers (cluster/progress.py): on the local standalone
cluster at the app's own UI address, and through the YARN stand-in's web proxy forwarding to
the same real driver; failures (404, garbage, a stopped driver) cost at most the budget and
leave only that app without progress."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import cobell_cli.examples as examples
from cobell_cli.cluster.http import JsonClient
from cobell_cli.cluster.progress import parse_progress, read_progress
from cobell_cli.cluster.standalone import StandaloneCluster
from cobell_cli.cluster.yarn import YarnCluster
from cobell_cli.sources.eventlog_profile import summarize
from tests.cli_support import cobell
from tests.spark_support import LocalSpark, driver_env
from tests.yarn_standin import StandinRM

pytestmark = pytest.mark.spark
EXAMPLES = Path(examples.__file__).parent
ROUNDS = 200  # one Spark job (one stage of 2 tasks) per round: later jobs are not known yet
EXAMPLE = Path(__file__).resolve().parents[1] / "history" / "example.csv"
EVENT_LOG = Path(__file__).parent / "data" / "eventlogs" / "logs" / "app-20261122233927-0000.zstd"


@dataclass(frozen=True)
class Driver:
    app_id: str
    ui_url: str
    process: subprocess.Popen[bytes]


def master_client() -> JsonClient:
    return JsonClient(what="Spark master", timeout_s=30, retries=0)


@pytest.fixture(scope="module")
def driver(local_spark: LocalSpark) -> Iterator[Driver]:
    """A real PySpark app running ROUNDS short jobs on the local cluster, with its UI URL."""
    process = subprocess.Popen(
        [str(local_spark.spark_submit), "--master", local_spark.master_url,
         "--name", "progress-probe", "--total-executor-cores", "2",
         str(EXAMPLES / "corunner_job.py"), "--tasks", "2", "--task-s", "1",
         "--rounds", str(ROUNDS)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=driver_env(),
    )  # fmt: skip
    try:
        cluster = StandaloneCluster([local_spark.webui_url], master_client())
        deadline = time.monotonic() + 180
        app_id = ui = None
        while time.monotonic() < deadline and ui is None:
            assert process.poll() is None, "the probe app exited before it ran"
            apps = [a for a in cluster.running_apps() if a.name == "progress-probe"]
            if apps:
                app_id = apps[0].app_id
                read, _ = read_progress(cluster, apps, budget_s=30)
                if read[0].driver is not None and read[0].driver.jobs_known >= 2:
                    ui = _ui_url(local_spark, app_id)
            time.sleep(1.0)
        if ui is None or app_id is None:
            pytest.fail("the probe app did not run two jobs within 180 s")
        yield Driver(app_id, ui, process)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def _ui_url(spark: LocalSpark, app_id: str) -> str:
    """The link on the master's app page, read independently of the code under test."""
    import re
    import urllib.request

    with urllib.request.urlopen(f"{spark.webui_url}/app/?appId={app_id}", timeout=30) as r:
        page = r.read().decode()
    match = re.search(r'href="([^"]+)">Application Detail UI', page)
    assert match, "the master's app page has no Application Detail UI link"
    return match.group(1).rstrip("/")


def _rest(url: str) -> object:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


@pytest.fixture
def stopped(driver: Driver) -> Iterator[Driver]:
    """The probe's driver JVM stopped (SIGSTOP): its UI accepts connections, answers nothing."""
    os.kill(driver.process.pid, signal.SIGSTOP)
    try:
        yield driver
    finally:
        os.kill(driver.process.pid, signal.SIGCONT)


def standalone(spark: LocalSpark) -> StandaloneCluster:
    return StandaloneCluster([spark.webui_url], master_client())


def yarn(rm: StandinRM, timeout_s: float = 30) -> YarnCluster:
    return YarnCluster([rm.url], JsonClient(what="YARN RM", auth="simple", user="alice",
                                            timeout_s=timeout_s, retries=0))


# --- standalone: the app's own UI address ------------------------------------------------


def test_standalone_reads_the_real_drivers_jobs_and_stages(local_spark, driver):
    cluster = standalone(local_spark)
    probe = [a for a in cluster.running_apps() if a.app_id == driver.app_id]
    first, report = read_progress(cluster, probe, budget_s=60)
    assert report.answered == 1 and not report.failures, report
    d = first[0].driver
    assert d is not None
    # one stage of two tasks per job, jobs one after another
    assert 2 <= d.jobs_known < ROUNDS
    assert d.stages_known == d.jobs_known and d.tasks_known == 2 * d.jobs_known
    assert d.jobs_done <= d.stages_complete + len(d.active_fractions)
    assert d.stages_complete >= d.jobs_known - 1
    assert probe[0].started_at is not None and d.first_job_at is not None
    assert probe[0].started_at - 5 <= d.first_job_at <= time.time()
    # the same numbers the driver's REST API gives, read directly
    jobs = _rest(f"{driver.ui_url}/api/v1/applications/{driver.app_id}/jobs")
    assert isinstance(jobs, list) and len(jobs) >= d.jobs_known
    # later: more jobs are known and more are done (they were not known before)
    time.sleep(4)
    later, _ = read_progress(cluster, probe, budget_s=60)
    assert later[0].driver is not None
    assert later[0].driver.jobs_known > d.jobs_known
    assert later[0].driver.stages_done >= d.stages_done


def test_a_stopped_standalone_driver_costs_at_most_the_budget(local_spark, driver, stopped):
    cluster = standalone(local_spark)
    probe = [a for a in cluster.running_apps() if a.app_id == driver.app_id]
    started = time.monotonic()
    out, report = read_progress(cluster, probe, budget_s=3.0)
    elapsed = time.monotonic() - started
    assert elapsed < 3.0 + 1.5
    assert out[0].driver is None and report.answered == 0
    assert driver.app_id in report.failures


# --- YARN: through the ResourceManager's web proxy ----------------------------------------


def test_the_yarn_proxy_forwards_to_the_real_driver(yarn_rm: StandinRM, driver):
    yarn_rm.now_s = time.time()
    yarn_rm.add_app("progress-probe", app_id=driver.app_id, executors=2, duration_s=None,
                    start_s=yarn_rm.now_s - 60)
    yarn_rm.proxy_targets[driver.app_id] = driver.ui_url
    cluster = yarn(yarn_rm)
    apps = cluster.running_apps()
    assert apps[0].ui_url == f"{yarn_rm.url}/proxy/{driver.app_id}/"
    out, report = read_progress(cluster, apps, budget_s=60)
    assert report.answered == 1, report
    d = out[0].driver
    assert d is not None and d.jobs_known >= 2 and d.stages_known == d.jobs_known
    asked = [r for r in yarn_rm.requests if r["path"].startswith("/proxy/")]
    assert {r["path"] for r in asked} == {
        f"/proxy/{driver.app_id}/api/v1/applications/{driver.app_id}/jobs",
        f"/proxy/{driver.app_id}/api/v1/applications/{driver.app_id}/stages",
    }
    assert all(r["query"].get("user.name") == ["alice"] for r in asked)
    assert any(r["query"].get("status") == ["active"] for r in asked)


def test_failures_leave_only_their_app_without_progress(yarn_rm: StandinRM, driver):
    """One read: the real driver answers; a non-Spark app's UI answers HTML; an app whose id
    the driver does not know gets a real 404 from it; an app not running gets the RM's 404."""
    yarn_rm.now_s = time.time()
    start = yarn_rm.now_s - 60
    good = yarn_rm.add_app("probe", app_id=driver.app_id, executors=2, duration_s=None,
                           start_s=start)
    html = yarn_rm.add_app("mapreduce", executors=2, duration_s=None, start_s=start,
                           app_type="MAPREDUCE")
    wrong = yarn_rm.add_app("renamed", executors=2, duration_s=None, start_s=start)
    yarn_rm.proxy_targets[good] = yarn_rm.proxy_targets[wrong] = driver.ui_url
    cluster = yarn(yarn_rm)
    apps = cluster.running_apps()
    gone = yarn_rm.add_app("finished", executors=2, duration_s=1, start_s=start)
    apps += [a for a in yarn(yarn_rm).apps_finished_since(0) if a.app_id == gone]
    out, report = read_progress(cluster, apps, budget_s=60)
    by_id = {a.app_id: a for a in out}
    assert by_id[good].driver is not None
    assert report.failures == {html: "not JSON", wrong: "HTTP 404", gone: "HTTP 404"}
    assert report.asked == 4 and report.answered == 1


def test_a_stopped_driver_behind_the_proxy_costs_at_most_the_budget(yarn_rm, driver, stopped):
    yarn_rm.now_s = time.time()
    ids = [yarn_rm.add_app(f"probe-{i}", executors=2, duration_s=None,
                           start_s=yarn_rm.now_s - 60) for i in range(3)]
    for app_id in ids:  # three apps, all behind the one stopped driver: read concurrently
        yarn_rm.proxy_targets[app_id] = driver.ui_url
    cluster = yarn(yarn_rm, timeout_s=30)
    apps = cluster.running_apps()
    started = time.monotonic()
    out, report = read_progress(cluster, apps, budget_s=3.0)
    elapsed = time.monotonic() - started
    assert elapsed < 3.0 + 1.5
    assert report.answered == 0 and set(report.failures) == set(ids)
    assert all(a.driver is None for a in out)


# --- end to end: cobell predict ----------------------------------------------------------


def test_predict_uses_the_live_progress_of_a_co_runner(tmp_path, yarn_rm, driver):
    """A co-runner of a job with runs and event-log profiles, its driver behind the proxy:
    `cobell predict --json` plans its end from its progress and says so."""
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", EXAMPLE).exit_code == 0
    profile = json.dumps(summarize(EVENT_LOG).to_dict())
    with sqlite3.connect(db) as conn:  # profiles as `cobell submit` stores them (issue 14)
        ids = [r[0] for r in conn.execute("SELECT id FROM runs WHERE job = 'wordcount'")]
        conn.executemany("INSERT INTO run_profiles (run_id, format, summary) VALUES (?, 1, ?)",
                         [(i, profile) for i in ids])
    yarn_rm.now_s = time.time()
    yarn_rm.add_app("nightly wordcount", app_id=driver.app_id, tags="cobell-job:wordcount",
                    executors=10, duration_s=None, start_s=yarn_rm.now_s - 60)
    yarn_rm.proxy_targets[driver.app_id] = driver.ui_url
    result = cobell("--db", db, "predict", "--json", "-j", "sgd", "-t", "300",
                    "--max-scale-out", "24", "--rm-url", yarn_rm.url)
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    (view,) = plan["co_runners"]
    assert plan["live_progress"]["answered"] == 1, plan["live_progress"]
    assert view["driver"]["jobs_known"] >= 2
    assert view["stage_plan"]["shares_known"] is True
    assert view["source"] == "progress" and "live progress" in view["note"]


def test_parse_progress_refuses_what_is_not_sparks_answer():
    from cobell_cli.cluster.progress import ProgressError

    for jobs, stages in [({}, []), ([{"id": 1}], []), ([], {"a": 1}), ("x", [])]:
        with pytest.raises(ProgressError):
            parse_progress(jobs, stages)
    # a pending stage shared by a later job counts once; hidden numbers count as 0
    d = parse_progress(
        [{"jobId": 1, "status": "RUNNING", "stageIds": [1, 2], "numTasks": 8,
          "numCompletedTasks": 2, "numCompletedStages": 0, "submissionTime": "garbage"},
         {"jobId": 0, "status": "SUCCEEDED", "stageIds": [0, 1], "numTasks": 8,
          "numSkippedTasks": 4, "numCompletedTasks": 4, "numCompletedStages": 1,
          "submissionTime": "2026-11-25T02:14:37.249GMT"}],
        [{"stageId": 2, "status": "ACTIVE", "numTasks": 4, "numCompleteTasks": 2,
          "numActiveTasks": 2}, {"stageId": 9, "status": "PENDING", "numTasks": 1}],
    )
    assert (d.jobs_known, d.jobs_done, d.stages_known, d.stages_complete) == (2, 1, 3, 1)
    assert d.active_fractions == (0.75,)
    assert (d.tasks_known, d.tasks_done) == (12, 6)
    assert d.first_job_at == pytest.approx(1795572877.249)
