"""After `cobell submit` on a real Spark standalone cluster, a co-runner that was NOT submitted
through cobell and finished during the run becomes an imported run (issue 14, item 2)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import cobell_cli.examples as examples
from cobell_cli.store.history import History
from tests.spark_support import LocalSpark, driver_env
from tests.test_submit_spark import submit_argv

pytestmark = pytest.mark.spark
JOBS = Path(examples.__file__).parent


def local_spark_wait(local_spark: LocalSpark, check: Any, what: str,
                     timeout_s: float = 120.0) -> None:
    """Poll the master's active apps until `check(apps)` holds; fail naming `what`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check((local_spark.cluster.master_json() or {}).get("activeapps", [])):
            return
        time.sleep(0.5)
    pytest.fail(f"{what} did not start within {timeout_s:g} s")


def test_a_finished_foreign_co_runner_is_learned(local_spark: LocalSpark, tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    env = driver_env()
    # the foreign job spins until ours runs beside it (at most 120 s), so that it overlaps ours
    # and ends within it on any machine (a fixed 6 s had to outlast cobell's start-up)
    ours_runs = tmp_path / "ours-runs"
    foreign = subprocess.Popen(
        [str(local_spark.spark_submit), "--master", local_spark.master_url,
         "--name", "cobell:nightly-etl", "--total-executor-cores", "1", "--executor-cores", "1",
         str(JOBS / "corunner_job.py"), "--tasks", "1", "--task-s", "120",
         "--until-file", str(ours_runs)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    local_spark_wait(local_spark, lambda apps: any(a.get("name") == "cobell:nightly-etl"
                                                   for a in apps), "the foreign co-runner")
    proc = subprocess.Popen(
        submit_argv(
            db, local_spark, "scaling", 2, 300, "scaling_job.py", "--tasks", "4", "--task-s", "6"
        ),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        local_spark_wait(local_spark, lambda apps: len(apps) >= 2, "our app beside it")
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    finally:
        ours_runs.touch()
    out, err = proc.communicate(timeout=300)
    ours = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert ours.returncode == 0, ours.stderr[-3000:]
    assert foreign.wait(timeout=120) == 0
    summary = json.loads(ours.stdout.strip().splitlines()[-1])
    with History.open(db) as history:
        runs = {r["job"]: r for r in history.runs(with_colocations=True)}
    assert set(runs) == {"scaling", "nightly-etl"}, runs
    learned, own = runs["nightly-etl"], runs["scaling"]
    assert own["id"] == summary["run_id"] and own["source"] == "cobell"
    assert learned["source"] == "import" and learned["backend"] == "standalone"
    assert learned["status"] == "succeeded" and learned["scale_out"] == 1
    assert learned["target_s"] is None and learned["app_id"].startswith("app-")
    assert learned["finished_at"] <= own["finished_at"] + 1
    assert [c["co_runner_app_id"] for c in learned["colocations"]] == [own["app_id"]]
    assert [c["co_runner_app_id"] for c in own["colocations"]] == [learned["app_id"]]
