"""The local YARN without starting it: its configuration, the jar cache, the CLI's bad input.
(The cluster itself: tests/test_real_yarn_cluster.py and tests/test_real_yarn_spark.py.)"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cobell_cli.cluster.yarnconf import read_properties, rm_web_urls
from cobell_cli.errors import CobellError
from cobell_cli.run import yarn_jars
from cobell_cli.run.local_yarn import LocalYarn
from cobell_cli.run.local_yarn_conf import (
    YarnShape,
    capacity_scheduler,
    hadoop_xml,
    spark_defaults,
    yarn_site,
)
from tests.cli_support import cobell

# --- the configuration ------------------------------------------------------------------------


def test_the_generated_files_are_hadoop_xml_cobell_reads(tmp_path: Path) -> None:
    props = yarn_site(YarnShape(), tmp_path)
    props["yarn.resourcemanager.webapp.address"] = "127.0.0.1:40123"  # as the JVM rewrites it
    props["odd & <value>"] = "a<b>&c"
    site = tmp_path / "yarn-site.xml"
    site.write_text(hadoop_xml(props))
    read = read_properties(site)
    assert read["odd & <value>"] == "a<b>&c"
    assert rm_web_urls(read, env={}) == ["http://127.0.0.1:40123"]
    assert read["yarn.scheduler.include-port-in-node-name"] == "true"  # NMs share one host


def test_memory_enforcement_and_the_node_resources() -> None:
    props = yarn_site(YarnShape(memory_mb_per_node=6144, vcores_per_node=3), Path("/x"))
    assert props["yarn.nodemanager.pmem-check-enabled"] == "true"
    assert props["yarn.nodemanager.resource.memory.enforced"] == "false"  # polling, no cgroups
    assert props["yarn.nodemanager.vmem-check-enabled"] == "false"
    # a REST kill ends KILLED: the AM gets no SIGTERM hook in which to unregister first
    assert props["yarn.nodemanager.sleep-delay-before-sigkill.ms"] == "0"
    assert props["yarn.nodemanager.resource.memory-mb"] == "6144"
    assert props["yarn.scheduler.maximum-allocation-mb"] == "6144"
    assert props["yarn.nodemanager.resource.cpu-vcores"] == "3"
    assert props["yarn.node-labels.fs-store.root-dir"] == "file:///x/node-labels"
    assert all(
        v == "127.0.0.1:0" for k, v in props.items() if k.startswith("yarn.resourcemanager.")
        and k.endswith(".address")
    )


def test_the_queues_add_up_and_only_default_may_use_the_label() -> None:
    props = capacity_scheduler(YarnShape(node_label="gpu"))
    root = "yarn.scheduler.capacity.root"
    queues = props[f"{root}.queues"].split(",")
    assert queues == ["default", "batch"]
    assert sum(float(props[f"{root}.{q}.capacity"]) for q in queues) == 100
    assert props[f"{root}.default.accessible-node-labels"] == "gpu"
    assert props[f"{root}.default.accessible-node-labels.gpu.capacity"] == "100"
    assert props[f"{root}.batch.accessible-node-labels"].strip() == ""
    assert props[f"{root}.batch.maximum-capacity"] == props[f"{root}.batch.capacity"]
    unlabelled = capacity_scheduler(YarnShape(labeled_node_managers=0))
    assert not any("accessible-node-labels" in k for k in unlabelled)


def test_one_user_may_fill_the_default_queue_to_its_maximum() -> None:
    """At YARN's default user-limit-factor (1) one user stops at the queue's 70 %: apps that
    hold their containers while another waits for its last one deadlock (stop 57's CI)."""
    props = capacity_scheduler(YarnShape())
    q = "yarn.scheduler.capacity.root.default"
    reach = float(props[f"{q}.capacity"]) * float(props[f"{q}.user-limit-factor"])
    assert reach >= float(props[f"{q}.maximum-capacity"])


def test_spark_uploads_nothing_and_runs_this_python(tmp_path: Path) -> None:
    conf = spark_defaults(tmp_path / "pyspark", "/venv/bin/python", tmp_path)
    assert conf["spark.yarn.jars"] == f"local:{tmp_path / 'pyspark' / 'jars'}/*"
    assert conf["spark.pyspark.python"] == conf["spark.yarn.appMasterEnv.PYSPARK_PYTHON"]
    assert not any(k.startswith("spark.eventLog") for k in conf)  # cobell's own capture decides


def test_a_shape_is_one_nodemanager_label_each() -> None:
    assert YarnShape(node_managers=1, labeled_node_managers=2).labels() == ["", "fast", "fast"]


# --- the CLI, nothing running ----------------------------------------------------------------


def test_status_and_stop_when_nothing_runs() -> None:
    status = cobell("local-cluster", "status", "--yarn")
    assert status.exit_code == 1
    assert "running          no" in status.stdout
    doc = json.loads(cobell("local-cluster", "status", "--yarn", "--json").stdout)
    assert doc["running"] is False and doc["pid"] is None
    stop = cobell("local-cluster", "stop", "--yarn")
    assert stop.exit_code == 0 and "the local YARN was not running" in stop.stderr


def test_stop_ends_the_launcher_and_the_containers_it_left(tmp_path: Path) -> None:
    """`local-cluster stop --yarn` on a running cluster, without a JVM: a process that looks
    like the launcher (its marker and base dir in its command line, its own session) and one
    working in a NodeManager's directory, as a container does. (The real JVM is stopped by the
    same LocalYarn.stop at the end of every real-YARN test session.)"""
    import subprocess
    import threading
    import time

    from cobell_cli.config import data_dir
    from cobell_cli.run.local_yarn import LAUNCHER_MARK

    base = data_dir() / "local-yarn"
    work = base / "nm-1" / "usercache" / "container_1"
    work.mkdir(parents=True)
    sleep = [sys.executable, "-c", "import time; time.sleep(120)"]
    launcher = subprocess.Popen([*sleep, f"/x/{LAUNCHER_MARK}", str(base)],
                                start_new_session=True)  # fmt: skip
    container = subprocess.Popen(sleep, cwd=work, start_new_session=True)
    # reaped at once, as init reaps a real launcher: a zombie would still count as running
    reaper = threading.Thread(target=launcher.wait, daemon=True)
    reaper.start()
    try:
        LocalYarn(base).pid_file.write_text(f"{launcher.pid}\n")
        deadline = time.monotonic() + 10  # until /proc shows the container's cwd
        while os.readlink(f"/proc/{container.pid}/cwd") != str(work.resolve()):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert LocalYarn(base).pid() == launcher.pid
        stop = cobell("local-cluster", "stop", "--yarn")
        assert stop.exit_code == 0 and "stopped the local YARN" in stop.stderr
        reaper.join(timeout=10)
        assert launcher.returncode == -15  # SIGTERM to its process group
        assert container.wait(timeout=10) == -9  # a container left behind is killed
        assert not LocalYarn(base).pid_file.exists()
        again = cobell("local-cluster", "stop", "--yarn")
        assert "the local YARN was not running" in again.stderr
    finally:
        for proc in (launcher, container):
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--node-label", "no good"], "'no good' is not a YARN node label"),
        (["--node-managers", "0"], "--node-managers"),
        (["--memory-per-node", "512"], "--memory-per-node"),
    ],
)
def test_bad_shapes_are_one_line_and_start_nothing(args: list[str], needle: str) -> None:
    result = cobell("local-cluster", "start", "--yarn", *args)
    assert result.exit_code == 2
    assert needle in result.stderr
    assert "Traceback" not in result.stderr
    assert LocalYarn().pid() is None


def test_a_stale_pid_file_is_not_a_cluster(tmp_path: Path) -> None:
    cluster = LocalYarn(tmp_path)
    cluster.pid_file.write_text(f"{os.getpid()}\n")  # alive, but not the launcher
    assert cluster.pid() is None and not cluster.pid_file.exists()
    assert cluster.stop() is False


# --- the jar cache ----------------------------------------------------------------------------


def test_the_hadoop_version_is_the_wheels(tmp_path: Path) -> None:
    (tmp_path / "jars").mkdir()
    (tmp_path / "jars" / "hadoop-client-api-3.4.9.jar").write_text("")
    assert yarn_jars.hadoop_version(tmp_path) == "3.4.9"
    assert yarn_jars.hadoop_version(None) == yarn_jars.FALLBACK_HADOOP_VERSION
    env = {"XDG_CACHE_HOME": str(tmp_path / "c"), "HOME": str(tmp_path)}
    assert yarn_jars.jar_dir("3.4.9", env) == tmp_path / "c" / "cobell" / "yarn-3.4.9" / "jars"
    assert yarn_jars.jar_dir("3.4.9", {**env, "COBELL_YARN_JARS": "/j"}) == Path("/j")


def _fake_mvn(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    mvn = bin_dir / "mvn"
    mvn.write_text(f"#!{sys.executable}\nimport sys, pathlib\nargs = sys.argv[1:]\n{body}\n")
    mvn.chmod(0o755)


def test_fetch_copies_with_maven_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls"
    _fake_mvn(tmp_path / "bin", (
        "out = next(a.split('=', 1)[1] for a in args if a.startswith('-DoutputDirectory='))\n"
        f"open({str(calls)!r}, 'a').write(' '.join(args) + '\\n')\n"
        "pathlib.Path(out, 'hadoop-client-minicluster-3.5.0.jar').write_text('jar')"
    ))  # fmt: skip
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    target = tmp_path / "cache" / "jars"
    assert yarn_jars.fetch("3.5.0", target, quiet=True) == target
    assert (target / "hadoop-client-minicluster-3.5.0.jar").is_file()
    assert yarn_jars.is_complete(target)
    yarn_jars.fetch("3.5.0", target, quiet=True)  # cached: Maven is not asked again
    (line,) = calls.read_text().splitlines()
    assert "-Dhadoop.version=3.5.0" in line and str(yarn_jars.POM) in line


def test_a_failed_fetch_leaves_no_half_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_mvn(tmp_path / "bin", "print('[ERROR] Could not resolve dependencies'); sys.exit(1)")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    target = tmp_path / "cache" / "jars"
    with pytest.raises(CobellError) as info:
        yarn_jars.fetch("3.5.0", target, quiet=True)
    assert "Could not resolve dependencies" in info.value.line()
    assert not yarn_jars.is_complete(target) and not target.exists()


def test_without_maven_the_error_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn anywhere
    with pytest.raises(CobellError) as info:
        yarn_jars.fetch("3.5.0", tmp_path / "jars", quiet=True)
    line = info.value.line()
    assert "Maven (mvn) was not found" in line and "apt-get install maven" in line


def test_without_java_the_error_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_mvn(tmp_path / "bin", "sys.exit(0)")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # Maven, but no java
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(CobellError) as info:
        yarn_jars.fetch("3.5.0", tmp_path / "jars", quiet=True)
    line = info.value.line()
    assert "Java was not found" in line and "openjdk-17-jre-headless" in line
    assert not (tmp_path / "jars").exists()


def test_the_yarn_demo_asks_for_what_the_default_partition_holds() -> None:
    from cobell_cli.cli.demo_yarn import CONTAINER_MB, executors_that_fit

    # two 4096 MB NodeManagers: the demo's AM, the co-runner's AM and its two executors
    assert executors_that_fit(8192, co_runner=True) == (8192 - 4 * CONTAINER_MB) // CONTAINER_MB
    assert executors_that_fit(8192, co_runner=False) == 8
    assert executors_that_fit(1024, co_runner=True) == 1  # never below one


@pytest.mark.parametrize(
    ("ci", "outcome"), [(None, pytest.skip.Exception), ("1", pytest.fail.Exception)]
)
def test_missing_jars_skip_with_the_reason_but_fail_under_ci(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ci: str | None, outcome: type
) -> None:
    import tests.yarn_support as support

    env = {k: v for k, v in support._ENV_AT_IMPORT.items() if k != "CI"}
    env["COBELL_YARN_JARS"] = str(tmp_path / "no-jars")
    if ci is not None:
        env["CI"] = ci
    monkeypatch.setattr(support, "_ENV_AT_IMPORT", env)
    if "no-jars" not in str(support.yarn_missing_reason()):
        pytest.skip("Java or pyspark is missing here, so the jars are not the reason")
    with pytest.raises((pytest.skip.Exception, pytest.fail.Exception)) as info:
        support.require_yarn()
    assert info.type is outcome
    assert f"{tmp_path / 'no-jars'}" in str(info.value) and "./.ci/setup" in str(info.value)
