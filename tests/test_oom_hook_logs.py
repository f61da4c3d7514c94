"""An executor killed by SIGTERM with exit 143: its own JVM after an OutOfMemoryError (Spark on
YARN's `-XX:OnOutOfMemoryError='kill %p'`), or someone outside. Only the executor's log tells
them apart (core/memory/failures.py, `oom-hook`): the event-log fold keeps such kills with the
URLs of the executor's logs, and `judge_hook_kills` reads them from the NodeManager (here a real
HTTP server on loopback serving the logs as the NodeManager does). The real YARN:
tests/test_real_yarn_oom.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

import pytest

from cobell_cli import config
from cobell_cli.cluster import connect
from cobell_cli.cluster.none import NoCluster
from cobell_cli.core.memory.failures import hook_verdict, memory_failure
from cobell_cli.core.memory.measure import memory_columns
from cobell_cli.run.event_capture import judge_hook_kills, log_fetch
from cobell_cli.sources.eventlog_profile import summarize
from cobell_cli.sources.executor_log import Fetch, rest_url

T0 = 1_700_000_000_000
HOOK = ("Container from a bad node: container_1_0001_01_000002 on host: localhost. Exit "
        "status: 143. Possible causes: Unknown executor exit code (143) (died from signal 15?) "
        "Diagnostics: Container killed on request. Exit code is 143\nKilled by external signal")
# As the NodeManager's REST API returns a container's log (Hadoop 3.5, the local YARN): the
# JVM's own words on stdout before its OnOutOfMemoryError hook runs.
OOM_STDOUT = ("Container: container_1_0001_01_000002 on localhost:38655\nLogAggregationType: "
              "LOCAL\n====\nLogType:stdout\nLogLength:124\nLogContents:\n#\n# "
              "java.lang.OutOfMemoryError: Java heap space\n# -XX:OnOutOfMemoryError=\"kill %p\"\n"
              "#   Executing /bin/sh -c \"kill 21734\"...\nEnd of LogType:stdout.\n")
TERM_STDOUT = ("Container: container_1_0001_01_000002 on localhost:38655\nLogAggregationType: "
               "LOCAL\n====\nLogType:stdout\nLogLength:0\nLogContents:\n"
               "End of LogType:stdout.\n")


class _NodeManager(BaseHTTPRequestHandler):
    logs: ClassVar[dict[str, str]] = {}
    asked: ClassVar[list[str]] = []
    user: ClassVar[str | None] = None  # set: simple auth, 401 without ?user.name=<user>

    def do_GET(self) -> None:
        self.asked.append(self.path)
        if self.user is not None and f"user.name={self.user}" not in urlsplit(self.path).query:
            self.send_response(401)
            self.end_headers()
            return
        body = self.logs.get(urlsplit(self.path).path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write((body or "Can not find the container").encode())

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def node_manager() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NodeManager)
    _NodeManager.logs, _NodeManager.asked, _NodeManager.user = {}, [], None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _log_urls(base: str, container: str) -> dict[str, str]:
    return {name: f"{base}/node/containerlogs/{container}/root/{name}?start=-4096"
            for name in ("stdout", "stderr")}


def _event_log(tmp_path: Path, urls: dict[str, str], reason: str = HOOK) -> Path:
    events = [
        {"Event": "SparkListenerApplicationStart", "App Name": "m", "App ID": "application_1_0001",
         "Timestamp": T0},
        {"Event": "SparkListenerEnvironmentUpdate",
         "Spark Properties": {"spark.executor.memory": "512m"}},
        {"Event": "SparkListenerExecutorAdded", "Executor ID": "1", "Timestamp": T0 + 1000,
         "Executor Info": {"Host": "localhost", "Total Cores": 1, "Log Urls": urls}},
        {"Event": "SparkListenerExecutorRemoved", "Executor ID": "1", "Timestamp": T0 + 9000,
         "Removed Reason": reason},
        {"Event": "SparkListenerApplicationEnd", "Timestamp": T0 + 9500},
    ]
    path = tmp_path / "application_1_0001"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_a_sigterm_alone_is_not_memory_but_the_fold_keeps_it_with_its_logs(
    tmp_path: Path,
) -> None:
    assert not memory_failure(HOOK)  # the driver's output and the RM's diagnostics
    urls = _log_urls("http://nm:8042", "container_1_0001_01_000002")
    profile = summarize(_event_log(tmp_path, urls))
    assert profile.memory is not None and profile.memory.memory_failures == []
    assert profile.memory.oom_hook_kills == [[HOOK[:300], urls["stdout"], urls["stderr"]]]
    # an event log read without the executors' logs (history import): memory, as Spark meant
    assert memory_columns(profile)["failure_reason"] == "memory"


@pytest.mark.parametrize(("logs", "kept"), [
    ([OOM_STDOUT], "[executor log: java.lang.OutOfMemoryError]"),
    ([TERM_STDOUT, OOM_STDOUT], "[executor log: java.lang.OutOfMemoryError]"),
    ([TERM_STDOUT], None),
    ([], "[executor log not read]"),
])
def test_the_verdict_reads_the_executors_own_log(logs: list[str], kept: str | None) -> None:
    reason = "Exit status: 143 Killed by external signal"
    assert hook_verdict(reason, logs) == (None if kept is None else f"{reason} {kept}")


def test_the_log_page_becomes_the_node_managers_rest_url() -> None:
    url = rest_url("http://nm:8042/node/containerlogs/container_2/root/stdout?start=-4096")
    assert url == "http://nm:8042/ws/v1/node/containers/container_2/logs/stdout?size=-262144"
    assert rest_url("http://host:8081/logPage/?appId=app-1&executorId=0&logType=stdout") is None


def _judged(tmp_path: Path, base: str, stdout: str | None, fetch: Fetch | None = None) -> dict:
    container = "container_1_0001_01_000002"
    urls = _log_urls(base, container)
    if stdout is not None:
        _NodeManager.logs[f"/ws/v1/node/containers/{container}/logs/stdout"] = stdout
    profile = summarize(_event_log(tmp_path, urls))
    judge_hook_kills(profile, budget_s=5.0, fetch=fetch)
    assert profile.memory is not None and profile.memory.oom_hook_kills == []
    return {"failures": profile.memory.memory_failures, **memory_columns(profile)}


def test_an_executor_that_ran_out_of_heap_is_a_memory_failure(
    tmp_path: Path, node_manager: str,
) -> None:
    judged = _judged(tmp_path, node_manager, OOM_STDOUT)
    assert judged["failure_reason"] == "memory"
    assert judged["failures"] == [f"{HOOK[:300]} [executor log: java.lang.OutOfMemoryError]"]
    assert any("size=-262144" in path for path in _NodeManager.asked)


def test_an_executor_killed_from_outside_is_not_a_memory_failure(
    tmp_path: Path, node_manager: str,
) -> None:
    judged = _judged(tmp_path, node_manager, TERM_STDOUT)
    assert "failure_reason" not in judged and judged["failures"] == []


def test_logs_that_cannot_be_read_keep_the_memory_failure(
    tmp_path: Path, node_manager: str,
) -> None:
    assert _judged(tmp_path, node_manager, None)["failure_reason"] == "memory"  # 404s
    closed = "http://127.0.0.1:9"  # discard port: refused
    judged = _judged(tmp_path, closed, None)
    assert judged["failures"] == [f"{HOOK[:300]} [executor log not read]"]


def test_the_logs_are_read_with_the_clusters_auth(tmp_path: Path, node_manager: str) -> None:
    """A NodeManager behind simple auth answers 401 to a bare GET: read as submit reads them,
    with the YARN cluster's client (cobell's settings: auth simple, rm_user), the outside kill
    is judged; without a client (cluster none), unread."""
    _NodeManager.user = "alice"
    assert log_fetch(NoCluster()) is None
    assert _judged(tmp_path, node_manager, TERM_STDOUT)["failure_reason"] == "memory"
    settings = config.load({"cluster": "yarn", "rm_url": ["http://127.0.0.1:9"],
                            "auth": "simple", "rm_user": "alice"})
    cluster = connect(settings, env={}, yarn_conf_default=Path("/nonexistent"))
    judged = _judged(tmp_path, node_manager, TERM_STDOUT, fetch=log_fetch(cluster))
    assert "failure_reason" not in judged and judged["failures"] == []
    assert any("user.name=alice" in path for path in _NodeManager.asked)
