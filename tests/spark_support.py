"""Pytest fixtures for tests on a real Spark standalone cluster (the `cobell local-cluster` code).

Use from a test module (or register in conftest.py with `pytest_plugins = ["tests.spark_support"]`):

    from tests.spark_support import local_spark, spark_env  # noqa: F401  (fixtures)

    @pytest.mark.spark
    def test_x(local_spark: LocalSpark) -> None:
        local_spark.master_url, local_spark.webui_url, local_spark.cluster.master_json()

The cluster is session-scoped (start-up costs ~10-15 s on 2 cores): 2 workers x 2 cores,
2g each, on free loopback ports, in a temporary directory; it is stopped at the end of the
session. Tests skip with the reason when Java or pyspark is missing; under CI (`CI` set), where
.ci/setup installs both, they fail instead (require_spark).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cobell_cli.errors import CobellError
from cobell_cli.run.local_cluster import LocalCluster, find_java, find_spark_home

WORKERS = 2
CORES_PER_WORKER = 2


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spark_missing_reason() -> str | None:
    """Why real-Spark tests cannot run here, or None when they can."""
    try:
        find_java()
        find_spark_home()
    except CobellError as exc:
        return exc.line()
    return None


def installed_here() -> bool:
    """Java and pyspark are on this machine, found without cobell's own lookup (the code under
    test): `java` on PATH or in $JAVA_HOME, and an importable pyspark."""
    java_home = os.environ.get("JAVA_HOME")
    java = shutil.which("java") or (java_home and (Path(java_home) / "bin" / "java").exists())
    return bool(java) and importlib.util.find_spec("pyspark") is not None


def require_spark() -> None:
    """Skip where Java or pyspark is missing; under CI (`CI` set, as .ci/run sets it), where
    .ci/setup installed both, a failing lookup is cobell's bug, so the test fails instead."""
    reason = spark_missing_reason()
    if not reason:
        return
    if os.environ.get("CI") and installed_here():
        pytest.fail(f"Java and pyspark are installed, but cobell's lookup failed: {reason}")
    pytest.skip(f"needs Java and pyspark: {reason}")


@dataclass(frozen=True)
class LocalSpark:
    cluster: LocalCluster
    master_url: str
    webui_url: str
    spark_submit: Path
    workers: int
    cores_per_worker: int


def driver_env() -> dict[str, str]:
    """Environment for spark-submit against the local cluster: driver on loopback, quiet."""
    env = dict(os.environ)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.pop("SPARK_CONF_DIR", None)
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return env


@pytest.fixture
def spark_env() -> dict[str, str]:
    return driver_env()


@pytest.fixture(scope="session")
def local_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalSpark]:
    require_spark()
    cluster = LocalCluster(tmp_path_factory.mktemp("local-spark"))
    try:
        cluster.start(
            workers=WORKERS,
            cores_per_worker=CORES_PER_WORKER,
            memory_per_worker="2g",
            port=free_port(),
            webui_port=free_port(),
            timeout_s=180,
        )
        yield LocalSpark(
            cluster=cluster,
            master_url=cluster.master_url,
            webui_url=cluster.webui_url,
            spark_submit=find_spark_home() / "bin" / "spark-submit",
            workers=WORKERS,
            cores_per_worker=CORES_PER_WORKER,
        )
    finally:
        cluster.stop()
