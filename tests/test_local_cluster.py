"""`cobell local-cluster` and a real spark-submit through cobell's launcher on it."""

# Fixtures are imported from tests.spark_support (not registered in conftest.py), so their
# names are parameters here too:
# ruff: noqa: F811

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cobell_cli.cli.local_cluster import app as local_cluster_app
from cobell_cli.errors import ClusterError, CobellError, UsageError
from cobell_cli.examples import example_path
from cobell_cli.run.child import run
from cobell_cli.run.launch import inject
from cobell_cli.run.local_cluster import LocalCluster, find_java
from tests.reliability.faults import wait_for
from tests.spark_support import (  # noqa: F401  (fixtures)
    LocalSpark,
    free_port,
    local_spark,
    require_spark,
    spark_env,
)


def group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


# --- without Spark -----------------------------------------------------------------------


def test_missing_java_names_the_debian_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CobellError) as info:
        find_java()
    assert "apt-get install openjdk-17-jre-headless" in info.value.line()


def test_missing_pyspark_names_the_extra(tmp_path: Path) -> None:
    """A pyspark without the Spark distribution (or none at all) is reported with the fix."""
    (tmp_path / "pyspark").mkdir()
    (tmp_path / "pyspark" / "__init__.py").write_text("")
    code = (
        "from cobell_cli.run.local_cluster import find_spark_home\n"
        "from cobell_cli.errors import CobellError\n"
        "try:\n    find_spark_home()\nexcept CobellError as e:\n    print(e.line())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert "pip install 'cobell[spark]'" in out.stdout, out.stderr


def test_stale_pid_files_are_ignored_and_never_kill_a_stranger(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    stranger = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    try:
        # the premise: a stranger that has finished exec (an empty /proc cmdline reads as
        # "mid-exec, cannot tell", which status() rightly keeps; under load the test saw it)
        wait_for(lambda: Path(f"/proc/{stranger.pid}/cmdline").read_bytes(), 30,
                 "the stranger finishing exec")
        lc = LocalCluster(tmp_path)
        (tmp_path / "master.pid").write_text(f"{gone.pid}\n")
        (tmp_path / "worker-1.pid").write_text(f"{stranger.pid}\n")  # pid recycled by a stranger
        st = lc.status()
        assert not st.running
        # shown once as stale (the CLI says "stale pid file"), then forgotten
        assert [(d.role, d.alive) for d in st.daemons] == [("master", False), ("worker-1", False)]
        assert not (tmp_path / "master.pid").exists()
        assert not (tmp_path / "worker-1.pid").exists()
        (tmp_path / "worker-1.pid").write_text(f"{stranger.pid}\n")
        assert lc.stop() == []
        assert stranger.poll() is None, "stop killed a process that is not a Spark daemon"
        assert not (tmp_path / "worker-1.pid").exists()
    finally:
        stranger.kill()
        stranger.wait()


def test_cli_status_when_not_running_exits_1() -> None:
    result = CliRunner().invoke(local_cluster_app, ["status", "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["running"] is False and doc["alive_workers"] is None


def test_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    require_spark()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ClusterError, match=f"port {port}"):
            LocalCluster(tmp_path).start(port=port, webui_port=free_port(), timeout_s=5)
    assert not (tmp_path / "master.pid").exists()


# --- on a real cluster ----------------------------------------------------------------------


@pytest.mark.spark
def test_status_shows_alive_workers(local_spark: LocalSpark) -> None:
    st = local_spark.cluster.status()
    assert st.running
    assert st.alive_workers == local_spark.workers
    assert st.cores == local_spark.workers * local_spark.cores_per_worker
    assert [d.role for d in st.daemons] == ["master", "worker-1", "worker-2"]
    assert all(d.alive for d in st.daemons)
    doc = local_spark.cluster.master_json()
    assert doc is not None and doc["url"] == local_spark.master_url


@pytest.mark.spark
def test_start_again_reuses_the_running_cluster(local_spark: LocalSpark) -> None:
    before = [d.pid for d in local_spark.cluster.status().daemons]
    t0 = time.monotonic()
    st = local_spark.cluster.start()
    assert time.monotonic() - t0 < 5
    assert [d.pid for d in st.daemons] == before
    with pytest.raises(UsageError) as info:
        local_spark.cluster.start(workers=local_spark.workers + 1)
    assert "cobell local-cluster stop" in info.value.line()


@pytest.mark.spark
def test_spark_submit_at_the_planned_scale_out(
    local_spark: LocalSpark, spark_env: dict[str, str], tmp_path: Path
) -> None:
    scale_out = 3
    argv = [
        str(local_spark.spark_submit), "--master", local_spark.master_url,
        "--executor-memory", "512m", "--conf", "spark.ui.enabled=false",
        str(example_path("scaling_job")), "--tasks", "6", "--task-s", "0.5",
    ]  # fmt: skip
    inj = inject(argv, scale_out, "scaling")
    assert inj.launcher == "spark-standalone"

    seen_ids: list[str] = []
    granted_cores: list[int] = []

    def sample(_elapsed_s: float) -> None:
        doc = local_spark.cluster.master_json(timeout_s=1.0) or {}
        for app in doc.get("activeapps", []):
            if seen_ids and app["id"] == seen_ids[0]:
                granted_cores.append(int(app["cores"]))

    log = tmp_path / "job.log"
    sink = open(os.devnull, "wb")  # noqa: SIM115
    with sink:
        result = run(inj.argv, log_file=log, on_app_id=seen_ids.append, on_tick=sample,
                     tick_s=0.5, env=spark_env, stdout=sink, stderr=sink)  # fmt: skip
    text = log.read_text()
    assert result.exit_code == 0, text[-3000:]

    # the id captured from spark-submit's own output is the one the job itself reports ...
    assert result.app_id is not None and result.app_id.startswith("app-")
    assert seen_ids == [result.app_id]
    summary = json.loads(next(ln for ln in text.splitlines() if ln.startswith('{"job"')))
    assert summary["app_id"] == result.app_id

    # ... and the one the master knows, under the cobell name, within our wall-clock window
    doc = local_spark.cluster.master_json()
    assert doc is not None
    app = next(a for a in doc["completedapps"] if a["id"] == result.app_id)
    assert app["name"] == "cobell:scaling"
    assert app["state"] == "FINISHED"
    started_s = app["starttime"] / 1000
    assert result.started_at - 1 <= started_s <= result.finished_at
    assert started_s + app["duration"] / 1000 <= result.finished_at + 1

    # the master granted what cobell asked for: scale_out executors of one core each
    assert granted_cores and max(granted_cores) == scale_out
    executors = {
        ln.split("Granted executor ID ")[1].split()[0]
        for ln in text.splitlines()
        if "Granted executor ID " in ln
    }
    assert len(executors) == scale_out
    assert all(e.startswith(result.app_id + "/") for e in executors)
    assert "with 1 core(s)" in text


@pytest.mark.spark
def test_cli_start_status_stop_leaves_no_process() -> None:
    require_spark()
    runner = CliRunner()
    port, webui_port = free_port(), free_port()
    started = runner.invoke(
        local_cluster_app,
        ["start", "--workers", "1", "--cores-per-worker", "1", "--memory-per-worker", "1g",
         "--port", str(port), "--webui-port", str(webui_port), "--json"],
    )  # fmt: skip
    lc = LocalCluster()  # the isolated data dir of this test
    try:
        assert started.exit_code == 0, started.output
        doc = json.loads(started.stdout)
        assert doc["running"] and doc["master_url"] == f"spark://127.0.0.1:{port}"
        status = runner.invoke(local_cluster_app, ["status"])
        assert status.exit_code == 0
        assert "workers   1 alive" in status.stdout
        pids = [d["pid"] for d in doc["daemons"]]
        assert len(pids) == 2 and all(group_exists(p) for p in pids)
        assert (lc.base_dir / "logs" / "master.out").stat().st_size > 0
    finally:
        stopped = runner.invoke(local_cluster_app, ["stop"])
    assert stopped.exit_code == 0
    assert "stopped master, worker-1" in stopped.output
    assert not any(group_exists(p) for p in pids), "a daemon or executor survived stop"
    assert not list(lc.base_dir.glob("*.pid"))
    again = runner.invoke(local_cluster_app, ["stop"])
    assert "not running" in again.output


def test_a_port_left_in_time_wait_by_a_stopped_master_is_free_and_a_listened_one_is_not() -> None:
    """`local-cluster stop` then `start` at once: the old master's connections linger in
    TIME_WAIT for a minute on the port, which the new master (the JVM binds with
    SO_REUSEADDR) can bind all the same; only a socket still listening makes it busy."""
    from cobell_cli.run.local_cluster import HOST, _port_free

    listener = socket.create_server((HOST, 0))
    port = listener.getsockname()[1]
    client = socket.create_connection((HOST, port))
    served, _ = listener.accept()
    assert not _port_free(port)  # listening: busy
    served.close()  # the server's side closes first: its end of the connection waits
    time.sleep(0.2)
    client.close()
    listener.close()
    waiting = subprocess.run(["ss", "-tan", f"sport = :{port}"], capture_output=True, text=True)
    if waiting.returncode == 0:  # where ss exists, the premise is checked, not assumed
        assert "TIME-WAIT" in waiting.stdout, waiting.stdout
    assert _port_free(port)
