"""Pytest fixtures for tests on a real YARN (the `cobell local-cluster start --yarn` code).

    from tests.yarn_support import RealYarn

    @pytest.mark.yarn
    def test_x(real_yarn: RealYarn) -> None:
        real_yarn.rm_url, real_yarn.conf_dir, real_yarn.env, real_yarn.rest("/ws/v1/cluster/nodes")

One cluster per test session (start-up costs ~20-40 s on 2 cores, more under load), shared by
every test that asks for it: a ResourceManager with the CapacityScheduler (queues `default`
and `batch`), 2 NodeManagers in the default partition and 2 in the exclusive partition
`fast`, 4096 MB and 4 vcores each, YARN's physical-memory check on (run/local_yarn.py), on
ephemeral loopback ports, in a temporary directory, stopped at the end of the session (and by
itself if the test process dies). `real_yarn.env` points spark-submit and cobell at it
(HADOOP_CONF_DIR, SPARK_CONF_DIR). Tests skip, saying why, where Java, pyspark or the Hadoop
jars (`./.ci/setup` fetches them with Maven) are missing; under CI (`CI` set) they fail instead.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cobell_cli.errors import CobellError
from cobell_cli.run.local_cluster import find_java, find_spark_home
from cobell_cli.run.local_yarn import LocalYarn
from cobell_cli.run.local_yarn_conf import YarnShape
from cobell_cli.run.yarn_jars import hadoop_version, is_complete, jar_dir

LABEL = "fast"
SHAPE = YarnShape(node_managers=2, labeled_node_managers=2, node_label=LABEL)
# Resolved at import, before the per-test isolated_env points XDG_CACHE_HOME into tmp.
_ENV_AT_IMPORT = dict(os.environ)


def yarn_missing_reason() -> str | None:
    """Why real-YARN tests cannot run here, or None when they can."""
    try:
        find_java()
        spark_home = find_spark_home()
    except CobellError as exc:
        return exc.line()
    version = hadoop_version(spark_home)
    jars = jar_dir(version, _ENV_AT_IMPORT)
    if not is_complete(jars):
        return f"the Hadoop {version} YARN jars are not in {jars} (./.ci/setup fetches them)"
    return None


@dataclass
class RealYarn:
    cluster: LocalYarn
    rm_url: str
    conf_dir: Path
    spark_submit: Path
    start_s: float  # how long the fixture's start took
    xdg_data_home: Path | None = None  # the cluster is `cobell local-cluster --yarn`'s there

    def env(self) -> dict[str, str]:
        """This process's environment, pointed at the cluster (HADOOP_CONF_DIR, ...)."""
        return self.cluster.client_env()

    def rest(self, path: str, timeout_s: float = 10.0) -> Any:
        """GET a path of the RM's REST API as JSON (raises on HTTP errors)."""
        with urllib.request.urlopen(f"{self.rm_url}{path}", timeout=timeout_s) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def send(self, method: str, path: str, body: Any = None, timeout_s: float = 30.0) -> Any:
        """POST/PUT JSON to the RM as user `cobell-test` (simple auth); the JSON answer."""
        sep = "&" if "?" in path else "?"
        request = urllib.request.Request(
            f"{self.rm_url}{path}{sep}user.name=cobell-test",
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
            text = resp.read().decode("utf-8")
        return json.loads(text) if text.strip() else None

    def app(self, app_id: str) -> dict[str, Any]:
        return self.rest(f"/ws/v1/cluster/apps/{app_id}")["app"]

    def wait_for(
        self,
        what: str,
        check: Callable[[], Any],
        timeout_s: float = 240.0,
        every_s: float = 0.5,
        explain: Callable[[], Any] | None = None,
    ) -> Any:
        """Poll `check` until it returns something truthy; fail the test naming `what`, and
        with what `explain` then reads (the RM's view that says why it never came)."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                value = check()
            except (urllib.error.URLError, OSError, ValueError, KeyError):
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                why = f"; {explain()}" if explain is not None else ""
                pytest.fail(f"the real YARN did not show {what} within {timeout_s:g} s{why}")
            time.sleep(every_s)

    def submit_shell(
        self,
        command: str,
        *,
        name: str,
        queue: str = "default",
        memory_mb: int = 256,
        tags: tuple[str, ...] = (),
        node_label: str | None = None,
    ) -> str:
        """An application whose ApplicationMaster is just `command` (REST submission): a
        cheap real app. It never registers as an AM, so it ends FAILED when the command
        exits, or KILLED when killed; it holds one container while it runs."""
        new = self.send("POST", "/ws/v1/cluster/apps/new-application")
        app_id = new["application-id"]
        body: dict[str, Any] = {
            "application-id": app_id,
            "application-name": name,
            "application-type": "SHELL",
            "queue": queue,
            "am-container-spec": {"commands": {"command": command}},
            "resource": {"memory": memory_mb, "vCores": 1},
            "max-app-attempts": 1,
            "keep-containers-across-application-attempts": False,
            "application-tags": {"tag": list(tags)},
        }
        if node_label is not None:
            body["am-container-node-label-expression"] = node_label
            body["app-node-label-expression"] = node_label
        self.send("POST", "/ws/v1/cluster/apps", body)
        return app_id

    def kill(self, app_id: str) -> None:
        """What `yarn application -kill` does, through the REST API."""
        self.send("PUT", f"/ws/v1/cluster/apps/{app_id}/state", {"state": "KILLED"})


def require_yarn() -> None:
    """Skip, saying why, where the real YARN cannot run; under CI (`CI` set, as .ci/run does)
    fail instead: .ci/setup installs Java and fetches the jars, so a skip there would hide
    that the real-YARN tests never ran."""
    reason = yarn_missing_reason()
    if reason and _ENV_AT_IMPORT.get("CI"):
        pytest.fail(f"CI must run the real-YARN tests, but: {reason} (run ./.ci/setup)")
    if reason:
        pytest.skip(f"needs a real YARN: {reason}")


@pytest.fixture(scope="session")
def real_yarn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealYarn]:
    require_yarn()
    xdg_data_home = tmp_path_factory.mktemp("yarn-xdg-data")
    cluster = LocalYarn(xdg_data_home / "cobell" / "local-yarn")
    jars = jar_dir(hadoop_version(find_spark_home()), _ENV_AT_IMPORT)
    try:
        t0 = time.monotonic()
        cluster.start(SHAPE, timeout_s=300, parent_pid=os.getpid(), jars=jars)
        start_s = time.monotonic() - t0
        _containers_like_the_session(cluster.conf_dir)
        _STARTS.append(start_s)
        rm_url = cluster.rm_url
        assert rm_url is not None
        yield RealYarn(
            cluster=cluster,
            rm_url=rm_url,
            conf_dir=cluster.conf_dir,
            spark_submit=find_spark_home() / "bin" / "spark-submit",
            start_s=start_s,
            xdg_data_home=xdg_data_home,
        )
    finally:
        t0 = time.monotonic()
        if cluster.stop():  # False: not running (a start that failed stopped it already)
            _STOPS.append(time.monotonic() - t0)


def _containers_like_the_session(conf_dir: Path) -> None:
    """The ApplicationMasters (cluster-mode drivers) and executors get the session's
    JAVA_TOOL_OPTIONS (the C1-only JIT tests/conftest.py sets for every JVM the tests start):
    YARN passes a container only the variables its whitelist names, so they are set through
    the cluster's spark-defaults.conf, after what cobell wrote there."""
    options = os.environ.get("JAVA_TOOL_OPTIONS")
    if options:
        with (conf_dir / "spark-defaults.conf").open("a") as defaults:
            defaults.write(f"spark.yarn.appMasterEnv.JAVA_TOOL_OPTIONS {options}\n"
                           f"spark.executorEnv.JAVA_TOOL_OPTIONS {options}\n")


_STARTS: list[float] = []
_STOPS: list[float] = []


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist a worker ran the cluster: hand its start and stop times to the
    controller."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["real_yarn_starts"] = json.dumps(_STARTS)
        session.config.workeroutput["real_yarn_stops"] = json.dumps(_STOPS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    output = getattr(node, "workeroutput", {})
    _STARTS.extend(json.loads(output.get("real_yarn_starts", "[]")))
    _STOPS.extend(json.loads(output.get("real_yarn_stops", "[]")))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how long the real YARN took to start (its goal: 90 s on 2 cores) and to stop."""
    for seconds in _STARTS:
        terminalreporter.write_line(f"real YARN: the session's cluster started in {seconds:.1f} s")
    for seconds in _STOPS:
        terminalreporter.write_line(f"real YARN: the session's cluster stopped in {seconds:.1f} s")
