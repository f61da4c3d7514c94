"""`cobell submit` end to end on a real Spark standalone cluster, two jobs co-located."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import cobell_cli.examples as examples
from cobell_cli.store.history import History
from tests.spark_support import LocalSpark, driver_env

pytestmark = pytest.mark.spark
JOBS = Path(examples.__file__).parent


def submit_argv(db: Path, spark: LocalSpark, job: str, scale_out: int, target: float,
                script: str, *script_args: str) -> list[str]:  # fmt: skip
    return [
        sys.executable, "-m", "cobell_cli", "--db", str(db), "submit", "-j", job,
        "-t", str(target), "--min-scale-out", str(scale_out), "--max-scale-out", str(scale_out),
        "--cluster", "standalone", "--standalone-url", spark.webui_url, "--json", "--",
        str(spark.spark_submit), "--master", spark.master_url, str(JOBS / script), *script_args,
    ]  # fmt: skip


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def test_two_co_located_submissions_are_recorded_with_real_overlap(
    local_spark: LocalSpark, tmp_path: Path
) -> None:
    db = tmp_path / "h.db"
    env = driver_env()
    co = subprocess.Popen(
        submit_argv(
            db, local_spark, "hog", 2, 600, "corunner_job.py", "--tasks", "2", "--task-s", "20"
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        active = (local_spark.cluster.master_json() or {}).get("activeapps", [])
        if any(a.get("name") == "cobell:hog" for a in active):
            break
        assert co.poll() is None, co.communicate()
        time.sleep(0.5)
    else:
        pytest.fail("the co-runner did not start on the master within 120 s")

    main = subprocess.run(
        submit_argv(
            db, local_spark, "scaling", 2, 300, "scaling_job.py", "--tasks", "6", "--task-s", "1.0"
        ),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert main.returncode == 0, main.stderr[-3000:]
    _, co_err = co.communicate(timeout=300)
    assert co.returncode == 0, co_err[-3000:]
    summary = json.loads(main.stdout.strip().splitlines()[-1])

    with History.open(db) as history:
        ours = history.run(summary["run_id"])
        (hog,) = history.runs(job="hog")
    assert ours["status"] == "succeeded" and hog["status"] == "succeeded"
    assert ours["app_id"].startswith("app-") and hog["app_id"].startswith("app-")

    master = local_spark.cluster.master_json()
    by_id = {a["id"]: a for a in master["completedapps"]}
    ours_m, hog_m = by_id[ours["app_id"]], by_id[hog["app_id"]]
    assert ours_m["cores"] == ours["scale_out"] == 2  # the master granted what cobell planned
    assert hog_m["cores"] == 2
    start, end = ours_m["starttime"] / 1000, (ours_m["starttime"] + ours_m["duration"]) / 1000
    hog_start = hog_m["starttime"] / 1000
    hog_end = hog_start + hog_m["duration"] / 1000
    # our recorded runtime is spark-submit's wall time: it contains the app's life on the master
    assert ours["runtime_s"] >= ours_m["duration"] / 1000 - 0.5
    assert ours["started_at"] <= start + 0.5 and ours["finished_at"] >= end - 0.5

    (colocation,) = ours["colocations"]
    assert colocation["co_runner_app_id"] == hog["app_id"]
    assert colocation["co_runner_job"] == "hog"
    assert colocation["co_runner_scale_out"] == 2
    # consistent with the master's own start and end times of both apps
    expected = overlap(ours["started_at"], ours["finished_at"], hog_start, hog_end)
    assert colocation["overlap_s"] == pytest.approx(expected, abs=1.0)
    assert overlap(start, end, hog_start, hog_end) <= colocation["overlap_s"] + 1.0
    assert colocation["overlap_ratio"] == pytest.approx(
        colocation["overlap_s"] / ours["runtime_s"], abs=0.01
    )
    assert 0 < colocation["overlap_ratio"] <= 1


def test_a_quiet_spark_log_level_keeps_spark_info_lines_out_of_the_output(
    local_spark: LocalSpark, tmp_path: Path
) -> None:
    """The demo printed 124 Spark INFO/WARN lines around cobell's 15: `--spark-log-level`
    sets the job's level (spark.log.level) so they stay out of the way."""
    argv = submit_argv(tmp_path / "h.db", local_spark, "quiet", 1, 300, "scaling_job.py",
                       "--tasks", "2", "--task-s", "0.5")  # fmt: skip
    argv.insert(argv.index("--json"), "--spark-log-level")
    argv.insert(argv.index("--json"), "ERROR")
    done = subprocess.run(argv, capture_output=True, text=True, env=driver_env(), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    spark_lines = [line for line in (done.stdout + done.stderr).splitlines()
                   if " INFO " in line or " WARN " in line]
    # only what the driver prints before its SparkContext exists (its version, the JVM's)
    assert len(spark_lines) <= 8, spark_lines
    assert json.loads(done.stdout.strip().splitlines()[-1])["status"] == "succeeded"
