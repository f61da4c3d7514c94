"""A Spark event log's application as an imported run: a fold over its events, in one pass.

The events come from the streaming reader (`sources/eventlog.py`); this module only keeps
the few numbers a run needs, so memory stays flat however long the log is:

- `SparkListenerApplicationStart` / `...End`: app id, name, user, start and end (ms);
  a log without an end event (running, or a driver that crashed) is a counted skip;
- `SparkListenerEnvironmentUpdate`: `spark.app.name` and `spark.yarn.tags` for the job;
- `SparkListenerExecutorAdded` / `...Removed`: `scale_out` = the peak number of live
  executors, `mean_scale_out` = their time-weighted mean over the runtime (exact);
- `SparkListenerJobEnd`: the app is `failed` when one of its jobs failed (Spark writes
  `ExitCode` 0 even when a Python driver fails), or when the end event's `ExitCode` is not 0;
- `SparkListenerStageCompleted`: input size = `internal.metrics.input.bytesRead` of the
  stages without parents (the first stages, which read the input).

Beside the run, the same pass folds the log into the what-if's profile (`ProfileFeed`, with
sources/eventlog_profile.py): a few numbers per task, so memory grows with the tasks, not
with the log's bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cobell_cli.cluster.fields import number_or_none, text_or_none
from cobell_cli.cluster.jobs import split_tags
from cobell_cli.errors import CobellError
from cobell_cli.sources.record import ImportedApp, ImportSummary, first_line, job_of
from cobell_cli.sources.spark_history import executor_counts

INPUT_BYTES = "internal.metrics.input.bytesRead"


@dataclass
class AppFold:
    """What one event log says about its application, folded event by event."""

    app_id: str | None = None
    name: str = ""
    user: str | None = None
    start_ms: float | None = None
    end_ms: float | None = None
    exit_code: int | None = None
    properties: dict[str, str] = field(default_factory=dict)
    executors: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed_jobs: int = 0
    input_bytes: int = 0

    def feed(self, event: Mapping[str, Any]) -> None:
        kind = event.get("Event")
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, event)

    def _start(self, e: Mapping[str, Any]) -> None:
        self.app_id = text_or_none(e.get("App ID")) or self.app_id
        self.name = text_or_none(e.get("App Name")) or self.name
        self.user = text_or_none(e.get("User"))
        self.start_ms = number_or_none(e.get("Timestamp"))

    def _end(self, e: Mapping[str, Any]) -> None:
        self.end_ms = number_or_none(e.get("Timestamp"))
        code = number_or_none(e.get("ExitCode"))
        self.exit_code = None if code is None else int(code)

    def _environment(self, e: Mapping[str, Any]) -> None:
        props = e.get("Spark Properties")
        pairs = props.items() if isinstance(props, Mapping) else (props or ())
        for pair in pairs:
            if isinstance(pair, list | tuple) and len(pair) == 2:
                self.properties[str(pair[0])] = str(pair[1])

    def _executor_added(self, e: Mapping[str, Any]) -> None:
        ex_id = str(e.get("Executor ID"))
        self.executors[ex_id] = {"id": ex_id, "addTime": e.get("Timestamp")}

    def _executor_removed(self, e: Mapping[str, Any]) -> None:
        ex = self.executors.get(str(e.get("Executor ID")))
        if ex is not None:
            ex["removeTime"] = e.get("Timestamp")

    def _job_end(self, e: Mapping[str, Any]) -> None:
        result = e.get("Job Result")
        if isinstance(result, Mapping) and result.get("Result") == "JobFailed":
            self.failed_jobs += 1

    def _stage_completed(self, e: Mapping[str, Any]) -> None:
        info = e.get("Stage Info")
        if not isinstance(info, Mapping) or info.get("Parent IDs"):
            return
        for acc in info.get("Accumulables") or ():
            if isinstance(acc, Mapping) and acc.get("Name") == INPUT_BYTES:
                self.input_bytes += int(number_or_none(acc.get("Value")) or 0)

    def result(
        self,
        *,
        event_log: str | None = None,
        patterns: Mapping[str, Any] | None = None,
        default_job: str | None = None,
        known_jobs: tuple[str, ...] = (),
    ) -> ImportedApp | str:
        """The app as an ImportedApp, or why it is skipped (module doc)."""
        if self.app_id is None or self.start_ms is None:
            return "no application start event"
        if self.end_ms is None:
            return "no end event (running or crashed)"
        start, end = self.start_ms / 1000.0, self.end_ms / 1000.0
        if end <= start:
            return "no start or end time"
        counts = executor_counts(list(self.executors.values()), start, end)
        failed = self.failed_jobs > 0 or bool(self.exit_code)
        if counts is None and not failed:
            return "no executors"
        name = self.properties.get("spark.app.name") or self.name
        tags = split_tags(self.properties.get("spark.yarn.tags"))
        return ImportedApp(
            app_id=self.app_id,
            name=name,
            job=job_of(name, tags, known_jobs, patterns, default_job),
            status="failed" if failed else "succeeded",
            started_at=start,
            finished_at=end,
            source="event-log",
            scale_out=counts[0] if counts else None,
            mean_scale_out=round(counts[1], 3) if counts else None,
            scale_out_how="executors (event log)" if counts else "",
            user=self.user,
            input_bytes=self.input_bytes or None,
            event_log=event_log,
            backend="spark",
        )


_HANDLERS = {
    "SparkListenerApplicationStart": AppFold._start,
    "SparkListenerApplicationEnd": AppFold._end,
    "SparkListenerEnvironmentUpdate": AppFold._environment,
    "SparkListenerExecutorAdded": AppFold._executor_added,
    "SparkListenerExecutorRemoved": AppFold._executor_removed,
    "SparkListenerJobEnd": AppFold._job_end,
    "SparkListenerStageCompleted": AppFold._stage_completed,
}


def import_from_event_logs(
    history: Any,
    logs: Iterable[tuple[str, Callable[[], Iterable[Mapping[str, Any]]]]],
    *,
    where: str,
    dry_run: bool = False,
    since: float | None = None,
    patterns: Mapping[str, Any] | None = None,
    default_job: str | None = None,
    on_app: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Fold every log (a name and a function that streams its events) and store the apps.

    A log the reader cannot read (corrupt, truncated mid-record, an unknown codec) is a
    skip counted with the reader's one-line reason; nothing is written until every log was
    read, and then all in one transaction, with each run's profile for the what-if (folded
    in the same single pass over the log).
    """
    from cobell_cli.sources.record import store_imported

    summary = ImportSummary(source="event-log", where=where)
    known = tuple(history.job_names())
    apps = []
    for name, events in logs:
        summary.seen += 1
        state, shape = AppFold(), ProfileFeed()
        try:
            for event in events():
                state.feed(event)
                shape.feed(event)
        except (CobellError, OSError, ValueError) as exc:
            if state.app_id is not None and state.end_ms is None:  # torn while running
                summary.skip("no end event (running or crashed)", state.app_id)
            else:
                summary.skip(f"unreadable ({first_line(exc)})", name)
            continue
        finally:
            if on_app is not None:
                on_app(1)
        parsed = state.result(
            event_log=name, patterns=patterns, default_job=default_job, known_jobs=known
        )
        if isinstance(parsed, str):
            summary.skip(parsed, state.app_id or name)
            continue
        if since is not None and parsed.finished_at < since:
            summary.skip("finished before --since", parsed.app_id)
            continue
        summary.note_finished(parsed.finished_at)
        profile, why = shape.json(name)
        apps.append(replace(parsed, profile=profile, no_profile=why, memory=shape.memory))
    store_imported(history, apps, summary, dry_run=dry_run)
    return summary


class ProfileFeed:
    """The what-if's profile of a log (sources/eventlog_profile.py), folded in the same pass
    as the run; an event it cannot fold costs the profile, never the run."""

    def __init__(self) -> None:
        from cobell_cli.sources.eventlog_profile import _Fold

        self.fold: Any = _Fold()
        self.error: str | None = None
        self.memory: dict[str, Any] = {}  # the run's memory columns, once json() folded it

    def feed(self, event: Mapping[str, Any]) -> None:
        if self.fold is None:
            return
        try:
            self.fold.feed(event)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            self.fold, self.error = None, f"{type(exc).__name__} {exc}"[:80]

    def json(self, name: str) -> tuple[str | None, str]:
        """The profile's JSON text, or None and why not."""
        from cobell_cli.core.memory.measure import memory_columns
        from cobell_cli.store.history import profile_json

        if self.fold is not None:
            try:
                profile = self.fold.profile(Path(name))
                self.memory = memory_columns(profile)
                return profile_json(profile), ""
            except (CobellError, KeyError, TypeError, ValueError) as exc:
                self.error = first_line(exc)
        return None, f"event not understood ({self.error})"
