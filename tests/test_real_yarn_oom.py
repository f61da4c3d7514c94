"""`cobell submit --retry-on-oom` of a job that runs out of memory on the real YARN (issue 36,
item 5), in client and in cluster deploy mode.

The job (tests/data/yarn/oom_job.py) holds 7 M longs in one task's `collect_list`: at the
local YARN's 512 MB executor heap (its spark-defaults.conf) the executor's JVM runs out of
heap and Spark's `-XX:OnOutOfMemoryError='kill %p'` ends it (YARN: exit 143, "Killed by
external signal") or, when Spark's own handler exits first, exit 52 (a race in the executor's
JVM: a CI run on 2026-12-01 got 52); the retry at 1.5x the heap (768 MB) succeeds. The hook's
path on demand: tests/data/yarn/sigterm_job.py --says-oom-below-mb. 7 M sits between the two
edges, measured on the local YARN by spark-submit alone (2026-11-30, one at a time): 6 M
longs were at the edge of 512 MB (a quiet CI run's cluster-mode executor held them there),
6.5 M failed at 512 MB in both modes, 7 M in 4 of 4; at 768 MB 7 M, 7.5 M and 8 M succeeded
in both modes (8 of 8), 8.5 M failed once in 2, 9 M failed (then 1152 MB was a third app, 35 s
more per test). With spark.task.maxFailures=1 the job fails at the first executor lost, so
the failed attempt is short. The driver's output never
names the memory: the reason comes from the event log, which in cluster mode the driver (in a
container of this host) writes into cobell's directory.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cobell_cli.store.history import History
from tests.yarn_support import RealYarn

pytestmark = pytest.mark.yarn
OOM_JOB = Path(__file__).parent / "data" / "yarn" / "oom_job.py"
SIGTERM_JOB = Path(__file__).parent / "data" / "yarn" / "sigterm_job.py"
LONGS = "7000000"
LOCAL_YARN_HEAP_MB = 512  # run/local_yarn_conf.py spark_defaults: spark.executor.memory


def _submit(real_yarn: RealYarn, tmp_path: Path, job: str, mode: str,
            app: Path = OOM_JOB, app_args: tuple[str, ...] = ()) -> tuple[Any, Path]:
    env = real_yarn.env()
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME"):
        env[var] = str(tmp_path / var.lower())
    db = tmp_path / "history.db"
    argv = [
        sys.executable, "-m", "cobell_cli", "--db", str(db), "submit", "-j", job, "-t", "600",
        "--min-scale-out", "1", "--max-scale-out", "1", "--retry-on-oom", "3", "--json",
        "--", str(real_yarn.spark_submit), "--master", "yarn", "--deploy-mode", mode,
        "--conf", "spark.task.maxFailures=1", str(app),
        *(["--longs", LONGS] if app == OOM_JOB else []), *app_args,
    ]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    return done, db


def _runs(db: Path, job: str) -> list[dict[str, Any]]:
    with History.open(db) as history:
        return sorted(history.runs(job=job), key=lambda r: r["id"])


def _memory_failures(db: Path, run_id: int) -> list[str]:
    """What the run's event-log profile says its executors died of."""
    with sqlite3.connect(db) as con:
        (summary,) = con.execute("SELECT summary FROM run_profiles WHERE run_id = ?",
                                 (run_id,)).fetchone()
    return json.loads(summary)["memory"]["memory_failures"]


def _check_retried_to_success(done: Any, db: Path, job: str) -> list[dict[str, Any]]:
    errors = "\n".join(ln for ln in done.stderr.splitlines() if not ln.startswith("\tat "))
    assert done.returncode == 0, errors[-4000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    attempts = summary["attempts"]
    assert summary["status"] == "succeeded" and len(attempts) >= 2
    for failed in attempts[:-1]:
        assert (failed["status"], failed["failure_reason"]) == ("failed", "memory"), errors[-4000:]
    assert attempts[0]["executor_memory_mb"] == LOCAL_YARN_HEAP_MB
    heaps = [a["executor_memory_mb"] for a in attempts]
    assert heaps == sorted(set(heaps))  # each retry above every failed attempt's heap
    assert "failed for memory; retrying (1 of 3)" in done.stderr
    runs = _runs(db, job)
    assert [(r["status"], r["failure_reason"], r["executor_memory_mb"]) for r in runs] == [
        (a["status"], a["failure_reason"], a["executor_memory_mb"]) for a in attempts
    ]
    command = json.loads(runs[-1]["command"])
    assert command[command.index("--executor-memory") + 1] == f"{heaps[-1]}m"
    # the executor ended by Spark's own exit 52, or by the OOM hook (exit 143) with its own log
    # (from the NodeManager) saying OutOfMemoryError: which, is a race in the executor's JVM
    # (a CI run's client-mode executor exited 52; test_a_kill_whose_log_says_oom_... forces 143)
    failures = _memory_failures(db, runs[0]["id"])
    assert failures and all(
        "Exit status: 52" in f or f.endswith("[executor log: java.lang.OutOfMemoryError]")
        for f in failures), failures
    return runs


def test_client_mode_an_oom_is_a_memory_failure_and_the_retry_succeeds(
    real_yarn: RealYarn, tmp_path: Path
) -> None:
    done, db = _submit(real_yarn, tmp_path, "oom-client", "client")
    runs = _check_retried_to_success(done, db, "oom-client")
    assert all(r["event_log"] for r in runs)


def test_the_rm_keeps_why_a_container_over_its_memory_was_killed(real_yarn: RealYarn) -> None:
    """An AM container that fills more than its 256 MB: the NodeManager kills it, and the RM's
    diagnostics of the app (what cobell asks after a failed run whose output and event log
    said nothing of memory: a cluster-mode driver killed so) say why."""
    from cobell_cli.cluster.http import JsonClient
    from cobell_cli.cluster.yarn import YarnCluster
    from cobell_cli.core.memory.failures import failure_reason, memory_failure_kind

    fill = f"{sys.executable} -c 'import time; b = bytearray(600 << 20); time.sleep(60)'"
    app_id = real_yarn.submit_shell(fill, name="over-memory", memory_mb=256)
    real_yarn.wait_for("the over-memory app ended", lambda: real_yarn.app(app_id)[
        "state"] in ("FAILED", "FINISHED", "KILLED"), timeout_s=120)
    cluster = YarnCluster([real_yarn.rm_url], JsonClient(what="YARN RM", timeout_s=30))
    assert cluster.on_this_host()
    diagnostics = cluster.diagnostics(app_id)
    assert real_yarn.app(app_id)["diagnostics"] in diagnostics
    assert failure_reason(diagnostics) == "memory", diagnostics
    assert "physical" in {memory_failure_kind(d) for d in diagnostics}


def test_cluster_mode_an_oom_is_a_memory_failure_and_the_retry_succeeds(
    real_yarn: RealYarn, tmp_path: Path
) -> None:
    done, db = _submit(real_yarn, tmp_path, "oom-cluster", "cluster")
    runs = _check_retried_to_success(done, db, "oom-cluster")
    # the drivers ran in containers of this host and wrote their logs into cobell's directory
    assert all(r["event_log"] and Path(r["event_log"]).parent.name == "event-logs" for r in runs)
    assert "event log not captured" not in done.stderr


def test_an_executor_killed_from_outside_is_not_retried_for_memory(
    real_yarn: RealYarn, tmp_path: Path
) -> None:
    """The same exit 143 "Killed by external signal" as the OOM hook, but the executor's log
    shows no OutOfMemoryError: the run failed, not for memory, and is not retried."""
    done, db = _submit(real_yarn, tmp_path, "sigterm", "client", app=SIGTERM_JOB)
    assert done.returncode != 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["status"] == "failed" and "attempts" not in summary, summary  # one attempt
    assert summary["failure_reason"] is None
    assert "retrying" not in done.stderr
    runs = _runs(db, "sigterm")
    assert [(r["status"], r["failure_reason"]) for r in runs] == [("failed", None)]
    assert runs[0]["event_log"] and _memory_failures(db, runs[0]["id"]) == []
    assert "Killed by external signal" in done.stderr  # the premise: the hook's exit, read


def test_a_kill_whose_log_says_oom_is_a_memory_failure_and_the_retry_succeeds(
    real_yarn: RealYarn, tmp_path: Path
) -> None:
    """The OOM hook's path on demand: at 512 MB the executor's log says OutOfMemoryError and its
    JVM gets SIGTERM (exit 143, as the hook's kill); the NodeManager's log makes it a memory
    failure, and the retry at 768 MB succeeds."""
    done, db = _submit(real_yarn, tmp_path, "hook", "client", app=SIGTERM_JOB,
                       app_args=("--says-oom-below-mb", "768"))
    errors = done.stderr[-4000:]
    assert done.returncode == 0, errors
    attempts = json.loads(done.stdout.strip().splitlines()[-1])["attempts"]
    assert [(a["status"], a["failure_reason"], a["executor_memory_mb"]) for a in attempts] == [
        ("failed", "memory", LOCAL_YARN_HEAP_MB), ("succeeded", None, 768)], errors
    runs = _runs(db, "hook")
    failures = _memory_failures(db, runs[0]["id"])
    assert failures and all("Exit status: 143" in f for f in failures), failures
    assert all(f.endswith("[executor log: java.lang.OutOfMemoryError]") for f in failures)
