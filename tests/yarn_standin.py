"""A stand-in YARN ResourceManager: real HTTP on 127.0.0.1, the documented REST shapes.

It serves what cobell reads from a ResourceManager (Hadoop's "ResourceManager REST API"):

- ``GET /ws/v1/cluster`` and ``/ws/v1/cluster/info``: ``{"clusterInfo": {..., "haState"}}``,
  answered even by a standby (as real RMs do);
- ``GET /ws/v1/cluster/metrics``;
- ``GET /ws/v1/cluster/apps`` with ``states``, ``state``, ``finishedTimeBegin/End``,
  ``startedTimeBegin/End``, ``user``, ``queue``, ``applicationTags``, ``limit``;
- ``GET /ws/v1/cluster/apps/<id>``: ``{"app": {...}}`` or a 404 ``RemoteException``;
- ``GET /ws/v1/cluster/apps/<id>/state``: ``{"state": ...}``, and ``PUT`` of
  ``{"state": "KILLED"}`` there (``yarn application -kill``): a running app ends KILLED, and
  the answer is 202 with the state it had (the kill under way), as a real RM answers; an
  ended app is left alone (200 with its state). ``kill_status = 403`` refuses every kill
  (the caller may not modify the app), and ``kills`` lists the app ids killed.

Apps live on the stand-in's own clock (``now_s``, epoch seconds, starting at
``DEFAULT_NOW_S``): an app is invisible before its start, RUNNING (or ACCEPTED) until
``start + duration`` or until it is finished explicitly, then FINISHED (FAILED/KILLED). A
running app holds ``executors + 1`` containers (the +1 is the ApplicationMaster) and reports
``progress`` = elapsed / duration in percent.

Awkward corners, switched on through attributes of ``StandinRM``:

- ``ha_state = "STANDBY"`` with ``redirect_to = <active URL>``: app requests get a 307 with
  the same path and query on the active RM; without ``redirect_to`` a 503;
- ``apps_shape``: ``"null"`` -> ``{"apps":null}``, ``"empty"`` -> ``{"apps":{}}``,
  ``"app_null"`` -> ``{"apps":{"app":null}}``, ``"app_empty"`` -> ``{"apps":{"app":[]}}``,
  ``"single"`` -> one object instead of a list,
  ``"not_object"`` -> ``{"apps":[]}``; ``raw_apps`` (bytes) is served verbatim;
- ``acl_hidden=True`` on an app: usage fields -1, progress null, tags missing, "N/A" texts;
- the documents have the real shapes, checked against a real ResourceManager's answers
  (Hadoop 3.5.0, tests/data/yarn/real/, tests/test_yarn_standin_real.py): the same keys with
  the same JSON types, queues by their full path (``root.default``), no match as
  ``{"apps":{}}``; where the stand-in knowingly differs: a running app's ``progress`` is
  elapsed / duration (a real Spark ApplicationMaster reports 10 % until it ends);
- finished apps: ``allocatedMB``, ``allocatedVCores``, ``runningContainers``, ``reservedMB``
  and ``reservedVCores`` are -1, ``vcoreSeconds``/``memorySeconds`` (and the same numbers in
  ``resourceSecondsMap``) are what the app's ``executors + 1`` containers of ``vcores`` vcores
  used; ``usage = "classic"`` leaves out ``resourceSecondsMap`` (RMs before Hadoop 3),
  ``usage = "map_only"`` sends only that;
  ``max_completed = n`` keeps only the n most recently finished apps, as
  ``yarn.resourcemanager.max-completed-applications`` does; ``limit`` cuts the list in an
  order that is NOT by time (a real RM walks a hash map), so clients must page by
  ``finishedTimeBegin``/``finishedTimeEnd`` windows;
- ``timeline = True`` also serves the Timeline Server v1 (``/ws/v1/applicationhistory/apps/
  <id>/appattempts`` and ``.../appattempts/<attempt>/containers``) for finished apps: the AM
  container (``..._000001``) for the app's whole life, the executors from 2 s after its start,
  the first ceil(n/2) until its end and the others only until half-way (dynamic allocation
  giving executors back), so the peak is ``executors`` and the mean lower;
- ``fail_next = n`` (next n requests answer 500), ``fail_status`` (the code used),
  ``garbage = True`` (an HTML page with status 200), ``delay_s`` (sleep before answering:
  a slow RM), ``require_user = True`` (401 without ``user.name``);
- faults that cost time: ``hang = True`` (the connection is accepted and never answered,
  until the stand-in stops), ``trickle = "body"`` (the headers at once, then the body one
  byte every ``trickle_every_s`` seconds, default 1) or ``trickle = "all"`` (the status
  line and headers too, byte by byte);
- ``info_doc``: served verbatim (as JSON) by ``/ws/v1/cluster/info`` instead of the
  documented ``clusterInfo`` (a wrong shape, for ``cobell cluster check``);
- ``dead_url()``: a loopback URL on which nothing listens (a dead RM).

The web application proxy, as a real RM runs it (``/proxy/<app-id>/...``):

- ``proxy_targets[app_id] = <url>``: requests under ``/proxy/<app-id>/`` are forwarded to
  that URL (a real Spark driver's web UI) with the rest of the path and the query, and its
  answer (status, content type, body) is passed back; an app whose target is not set answers
  what a non-Spark ApplicationMaster's web UI would (an HTML page, status 200); an unknown or
  finished app answers 404 (a real RM sends finished apps to their history, which a live
  progress read cannot use either). ``proxy_timeout_s`` bounds the forwarding (like the
  proxy's own connection timeout); a target that does not answer in time gives a 502.

Test-only endpoints, so that other tests (e.g. a fake ``spark-submit`` in the ``cobell
submit`` tests) can make apps appear on the cluster over plain HTTP:

- ``POST /_standin/apps`` with JSON ``{"name": str, "user"?: str, "queue"?: str,
  "tags"?: "a,b" | [..], "executors"?: int, "duration_s"?: float | null, "start_s"?: float
  (default: now), "state"?: "RUNNING" | "ACCEPTED", "acl_hidden"?: bool, "id"?: str,
  "final_state"?: "FINISHED" | "FAILED" | "KILLED", "vcores"?: int}``
  answers 201 ``{"id": "application_<clusterTs>_<seq>", "app": {...}}``;
- ``POST /_standin/apps/<id>/finish`` with ``{"state"?: "FINISHED" | "FAILED" | "KILLED"}``;
- ``POST /_standin/clock`` with ``{"now_s": t}`` or ``{"advance_s": dt}`` -> ``{"now_s": t}``;
- ``GET /_standin/requests``: every request seen so far (method, path, query).

The same operations exist in Python (``add_app``, ``finish``, ``advance``). Fixtures:
``yarn_rm`` (one active RM), ``yarn_rm_factory`` (make more, e.g. an HA pair),
``dead_rm_url``; import ``yarn_rm_fixture`` etc. into a test module (the fixture names
differ from the function names so the import does not clash with test arguments), or list
this module in the root conftest's ``pytest_plugins``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import pytest

DEFAULT_NOW_S = 1_700_000_000.0
CLUSTER_TS = 1_699_990_000_000  # the RM's start, ms; the middle part of application ids

Reply = tuple[int, dict[str, str], "bytes | Iterable[bytes]"]
RAW = 0  # a Reply status meaning: the body is the whole HTTP response, written as it comes


def _json(status: int, value: Any, headers: dict[str, str] | None = None) -> Reply:
    return (
        status,
        {"Content-Type": "application/json", **(headers or {})},
        json.dumps(value).encode(),
    )


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that gave up
            super().handle_error(request, client_address)


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 (free port) that hands requests to `handle`."""

    def __init__(
        self,
        handle: Callable[[str, str, dict[str, list[str]], bytes], Reply],
        tls: tuple[str, str] | None = None,
    ) -> None:
        """`tls` = (certificate file, key file) serves https instead of http."""

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self, method: str) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = handle(method, parts.path, parse_qs(parts.query), body)
                if isinstance(payload, bytes):
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if status != RAW:  # headers at once, then the body as it comes
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                self.wfile.flush()
                for chunk in payload:
                    self.wfile.write(chunk)
                    self.wfile.flush()
                self.close_connection = True

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

            def do_PUT(self) -> None:
                self._serve("PUT")

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            scheme = "https"
        self.port = self.httpd.server_address[1]
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


@dataclass
class StandinApp:
    id: str
    name: str
    user: str
    queue: str
    tags: tuple[str, ...]
    executors: int
    start_ms: int
    duration_ms: int | None
    accepted: bool = False
    acl_hidden: bool = False
    finished_ms: int | None = None
    final_state: str = "FINISHED"
    app_type: str = "SPARK"
    vcores: int = 1  # vcores of each container (the AM's too)


@dataclass
class StandinRM:
    """The stand-in's state; every attribute is a switch a test may flip (module doc)."""

    now_s: float = DEFAULT_NOW_S
    ha_state: str = "ACTIVE"
    redirect_to: str | None = None
    apps_shape: str = "normal"
    raw_apps: bytes | None = None
    fail_next: int = 0
    fail_status: int = 500
    garbage: bool = False
    delay_s: float = 0.0
    require_user: bool = False
    hang: bool = False
    trickle: str | None = None
    trickle_every_s: float = 1.0
    info_doc: Any = None
    usage: str = "map"
    timeline: bool = False
    max_completed: int | None = None
    kill_status: int | None = None  # answer every kill with this status (403: forbidden)
    kills: list[str] = field(default_factory=list)  # app ids killed through the REST API
    apps: dict[str, StandinApp] = field(default_factory=dict)
    proxy_targets: dict[str, str] = field(default_factory=dict)  # app id -> its AM web UI
    proxy_timeout_s: float = 60.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""
    _seq: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _released: threading.Event = field(default_factory=threading.Event)

    # -- Python API ---------------------------------------------------------------------
    def add_app(
        self,
        name: str,
        *,
        user: str = "alice",
        queue: str = "default",
        tags: str | list[str] | tuple[str, ...] = (),
        executors: int = 4,
        duration_s: float | None = 600.0,
        start_s: float | None = None,
        state: str = "RUNNING",
        acl_hidden: bool = False,
        app_id: str | None = None,
        final_state: str = "FINISHED",
        vcores: int = 1,
        app_type: str = "SPARK",
    ) -> str:
        """An app starting at `start_s` (default now); with a duration it ends by itself, as
        `final_state` (FINISHED, FAILED or KILLED)."""
        with self._lock:
            self._seq += 1
            app_id = app_id or f"application_{CLUSTER_TS}_{self._seq:04d}"
            tag_list = tags.split(",") if isinstance(tags, str) else list(tags)
            start = self.now_s if start_s is None else start_s
            self.apps[app_id] = StandinApp(
                id=app_id,
                name=name,
                user=user,
                queue=queue,
                # YARN lower-cases application tags; so does the stand-in.
                tags=tuple(t.strip().lower() for t in tag_list if t.strip()),
                executors=int(executors),
                start_ms=int(start * 1000),
                duration_ms=None if duration_s is None else int(duration_s * 1000),
                accepted=state.upper() == "ACCEPTED",
                acl_hidden=acl_hidden,
                final_state=final_state.upper(),
                vcores=int(vcores),
                app_type=app_type,
            )
            return app_id

    def finish(self, app_id: str, state: str = "FINISHED") -> None:
        with self._lock:
            app = self.apps[app_id]
            app.finished_ms = int(self.now_s * 1000)
            app.final_state = state.upper()

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now_s += seconds

    # -- rendering ----------------------------------------------------------------------
    def render(self, app: StandinApp) -> dict[str, Any] | None:
        """The app as the RM would list it now, or None before it was submitted."""
        now_ms = int(self.now_s * 1000)
        if now_ms < app.start_ms:
            return None
        end_ms = app.finished_ms
        state, final = ("ACCEPTED" if app.accepted else "RUNNING"), "UNDEFINED"
        natural_end = None if app.duration_ms is None else app.start_ms + app.duration_ms
        ends_by_itself = natural_end is not None and not app.accepted and now_ms >= natural_end
        if end_ms is None and ends_by_itself:
            end_ms = natural_end
        if end_ms is not None and now_ms >= end_ms:
            state = app.final_state
            final = {"FINISHED": "SUCCEEDED", "FAILED": "FAILED", "KILLED": "KILLED"}[state]
        running = state == "RUNNING"
        elapsed = (end_ms if end_ms is not None and not running else now_ms) - app.start_ms
        if state in {"FINISHED", "KILLED"}:  # a real RM reports a killed app at 100 % too
            progress = 100.0
        elif running and app.duration_ms:
            progress = round(min(99.9, 100.0 * elapsed / app.duration_ms), 1)
        else:
            progress = 0.0
        containers = app.executors + 1 if running else -1  # -1: a finished app holds none
        used_s = (app.executors + 1) * app.vcores * elapsed // 1000  # YARN: integer seconds
        doc: dict[str, Any] = {
            "id": app.id,
            "user": app.user,
            "name": app.name,
            "queue": app.queue if app.queue.startswith("root.") else f"root.{app.queue}",
            "state": state,
            "finalStatus": final,
            "progress": progress,
            "trackingUI": "ApplicationMaster" if running else "History",
            "trackingUrl": f"{self.url}/proxy/{app.id}/",
            "diagnostics": "",
            "clusterId": CLUSTER_TS,
            "applicationType": app.app_type,
            "applicationTags": ",".join(app.tags),
            "priority": 0,
            "startedTime": app.start_ms,
            "launchTime": app.start_ms,
            "finishedTime": end_ms if not running and end_ms is not None else 0,
            "elapsedTime": elapsed,
            "amContainerLogs": "http://nm1.example:8042/node/containerlogs/container_1/x",
            "amHostHttpAddress": "nm1.example:8042",
            "allocatedMB": containers * 2048 if running else -1,
            "allocatedVCores": containers * app.vcores if running else -1,
            "runningContainers": containers,
            "memorySeconds": (app.executors + 1) * 2048 * elapsed // 1000,
            "vcoreSeconds": used_s,
            "preemptedMemorySeconds": 0,
            "preemptedVcoreSeconds": 0,
            "reservedMB": 0 if running else -1,
            "reservedVCores": 0 if running else -1,
            "queueUsagePercentage": 0.0,
            "clusterUsagePercentage": 0.0,
            "preemptedResourceMB": 0,
            "preemptedResourceVCores": 0,
            "numNonAMContainerPreempted": 0,
            "numAMContainerPreempted": 0,
            "logAggregationStatus": "DISABLED",
            "unmanagedApplication": False,
            "appNodeLabelExpression": "",  # documented; a real 3.5 RM leaves it out when unset
            "amNodeLabelExpression": "",
            "masterNodeId": "nm1.example:45454",
            "timeouts": {
                "timeout": [
                    {"type": "LIFETIME", "expiryTime": "UNLIMITED", "remainingTimeInSeconds": -1}
                ]
            },
        }
        if running:  # the scheduler's view of a live app, per partition
            used = {"memory": max(doc["allocatedMB"], 0), "vCores": max(containers, 0)}
            doc["resourceInfo"] = {
                "resourceUsagesByPartition": [{"partitionName": "", "used": used}]
            }
        if self.usage in {"map", "map_only"}:
            doc["resourceSecondsMap"] = {
                "entry": [
                    {"key": "memory-mb", "value": doc["memorySeconds"]},
                    {"key": "vcores", "value": doc["vcoreSeconds"]},
                ]
            }
            if self.usage == "map_only":
                del doc["memorySeconds"], doc["vcoreSeconds"]
        if app.acl_hidden:  # what a user without VIEW_APP rights sees
            for key in ("allocatedMB", "allocatedVCores", "runningContainers"):
                doc[key] = -1
            doc["memorySeconds"] = doc["vcoreSeconds"] = -1
            doc.pop("resourceSecondsMap", None)
            doc["progress"] = None
            doc["diagnostics"] = doc["trackingUrl"] = "N/A"
            doc["amContainerLogs"] = doc["amHostHttpAddress"] = "N/A"
            del doc["applicationTags"]
        return doc

    def release(self) -> None:
        """End every hanging or trickling answer (the stand-in is stopping)."""
        self._released.set()

    def cluster_info(self) -> Any:
        if self.info_doc is not None:
            return self.info_doc
        return {
            "clusterInfo": {
                "id": CLUSTER_TS,
                "startedOn": CLUSTER_TS,
                "state": "STARTED",
                "haState": self.ha_state,
                "rmStateStoreName": "org.apache.hadoop.yarn.server.resourcemanager.recovery."
                "NullRMStateStore",
                "resourceManagerVersion": "3.3.6-standin",
                "resourceManagerBuildVersion": "3.3.6-standin",
                "resourceManagerVersionBuiltOn": "2023-06-18T08:22Z",
                "hadoopVersion": "3.3.6-standin",
                "hadoopBuildVersion": "3.3.6-standin",
                "hadoopVersionBuiltOn": "2023-06-18T08:22Z",
                "haZooKeeperConnectionState": "CONNECTED",
            }
        }

    # -- HTTP ---------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> Reply:
        with self._lock:
            self.requests.append({"method": method, "path": path, "query": query})
        if path.startswith("/_standin/"):
            return self._control(method, path, body)
        if path.startswith("/proxy/"):
            return self._proxy(path, query)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.hang:
            self._released.wait()
            return 503, {}, b""
        if self.trickle:
            return self._trickled(self._answer(method, path, query, body))
        return self._answer(method, path, query, body)

    def _trickled(self, reply: Reply) -> Reply:
        """The reply one byte at a time (module doc: ``trickle``)."""
        status, headers, payload = reply
        assert isinstance(payload, bytes)
        head = {**headers, "Content-Length": str(len(payload))}
        wire = payload
        if self.trickle == "all":
            lines = [f"HTTP/1.1 {status} Trickle"] + [f"{k}: {v}" for k, v in head.items()]
            wire = ("\r\n".join(lines) + "\r\n\r\n").encode() + payload
            status = RAW

        def drip() -> Iterator[bytes]:
            for k in range(len(wire)):
                if k and self._released.wait(self.trickle_every_s):
                    return
                yield wire[k : k + 1]

        return status, head, drip()

    def _answer(
        self, method: str, path: str, query: dict[str, list[str]], body: bytes = b""
    ) -> Reply:
        with self._lock:
            if self.fail_next > 0:
                self.fail_next -= 1
                return self.fail_status, {"Content-Type": "text/html"}, b"<html>error</html>"
        if self.garbage:
            return 200, {"Content-Type": "text/html"}, b"<html><body>Login</body></html>"
        if self.require_user and not query.get("user.name"):
            return _json(401, {"RemoteException": {"exception": "AuthenticationException"}})
        path = path.rstrip("/")
        if method != "GET" and not (method == "PUT" and path.endswith("/state")):
            return _json(405, {"RemoteException": {"exception": "MethodNotAllowed"}})
        if method == "GET" and path in {"/ws/v1/cluster", "/ws/v1/cluster/info"}:
            return _json(200, self.cluster_info())
        if self.ha_state != "ACTIVE":
            if self.redirect_to:
                qs = "&".join(f"{k}={v}" for k, vs in query.items() for v in vs)
                location = f"{self.redirect_to}{path}" + (f"?{qs}" if qs else "")
                return 307, {"Location": location}, b"This is standby RM. Redirecting."
            return 503, {"Content-Type": "text/plain"}, b"This is standby RM. No active RM."
        if self.timeline and path.startswith("/ws/v1/applicationhistory/apps/"):
            return self._timeline(path)
        if path == "/ws/v1/cluster/metrics":
            return _json(200, self._metrics())
        if path == "/ws/v1/cluster/apps":
            return self._apps(query)
        if path.startswith("/ws/v1/cluster/apps/") and path.endswith("/state"):
            return self._app_state(method, path.split("/")[-2], body)
        if path.startswith("/ws/v1/cluster/apps/"):
            app_id = path.rsplit("/", 1)[1]
            with self._lock:
                app = self.apps.get(app_id)
                doc = self.render(app) if app else None
            if doc is None:
                return _json(
                    404,
                    {
                        "RemoteException": {
                            "exception": "NotFoundException",
                            "message": f"app with id: {app_id} not found",
                            "javaClassName": "org.apache.hadoop.yarn.webapp.NotFoundException",
                        }
                    },
                )
            return _json(200, {"app": doc})
        return _json(404, {"RemoteException": {"exception": "NotFoundException"}})

    def _app_state(self, method: str, app_id: str, body: bytes) -> Reply:
        """An app's state, and the kill (module doc)."""
        with self._lock:
            app = self.apps.get(app_id)
            doc = self.render(app) if app else None
        if doc is None:
            return _json(404, {"RemoteException": {
                "exception": "NotFoundException",
                "message": f"app with id: {app_id} not found"}})
        if method == "GET":
            return _json(200, {"state": doc["state"]})
        if self.kill_status is not None:
            return _json(self.kill_status, {"RemoteException": {
                "exception": "ForbiddenException",
                "message": f"User may not modify the application {app_id}"}})
        try:
            wanted = json.loads(body or b"{}").get("state")
        except (ValueError, AttributeError):
            wanted = None
        if wanted != "KILLED":
            return _json(400, {"RemoteException": {"exception": "BadRequestException"}})
        if doc["state"] in ("FINISHED", "FAILED", "KILLED"):
            return _json(200, {"state": doc["state"]})
        self.finish(app_id, "KILLED")
        with self._lock:
            self.kills.append(app_id)
        return _json(202, {"state": doc["state"]})

    def _proxy(self, path: str, query: dict[str, list[str]]) -> Reply:
        """The web application proxy: forward to the app's web UI (module doc)."""
        import urllib.error
        import urllib.request
        from urllib.parse import urlencode

        app_id, _, rest = path[len("/proxy/") :].partition("/")
        with self._lock:
            app = self.apps.get(app_id)
            doc = self.render(app) if app else None
            target = self.proxy_targets.get(app_id)
        if doc is None or doc["state"] != "RUNNING":
            return 404, {"Content-Type": "text/html"}, b"<html>Application not found</html>"
        if target is None:  # e.g. a MapReduce AM: its web UI answers HTML to anything
            return 200, {"Content-Type": "text/html"}, b"<html><body>MapReduce Job</body></html>"
        qs = urlencode([(k, v) for k, vs in query.items() for v in vs])
        url = f"{target.rstrip('/')}/{rest}" + (f"?{qs}" if qs else "")
        try:
            with urllib.request.urlopen(url, timeout=self.proxy_timeout_s) as resp:
                kind = resp.headers.get("Content-Type", "application/octet-stream")
                return resp.status, {"Content-Type": kind}, resp.read()
        except urllib.error.HTTPError as exc:
            kind = exc.headers.get("Content-Type", "text/html") if exc.headers else "text/html"
            return exc.code, {"Content-Type": kind}, exc.read()
        except (urllib.error.URLError, OSError) as exc:
            return 502, {"Content-Type": "text/plain"}, f"proxy error: {exc}".encode()

    def _visible(self) -> list[dict[str, Any]]:
        with self._lock:
            docs = [self.render(a) for a in self.apps.values()]
        visible = [d for d in docs if d is not None]
        if self.max_completed is not None:  # the RM forgets its oldest finished apps
            done = sorted((d for d in visible if d["finishedTime"]), key=_finished_key)
            forgotten = {d["id"] for d in done[: max(len(done) - self.max_completed, 0)]}
            visible = [d for d in visible if d["id"] not in forgotten]
        return visible

    def _apps(self, query: dict[str, list[str]]) -> Reply:
        if self.raw_apps is not None:
            return 200, {"Content-Type": "application/json"}, self.raw_apps
        shapes: dict[str, Any] = {
            "null": {"apps": None},
            "empty": {"apps": {}},
            "app_null": {"apps": {"app": None}},
            "app_empty": {"apps": {"app": []}},
            "not_object": {"apps": []},
        }
        if self.apps_shape in shapes:
            return _json(200, shapes[self.apps_shape])
        first = {k: v[0] for k, v in query.items()}
        states = {s.strip().upper() for s in first.get("states", first.get("state", "")).split(",")}
        states.discard("")
        tags = {t.strip().lower() for t in first.get("applicationTags", "").split(",") if t}
        docs = []
        for doc in self._visible():
            if states and doc["state"] not in states:
                continue
            if "user" in first and doc["user"] != first["user"]:
                continue
            if "queue" in first and doc["queue"] not in {first["queue"], f"root.{first['queue']}"}:
                continue
            if tags and not tags & set(doc.get("applicationTags", "").split(",")):
                continue
            if not _in_range(doc["startedTime"], first, "startedTime"):
                continue
            if ("finishedTimeBegin" in first or "finishedTimeEnd" in first) and not doc[
                "finishedTime"
            ]:
                continue
            if not _in_range(doc["finishedTime"], first, "finishedTime"):
                continue
            docs.append(doc)
        if "limit" in first:  # in hash order, not by time, as a real RM cuts its list
            docs.sort(key=lambda d: hash_order(d["id"]))
            docs = docs[: int(first["limit"])]
        if not docs:
            return _json(200, {"apps": {}})  # what a real RM answers for "no match"
        if self.apps_shape == "single":
            return _json(200, {"apps": {"app": docs[0]}})
        return _json(200, {"apps": {"app": docs}})

    def _timeline(self, path: str) -> Reply:
        parts = path.split("/")  # ['', ws, v1, applicationhistory, apps, <id>, appattempts, ...]
        app_id = parts[5] if len(parts) > 5 else ""
        with self._lock:
            app = self.apps.get(app_id)
            doc = self.render(app) if app else None
        if app is None or doc is None or not doc["finishedTime"]:
            return _json(404, {"RemoteException": {"exception": "NotFoundException"}})
        seq = app_id.rsplit("_", 1)[1]
        attempt = f"appattempt_{CLUSTER_TS}_{seq}_000001"
        if len(parts) == 7:
            return _json(200, {"appAttempt": [{"appAttemptId": attempt, "host": "nm1.example"}]})
        if len(parts) == 9 and parts[8] == "containers":
            return _json(200, {"container": self._containers(app, doc)})
        return _json(404, {"RemoteException": {"exception": "NotFoundException"}})

    def _containers(self, app: StandinApp, doc: dict[str, Any]) -> list[dict[str, Any]]:
        start, end = doc["startedTime"], doc["finishedTime"]
        seq = app.id.rsplit("_", 1)[1]
        keep = -(-app.executors // 2)
        out = []
        for k in range(app.executors + 1):
            begin = start if k == 0 else start + 2000
            finish = end if k <= keep else (start + end) // 2
            out.append(
                {
                    "containerId": f"container_{CLUSTER_TS}_{seq}_01_{k + 1:06d}",
                    "allocatedMB": 2048,
                    "allocatedVCores": app.vcores,
                    "startedTime": begin,
                    "finishedTime": finish,
                    "elapsedTime": finish - begin,
                    "containerState": "COMPLETE",
                }
            )
        return out

    def _metrics(self) -> dict[str, Any]:
        docs = self._visible()
        running = [d for d in docs if d["state"] == "RUNNING"]
        return {
            "clusterMetrics": {
                "appsSubmitted": len(docs),
                "appsCompleted": sum(d["state"] == "FINISHED" for d in docs),
                "appsPending": sum(d["state"] == "ACCEPTED" for d in docs),
                "appsRunning": len(running),
                "appsFailed": sum(d["state"] == "FAILED" for d in docs),
                "appsKilled": sum(d["state"] == "KILLED" for d in docs),
                "containersAllocated": sum(max(d["runningContainers"], 0) for d in running),
                "totalVirtualCores": 64,
                "totalMB": 262144,
                "activeNodes": 8,
            }
        }

    def _control(self, method: str, path: str, body: bytes) -> Reply:
        if method == "GET" and path == "/_standin/requests":
            with self._lock:
                return _json(200, list(self.requests))
        if method != "POST":
            return _json(405, {"error": "POST only"})
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return _json(400, {"error": "body is not JSON"})
        if path == "/_standin/apps":
            if not isinstance(payload, dict) or not payload.get("name"):
                return _json(400, {"error": "a JSON object with 'name' is required"})
            app_id = self.add_app(
                str(payload["name"]),
                user=str(payload.get("user", "alice")),
                queue=str(payload.get("queue", "default")),
                tags=payload.get("tags", ()),
                executors=int(payload.get("executors", 4)),
                duration_s=payload.get("duration_s", 600.0),
                start_s=payload.get("start_s"),
                state=str(payload.get("state", "RUNNING")),
                acl_hidden=bool(payload.get("acl_hidden", False)),
                app_id=payload.get("id"),
                final_state=str(payload.get("final_state", "FINISHED")),
                vcores=int(payload.get("vcores", 1)),
            )
            with self._lock:
                doc = self.render(self.apps[app_id])
            return _json(201, {"id": app_id, "app": doc})
        if path.startswith("/_standin/apps/") and path.endswith("/finish"):
            app_id = path[len("/_standin/apps/") : -len("/finish")]
            if app_id not in self.apps:
                return _json(404, {"error": f"no app {app_id}"})
            self.finish(app_id, str(payload.get("state", "FINISHED")))
            return _json(200, {"id": app_id})
        if path == "/_standin/clock":
            if "now_s" in payload:
                with self._lock:
                    self.now_s = float(payload["now_s"])
            else:
                self.advance(float(payload.get("advance_s", 0.0)))
            return _json(200, {"now_s": self.now_s})
        return _json(404, {"error": f"unknown stand-in endpoint {path}"})


def _finished_key(doc: dict[str, Any]) -> tuple[int, str]:
    return (doc["finishedTime"], doc["id"])


def hash_order(app_id: str) -> int:
    """A stable order unrelated to time (what a hash map's iteration looks like)."""
    import zlib

    return zlib.crc32(app_id.encode())


def _in_range(value: int, query: dict[str, str], prefix: str) -> bool:
    begin, end = query.get(f"{prefix}Begin"), query.get(f"{prefix}End")
    if begin is not None and value < int(begin):
        return False
    return not (end is not None and value > int(end))


@contextmanager
def running_standin(tls: tuple[str, str] | None = None, **switches: Any) -> Iterator[StandinRM]:
    """A StandinRM served on a free loopback port for the duration of the block."""
    with serving(StandinRM(**switches), tls) as rm:
        yield rm


R = TypeVar("R", bound=StandinRM)


@contextmanager
def serving(rm: R, tls: tuple[str, str] | None = None) -> Iterator[R]:
    """`rm` (a StandinRM or a subclass) served on a free loopback port for the block."""
    server = LoopbackServer(rm.handle, tls=tls)
    rm.url = server.url
    server.start()
    try:
        yield rm
    finally:
        rm.release()
        server.stop()


def dead_url() -> str:
    """A loopback URL with nothing listening: bind a free port, then close it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture(name="yarn_rm")
def yarn_rm_fixture() -> Iterator[StandinRM]:
    """One active stand-in RM on loopback."""
    with running_standin() as rm:
        yield rm


@pytest.fixture(name="yarn_rm_factory")
def yarn_rm_factory_fixture() -> Iterator[Callable[..., StandinRM]]:
    """Start more stand-in RMs (an HA pair, a slow one, ...); all stop after the test."""
    stack: list[Any] = []

    def make(**switches: Any) -> StandinRM:
        ctx = running_standin(**switches)
        rm = ctx.__enter__()
        stack.append(ctx)
        return rm

    yield make
    for ctx in reversed(stack):
        ctx.__exit__(None, None, None)


@pytest.fixture(name="self_signed")
def self_signed_fixture(tmp_path: Path) -> tuple[str, str]:
    """A real self-signed certificate for 127.0.0.1, made by the openssl command."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed, so no certificate can be made")
    cert, key = tmp_path / "rm.pem", tmp_path / "rm.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return str(cert), str(key)


@pytest.fixture(name="dead_rm_url")
def dead_rm_url_fixture() -> str:
    return dead_url()
