"""`cobell submit` of real Spark jobs on the real YARN, the way a user runs them.

One scenario (module fixture, all on the session's YARN, jobs running side by side to keep the
suite short):

1. `hog`, a CPU-heavy co-runner, through `cobell submit` in client deploy mode (background);
   while it runs, its live progress is read through the RM's real web proxy, by the reader and
   by `cobell predict`;
2. then, while `hog` runs:
   - `scaling` through `cobell submit` in cluster deploy mode, with the user's own
     `spark.eventLog.dir` (the driver runs in a container: the log is read there afterwards);
   - `victim` through `cobell submit` (client mode), killed with the REST equivalent of
     `yarn application -kill` once it runs;
   - `oom`, a job whose task fills more memory than its executor's container holds, placed on
     the labelled partition (`spark.yarn.*.nodeLabelExpression`): YARN kills the container;
3. `history import --from-yarn` of everything that finished, into a fresh history.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import cobell_cli.examples as examples
from cobell_cli.store.history import History
from tests.yarn_support import LABEL, RealYarn

pytestmark = pytest.mark.yarn
JOBS = Path(examples.__file__).parent
MEMORY_HOG = Path(__file__).parent / "data" / "yarn" / "memory_hog_job.py"
# Runs of hog (only co-runners with runs are asked for their progress) and of probe (predict
# plans only jobs it knows).
SEED = "job,scale_out,runtime_s,status\n" + ("hog,2,80,succeeded\n" * 3) + (
    "probe,2,60,succeeded\n" * 3
)


@dataclass
class Scenario:
    db: Path
    env: dict[str, str]
    results: dict[str, subprocess.CompletedProcess[str]] = field(default_factory=dict)
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    progress: Any = None  # (apps, report) of read_progress on hog
    predict: dict[str, Any] | None = None
    scaling_running: dict[str, Any] | None = None  # the RM's view once it held its executors
    oom_containers: list[dict[str, Any]] = field(default_factory=list)
    event_log_dir: Path | None = None


def _cobell(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "cobell_cli", "--db", str(db), *args]


def _submit(db: Path, job: str, scale_out: int, log: Path, *command: str) -> list[str]:
    return _cobell(
        db, "submit", "-j", job, "-t", "900", "--min-scale-out", str(scale_out),
        "--max-scale-out", str(scale_out), "--log-file", str(log), "--json", "--", *command,
    )  # fmt: skip


def _spawn(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _finish(name: str, proc: subprocess.Popen[str], sc: Scenario, log: Path) -> None:
    out, err = proc.communicate(timeout=600)
    sc.results[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    lines = out.strip().splitlines()
    sc.summaries[name] = json.loads(lines[-1]) if lines else {}
    sc.logs[name] = log.read_text(errors="replace") if log.exists() else ""


def _apps(real_yarn: RealYarn, query: str) -> list[dict[str, Any]]:
    """The RM's apps for a query of /ws/v1/cluster/apps (it answers `"apps": null` for none)."""
    doc = real_yarn.rest(f"/ws/v1/cluster/apps?{query}")
    return (doc.get("apps") or {}).get("app") or []


def _running_app(real_yarn: RealYarn, job: str) -> dict[str, Any] | None:
    apps = _apps(real_yarn, f"states=RUNNING&applicationTags=cobell-job:{job}")
    return apps[0] if apps else None


@pytest.fixture(scope="module")
def scenario(real_yarn: RealYarn, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    root = tmp_path_factory.mktemp("yarn-scenario")
    env = real_yarn.env()
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        env[var] = str(root / var.lower())
    sc = Scenario(db=root / "history.db", env=env, event_log_dir=root / "user-event-logs")
    sc.event_log_dir.mkdir()
    seed = root / "hog.csv"
    seed.write_text(SEED)
    subprocess.run(_cobell(sc.db, "history", "import", str(seed)), env=env, check=True,
                   capture_output=True)  # fmt: skip
    spark = str(real_yarn.spark_submit)
    procs: dict[str, subprocess.Popen[str]] = {}
    logs = {name: root / f"{name}.log" for name in ("hog", "scaling", "victim", "oom")}
    oom_go = root / "oom.go"  # the oom job fills its memory once this exists
    hog_done = root / "hog.done"  # hog spins until this exists: it outlasts what runs beside it
    try:
        procs["hog"] = _spawn(_submit(
            sc.db, "hog", 2, logs["hog"], spark, "--master", "yarn", "--deploy-mode", "client",
            str(JOBS / "corunner_job.py"), "--tasks", "2", "--task-s", "400",
            "--until-file", str(hog_done),
        ), env)  # fmt: skip
        hog = real_yarn.wait_for(
            "hog's first job on its executors",
            lambda: (a := _running_app(real_yarn, "hog")) and a["runningContainers"] >= 3 and a,
            timeout_s=400,
        )
        sc.progress = _progress_with_a_job(real_yarn, hog["id"])
        predicted = subprocess.run(
            _cobell(sc.db, "predict", "-j", "probe", "-t", "300", "--max-scale-out", "4",
                    "--json"),
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert predicted.returncode == 0, predicted.stderr
        sc.predict = json.loads(predicted.stdout)

        procs["scaling"] = _spawn(_submit(
            sc.db, "scaling", 2, logs["scaling"], spark, "--master", "yarn", "--deploy-mode",
            "cluster", "--conf", "spark.eventLog.enabled=true",
            "--conf", f"spark.eventLog.dir={sc.event_log_dir.as_uri()}",
            str(JOBS / "scaling_job.py"), "--tasks", "6", "--task-s", "2",
            "--cpu-fraction", "0.1",
        ), env)  # fmt: skip
        procs["victim"] = _spawn(_submit(
            sc.db, "victim", 1, logs["victim"], spark, "--master", "yarn", "--deploy-mode",
            "client", str(JOBS / "scaling_job.py"), "--tasks", "200", "--task-s", "2",
            "--cpu-fraction", "0.05",
        ), env)  # fmt: skip
        procs["oom"] = _spawn(_submit(
            sc.db, "oom", 1, logs["oom"], spark, "--master", "yarn", "--deploy-mode", "client",
            "--conf", "spark.task.maxFailures=1", "--executor-memory", "512m",
            "--conf", "spark.executor.memoryOverhead=384m",
            "--conf", f"spark.yarn.am.nodeLabelExpression={LABEL}",
            "--conf", f"spark.yarn.executor.nodeLabelExpression={LABEL}",
            str(MEMORY_HOG), "--mb", "1200", "--go-file", str(oom_go),
        ), env)  # fmt: skip
        sc.scaling_running = real_yarn.wait_for(
            "the cluster-mode job's executors",
            lambda: (a := _running_app(real_yarn, "scaling")) and a["runningContainers"] >= 3 and a,
            timeout_s=400,
            explain=lambda: f"the RM's running apps: {_running_apps(real_yarn)}",
        )
        victim = real_yarn.wait_for(
            "the victim running", lambda: _running_app(real_yarn, "victim"), timeout_s=400
        )
        sc.oom_containers = real_yarn.wait_for(
            "the oom job's executor", lambda: _containers(real_yarn, "oom"), timeout_s=400,
            explain=lambda: f"the RM's oom apps: {_apps_any_state(real_yarn, 'oom')}",
        )  # fmt: skip
        oom_go.touch()
        hog_done.touch()
        real_yarn.kill(victim["id"])
        for name in ("victim", "oom", "scaling", "hog"):
            _finish(name, procs.pop(name), sc, logs[name])
        yield sc
    finally:
        oom_go.touch()  # nothing of the oom job or hog waits on a test that failed
        hog_done.touch()
        for proc in procs.values():
            proc.kill()
            proc.wait()


def _running_apps(real_yarn: RealYarn) -> list[tuple[str, str, int, int]]:
    """(tags, queue, containers, MB) of each running app: what holds the cluster."""
    return [(a.get("applicationTags", ""), a["queue"], a["runningContainers"], a["allocatedMB"])
            for a in _apps(real_yarn, "states=RUNNING")]


def _apps_any_state(real_yarn: RealYarn, job: str) -> list[tuple[str, str, str]]:
    return [(a["id"], a["state"], a.get("diagnostics", "")[:300])
            for a in _apps(real_yarn, f"applicationTags=cobell-job:{job}")]


def _containers(real_yarn: RealYarn, job: str) -> list[dict[str, Any]] | None:
    app = _running_app(real_yarn, job)
    if app is None or app["runningContainers"] < 2:
        return None
    attempts = real_yarn.rest(f"/ws/v1/cluster/apps/{app['id']}/appattempts")
    attempt = attempts["appAttempts"]["appAttempt"][-1]["appAttemptId"]
    doc = real_yarn.rest(f"/ws/v1/cluster/apps/{app['id']}/appattempts/{attempt}/containers")
    found = doc.get("container") or []
    return found if len(found) >= 2 else None


def _progress_with_a_job(real_yarn: RealYarn, app_id: str) -> Any:
    """hog's progress once its driver knows its first job (submitted a moment after the
    executors came): the last read, whatever it was, after at most 90 s."""
    deadline = time.monotonic() + 90
    while True:
        read = _read_progress(real_yarn, app_id)
        apps = read[0]
        driver = apps[0].driver if apps else None
        if (driver is not None and driver.jobs_known >= 1) or time.monotonic() > deadline:
            return read
        time.sleep(1)


def _read_progress(real_yarn: RealYarn, app_id: str) -> Any:
    from cobell_cli.cluster.http import JsonClient
    from cobell_cli.cluster.progress import read_progress
    from cobell_cli.cluster.yarn import YarnCluster

    client = JsonClient(what="YARN RM", auth="simple", user="cobell-test", timeout_s=30)
    cluster = YarnCluster([real_yarn.rm_url], client)
    apps = [a for a in cluster.running_apps() if a.app_id == app_id]
    return read_progress(cluster, apps, budget_s=60)


def _run(db: Path, job: str) -> dict[str, Any]:
    """The run `cobell submit` recorded (not the seed, nor what it learned of co-runners)."""
    with History.open(db) as history:
        (run,) = [r for r in history.runs(job=job, with_colocations=True)
                  if r["source"] == "cobell" and r["app_id"]]  # fmt: skip
    return run


def _live_executors_at_peak(event_log: Path) -> tuple[int, set[int]]:
    """The most executors alive at once, and their core counts, from the event log's events
    (a rolling log's parts in order), not through cobell's own fold, which other tests check."""
    from cobell_cli.sources.eventlog import iter_events

    live, peak, cores = 0, 0, set()
    for event in iter_events(event_log):
        if event["Event"] == "SparkListenerExecutorAdded":
            live += 1
            cores.add(event["Executor Info"]["Total Cores"])
        elif event["Event"] == "SparkListenerExecutorRemoved":
            live -= 1
        peak = max(peak, live)
    return peak, cores


# --- 1. submit: executors, tags, dynamic allocation, the app id, the event log -------------


def test_a_cluster_mode_submit_gets_its_executors_and_is_recorded(
    scenario: Scenario, real_yarn: RealYarn
) -> None:
    done = scenario.results["scaling"]
    assert done.returncode == 0, done.stderr[-3000:]
    run = _run(scenario.db, "scaling")
    app = real_yarn.app(run["app_id"])
    assert run["status"] == "succeeded" and app["finalStatus"] == "SUCCEEDED"
    assert run["scale_out"] == 2
    assert set(app["applicationTags"].split(",")) == {"cobell", "cobell-job:scaling"}
    command = json.loads(run["command"])
    assert command[command.index("--num-executors") + 1] == "2"
    assert "spark.dynamicAllocation.enabled=false" in command
    # what YARN granted: the AM (the driver, in cluster mode) and the executors, one vcore
    # each. The RM may hand Spark a container more than it asked for, which Spark then does
    # not use (a CI run on a loaded machine saw 4; SPARK-49783, FLINK-8613): what ran is
    # counted where Spark says it, in the driver's event log.
    seen = scenario.scaling_running
    assert seen is not None and seen["id"] == run["app_id"]
    assert seen["runningContainers"] >= 3
    assert seen["allocatedVCores"] == seen["runningContainers"]
    assert _live_executors_at_peak(Path(run["event_log"])) == (2, {1})
    assert app["vcoreSeconds"] > 0 and app["memorySeconds"] > 0
    # our runtime is spark-submit's wall time: it holds the app's whole life on the RM
    assert run["started_at"] <= app["startedTime"] / 1000 + 1
    assert run["finished_at"] >= app["finishedTime"] / 1000 - 1


def test_cluster_mode_reads_the_event_log_the_driver_wrote(scenario: Scenario) -> None:
    run = _run(scenario.db, "scaling")
    assert run["event_log"], scenario.results["scaling"].stderr[-2000:]
    assert Path(run["event_log"]).parent == scenario.event_log_dir
    with History.open(scenario.db) as history:
        (profile,) = history.profiles("scaling")
    assert profile.app_id == run["app_id"]
    assert sum(len(s.task_s) for s in profile.stages) == 6  # --tasks 6


def test_a_client_mode_submit_captures_its_event_log_in_cobells_directory(
    scenario: Scenario,
) -> None:
    done = scenario.results["hog"]
    assert done.returncode == 0, done.stderr[-3000:]
    run = _run(scenario.db, "hog")
    assert run["status"] == "succeeded" and run["scale_out"] == 2
    assert run["event_log"] and Path(run["event_log"]).parent.name == "event-logs"
    assert scenario.summaries["hog"]["app_id"] == run["app_id"]


# --- 2. co-runners, progress, kill, memory --------------------------------------------------


def test_the_co_runner_is_seen_on_the_rm_and_its_overlap_measured(
    scenario: Scenario, real_yarn: RealYarn
) -> None:
    ours, hog = _run(scenario.db, "scaling"), _run(scenario.db, "hog")
    by_app = {c["co_runner_app_id"]: c for c in ours["colocations"]}
    assert hog["app_id"] in by_app, ours["colocations"]
    colocation = by_app[hog["app_id"]]
    assert colocation["co_runner_job"] == "hog"
    hog_app = real_yarn.app(hog["app_id"])
    hog_start, hog_end = hog_app["startedTime"] / 1000, hog_app["finishedTime"] / 1000
    expected = max(0.0, min(ours["finished_at"], hog_end) - max(ours["started_at"], hog_start))
    assert colocation["overlap_s"] == pytest.approx(expected, abs=2.0)
    assert colocation["overlap_ratio"] == pytest.approx(
        colocation["overlap_s"] / ours["runtime_s"], abs=0.01
    )
    assert 0 < colocation["overlap_ratio"] <= 1


def test_live_progress_reaches_the_driver_through_the_rms_proxy(scenario: Scenario) -> None:
    apps, report = scenario.progress
    assert report.asked == 1 and report.answered == 1, report.failures
    (hog,) = apps
    assert "/proxy/" in hog.ui_url
    assert hog.driver is not None and hog.driver.jobs_known >= 1
    plan = scenario.predict
    assert plan is not None
    assert plan["live_progress"]["answered"] == 1, plan["live_progress"]
    (view,) = [c for c in plan["co_runners"] if c["job"] == "hog"]
    assert view["driver"]["jobs_known"] >= 1


def test_an_app_killed_on_the_cluster_is_recorded_killed(
    scenario: Scenario, real_yarn: RealYarn
) -> None:
    run = _run(scenario.db, "victim")
    assert real_yarn.app(run["app_id"])["state"] == "KILLED"
    assert run["status"] == "killed"
    assert scenario.summaries["victim"]["status"] == "killed"
    assert scenario.results["victim"].returncode != 0  # the job's own exit code


def test_yarn_kills_the_executor_that_exceeds_its_container(
    scenario: Scenario, real_yarn: RealYarn
) -> None:
    done = scenario.results["oom"]
    assert done.returncode != 0
    assert "Container killed by YARN for exceeding" in scenario.logs["oom"], scenario.logs[
        "oom"
    ][-3000:]
    assert "physical memory" in scenario.logs["oom"]
    run = _run(scenario.db, "oom")
    assert run["status"] == "failed"


def test_the_label_expression_places_the_containers_on_the_partition(
    scenario: Scenario, real_yarn: RealYarn
) -> None:
    nodes = real_yarn.rest("/ws/v1/cluster/nodes")["nodes"]["node"]
    labelled = {n["id"] for n in nodes if LABEL in (n.get("nodeLabels") or [])}
    placed = {c["nodeId"] for c in scenario.oom_containers}
    assert placed and placed <= labelled
    run = _run(scenario.db, "oom")
    assert real_yarn.app(run["app_id"])["amNodeLabelExpression"] == LABEL


# --- 3. history import --from-yarn ------------------------------------------------------------


def test_history_import_from_yarn_reads_the_real_finished_apps(
    scenario: Scenario, real_yarn: RealYarn, tmp_path: Path
) -> None:
    db = tmp_path / "imported.db"
    done = subprocess.run(
        _cobell(db, "history", "import", "--from-yarn", "--since", "1h", "--json"),
        env=scenario.env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with History.open(db) as history:
        imported = {r["app_id"]: r for r in history.runs()}
    for job in ("scaling", "hog", "victim", "oom"):
        ours = _run(scenario.db, job)
        assert ours["app_id"] in imported, (job, sorted(imported))
        got = imported[ours["app_id"]]
        assert got["job"] == job  # from the cobell-job: tag YARN kept
        assert got["source"] == "yarn"
    assert imported[_run(scenario.db, "victim")["app_id"]]["status"] == "killed"
    # the RM's verdict, whatever the driver did: in client mode the AM ends as the driver
    # tells it, so a failed driver's app may still read SUCCEEDED there
    oom = imported[_run(scenario.db, "oom")["app_id"]]
    verdict = real_yarn.app(oom["app_id"])["finalStatus"]
    assert oom["status"] == {"SUCCEEDED": "succeeded", "FAILED": "failed"}[verdict]
    scaling = imported[_run(scenario.db, "scaling")["app_id"]]
    assert scaling["status"] == "succeeded"
    app = real_yarn.app(scaling["app_id"])
    elapsed_s = (app["finishedTime"] - app["startedTime"]) / 1000
    # vcore-seconds over the app's life, less the AM: a mean, at most the two executors
    assert scaling["mean_scale_out"] == pytest.approx(
        max(app["vcoreSeconds"] / elapsed_s - 1, 0), abs=0.05
    )
    assert 0 < scaling["mean_scale_out"] <= 2.05


def test_import_pages_through_the_real_rm(scenario: Scenario, real_yarn: RealYarn) -> None:
    """Pages of 2: the RM's `limit` cut with finishedTime windows finds every finished app."""
    from cobell_cli.cluster.http import JsonClient
    from cobell_cli.cluster.yarn import YarnCluster
    from cobell_cli.sources.record import ImportSummary
    from cobell_cli.sources.yarn_apps import read_finished

    cluster = YarnCluster([real_yarn.rm_url], JsonClient(what="YARN RM", timeout_s=30))
    until = time.time() + 60
    summary = ImportSummary(source="yarn", where="")
    whole = read_finished(cluster, 0, until, summary)
    pages: list[int] = []
    paged = read_finished(
        cluster, 0, until, ImportSummary(source="yarn", where=""), page_size=2,
        on_page=pages.append,
    )  # fmt: skip
    assert len(whole) >= 4
    assert sorted(a.app_id for a in paged) == sorted(a.app_id for a in whole)
    assert len(pages) >= 2 and max(pages) <= 2
    raw = real_yarn.rest("/ws/v1/cluster/apps?states=FINISHED,FAILED,KILLED")["apps"]["app"]
    assert len(raw) == summary.seen
    assert os.environ.get("HADOOP_CONF_DIR") is None  # the tests never leak the cluster's conf


# --- 4. cobell demo --yarn ---------------------------------------------------------------------


def test_the_yarn_demo_runs_its_job_on_the_local_yarn(real_yarn: RealYarn, tmp_path: Path) -> None:
    """`cobell demo --yarn` end to end on the session's cluster (its `local-cluster start
    --yarn` finds it running and reuses it), from the repository root as the README runs it:
    its steps printed, its own seed (history/local-yarn-demo.csv) found and imported, its job
    planned from it at the default target and recorded with the app id the RM gave it. No
    co-runner keeps it short."""
    assert real_yarn.xdg_data_home is not None
    root = Path(__file__).resolve().parent.parent
    db = tmp_path / "demo.db"
    env = {**os.environ, "XDG_DATA_HOME": str(real_yarn.xdg_data_home)}
    done = subprocess.run(
        _cobell(db, "demo", "--yarn", "--no-co-runner"),
        env=env, capture_output=True, text=True, timeout=600, cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, "\n".join(
        ln for ln in done.stderr.splitlines() if not ln.startswith("\tat ")
    )[-6000:]
    steps = [line for line in done.stderr.splitlines() if line.startswith("+ cobell ")]
    assert [s.split(" --db ")[1].split()[1] for s in steps] == [
        "local-cluster", "history", "submit"
    ]  # fmt: skip
    assert "history import history/local-yarn-demo.csv --new-ids" in steps[1]
    assert "-j scaling-demo-yarn" in steps[2]
    assert "-- spark-submit --master yarn --deploy-mode cluster" in steps[2]
    assert " cobell_cli/examples/scaling_job.py " in steps[2]  # relative: readable
    assert "demo: run " in done.stderr and "of scaling-demo-yarn succeeded" in done.stderr
    assert "cobell local-cluster stop --yarn" in done.stderr
    with History.open(db) as history:
        seeded = len(history.runs(job="scaling-demo-yarn")) - 1
        (run,) = history.runs(job="scaling-demo-yarn", limit=1)  # the newest: the demo's own
    assert seeded >= 5  # the seed's runs came first
    assert run["status"] == "succeeded" and run["app_id"].startswith("application_")
    app = real_yarn.app(run["app_id"])
    assert app["finalStatus"] == "SUCCEEDED"
    assert "cobell-job:scaling-demo-yarn" in app["applicationTags"].split(",")
