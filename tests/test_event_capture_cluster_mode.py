"""Cluster deploy mode: the driver writes the event log on the cluster, into the user's own
`spark.eventLog.dir`; where that is a local path cobell reads it there after the run (a real
YARN on this machine does the same: tests/test_real_yarn_spark.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.test_import_yarn import rows
from tests.test_submit_eventlog import ETL_APP, ETL_LOG, fake_spark  # noqa: F401  (fixture)

PY = sys.executable


def submit_cluster_mode(db: Path, fake: Path, log_dir: Path, env: dict[str, str]):
    argv = [
        PY, "-m", "cobell_cli", "--db", str(db), "submit", "-j", "etl", "-t", "60",
        "--cluster", "none", "--json", "--", str(fake), "--master", "yarn",
        "--deploy-mode", "cluster", "--conf", "spark.eventLog.enabled=true",
        "--conf", f"spark.eventLog.dir={log_dir.as_uri()}", "app.py",
    ]  # fmt: skip
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=120,
        env={**os.environ, "FAKE_APP": ETL_APP, **env},
    )  # fmt: skip


def test_the_users_local_log_dir_is_read_in_cluster_mode(
    tmp_path: Path,
    fake_spark: Path,  # noqa: F811  (the fixture imported above)
) -> None:
    logs = tmp_path / "shared-events"
    logs.mkdir()
    db = tmp_path / "h.db"
    proc = submit_cluster_mode(db, fake_spark, logs, {"FAKE_LOG": str(ETL_LOG)})
    assert proc.returncode == 0, proc.stderr
    assert "event log" not in proc.stderr
    (run,) = rows(db, "SELECT * FROM runs")
    assert Path(run["event_log"]) == logs / f"{ETL_APP}.zstd"
    (profile,) = rows(db, "SELECT * FROM run_profiles")
    assert profile["run_id"] == run["id"]


def test_a_log_the_cluster_kept_elsewhere_is_one_warning(
    tmp_path: Path,
    fake_spark: Path,  # noqa: F811
) -> None:
    logs = tmp_path / "not-shared"
    logs.mkdir()
    proc = submit_cluster_mode(tmp_path / "h.db", fake_spark, logs, {})  # it writes no log
    assert proc.returncode == 0, proc.stderr
    assert f"event log not read: no log of {ETL_APP} in {logs}" in proc.stderr
    assert "the driver ran on the cluster, not here" in proc.stderr
    (run,) = rows(tmp_path / "h.db", "SELECT * FROM runs")
    assert run["status"] == "succeeded" and run["event_log"] is None
