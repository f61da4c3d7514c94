"""Executor memory with real Spark runs on the local standalone cluster (issue 26, item 6):
the event log's peaks recorded with the run, the memory the next submit sizes from them
injected, and a run that really runs out of memory recorded as a memory failure and retried
at a larger memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_import_yarn import rows

PY = sys.executable

# Every partition's rows gathered into one list on one executor: its heap grows with the
# input per executor (bench/memory_record.py's `collect` job).
COLLECT_JOB = """
import sys
from pyspark.sql import SparkSession, functions as F
rows, x = int(sys.argv[1]), int(sys.argv[2])
spark = SparkSession.builder.getOrCreate()
df = spark.range(0, rows, 1, x).withColumn(
    "payload", F.expr("repeat(lpad(cast(id as string), 8, '0'), 12)")).repartition(x)
out = df.groupBy(F.spark_partition_id()).agg(F.collect_list("payload").alias("l"))
print("RESULT", out.select(F.sum(F.size("l"))).collect())
spark.stop()
"""


def submit(db: Path, spark, job: Path, *args: str, cobell: tuple = (),
           spark_args: tuple = ()) -> tuple[int, dict, str]:
    """A real `cobell submit --json` at scale-out 1; (exit code, summary, stderr)."""
    from tests.spark_support import driver_env

    argv = [
        PY, "-m", "cobell_cli", "--db", str(db), "submit", "-j", "collect", "-t", "600",
        "--min-scale-out", "1", "--max-scale-out", "1", "--cluster", "none", "--json",
        "--input-size", "100M", *cobell, "--",
        str(spark.spark_submit), "--master", spark.master_url,
        "--conf", "spark.task.maxFailures=1", "--conf", "spark.ui.enabled=false",
        *spark_args, str(job), *args,
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=driver_env(), timeout=900)
    return proc.returncode, json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.spark
def test_a_run_records_its_peak_and_the_next_submit_sizes_memory_from_it(
    local_spark, tmp_path: Path
) -> None:
    db, job = tmp_path / "h.db", tmp_path / "collect.py"
    job.write_text(COLLECT_JOB)
    code, _, err = submit(db, local_spark, job, "20000", "1")
    assert code == 0, err[-3000:]
    (run,) = rows(db, "SELECT * FROM runs")
    assert run["peak_memory_mb"] is not None and 0 < run["peak_memory_mb"] < 1024
    assert "--executor-memory" not in run["command"]  # nothing to size from yet
    code, _, err = submit(db, local_spark, job, "20000", "1")
    assert code == 0, err[-3000:]
    latest = rows(db, "SELECT * FROM runs ORDER BY id DESC")[0]
    command = json.loads(latest["command"])
    heap = command[command.index("--executor-memory") + 1]
    assert heap == f"{latest['executor_memory_mb']}m"
    assert latest["executor_memory_mb"] >= run["peak_memory_mb"]  # covers the need seen
    assert latest["peak_memory_mb"] is not None


@pytest.mark.spark
def test_a_run_out_of_memory_is_a_memory_failure_and_is_retried_larger(
    local_spark, tmp_path: Path
) -> None:
    db, job = tmp_path / "h.db", tmp_path / "collect.py"
    job.write_text(COLLECT_JOB)
    code, summary, err = submit(
        db, local_spark, job, "1500000", "1", cobell=("--retry-on-oom", "3"),
        spark_args=("--executor-memory", "512m"),
    )
    assert code == 0, err[-3000:]
    attempts = summary["attempts"]
    assert attempts[0]["status"] == "failed" and attempts[0]["failure_reason"] == "memory"
    assert attempts[0]["executor_memory_mb"] == 512
    assert attempts[-1]["status"] == "succeeded"
    memories = [a["executor_memory_mb"] for a in attempts]
    assert memories == sorted(memories) and len(set(memories)) == len(memories)
    history = rows(db, "SELECT status, failure_reason, executor_memory_mb FROM runs ORDER BY id")
    assert [tuple(r) for r in history] == [
        (a["status"], a["failure_reason"], a["executor_memory_mb"]) for a in attempts
    ]
    assert summary["total_s"] >= sum(a["runtime_s"] for a in attempts) - 0.01
