"""Finished Spark applications from a Spark History Server's REST API, as imported runs.

Per application (`/api/v1/applications?status=completed&minEndDate=...`), its last attempt:

- times: the attempt's `startTimeEpoch`/`endTimeEpoch` (ms); runtime = end - start; an
  attempt that is not `completed` (still running, or crashed without an end event) is skipped;
- scale-out: `allexecutors` lists every executor with `addTime` and (once gone) `removeTime`;
  `scale_out` is the PEAK number of live executors (what `--num-executors` asks for) and
  `mean_scale_out` their time-weighted mean over the app's runtime; both exact, and they
  differ under dynamic allocation (`scale_out_how` = "executors");
- job: `spark.yarn.tags` (a `cobell-job:` tag) and `spark.app.name` from `environment`, then
  `job_patterns`, `--job`, the app name;
- status: `failed` when one of its Spark jobs failed (`jobs`), else `succeeded` (the REST API
  has no exit status; a killed app reads as whatever its jobs did);
- input size: the `inputBytes` of its stages (bytes read from storage, not shuffles);
- memory: `spark.executor.memory` / `spark.executor.memoryOverhead` (`environment`) and the
  largest `peakMemoryMetrics.JVMHeapMemory` of an executor (`allexecutors`), the same metric
  an event log's executor metrics give; a downloaded log's own columns win over these.

Event logs: with `--download-logs` (the default) each app's log (`/applications/<id>/logs`,
a zip) is kept next to the history and folded into the what-if's profile (stage graph, task
durations), stored with the run; the input size is then the first stages' bytes read, as for
`--from-event-logs`. A log that cannot be had costs its profile only (counted by reason); a
download is bounded by the timeout per read and DOWNLOAD_BUDGET_S in all, and after the
server fails one no more are asked for.

Errors: the History Server failing (down, slow beyond the timeout, not a History Server,
garbage) is one ClusterError naming the URL, and nothing is written: a half-read import is
never stored. Each request is bounded by the cluster timeout and retries. An app whose details
answer 404 (evicted meanwhile) is a counted skip.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cobell_cli.cluster.fields import number_or_none, spark_time, text_or_none
from cobell_cli.cluster.http import normalize_url
from cobell_cli.cluster.jobs import split_tags
from cobell_cli.errors import ClusterError, CobellError
from cobell_cli.sources.record import ImportedApp, ImportSummary, first_line, job_of

API = "/api/v1"
MB = 1024 * 1024
FIX = "check --from-spark-history URL (the History Server's web address, e.g. http://shs:18080)"


def executor_counts(
    executors: Sequence[Mapping[str, Any]], start: float, end: float
) -> tuple[int, float] | None:
    """(peak live executors, time-weighted mean) over [start, end]; the driver is not one."""
    events: list[tuple[float, int]] = []
    live_s = 0.0
    for ex in executors:
        if str(ex.get("id")) == "driver":
            continue
        added = spark_time(ex.get("addTime"))
        if added is None:
            continue
        removed = spark_time(ex.get("removeTime"))
        lo, hi = max(added, start), min(removed if removed is not None else end, end)
        if hi <= lo:
            continue
        live_s += hi - lo
        events += [(lo, 1), (hi, -1)]
    if not events or end <= start:
        return None
    peak = live = 0
    for _, step in sorted(events):  # a removal sorts before an addition at the same instant
        live += step
        peak = max(peak, live)
    return peak, live_s / (end - start)


@dataclass(frozen=True)
class AppDetails:
    """What the History Server says about one application attempt."""

    info: Mapping[str, Any]
    attempt: Mapping[str, Any]
    executors: list[Mapping[str, Any]]
    properties: dict[str, str]
    jobs: list[Mapping[str, Any]]
    stages: list[Mapping[str, Any]]


def parse_app(
    details: AppDetails,
    *,
    patterns: Mapping[str, Any] | None = None,
    default_job: str | None = None,
    known_jobs: tuple[str, ...] = (),
) -> ImportedApp | str:
    """One application as an ImportedApp, or the reason it is skipped (module doc)."""
    info, attempt = details.info, details.attempt
    app_id = text_or_none(info.get("id"))
    if app_id is None:
        return "no application id"
    if not attempt.get("completed"):
        return "no end event (running or crashed)"
    start = spark_time(attempt.get("startTimeEpoch")) or spark_time(attempt.get("startTime"))
    end = spark_time(attempt.get("endTimeEpoch")) or spark_time(attempt.get("endTime"))
    if start is None or end is None or end <= start:
        return "no start or end time"
    failed = any(str(j.get("status", "")).upper() == "FAILED" for j in details.jobs)
    counts = executor_counts(details.executors, start, end)
    if counts is None and not failed:
        return "no executors"
    name = details.properties.get("spark.app.name") or text_or_none(info.get("name")) or ""
    tags = split_tags(details.properties.get("spark.yarn.tags"))
    read = [number_or_none(s.get("inputBytes")) for s in details.stages]
    input_bytes = int(sum(b for b in read if b)) or None
    return ImportedApp(
        app_id=app_id,
        name=name,
        job=job_of(name, tags, known_jobs, patterns, default_job),
        status="failed" if failed else "succeeded",
        started_at=start,
        finished_at=end,
        source="spark-history",
        scale_out=counts[0] if counts else None,
        mean_scale_out=round(counts[1], 3) if counts else None,
        scale_out_how="executors" if counts else "",
        user=text_or_none(attempt.get("sparkUser")),
        input_bytes=input_bytes,
        backend="spark",
        memory=rest_memory(details.executors, details.properties),
    )


def rest_memory(
    executors: Sequence[Mapping[str, Any]], properties: Mapping[str, str]
) -> dict[str, Any]:
    """The memory columns the REST API gives: the reservation from the app's properties and
    the peak heap one executor used (`peakMemoryMetrics`, bytes; the driver is not one).
    Nothing for what it does not say (a server or app without executor metrics)."""
    from cobell_cli.core.memory.units import MAX_MB, memory_mb

    out: dict[str, Any] = {}
    for column, key in (("executor_memory_mb", "spark.executor.memory"),
                        ("executor_overhead_mb", "spark.executor.memoryOverhead")):
        with contextlib.suppress(KeyError, ValueError):  # unset, or not Spark's form
            out[column] = memory_mb(properties[key])
    peaks = [
        number_or_none(ex["peakMemoryMetrics"].get("JVMHeapMemory"))
        for ex in executors
        if str(ex.get("id")) != "driver" and isinstance(ex.get("peakMemoryMetrics"), Mapping)
    ]
    mb = [p / MB for p in peaks if p is not None and 0 < p / MB <= MAX_MB]
    if mb:
        out["peak_memory_mb"] = round(max(mb), 1)
    return out


class HistoryServer:
    """The REST API of one Spark History Server, through cobell's JsonClient."""

    def __init__(self, url: str, client: Any) -> None:
        self.url = normalize_url(url)
        self.client = client

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        answer = self.client.get([self.url], API + path, params, missing_ok=True)
        if answer is None:
            raise _Gone(path)
        return answer.data

    def completed_apps(self, since: float) -> list[Mapping[str, Any]]:
        day = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%dT%H:%M:%S.000GMT")
        try:
            data = self._get("/applications", {"status": "completed", "minEndDate": day})
        except _Gone:
            raise ClusterError(
                f"the Spark History Server at {self.url} answered HTTP 404 for {API}"
                "/applications: no History Server's REST API there; nothing was imported",
                hint="give the URL of the History Server's web UI (e.g. http://shs:18080)",
            ) from None
        if not isinstance(data, list):
            raise ClusterError(
                f"the Spark History Server at {self.url} answered an application list that is "
                "not a list; nothing was imported",
                hint=FIX,
            )
        return [a for a in data if isinstance(a, Mapping)]

    def running_apps(self) -> list[Mapping[str, Any]]:
        """Apps without an end event: still running, or crashed before writing one."""
        try:
            data = self._get("/applications", {"status": "running"})
        except _Gone:
            return []
        return _objects(data)

    def executors(self, app_id: str) -> tuple[Mapping[str, Any], list[Mapping[str, Any]]]:
        """One app's latest attempt and its executors (for YARN apps: the same id); _Gone."""
        info = self._get(f"/applications/{quote(app_id, safe='')}")
        attempts = info.get("attempts") if isinstance(info, Mapping) else None
        attempt = attempts[0] if isinstance(attempts, list) and attempts else {}
        attempt = attempt if isinstance(attempt, Mapping) else {}
        base = f"/applications/{quote(app_id, safe='')}"
        if attempt.get("attemptId"):
            base += f"/{quote(str(attempt['attemptId']), safe='')}"
        return attempt, _objects(self._get(f"{base}/allexecutors"))

    def download_log(self, app_id: str, into: Path) -> str:
        """The app's event log (`/logs`, a zip) extracted under `into/<app id>/`: the path of
        the single log file or rolling-log directory in it.

        For the what-if, which reads the stage graph the REST API does not give. Streamed to
        a temporary file (logs reach gigabytes), each read bounded by the cluster timeout and
        the whole download by DOWNLOAD_BUDGET_S; raises LogUnavailable with the reason.
        """
        import tempfile
        import zipfile

        import requests

        url = f"{self.url}{API}/applications/{quote(app_id, safe='')}/logs"
        budget = DOWNLOAD_BUDGET_S
        try:
            with (
                self.client.session.get(
                    url,
                    # a zip: the session asks for JSON, to which Jersey answers 406 here
                    headers={"Accept": "application/octet-stream, */*"},
                    timeout=self.client.timeout_s,
                    verify=self.client.ca_bundle or True,
                    stream=True,
                ) as resp,
                tempfile.TemporaryFile() as spool,
            ):
                if resp.status_code != 200:
                    raise LogUnavailable(f"HTTP {resp.status_code}", server_failed=False)
                if not _copy_within(resp, spool, budget):
                    raise LogUnavailable(f"not downloaded within {budget:g} s")
                spool.seek(0)
                return _extract(zipfile.ZipFile(spool), into / _safe_name(app_id))
        except requests.RequestException as exc:
            raise LogUnavailable(f"{type(exc).__name__} from {self.url}") from None
        except (zipfile.BadZipFile, OSError) as exc:
            raise LogUnavailable(f"cannot be extracted ({exc})"[:80], server_failed=False) from None

    def details(self, info: Mapping[str, Any]) -> AppDetails:
        """The attempt's executors, environment, jobs and stages; _Gone on a 404."""
        attempts = [a for a in info.get("attempts") or () if isinstance(a, Mapping)]
        attempt = attempts[0] if attempts else {}  # the History Server lists the latest first
        base = f"/applications/{quote(str(info.get('id')), safe='')}"
        if attempt.get("attemptId"):
            base += f"/{quote(str(attempt['attemptId']), safe='')}"
        env = self._get(f"{base}/environment")
        properties = env.get("sparkProperties") if isinstance(env, Mapping) else None
        return AppDetails(
            info=info,
            attempt=attempt,
            executors=_objects(self._get(f"{base}/allexecutors")),
            properties={str(p[0]): str(p[1]) for p in properties or () if len(p) == 2},
            jobs=_objects(self._get(f"{base}/jobs")),
            stages=_objects(self._get(f"{base}/stages", {"details": "false"})),
        )


def exact_executors(
    server: HistoryServer, summary: ImportSummary
) -> Callable[[ImportedApp], ImportedApp]:
    """Refine a YARN app's estimated scale-out with the History Server's executors.

    An app the server does not know keeps its estimate; a server that fails is asked no more
    (one warning in the summary), so an unreachable server costs one timeout, not one per app.
    """
    failed: list[str] = []

    def refine(app: ImportedApp) -> ImportedApp:
        if failed:
            return app
        try:
            attempt, executors = server.executors(app.app_id)
        except _Gone:
            return app
        except ClusterError as exc:
            failed.append(exc.line())
            summary.warnings.append(f"estimated scale-outs kept: {exc.line()}")
            return app
        start = spark_time(attempt.get("startTimeEpoch")) or app.started_at
        end = spark_time(attempt.get("endTimeEpoch")) or app.finished_at
        counts = executor_counts(executors, start, end)  # over the attempt's own life
        if counts is None:
            return app
        return replace(
            app,
            scale_out=counts[0],
            mean_scale_out=round(counts[1], 3),
            scale_out_how="executors (Spark History Server)",
        )

    return refine


DOWNLOAD_BUDGET_S = 600.0  # one log's whole download; each read is bounded by the timeout


class LogUnavailable(Exception):
    """An app's event log could not be downloaded; `server_failed`: ask for no more logs."""

    def __init__(self, reason: str, *, server_failed: bool = True) -> None:
        super().__init__(reason)
        self.server_failed = server_failed


def _copy_within(resp: Any, out: Any, budget_s: float) -> bool:
    """Copy a streamed body to `out`; False if it took longer than `budget_s`.

    Each read is bounded by the request's timeout, but a server dripping bytes could make
    one chunk last for ever: at the deadline a timer shuts the connection's socket down, which
    ends the read at once. (Closing the response instead would wait for the reader's buffer
    lock, which a dripping server never lets go.)"""
    import socket
    import threading

    expired = threading.Event()

    def expire() -> None:
        expired.set()
        sock = getattr(getattr(resp.raw, "connection", None), "sock", None)
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed: the read has ended anyway
            pass

    timer = threading.Timer(budget_s, expire)
    timer.daemon = True
    timer.start()
    try:
        for chunk in resp.iter_content(1 << 16):
            out.write(chunk)
            if expired.is_set():
                return False
    except Exception:  # the connection closed under the read: whatever the library raises
        if expired.is_set():
            return False
        raise
    finally:
        timer.cancel()
    return not expired.is_set()


def _extract(archive: Any, target: Path) -> str:
    """The zip's members under `target` (never outside it); the log file or directory."""
    with archive:
        names = [n for n in archive.namelist() if _inside(n)]
        if not names:
            raise LogUnavailable("an empty zip", server_failed=False)
        target.mkdir(parents=True, exist_ok=True)
        for name in names:
            archive.extract(name, target)
    top = {n.split("/", 1)[0] for n in names}
    return str(target / top.pop()) if len(top) == 1 else str(target)


class LogProfiles:
    """Download each app's event log and fold it into the what-if's profile (the run keeps
    its REST figures; the profile adds the stage graph and the first stages' input bytes).

    A log that cannot be had costs its profile only (the reason is counted in the summary
    when the run is imported); after
    a download fails on the server's side (down, timeout) no more are asked for, so a server
    that stops answering costs one timeout, not one per app."""

    def __init__(self, server: HistoryServer, into: Path) -> None:
        self.server, self.into = server, into
        self.stopped: str | None = None

    def __call__(self, app: ImportedApp) -> ImportedApp:
        from cobell_cli.core.memory.measure import memory_columns
        from cobell_cli.sources.eventlog_profile import summarize
        from cobell_cli.store.history import profile_json

        if self.stopped is not None:
            return replace(app, no_profile=f"log not downloaded ({self.stopped})")
        try:
            path = self.server.download_log(app.app_id, self.into)
        except LogUnavailable as exc:
            if exc.server_failed:
                self.stopped = f"the server failed: {exc}"
            return replace(app, no_profile=f"log not downloaded ({exc})")
        try:
            profile = summarize(path)
        except (CobellError, KeyError, TypeError, ValueError) as exc:
            return replace(app, event_log=path, no_profile=f"log not readable ({first_line(exc)})")
        return replace(
            app,
            event_log=path,
            profile=profile_json(profile),
            input_bytes=profile.input_bytes or app.input_bytes,
            memory={**app.memory, **memory_columns(profile)},  # the log's own win
        )


def _safe_name(app_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in app_id)


def _inside(name: str) -> bool:
    """A zip member that stays inside the target directory (no absolute or .. paths)."""
    parts = name.replace("\\", "/").split("/")
    return bool(name) and not name.startswith("/") and ".." not in parts and not name.endswith("/")


class _Gone(Exception):
    """The History Server answered 404: the app was evicted (or never had this part)."""


def _objects(data: Any) -> list[Mapping[str, Any]]:
    return [x for x in data if isinstance(x, Mapping)] if isinstance(data, list) else []


def read_apps(
    server: HistoryServer,
    since: float,
    summary: ImportSummary,
    *,
    patterns: Mapping[str, Any] | None = None,
    default_job: str | None = None,
    known_jobs: tuple[str, ...] = (),
    skip_ids: frozenset[str] = frozenset(),
    on_app: Callable[[int], None] | None = None,
    logs_into: Path | None = None,
) -> list[ImportedApp]:
    """The server's completed apps ended since `since`; skips counted in `summary`.
    With `logs_into`, each app's event log is downloaded there and profiled (LogProfiles)."""
    profiles = None if logs_into is None else LogProfiles(server, logs_into)
    apps = []
    for info in server.running_apps():
        summary.seen += 1
        summary.skip("no end event (running or crashed)", text_or_none(info.get("id")))
    for info in server.completed_apps(since):
        summary.seen += 1
        app_id = text_or_none(info.get("id"))
        if app_id in skip_ids:
            summary.skip("already in the history", app_id)
            continue
        try:
            parsed = parse_app(
                server.details(info),
                patterns=patterns,
                default_job=default_job,
                known_jobs=known_jobs,
            )
        except _Gone:
            summary.skip("gone from the History Server (HTTP 404)", app_id)
            continue
        finally:
            if on_app is not None:
                on_app(1)
        if isinstance(parsed, str):
            summary.skip(parsed, app_id)
            continue
        if profiles is not None:
            parsed = profiles(parsed)
        summary.note_finished(parsed.finished_at)
        apps.append(parsed)
    return apps


def import_from_spark_history(
    history: Any,
    server: HistoryServer,
    *,
    since: float,
    dry_run: bool = False,
    patterns: Mapping[str, Any] | None = None,
    default_job: str | None = None,
    on_app: Callable[[int], None] | None = None,
    logs_into: Path | None = None,
) -> ImportSummary:
    """Read the server's apps (not asking again for those already imported), store them all.

    With `logs_into`, each app's event log is downloaded there and its path stored in the
    run's `event_log`, for the what-if."""
    from cobell_cli.sources.record import store_imported

    summary = ImportSummary(source="spark-history", where=f"Spark History Server {server.url}")
    known = frozenset(
        r[0] for r in history.conn.execute("SELECT app_id FROM runs WHERE app_id IS NOT NULL")
    )
    apps = read_apps(
        server,
        since,
        summary,
        patterns=patterns,
        default_job=default_job,
        known_jobs=tuple(history.job_names()),
        skip_ids=known,
        on_app=on_app,
        logs_into=None if dry_run else logs_into,
    )
    store_imported(history, apps, summary, dry_run=dry_run)
    return summary
