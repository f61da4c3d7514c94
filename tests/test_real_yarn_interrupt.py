"""Ctrl-C and cron's SIGTERM on `cobell submit` of a real Spark job on the real YARN: the
application ends on the cluster within seconds, and the history says so.

Before, a cluster-mode app outlived its interrupted spark-submit (the driver runs in the
ApplicationMaster) and finished SUCCEEDED a minute later: a reservation nobody owned. Both
jobs run side by side (module fixture): `ctrlc` in cluster deploy mode gets SIGINT, `cronterm`
in client deploy mode SIGTERM, each once it holds its executor.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import cobell_cli.examples as examples
from cobell_cli.store.history import History
from tests.yarn_support import RealYarn

pytestmark = pytest.mark.yarn
JOB = Path(examples.__file__).parent / "scaling_job.py"
ENDED = ("FINISHED", "FAILED", "KILLED")
# From the signal to the RM reporting the app ended: spark-submit's own shutdown, then the
# kill. Measured on the 2-core machine (local YARN, Spark 4, `pytest -s` prints it): cluster
# mode KILLED 2.2 s after SIGINT, client mode KILLED 1.2 s after SIGTERM; before the kill,
# the cluster-mode app was still RUNNING 120 s after SIGINT (client mode FINISHED in 1.3 s
# by its driver's own shutdown). 20 s leaves room for a loaded machine.
ENDS_WITHIN_S = 20.0
SIGNALS = {"ctrlc": ("cluster", signal.SIGINT), "cronterm": ("client", signal.SIGTERM)}


@dataclass
class Interrupted:
    app_id: str
    sent_at: float
    ended_after_s: float | None  # signal -> the RM reports a final state (None: never)
    rm_state: str
    proc: subprocess.CompletedProcess[str]
    summary: dict[str, Any]
    run: dict[str, Any]


def _submit(db: Path, job: str, mode: str, spark_submit: Path) -> list[str]:
    return [sys.executable, "-m", "cobell_cli", "--db", str(db), "submit", "-j", job,
            "-t", "900", "--min-scale-out", "1", "--max-scale-out", "1", "--json", "--",
            str(spark_submit), "--master", "yarn", "--deploy-mode", mode, str(JOB),
            "--tasks", "300", "--task-s", "2", "--cpu-fraction", "0.05"]  # fmt: skip


def _app_of(db: Path, job: str) -> str | None:
    """The app id cobell has recorded for the job's run (it knows it, then)."""
    with History.open(db, read_only=True) as history:
        runs = history.runs(job=job)
    return runs[0]["app_id"] if runs and runs[0]["app_id"] else None


def _holds_an_executor(real_yarn: RealYarn, app_id: str) -> bool:
    app = real_yarn.app(app_id)
    return app["state"] == "RUNNING" and app["runningContainers"] >= 2


def _until_ended(real_yarn: RealYarn, apps: dict[str, str], sent: dict[str, float],
                 limit_s: float = 120.0) -> dict[str, tuple[float | None, str]]:
    """Each app's time from its signal until the RM reports it ended (None: not within
    `limit_s`), and its last state; all polled together, so one app's wait is not another's."""
    ends: dict[str, tuple[float | None, str]] = {}
    while True:
        for job, app_id in apps.items():
            state = real_yarn.app(app_id)["state"]
            if job not in ends or ends[job][0] is None:
                ended = state in ENDED
                ends[job] = (time.monotonic() - sent[job] if ended else None, state)
        if all(after is not None for after, _ in ends.values()):
            return ends
        if time.monotonic() - min(sent.values()) > limit_s:
            return ends
        time.sleep(0.2)


@pytest.fixture(scope="module")
def interrupted(
    real_yarn: RealYarn, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Interrupted]]:
    root = tmp_path_factory.mktemp("yarn-interrupt")
    db = root / "history.db"
    env = real_yarn.env()
    for var in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        env[var] = str(root / var.lower())
    env["COBELL_MODEL_CACHE"] = "off"
    procs = {
        job: subprocess.Popen(_submit(db, job, mode, real_yarn.spark_submit), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for job, (mode, _) in SIGNALS.items()
    }
    found: dict[str, Interrupted] = {}
    try:
        apps = {job: real_yarn.wait_for(f"{job}'s app id in the history",
                                        lambda job=job: _app_of(db, job), timeout_s=400)
                for job in SIGNALS}
        # both hold their executors before either is signalled: a signal sent while the test
        # still waited for the other app would count that wait in its time to end
        real_yarn.wait_for("both jobs holding their executors",
                           lambda: all(_holds_an_executor(real_yarn, apps[job])
                                       for job in SIGNALS), timeout_s=400)
        sent = {}
        for job, (_, sig) in SIGNALS.items():
            procs[job].send_signal(sig)
            sent[job] = time.monotonic()
        ends = _until_ended(real_yarn, apps, sent)
        for job, (after_s, state) in ends.items():  # shown with -s: the measured times
            print(f"{job}: {state} {after_s if after_s is None else round(after_s, 1)} s "
                  "after the signal")
        for job, proc in procs.items():
            out, err = proc.communicate(timeout=300)
            lines = out.strip().splitlines()
            with History.open(db, read_only=True) as history:
                (run,) = history.runs(job=job)
            found[job] = Interrupted(apps[job], sent[job], ends[job][0], ends[job][1],
                                     subprocess.CompletedProcess(proc.args, proc.returncode,
                                                                 out, err),
                                     json.loads(lines[-1]) if lines else {}, run)
        yield found
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for got in found.values():  # never leave an app running for the session's others
            if real_yarn.app(got.app_id)["state"] not in ENDED:
                real_yarn.kill(got.app_id)


def test_ctrl_c_on_a_cluster_mode_submit_kills_its_application(
    interrupted: dict[str, Interrupted],
) -> None:
    got = interrupted["ctrlc"]
    assert got.ended_after_s is not None, f"still {got.rm_state}: {got.proc.stderr[-2000:]}"
    assert got.rm_state == "KILLED" and got.ended_after_s <= ENDS_WITHIN_S, got.ended_after_s
    assert got.proc.returncode == 130, got.proc.stderr[-2000:]
    said = f"cobell: killed YARN application {got.app_id} through the ResourceManager (KILLED)"
    assert said in got.proc.stderr.splitlines()
    assert (got.run["status"], got.run["app_id"], got.run["app_state"]) == (
        "killed", got.app_id, "KILLED")
    assert (got.summary["status"], got.summary["app_state"]) == ("killed", "KILLED")


def test_cron_sigterm_on_a_client_mode_submit_ends_its_application(
    interrupted: dict[str, Interrupted],
) -> None:
    got = interrupted["cronterm"]
    assert got.ended_after_s is not None, f"still {got.rm_state}: {got.proc.stderr[-2000:]}"
    assert got.ended_after_s <= ENDS_WITHIN_S, got.ended_after_s
    assert got.proc.returncode == 143, got.proc.stderr[-2000:]  # the job's own code
    assert got.run["status"] == "killed" and got.run["app_state"] in ENDED
    assert got.summary["app_state"] == got.run["app_state"]
    ended = [line for line in got.proc.stderr.splitlines()
             if f"YARN application {got.app_id}" in line]
    assert len(ended) == 1 and "may still be running" not in ended[0], ended
