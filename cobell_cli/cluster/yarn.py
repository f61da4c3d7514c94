"""YARN through the ResourceManager REST API (`/ws/v1/cluster/...`).

Rules, in one place because the planner's numbers depend on them:

- Scale-out of an app = `runningContainers - 1`: one container is the ApplicationMaster
  (the Spark driver in cluster mode, the launcher in client mode), the rest are executors.
  Clamped at 0. When ACLs hide the usage report YARN sends -1 (or null, or nothing); a
  RUNNING app always holds at least its AM container, so 0 is read as hidden too. Hidden
  means None, never a guessed number. Finished apps hold no containers: scale-out None.
- Progress: YARN's `progress` is a percentage 0..100, returned as a fraction 0..1; values
  outside that range or non-numeric are None.
- Times: YARN sends epoch milliseconds; records carry epoch seconds. `finishedTime` 0 means
  "not finished"; `startedTime` 0 or -1 means hidden/unknown (None).
- Text fields hidden by ACLs ("N/A", "", null, missing) become None; a missing name is "".
- `running_apps()` asks for `states=RUNNING` only: an ACCEPTED app holds no executors yet,
  so it does not interfere now; it shows up once it runs. `accepted_apps()` lists those
  waiting in their queue (a deadline counts the wait behind them).
- `apps_finished_since(t)` asks for `states=FINISHED,FAILED,KILLED&finishedTimeBegin=<ms>`.
- Every documented shape of the apps list parses: `{"apps":{"app":[...]}}`, `{"apps":null}`,
  `{"apps":{}}`, `{"apps":{"app":null}}`; anything else is a ClusterError naming the RM.

HA: with several RM URLs, the active one is found through `/ws/v1/cluster/info` (`haState`);
a standby that answers with a 307 redirect is followed. A standby answers `info` itself (the
RM's web filter does not redirect it) but redirects every other REST path to the active RM
(Hadoop "ResourceManager High Availability", Web Services), so when no configured RM is
active, the one a standby redirects `/ws/v1/cluster/metrics` to is asked: a list holding
only a standby works. Later requests go to the RM that answered first, then to the others.
An `info` answer that is not `{"clusterInfo": {...}}` is a ClusterError naming the URL: it
is not a ResourceManager.

Time: each public method is one cluster query (JsonClient.query): the HA lookup, retries,
redirects and body reads of it share one budget (`cluster_budget_s`); `query()` opens one
around several calls, and its Deadline says how much is left.

Kill: `kill(app_id)` is `yarn application -kill` through the REST API (`PUT
/ws/v1/cluster/apps/<id>/state` with `{"state": "KILLED"}`, as the configured user: simple
auth's user.name, or Kerberos/SPNEGO), then the app's state (`GET .../state`) until it is
final, within the same one budget. The RM answers 202 while the kill is under way and 200
once the app has ended; an app that had ended already is left as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from cobell_cli.cluster.fields import app_identity
from cobell_cli.cluster.fields import epoch_ms_to_s as _epoch_s
from cobell_cli.cluster.fields import number_or_none as _number
from cobell_cli.cluster.fields import text_or_none as _text
from cobell_cli.cluster.http import Answer, Deadline, JsonClient, normalize_url
from cobell_cli.cluster.jobs import map_job, split_tags
from cobell_cli.core.running import RunningApp
from cobell_cli.errors import ClusterError, UsageError

API = "/ws/v1/cluster"
REDIRECT_PROBE = f"{API}/metrics"  # a path a standby redirects to the active RM (module doc)
INFO_KEYS = ("id", "state", "haState", "resourceManagerVersion", "startedOn")
FINISHED_STATES = ("FINISHED", "FAILED", "KILLED")
LOOPBACK = ("127.0.0.1", "localhost", "::1")
KILL_POLL_S = 0.25  # between looks at a killed app's state while the RM ends it
_APP_ID = re.compile(r"^application_\d+_\d+$")


class ShapeError(ValueError):
    """The RM answered JSON that is not any documented shape."""


def scale_out_from_containers(running_containers: Any, state: str) -> int | None:
    """Executors of a YARN app: running containers minus the ApplicationMaster (module doc)."""
    count = _number(running_containers)
    if count is None or count < 0 or state != "RUNNING" or count == 0:
        return None
    return max(int(count) - 1, 0)


AM_CONTAINERS = 1


def vcore_seconds(raw: Mapping[str, Any]) -> float | None:
    """`vcoreSeconds`, else the `vcores` entry of `resourceSecondsMap`; None when hidden."""
    value = _number(raw.get("vcoreSeconds"))
    if value is not None and value >= 0:
        return float(value)
    entries = raw.get("resourceSecondsMap")
    if isinstance(entries, Mapping):
        entries = entries.get("entry", entries)
    if isinstance(entries, Mapping):
        entries = (
            [entries] if "key" in entries else [{"key": k, "value": v} for k, v in entries.items()]
        )
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and entry.get("key") == "vcores":
            number = _number(entry.get("value"))
            if number is not None and number >= 0:
                return float(number)
    return None


def mean_executors(vcore_s: float, elapsed_s: float, vcores_per_container: float) -> float:
    """Time-averaged executors: containers from vcore-seconds, less the ApplicationMaster."""
    containers = vcore_s / (elapsed_s * vcores_per_container)
    return max(containers - AM_CONTAINERS, 0.0)


def finished_scale_out(raw: Mapping[str, Any], state: str) -> int | None:
    """Executors of a finished app, as `history import --from-yarn` counts them: the mean
    from its vcore-seconds at one vcore per container (sources/yarn_apps.py); None while it
    runs, or where the RM hides its usage."""
    started, finished = _epoch_s(raw.get("startedTime")), _epoch_s(raw.get("finishedTime"))
    vcore_s = vcore_seconds(raw)
    if state not in FINISHED_STATES or None in (started, finished, vcore_s):
        return None
    assert started is not None and finished is not None and vcore_s is not None
    if finished <= started:
        return None
    return max(1, round(mean_executors(vcore_s, finished - started, 1.0)))


def progress_fraction(value: Any) -> float | None:
    percent = _number(value)
    if percent is None or not 0 <= percent <= 100:
        return None
    return percent / 100.0


def parse_app(
    raw: Mapping[str, Any],
    known_jobs: Iterable[str] = (),
    patterns: Mapping[str, Any] | None = None,
) -> RunningApp | None:
    """One element of the RM's `app` list as a RunningApp; None without a usable id."""
    identity = app_identity(raw)
    if identity is None:
        return None
    app_id, name, state = identity
    tags = split_tags(raw.get("applicationTags"))
    return RunningApp(
        app_id=app_id,
        name=name,
        job=map_job(name, tags, known_jobs, patterns),
        user=_text(raw.get("user")),
        queue=_text(raw.get("queue")),
        state=state,
        started_at=_epoch_s(raw.get("startedTime")),
        finished_at=_epoch_s(raw.get("finishedTime")),
        scale_out=scale_out_from_containers(raw.get("runningContainers"), state)
        or finished_scale_out(raw, state),
        progress=progress_fraction(raw.get("progress")),
        tags=tags,
        backend="yarn",
        ui_url=_text(raw.get("trackingUrl")),
        node_label=node_label_of(tags, raw),
    )


LABEL_TAG_PREFIX = "cobell-label:"


def node_label_of(tags: Sequence[str], raw: Mapping[str, Any]) -> str | None:
    """Where the app's executors run: the `cobell-label:` tag cobell adds when it injects a
    label (Spark sets the executors' label on their container requests, which the app record
    does not show), else the app's own node-label expression (MapReduce, Tez); None: the
    default partition."""
    for tag in tags:
        if tag.startswith(LABEL_TAG_PREFIX):
            return tag[len(LABEL_TAG_PREFIX):]
    return _text(raw.get("appNodeLabelExpression"))


def parse_apps(
    doc: Any,
    known_jobs: Iterable[str] = (),
    patterns: Mapping[str, Any] | None = None,
) -> list[RunningApp]:
    """The RM's apps document in any documented shape (module doc); ShapeError otherwise."""
    known = list(known_jobs)
    parsed = (parse_app(item, known, patterns) for item in app_items(doc))
    return [app for app in parsed if app is not None]


def app_items(doc: Any) -> list[Any]:
    """The `app` list of an apps document in any documented shape (module doc): running
    apps and the finished ones an import pages through; ShapeError otherwise."""
    if not isinstance(doc, Mapping) or "apps" not in doc:
        raise ShapeError("expected an object with an 'apps' key")
    apps = doc["apps"]
    if apps is None:
        return []
    if not isinstance(apps, Mapping):
        raise ShapeError("'apps' is neither null nor an object")
    items = apps.get("app")
    if items is None:
        return []
    if isinstance(items, Mapping):  # a single app, as some XML-to-JSON gateways render it
        return [items]
    if not isinstance(items, list):
        raise ShapeError("'apps.app' is not a list")
    return items


def cluster_info(answer: Answer) -> Mapping[str, Any]:
    """The `clusterInfo` object of an info answer; a ClusterError for any other shape."""
    data = answer.data
    info = data.get("clusterInfo") if isinstance(data, Mapping) else None
    if not isinstance(info, Mapping) or not any(key in info for key in INFO_KEYS):
        raise ClusterError(
            f"the server at {answer.base_url} answered {API}/info with JSON that is not a "
            'ResourceManager\'s cluster info (expected {"clusterInfo": {"state": ..., ...}})',
            hint="check that the URL points at the ResourceManager web address (port 8088)",
        )
    return info


def _ha_state(answer: Answer) -> str | None:
    return _text(cluster_info(answer).get("haState"))


def _reject_standby(answer: Answer) -> str | None:
    state = _ha_state(answer)
    if state is not None and state.upper() != "ACTIVE":
        return f"HA state {state}"
    return None


def _tls(url: str, ca_bundle: str | None) -> str:
    if not url.startswith("https"):
        return "none (http)"
    return f"verified with {ca_bundle}" if ca_bundle else "verified (system CAs)"


def _check_app_id(app_id: str) -> None:
    if not _APP_ID.match(app_id):
        raise UsageError(
            f"{app_id!r} is not a YARN application id",
            hint="ids look like application_1476912658570_0002",
        )


def _state_of(doc: Any) -> str | None:
    """The `state` of an app-state document (`{"state": "KILLED"}`), upper case."""
    state = _text(doc.get("state")) if isinstance(doc, Mapping) else None
    return state.upper() if state else None


class YarnCluster:
    """Co-runners from a YARN ResourceManager (or an HA set of them)."""

    name = "yarn"

    def __init__(
        self,
        rm_urls: Sequence[str],
        client: JsonClient,
        *,
        known_jobs: Iterable[str] = (),
        patterns: Mapping[str, Any] | None = None,
        source: str = "settings",
    ) -> None:
        if not rm_urls:
            raise ClusterError("no YARN ResourceManager URL", hint=client.fix or None)
        self.rm_urls = [normalize_url(u) for u in rm_urls]
        self.client = client
        self.known_jobs = list(known_jobs)
        self.patterns = dict(patterns or {})
        self.source = source
        self.answered_url: str | None = None
        self.ha_state: str | None = None

    # -- where to ask -------------------------------------------------------------------
    def _bases(self) -> list[str]:
        if self.answered_url is None:
            return list(self.rm_urls)
        rest = [u for u in self.rm_urls if u != self.answered_url]
        return [self.answered_url, *rest]

    def query(self) -> AbstractContextManager[Deadline]:
        """One cluster query around several calls: they share one budget (module doc)."""
        return self.client.query()

    def _resolve_active(self, bases: Sequence[str] | None = None) -> Answer:
        bases = self._bases() if bases is None else bases
        answer = self.client.get(
            bases, f"{API}/info", accept=_reject_standby, redirect_probe=REDIRECT_PROBE
        )
        assert answer is not None  # missing_ok is off
        self.answered_url = answer.base_url
        state = _ha_state(answer)
        self.ha_state = state.upper() if state else None
        return answer

    def _get(self, path: str, params: Mapping[str, Any] | None = None, **kw: Any) -> Answer | None:
        with self.client.query():
            if self.answered_url is None and len(self.rm_urls) > 1:
                self._resolve_active()
            answer = self.client.get(self._bases(), path, params, **kw)
        if answer is not None:
            if answer.redirected:  # a standby sent us to the active RM
                self.ha_state = "ACTIVE"
            self.answered_url = answer.base_url
        return answer

    def _apps(self, params: Mapping[str, Any]) -> list[RunningApp]:
        answer = self._get(f"{API}/apps", params)
        assert answer is not None
        try:
            return parse_apps(answer.data, self.known_jobs, self.patterns)
        except ShapeError as exc:
            raise ClusterError(
                f"the YARN RM at {answer.base_url} answered an apps document cobell does not "
                f"understand ({exc})",
                hint="check that the URL points at the ResourceManager web address",
            ) from None

    # -- the Cluster protocol -------------------------------------------------------------
    def running_apps(self) -> list[RunningApp]:
        apps = self._apps({"states": "RUNNING"})
        return [a for a in apps if a.state == "RUNNING" and a.finished_at is None]

    def accepted_apps(self) -> list[RunningApp]:
        """Apps waiting in their queue (ACCEPTED): they hold no executors yet, but a new app
        in the same queue waits behind them (a deadline counts that wait)."""
        apps = self._apps({"states": "ACCEPTED"})
        return [a for a in apps if a.state == "ACCEPTED"]

    def apps_finished_since(self, since: float) -> list[RunningApp]:
        params = {"states": ",".join(FINISHED_STATES), "finishedTimeBegin": int(since * 1000)}
        apps = self._apps(params)
        return [a for a in apps if a.finished_at is not None and a.finished_at >= since]

    def app(self, app_id: str) -> RunningApp | None:
        _check_app_id(app_id)
        answer = self._get(f"{API}/apps/{app_id}", missing_ok=True)
        if answer is None:
            return None
        data = answer.data
        raw = data.get("app") if isinstance(data, Mapping) else None
        if not isinstance(raw, Mapping):
            raise ClusterError(
                f"the YARN RM at {answer.base_url} answered an app document without 'app'",
                hint="check that the URL points at the ResourceManager web address",
            )
        return parse_app(raw, self.known_jobs, self.patterns)

    def kill(self, app_id: str) -> str | None:
        """Kill the app and wait, within one budget, until the RM reports it ended (module
        doc, "Kill"); returns the last state the RM reported (e.g. KILLED, or RUNNING when
        the budget ran out first), None if the RM does not know the app. A ClusterError
        (unreachable, 403) means the app was not killed."""
        _check_app_id(app_id)
        path = f"{API}/apps/{app_id}/state"
        with self.client.query() as deadline:
            if self.answered_url is None and len(self.rm_urls) > 1:
                self._resolve_active()
            answer = self.client.put(self._bases(), path, {"state": "KILLED"}, missing_ok=True)
            if answer is None:
                return None
            self.answered_url = answer.base_url
            state = _state_of(answer.data)
            while state not in FINISHED_STATES and deadline.remaining_s() > 2 * KILL_POLL_S:
                self.client.pause(KILL_POLL_S)
                try:
                    state = self.app_state(app_id) or state
                except ClusterError:  # the kill was accepted: the last state stands
                    break
            return state

    def app_state(self, app_id: str) -> str | None:
        """The app's state as the RM reports it now (RUNNING, KILLED, ...); None: unknown."""
        _check_app_id(app_id)
        answer = self._get(f"{API}/apps/{app_id}/state", missing_ok=True)
        return None if answer is None else _state_of(answer.data)

    def diagnostics(self, app_id: str) -> list[str]:
        """What the RM keeps of why the app and each of its attempts ended (YARN's
        diagnostics: an AM container killed for memory, an exit code); [] if it does not
        know the app."""
        _check_app_id(app_id)
        app = self._document(f"{API}/apps/{app_id}", "app")
        attempts = self._document(f"{API}/apps/{app_id}/appattempts", "appAttempts")
        listed = (attempts or {}).get("appAttempt")
        items = [app, *(listed if isinstance(listed, list) else [])]
        return [str(item[key]) for item in items if isinstance(item, Mapping)
                for key in ("diagnostics", "diagnosticsInfo") if item.get(key)]

    def _document(self, path: str, key: str) -> Mapping[str, Any] | None:
        answer = self._get(path, missing_ok=True)
        data = answer.data if answer is not None else None
        doc = data.get(key) if isinstance(data, Mapping) else None
        return doc if isinstance(doc, Mapping) else None

    def on_this_host(self) -> bool:
        """Is every configured RM on this host's loopback (the local YARN)? Its containers,
        a cluster-mode driver's too, then run here and share its file system."""
        from urllib.parse import urlsplit

        return all(urlsplit(u).hostname in LOOPBACK for u in self.rm_urls)

    def partitions(self) -> Any:
        """The node labels, their active nodes and the queues' access (cluster/node_labels.py)."""
        from cobell_cli.cluster.node_labels import partitions

        docs = []
        for path in ("get-node-labels", "nodes", "scheduler"):
            answer = self._get(f"{API}/{path}")
            assert answer is not None
            docs.append(answer.data)
        return partitions(*docs)

    def check(self) -> dict[str, Any]:
        """Ask every configured RM in order, so the report shows the standbys and dead ones."""
        answer = self._resolve_active(self.rm_urls)
        info = cluster_info(answer)
        return {
            "backend": "yarn",
            "url": answer.base_url,
            "asked": answer.asked_url,
            "redirected": answer.redirected,
            "configured": list(self.rm_urls),
            "source": self.source,
            "ha_state": self.ha_state,
            "skipped": [{"url": u, "why": why} for u, why in answer.skipped],
            "auth": self.client.auth,
            "user": self.client.user if self.client.auth == "simple" else None,
            "tls_verify": _tls(answer.base_url, self.client.ca_bundle),
            "latency_ms": round(answer.latency_s * 1000.0, 1),
            "rm_version": _text(info.get("resourceManagerVersion")),
            "rm_state": _text(info.get("state")),
            "cluster_id": info.get("id"),
        }

    def allocation(self) -> Any:
        """The container step and maximum the RM runs with (cluster/allocation.py), else
        yarn-site.xml's, else the defaults; never raises for a conf the RM does not serve."""
        from cobell_cli.cluster.allocation import DEFAULT, allocation_of, conf_values
        from cobell_cli.cluster.yarnconf import site_allocation

        try:
            answer = self._get("/conf", {"format": "json"}, missing_ok=True)
        except ClusterError:
            answer = None
        props = conf_values(answer.data if answer is not None else None)
        return allocation_of(props, "resourcemanager") or site_allocation() or DEFAULT

    def describe(self) -> str:
        if self.answered_url is None:
            return f"yarn RM {', '.join(self.rm_urls)} (not contacted yet)"
        state = f" ({self.ha_state.lower()})" if self.ha_state else ""
        return f"yarn RM {self.answered_url}{state}"
