"""Exact containers of finished YARN apps from the Timeline Server v1 (`applicationhistory`).

Where the Application History / Timeline Server v1 runs (`yarn.timeline-service.enabled`, web
address usually :8188), it keeps every container of a finished app with its start and finish
time: `/ws/v1/applicationhistory/apps/<app>/appattempts` lists the attempts, and
`.../appattempts/<attempt>/containers` their containers. The first container of an attempt
(`..._000001`) is the ApplicationMaster; the others are the executors, so `scale_out` = the
peak number of them alive at once and `mean_scale_out` their time-weighted mean over the app's
runtime, both exact (`scale_out_how` = "containers (Timeline Server)").

A server that fails is asked no more during the import (one warning), so an unreachable one
costs one timeout; an app it does not know (404) keeps the RM's vcore-second estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote

from cobell_cli.cluster.http import normalize_url
from cobell_cli.errors import ClusterError
from cobell_cli.sources.record import ImportedApp, ImportSummary
from cobell_cli.sources.spark_history import executor_counts

API = "/ws/v1/applicationhistory"
FIX = "check --timeline-url (the Timeline Server's web address, e.g. http://ts:8188)"


class _Gone(Exception):
    """The Timeline Server does not know the app (404)."""


def _listed(data: Any, outer: str, inner: str) -> list[Mapping[str, Any]]:
    """`{"appAttempts": {"appAttempt": [...]}}` or `{"container": [...]}`: the items, or []."""
    if isinstance(data, Mapping) and outer in data:
        data = data[outer]
    if isinstance(data, Mapping):
        data = data.get(inner)
    if isinstance(data, Mapping):
        data = [data]
    return [x for x in data if isinstance(x, Mapping)] if isinstance(data, list) else []


class TimelineServer:
    """The v1 application-history REST API, through cobell's JsonClient."""

    def __init__(self, url: str, client: Any) -> None:
        self.url = normalize_url(url)
        self.client = client

    def _get(self, path: str) -> Any:
        answer = self.client.get([self.url], API + path, missing_ok=True)
        if answer is None:
            raise _Gone(path)
        return answer.data

    def containers(self, app_id: str) -> list[Mapping[str, Any]]:
        """The containers of the app's last attempt; _Gone when the server does not know it."""
        app = quote(app_id, safe="")
        attempts = _listed(self._get(f"/apps/{app}/appattempts"), "appAttempts", "appAttempt")
        if not attempts:
            return []
        last = max(attempts, key=lambda a: str(a.get("appAttemptId", "")))
        attempt = quote(str(last.get("appAttemptId", "")), safe="")
        data = self._get(f"/apps/{app}/appattempts/{attempt}/containers")
        return _listed(data, "containers", "container")


def as_executors(containers: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Containers in the shape `executor_counts` reads; the AM (`..._000001`) as the driver."""
    out = []
    for c in containers:
        cid = str(c.get("containerId", ""))
        finished = c.get("finishedTime")
        out.append(
            {
                "id": "driver" if cid.endswith("_000001") else cid,
                "addTime": c.get("startedTime"),
                "removeTime": finished if finished and finished > 0 else None,
            }
        )
    return out


def exact_containers(
    server: TimelineServer, summary: ImportSummary
) -> Callable[[ImportedApp], ImportedApp]:
    """Refine an app's estimated scale-out with its containers (module doc)."""
    failed: list[str] = []

    def refine(app: ImportedApp) -> ImportedApp:
        if failed:
            return app
        try:
            containers = server.containers(app.app_id)
        except _Gone:
            return app
        except ClusterError as exc:
            failed.append(exc.line())
            summary.warnings.append(f"estimated scale-outs kept: {exc.line()}")
            return app
        counts = executor_counts(as_executors(containers), app.started_at, app.finished_at)
        if counts is None:
            return app
        return replace(
            app,
            scale_out=counts[0],
            mean_scale_out=round(counts[1], 3),
            scale_out_how="containers (Timeline Server)",
        )

    return refine
