"""Live progress of running Spark co-runners, read from their drivers' REST API.

For each app, two GETs on the driver's web UI: `/api/v1/applications/<id>/jobs` (every job
submitted so far: its stage ids, completed/active/skipped stages and tasks) and
`/api/v1/applications/<id>/stages?status=active` (task counts of the running stages only, so
the answer stays small however long the app runs). Where the driver's UI is:

- YARN: behind the ResourceManager's web proxy, `<trackingUrl>` of the running app
  (`http://<rm>/proxy/<app-id>/`), else `<rm>/proxy/<app-id>`; with the RM client's auth
  (user.name or Kerberos) and TLS settings;
- Spark standalone: the app's own UI address. The master's JSON does not carry it; its
  application page (`/app/?appId=<id>`) links it as "Application Detail UI" (the master's
  `/proxy/<id>` when `spark.ui.reverseProxy` is on).

Read once per decision, concurrently (one daemon thread per app), within one total budget:
what has not answered when the budget is spent is abandoned. Any failure for one app (no
answer in time, refused, 404, not JSON, not the shape of Spark's answer, counts that do not
add up: a non-Spark app behind the proxy) only leaves that app without progress, so the
planner uses Algorithm 1 for it; the report says what happened.

Counting (`parse_progress`): known stages are the distinct stage ids of the submitted jobs
(a stage a later job skips because an earlier one left its output has the same id, so it
counts once); completed stages are the jobs' completed-stage counts; active stages come from
the stages answer, each at its completed tasks plus half its running ones. The first job's
submission time says when the driver's start-up ended.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urljoin

from cobell_cli.cluster.fields import number_or_none, spark_time, text_or_none
from cobell_cli.core.remaining import DriverProgress, stage_fraction
from cobell_cli.core.running import RunningApp

MAX_THREADS = 16  # co-runners read at once; more wait for a free thread within the budget
_DETAIL_UI = re.compile(r"<a\s[^>]*href=\"([^\"]+)\"[^>]*>\s*Application Detail UI\s*</a>", re.I)


class ProgressError(Exception):
    """Why one app's progress could not be read (a short phrase, shown in the report)."""


@dataclass
class ProgressReport:
    """What one read did: how many apps were asked and answered, and why the others did not."""

    asked: int = 0
    answered: int = 0
    budget_s: float = 0.0
    elapsed_s: float = 0.0
    failures: dict[str, str] = field(default_factory=dict)  # app id -> why

    def to_dict(self) -> dict[str, Any]:
        """What `predict --json` shows; the elapsed time is left out so that equal plans print
        equal JSON."""
        return {
            "asked": self.asked,
            "answered": self.answered,
            "budget_s": round(self.budget_s, 3),
            "failures": dict(self.failures),
        }


# --- parsing: the driver's answers to a DriverProgress -----------------------------------


def _count(value: Any) -> int:
    number = number_or_none(value)
    if number is None or number < 0:
        return 0
    return int(number)


def parse_progress(jobs: Any, active_stages: Any) -> DriverProgress:
    """The driver's jobs and active stages as a DriverProgress; ProgressError if not Spark's."""
    if not isinstance(jobs, list) or not isinstance(active_stages, list):
        raise ProgressError("not a Spark REST answer (expected JSON lists)")
    if any(not isinstance(j, Mapping) or "jobId" not in j for j in jobs):
        raise ProgressError("not a Spark REST answer (jobs without jobId)")
    counts = _job_counts(jobs)
    active = _active_fractions(active_stages)
    known = counts.pop("stages_known")
    complete = min(counts.pop("stages_complete"), max(known - len(active), 0))
    try:
        return DriverProgress(
            jobs_known=len(jobs),
            stages_known=known,
            stages_complete=complete,
            active_fractions=tuple(active[: max(known - complete, 0)]),
            first_job_at=_first_submission(jobs),
            **counts,
        )
    except ValueError as exc:
        raise ProgressError(f"inconsistent counts ({exc})") from None


def _job_counts(jobs: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Done jobs, distinct stage ids, completed stages, tasks that run and completed tasks."""
    stage_ids: set[int] = set()
    out = {"jobs_done": 0, "stages_complete": 0, "tasks_known": 0, "tasks_done": 0}
    for job in jobs:
        ids = job.get("stageIds")
        if isinstance(ids, list):
            stage_ids.update(int(i) for i in ids if number_or_none(i) is not None)
        out["stages_complete"] += _count(job.get("numCompletedStages"))
        out["jobs_done"] += (text_or_none(job.get("status")) or "").upper() in {
            "SUCCEEDED",
            "FAILED",
        }
        out["tasks_known"] += max(
            _count(job.get("numTasks")) - _count(job.get("numSkippedTasks")), 0
        )
        out["tasks_done"] += _count(job.get("numCompletedTasks"))
    out["tasks_done"] = min(out["tasks_done"], out["tasks_known"])
    return {**out, "stages_known": len(stage_ids)}


def _active_fractions(stages: Sequence[Any]) -> list[float]:
    """How far each ACTIVE stage is, in stage-id (submission) order."""
    active = sorted(
        (s for s in stages if isinstance(s, Mapping)
         and (text_or_none(s.get("status")) or "ACTIVE").upper() == "ACTIVE"),
        key=lambda s: _count(s.get("stageId")),
    )
    return [
        stage_fraction(
            _count(s.get("numCompleteTasks")),
            _count(s.get("numActiveTasks")),
            _count(s.get("numTasks")),
        )
        for s in active
    ]


def _first_submission(jobs: Sequence[Mapping[str, Any]]) -> float | None:
    times = [t for t in (spark_time(j.get("submissionTime")) for j in jobs) if t is not None]
    return min(times) if times else None


# --- where each driver's UI is -----------------------------------------------------------


def _yarn_ui(cluster: Any, app: RunningApp) -> str:
    if app.ui_url and "/proxy/" in app.ui_url:
        return app.ui_url.rstrip("/")
    rm = cluster.answered_url or cluster.rm_urls[0]
    return f"{rm}/proxy/{app.app_id}"


def _standalone_ui(cluster: Any, app: RunningApp, get: Callable[..., Any]) -> str:
    """The app's UI address, from the link on the master's application page."""
    master = cluster.answered_url or cluster.master_urls[0]
    page = f"{master}/app/"
    resp = get(page, {"appId": app.app_id})
    match = _DETAIL_UI.search(resp.text or "")
    if match is None:
        raise ProgressError("the master's application page links no driver UI")
    return urljoin(page, match.group(1).replace("&amp;", "&")).rstrip("/")


# --- reading ---------------------------------------------------------------------------


class _Reader:
    """One read: a session per thread with the cluster client's auth and TLS, one deadline."""

    def __init__(self, cluster: Any, deadline: float, clock: Callable[[], float]) -> None:
        self.cluster = cluster
        self.client = cluster.client
        self.deadline = deadline
        self.clock = clock

    def _session(self) -> Any:
        import requests

        session = requests.Session()
        session.headers["Accept"] = "application/json"
        session.auth = getattr(self.client.session, "auth", None)
        return session

    def read(self, app: RunningApp) -> DriverProgress:
        session = self._session()
        try:
            get = self._getter(session)
            if self.cluster.name == "yarn":
                base = _yarn_ui(self.cluster, app)
            else:
                base = _standalone_ui(self.cluster, app, get)
            api = f"{base}/api/v1/applications/{app.app_id}"
            jobs = _json(get(f"{api}/jobs", {}))
            stages = _json(get(f"{api}/stages", {"status": "active"}))
            return parse_progress(jobs, stages)
        finally:
            session.close()

    def _getter(self, session: Any) -> Callable[[str, Mapping[str, Any]], Any]:
        import requests

        verify: bool | str = self.client.ca_bundle or True

        def get(url: str, params: Mapping[str, Any]) -> Any:
            query = dict(params)
            if self.client.auth == "simple" and self.client.user:
                query.setdefault("user.name", self.client.user)
            left = self.deadline - self.clock()
            if left <= 0:
                raise ProgressError("no time left in the budget")
            timeout = min(float(self.client.timeout_s), left)
            try:
                resp = session.get(url, params=query, timeout=timeout, verify=verify)
            except requests.exceptions.Timeout:
                raise ProgressError(f"no answer within {timeout:.1f} s") from None
            except requests.exceptions.RequestException as exc:
                raise ProgressError(f"cannot connect ({type(exc).__name__})") from None
            if resp.status_code != 200:
                raise ProgressError(f"HTTP {resp.status_code}")
            return resp

        return get


def _json(resp: Any) -> Any:
    try:
        return resp.json()
    except ValueError:
        raise ProgressError("not JSON") from None


def read_progress(
    cluster: Any,
    apps: Sequence[RunningApp],
    *,
    budget_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[RunningApp], ProgressReport]:
    """`apps` with `driver` set where their driver answered within `budget_s` (module doc).

    The budget defaults to the cluster client's per-request timeout. Clusters other than YARN
    and Spark standalone, and an empty list, cost nothing.
    """
    out = list(apps)
    if getattr(cluster, "name", None) not in {"yarn", "standalone"} or not apps:
        return out, ProgressReport()
    budget = float(cluster.client.timeout_s if budget_s is None else budget_s)
    started = clock()
    report = ProgressReport(asked=len(apps), budget_s=budget)
    reader = _Reader(cluster, started + budget, clock)
    results: dict[int, DriverProgress | str] = {}
    lock = threading.Lock()
    slots = threading.Semaphore(MAX_THREADS)

    def work(i: int, app: RunningApp) -> None:
        with slots:
            try:
                outcome: DriverProgress | str = reader.read(app)
            except ProgressError as exc:
                outcome = str(exc)
            except Exception as exc:
                outcome = f"unexpected {type(exc).__name__}"
            with lock:
                results[i] = outcome

    threads = [
        threading.Thread(target=work, args=(i, a), daemon=True, name=f"progress-{a.app_id}")
        for i, a in enumerate(apps)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(started + budget - clock(), 0.0))
    with lock:
        done = dict(results)
    for i, app in enumerate(apps):
        outcome = done.get(i, f"no answer within the {budget:g} s budget")
        if isinstance(outcome, DriverProgress):
            out[i] = replace(app, driver=outcome)
            report.answered += 1
        else:
            report.failures[app.app_id] = outcome
    report.elapsed_s = clock() - started
    return out, report


__all__ = ["ProgressError", "ProgressReport", "parse_progress", "read_progress"]
