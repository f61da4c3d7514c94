"""Spark standalone through the master's web UI JSON (`http://master:8080/json/`).

Rules:

- Scale-out of an app = cores granted (`cores`) divided by `cores_per_executor` (default 1,
  which is how `cobell submit` runs standalone jobs: N executors of one core each). A master
  reports cores, not executors, so with the default the number is the cores granted. A
  completed app still reports the cores it held (seen on Spark 4.3), so a co-runner that
  finished during our run keeps its scale-out; 0 there means unknown.
- Times: `starttime` is epoch ms; `duration` is ms (for an active app the master computes it
  up to now). A completed app finished at starttime + duration.
- `running_apps()` returns active apps in state RUNNING; WAITING apps hold no executors yet
  (like YARN's ACCEPTED) and do not interfere. The master reports no progress: None.
- Several master URLs (standalone HA through ZooKeeper) may be given comma-separated; the
  one whose `status` is ALIVE answers, a STANDBY master is skipped.
- Time: each public method is one cluster query within `cluster_budget_s` (JsonClient);
  `query()` opens one around several calls, and its Deadline says how much is left.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from cobell_cli.cluster.fields import app_identity
from cobell_cli.cluster.fields import epoch_ms_to_s as _epoch_s
from cobell_cli.cluster.fields import number_or_none as _number
from cobell_cli.cluster.fields import text_or_none as _text
from cobell_cli.cluster.http import Answer, Deadline, JsonClient, normalize_url
from cobell_cli.cluster.jobs import map_job
from cobell_cli.core.running import RunningApp
from cobell_cli.errors import ClusterError

FINISHED_STATES = ("FINISHED", "FAILED", "KILLED")


def parse_app(
    raw: Mapping[str, Any],
    known_jobs: Iterable[str] = (),
    patterns: Mapping[str, Any] | None = None,
    *,
    completed: bool,
    cores_per_executor: int = 1,
) -> RunningApp | None:
    """One app of the master's activeapps/completedapps list; None without an id."""
    identity = app_identity(raw)
    if identity is None:
        return None
    app_id, name, state = identity
    started_at = _epoch_s(raw.get("starttime"))
    duration_ms = _number(raw.get("duration"))
    finished_at = None
    if completed and started_at is not None and duration_ms is not None and duration_ms >= 0:
        finished_at = started_at + duration_ms / 1000.0
    cores = _number(raw.get("cores"))
    scale_out = None
    if cores is not None and (cores > 0 or not completed):
        scale_out = int(cores) // max(1, cores_per_executor)
    return RunningApp(
        app_id=app_id,
        name=name,
        job=map_job(name, (), known_jobs, patterns),
        user=_text(raw.get("user")),
        queue=None,
        state=state,
        started_at=started_at,
        finished_at=finished_at,
        scale_out=scale_out,
        progress=None,
        tags=(),
        backend="standalone",
    )


def _reject_standby(answer: Answer) -> str | None:
    data = answer.data
    status = _text(data.get("status")) if isinstance(data, Mapping) else None
    if status is not None and status.upper() != "ALIVE":
        return f"master status {status}"
    return None


class StandaloneCluster:
    """Co-runners from a Spark standalone master."""

    name = "standalone"

    def __init__(
        self,
        master_urls: Sequence[str],
        client: JsonClient,
        *,
        known_jobs: Iterable[str] = (),
        patterns: Mapping[str, Any] | None = None,
        cores_per_executor: int = 1,
        source: str = "standalone_url",
    ) -> None:
        self.master_urls = [normalize_url(u) for u in master_urls]
        self.source = source
        self.client = client
        self.known_jobs = list(known_jobs)
        self.patterns = dict(patterns or {})
        self.cores_per_executor = cores_per_executor
        self.answered_url: str | None = None
        self.status: str | None = None
        self._last: Answer | None = None

    def query(self) -> AbstractContextManager[Deadline]:
        """One cluster query around several calls: they share one budget."""
        return self.client.query()

    def _state(self, *, configured_order: bool = False) -> tuple[Answer, Mapping[str, Any]]:
        bases = list(self.master_urls)
        if self.answered_url in bases and not configured_order:
            bases.remove(self.answered_url)
            bases.insert(0, self.answered_url)
        answer = self.client.get(bases, "/json/", accept=_reject_standby)
        assert answer is not None
        data = answer.data
        if not isinstance(data, Mapping) or not ("activeapps" in data or "completedapps" in data):
            raise ClusterError(
                f"the Spark master at {answer.base_url} answered JSON without activeapps or "
                "completedapps",
                hint="check that the URL is the master's web UI (port 8080), not a worker's",
            )
        self.answered_url = answer.base_url
        self.status = _text(data.get("status"))
        self._last = answer
        return answer, data

    def _parse(self, items: Any, *, completed: bool) -> list[RunningApp]:
        if not isinstance(items, list):
            return []
        parsed = (
            parse_app(
                item,
                self.known_jobs,
                self.patterns,
                completed=completed,
                cores_per_executor=self.cores_per_executor,
            )
            for item in items
        )
        return [a for a in parsed if a is not None]

    def running_apps(self) -> list[RunningApp]:
        _, data = self._state()
        return [
            a for a in self._parse(data.get("activeapps"), completed=False) if a.state == "RUNNING"
        ]

    def apps_finished_since(self, since: float) -> list[RunningApp]:
        _, data = self._state()
        return [
            a
            for a in self._parse(data.get("completedapps"), completed=True)
            if a.finished_at is not None and a.finished_at >= since
        ]

    def app(self, app_id: str) -> RunningApp | None:
        _, data = self._state()
        for key, completed in (("activeapps", False), ("completedapps", True)):
            for found in self._parse(data.get(key), completed=completed):
                if found.app_id == app_id:
                    return found
        return None

    def check(self) -> dict[str, Any]:
        """Ask the masters in configured order, so the report shows standbys and dead ones."""
        answer, data = self._state(configured_order=True)
        return {
            "backend": "standalone",
            "url": answer.base_url,
            "asked": answer.asked_url,
            "redirected": answer.redirected,
            "configured": list(self.master_urls),
            "source": self.source,
            "ha_state": self.status,
            "skipped": [{"url": u, "why": why} for u, why in answer.skipped],
            "auth": self.client.auth,
            "latency_ms": round(answer.latency_s * 1000.0, 1),
            "master_url": _text(data.get("url")),
            "workers_alive": data.get("aliveworkers"),
            "cores": data.get("cores"),
            "cores_used": data.get("coresused"),
        }

    def describe(self) -> str:
        if self.answered_url is None:
            return f"spark standalone master {', '.join(self.master_urls)} (not contacted yet)"
        status = f" ({self.status.lower()})" if self.status else ""
        return f"spark standalone master {self.answered_url}{status}"
