"""The Spark standalone adapter against a loopback master serving a real `/json/` document.

MASTER_JSON below is the shape a real Spark 4.x master (the pyspark wheel's, started with
`spark-class org.apache.spark.deploy.master.Master`) answered on its web UI's /json/,
trimmed to one worker and with the apps this module needs. A test against a live master
belongs next to the real-Spark fixture (tests/spark_support.py) once that exists.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from cobell_cli import config
from cobell_cli.cluster import connect
from cobell_cli.cluster.standalone import StandaloneCluster
from cobell_cli.errors import ClusterError
from tests.yarn_standin import LoopbackServer, Reply, dead_url

START_MS = 1795237899293

MASTER_JSON: dict[str, Any] = {
    "url": "spark://127.0.0.1:17077",
    "workers": [
        {
            "id": "worker-20261121051126-127.0.0.1-40211",
            "host": "127.0.0.1",
            "port": 40211,
            "webuiaddress": "http://127.0.0.1:38421",
            "cores": 4,
            "coresused": 1,
            "coresfree": 3,
            "memory": 4096,
            "memoryused": 512,
            "memoryfree": 3584,
            "resources": {},
            "resourcesused": {},
            "resourcesfree": {},
            "state": "ALIVE",
            "lastheartbeat": 1795237918867,
        }
    ],
    "aliveworkers": 1,
    "cores": 4,
    "coresused": 1,
    "memory": 4096,
    "memoryused": 512,
    "resources": [{}],
    "resourcesused": [{}],
    "activeapps": [
        {
            "id": "app-20261121051139-0000",
            "starttime": START_MS,
            "name": "cobell:scaling",
            "cores": 1,
            "user": "root",
            "memoryperexecutor": 512,
            "memoryperslave": 512,
            "resourcesperexecutor": [],
            "resourcesperslave": [],
            "submitdate": "Sat Nov 21 05:11:39 UTC 2026",
            "state": "RUNNING",
            "duration": 25359,
        },
        {
            "id": "app-20261121051150-0001",
            "starttime": START_MS + 11000,
            "name": "pagerank",
            "cores": 4,
            "user": "bob",
            "memoryperexecutor": 1024,
            "memoryperslave": 1024,
            "resourcesperexecutor": [],
            "resourcesperslave": [],
            "submitdate": "Sat Nov 21 05:11:50 UTC 2026",
            "state": "RUNNING",
            "duration": 14359,
        },
        {
            "id": "app-20261121051158-0002",
            "starttime": START_MS + 19000,
            "name": "waiting for cores",
            "cores": 0,
            "user": "carol",
            "memoryperexecutor": 1024,
            "memoryperslave": 1024,
            "resourcesperexecutor": [],
            "resourcesperslave": [],
            "submitdate": "Sat Nov 21 05:11:58 UTC 2026",
            "state": "WAITING",
            "duration": 6359,
        },
    ],
    "completedapps": [
        {
            "id": "app-20261121050001-0000",
            "starttime": START_MS - 700000,
            "name": "cobell:sgd",
            "cores": 2,
            "user": "root",
            "memoryperexecutor": 512,
            "memoryperslave": 512,
            "resourcesperexecutor": [],
            "resourcesperslave": [],
            "submitdate": "Sat Nov 21 05:00:01 UTC 2026",
            "state": "FINISHED",
            "duration": 123456,
        }
    ],
    "activedrivers": [],
    "completeddrivers": [],
    "status": "ALIVE",
}


class MasterStandin:
    """Serves `doc` at /json/ on loopback; `requests` counts what was asked."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.requests: list[str] = []
        self.server = LoopbackServer(self.handle)
        self.url = self.server.url

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> Reply:
        self.requests.append(path)
        if path == "/json/":
            return 200, {"Content-Type": "application/json"}, json.dumps(self.doc).encode()
        return 404, {"Content-Type": "text/plain"}, b"not found"


@pytest.fixture
def masters() -> Iterator[Any]:
    started: list[MasterStandin] = []

    def make(doc: dict[str, Any] | None = None) -> MasterStandin:
        master = MasterStandin(copy.deepcopy(MASTER_JSON) if doc is None else doc)
        master.server.start()
        started.append(master)
        return master

    yield make
    for master in started:
        master.server.stop()


def standalone(url: str, known_jobs: tuple[str, ...] = (), **flags: Any) -> StandaloneCluster:
    flags = {"cluster": "standalone", "standalone_url": url, "retries": 0, **flags}
    cluster = connect(config.load(flags, env={}), known_jobs, env={}, backoff_s=0.0)
    assert isinstance(cluster, StandaloneCluster)
    return cluster


def test_running_apps_are_the_running_active_apps(masters: Any) -> None:
    master = masters()
    cluster = standalone(master.url, known_jobs=("pagerank",))
    apps = {a.app_id: a for a in cluster.running_apps()}
    assert set(apps) == {"app-20261121051139-0000", "app-20261121051150-0001"}  # not WAITING
    tagged = apps["app-20261121051139-0000"]
    assert tagged.job == "scaling" and tagged.scale_out == 1 and tagged.user == "root"
    assert tagged.started_at == pytest.approx(START_MS / 1000)
    assert tagged.running and tagged.progress is None and tagged.backend == "standalone"
    named = apps["app-20261121051150-0001"]
    assert named.job == "pagerank" and named.scale_out == 4
    assert master.requests == ["/json/"]
    assert cluster.describe() == f"spark standalone master {master.url} (alive)"


def test_cores_per_executor_turns_cores_into_executors(masters: Any) -> None:
    master = masters()
    cluster = standalone(master.url)
    cluster.cores_per_executor = 2
    by_id = {a.app_id: a.scale_out for a in cluster.running_apps()}
    assert by_id["app-20261121051150-0001"] == 2


def test_finished_apps_end_at_start_plus_duration(masters: Any) -> None:
    cluster = standalone(masters().url)
    start_s = (START_MS - 700000) / 1000
    (done,) = cluster.apps_finished_since(start_s)
    assert done.job == "sgd" and done.state == "FINISHED"
    assert done.finished_at == pytest.approx(start_s + 123.456)
    assert done.scale_out == 2 and not done.running
    assert cluster.apps_finished_since(start_s + 124) == []


def test_app_by_id_searches_both_lists(masters: Any) -> None:
    cluster = standalone(masters().url)
    found = cluster.app("app-20261121050001-0000")
    assert found is not None and found.finished_at is not None
    assert cluster.app("app-20261121051139-0000") is not None
    assert cluster.app("app-nope") is None


def test_check_reports_the_master(masters: Any) -> None:
    master = masters()
    report = standalone(master.url).check()
    assert report["url"] == master.url and report["ha_state"] == "ALIVE"
    assert report["workers_alive"] == 1 and report["cores"] == 4
    assert report["master_url"] == "spark://127.0.0.1:17077" and report["latency_ms"] >= 0


def test_a_standby_master_is_skipped(masters: Any) -> None:
    standby_doc = {**copy.deepcopy(MASTER_JSON), "status": "STANDBY", "activeapps": []}
    standby, alive = masters(standby_doc), masters()
    cluster = standalone(f"{standby.url},{alive.url}")
    assert len(cluster.running_apps()) == 2
    assert cluster.check()["skipped"] == [{"url": standby.url, "why": "master status STANDBY"}]


def test_a_worker_url_is_refused_with_a_hint(masters: Any) -> None:
    worker_doc = {"id": "worker-1", "masterurl": "spark://m:7077", "cores": 4, "executors": []}
    with pytest.raises(ClusterError) as err:
        standalone(masters(worker_doc).url).running_apps()
    assert "activeapps" in err.value.line() and "8080" in err.value.line()


def test_a_dead_master_names_the_url_and_the_fix() -> None:
    url = dead_url()
    with pytest.raises(ClusterError) as err:
        standalone(url).running_apps()
    assert url in err.value.line() and "--standalone-url" in err.value.line()


def test_simple_auth_sends_no_user_name_to_the_master(masters: Any) -> None:
    master = masters()
    cluster = standalone(master.url, auth="simple", rm_user="x")
    assert cluster.client.auth == "none"
    cluster.running_apps()


def test_cluster_apps_command_on_standalone(masters: Any) -> None:
    from cobell_cli import cli as cli_root
    from cobell_cli.cli import cluster as cluster_cli
    from tests.cli_support import cobell

    master = masters()
    mounted = not any(g.typer_instance is cluster_cli.app for g in cli_root.app.registered_groups)
    if mounted:  # the lead has not registered `cluster` yet: mount it for this call
        cli_root.app.add_typer(cluster_cli.app, name="cluster")
    try:
        result = cobell("cluster", "apps", "--json", "--standalone-url", master.url)
    finally:
        if mounted:
            cli_root.app.registered_groups.pop()
    assert result.exit_code == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["backend"] == "standalone"
    assert {a["job"] for a in payload["apps"]} == {"scaling", None}
