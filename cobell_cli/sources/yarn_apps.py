"""Finished applications from the YARN ResourceManager, as imported runs.

What the RM keeps of a finished app, and so what cobell can learn from it:

- `startedTime`, `finishedTime`, `elapsedTime`, `state`, `finalStatus`: exact;
- `allocatedVCores`, `allocatedMB`, `runningContainers` are -1 (or 0) once the app is done,
  so the executor count is not there. `vcoreSeconds` (or the `vcores` entry of
  `resourceSecondsMap` on newer RMs) survives: the time-averaged number of containers is
  vcore-seconds / (elapsed seconds x vcores per container), and the executors are that less
  the ApplicationMaster. This is a MEAN over the app's whole life (its start-up before the
  executors came and its wind-down count as fewer containers), so it understates the peak
  that `--num-executors` asks for, and it assumes every container had `vcores_per_container`
  vcores (Spark's executors: `spark.executor.cores`; under the DefaultResourceCalculator
  YARN counts 1 vcore per container whatever Spark asked). `scale_out` is that mean rounded
  (at least 1), `mean_scale_out` the unrounded mean; `scale_out_how` = "vcore-seconds".
- The RM keeps only its last `yarn.resourcemanager.max-completed-applications` finished apps
  (1000 by default in Hadoop 3): older ones are gone from the RM, whatever `--since` says.
  The Spark History Server (`--from-spark-history`) and event logs keep them longer and give
  the exact executors; `--from-yarn --from-spark-history URL` takes the RM's list and, for
  the Spark apps the History Server knows, its exact executors (`scale_out_how` =
  "executors (Spark History Server)"); `--timeline-url URL` does the same with the
  Timeline Server v1's containers for every app type (`sources/timeline.py`).

Paging: the RM's `limit` cuts an unordered list (it walks a hash map), so paging by "the last
finishedTime seen" would lose apps. Instead a time window [begin, end] is asked with
`finishedTimeBegin`/`finishedTimeEnd` and `limit`; a full page splits the window in two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from cobell_cli.cluster.fields import epoch_ms_to_s, text_or_none
from cobell_cli.cluster.jobs import split_tags
from cobell_cli.cluster.yarn import (
    API,
    FINISHED_STATES,
    ShapeError,
    app_items,
    mean_executors,
    node_label_of,
    vcore_seconds,
)
from cobell_cli.errors import ClusterError
from cobell_cli.sources.record import ImportedApp, ImportSummary, job_of, status_of

PAGE_SIZE = 1000
RM_DEFAULT_RETENTION = 1000  # yarn.resourcemanager.max-completed-applications, Hadoop 3


def parse_finished(
    raw: Any,
    *,
    patterns: Mapping[str, Any] | None = None,
    default_job: str | None = None,
    known_jobs: tuple[str, ...] = (),
    vcores_per_container: float = 1.0,
) -> ImportedApp | str:
    """One finished app of the RM's list as an ImportedApp, or the reason it is skipped."""
    if not isinstance(raw, Mapping):
        return "not an app object"
    app_id = text_or_none(raw.get("id"))
    if app_id is None:
        return "no application id"
    state = (text_or_none(raw.get("state")) or "").upper()
    started = epoch_ms_to_s(raw.get("startedTime"))
    finished = epoch_ms_to_s(raw.get("finishedTime"))
    if state not in FINISHED_STATES or finished is None:
        return "not finished"
    if started is None or finished <= started:
        return "no start time"
    status = status_of(text_or_none(raw.get("finalStatus")), state)
    if status is None:
        return "unknown final status"
    name = text_or_none(raw.get("name")) or ""
    tags = split_tags(raw.get("applicationTags"))
    elapsed_s = finished - started
    vcore_s = vcore_seconds(raw)
    mean = None if vcore_s is None else mean_executors(vcore_s, elapsed_s, vcores_per_container)
    if mean is None and status == "succeeded":
        return "usage hidden (no vcore-seconds)"
    return ImportedApp(
        app_id=app_id,
        name=name,
        job=job_of(name, tags, known_jobs, patterns, default_job),
        status=status,
        started_at=started,
        finished_at=finished,
        source="yarn",
        scale_out=None if mean is None else max(1, round(mean)),
        mean_scale_out=None if mean is None else round(mean, 3),
        scale_out_how="" if mean is None else "vcore-seconds",
        user=text_or_none(raw.get("user")),
        queue=text_or_none(raw.get("queue")),
        backend="yarn",
        node_label=node_label_of(tags, raw),
    )


def finished_docs(
    cluster: Any,
    begin_ms: int,
    end_ms: int,
    *,
    page_size: int = PAGE_SIZE,
    on_page: Callable[[int], None] | None = None,
) -> Iterator[Any]:
    """Every finished app document in [begin_ms, end_ms], window by window (module doc)."""
    windows = [(begin_ms, end_ms)]
    while windows:
        begin, end = windows.pop()
        params = {
            "states": ",".join(FINISHED_STATES),
            "finishedTimeBegin": begin,
            "finishedTimeEnd": end,
            "limit": page_size,
        }
        items = _ask(cluster, params)
        if len(items) >= page_size and end > begin:
            middle = (begin + end) // 2
            windows += [(middle + 1, end), (begin, middle)]  # older half first
            continue
        if len(items) >= page_size:  # more than a page finished in one millisecond
            items = _ask(cluster, {k: v for k, v in params.items() if k != "limit"})
        if on_page is not None:
            on_page(len(items))
        yield from items


def _ask(cluster: Any, params: Mapping[str, Any]) -> list[Any]:
    answer = cluster._get(f"{API}/apps", params)
    try:
        return app_items(answer.data)
    except ShapeError as exc:
        raise ClusterError(
            f"the YARN RM at {answer.base_url} answered an apps document cobell does not "
            f"understand ({exc}); nothing was imported",
            hint="check that --rm-url points at the ResourceManager web address",
        ) from None


def read_finished(
    cluster: Any,
    since: float,
    until: float,
    summary: ImportSummary,
    *,
    patterns: Mapping[str, Any] | None = None,
    default_job: str | None = None,
    known_jobs: tuple[str, ...] = (),
    vcores_per_container: float = 1.0,
    page_size: int = PAGE_SIZE,
    on_page: Callable[[int], None] | None = None,
    refine: Callable[[ImportedApp, str], ImportedApp] | None = None,
) -> list[ImportedApp]:
    """The RM's finished apps in [since, until] as ImportedApps; skips counted in `summary`."""
    apps: list[ImportedApp] = []
    docs = finished_docs(
        cluster, int(since * 1000), int(until * 1000), page_size=page_size, on_page=on_page
    )
    for raw in docs:
        summary.seen += 1
        parsed = parse_finished(
            raw,
            patterns=patterns,
            default_job=default_job,
            known_jobs=known_jobs,
            vcores_per_container=vcores_per_container,
        )
        if isinstance(parsed, str):
            summary.skip(parsed, raw.get("id") if isinstance(raw, Mapping) else None)
            continue
        if refine is not None:
            parsed = refine(parsed, str(raw.get("applicationType", "")).upper())
        summary.note_finished(parsed.finished_at)
        apps.append(parsed)
    return apps


def import_from_yarn(
    history: Any,
    cluster: Any,
    *,
    since: float,
    until: float,
    dry_run: bool = False,
    default_job: str | None = None,
    vcores_per_container: float = 1.0,
    page_size: int = PAGE_SIZE,
    on_page: Callable[[int], None] | None = None,
    spark_history: Any = None,
    timeline: Any = None,
) -> ImportSummary:
    """Read the RM's finished apps, then store them all in one transaction (or, dry, none).

    With a `timeline` (TimelineServer) the apps it knows get their exact containers; with
    `spark_history` (a HistoryServer) the Spark apps it knows get their exact executors.
    """
    from cobell_cli.sources.record import store_imported

    summary = ImportSummary(source="yarn", where=f"YARN RM {', '.join(cluster.rm_urls)}")
    refine = exact_source(summary, spark_history, timeline)
    apps = read_finished(
        cluster,
        since,
        until,
        summary,
        patterns=cluster.patterns,
        default_job=default_job,
        known_jobs=tuple(history.job_names()),
        vcores_per_container=vcores_per_container,
        page_size=page_size,
        on_page=on_page,
        refine=refine,
    )
    summary.where = cluster.describe()
    note = retention_note(summary, since)
    if note:
        summary.warnings.append(note)
    store_imported(history, apps, summary, dry_run=dry_run)
    return summary


def retention_note(summary: ImportSummary, since: float) -> str | None:
    """Say so when the RM may have forgotten apps --since asked for (its retention cap)."""
    from cobell_cli.output import iso

    oldest = summary.oldest_finished_at
    if summary.seen < RM_DEFAULT_RETENTION or oldest is None or oldest <= since + 3600:
        return None
    return (
        f"the RM's oldest finished app ended {iso(oldest)}, after --since: it keeps only its "
        "last yarn.resourcemanager.max-completed-applications apps; import older ones from "
        "the Spark History Server or event logs"
    )


def exact_source(
    summary: ImportSummary, spark_history: Any, timeline: Any
) -> Callable[[ImportedApp, str], ImportedApp] | None:
    """The exact scale-out where a server knows the app: the Timeline Server's containers,
    then (for Spark apps) the History Server's executors; else the vcore-second estimate."""
    from cobell_cli.sources.spark_history import exact_executors
    from cobell_cli.sources.timeline import exact_containers

    steps: list[tuple[Callable[[ImportedApp], ImportedApp], bool]] = []
    if timeline is not None:
        steps.append((exact_containers(timeline, summary), False))
    if spark_history is not None:
        steps.append((exact_executors(spark_history, summary), True))
    if not steps:
        return None

    def refine(app: ImportedApp, app_type: str) -> ImportedApp:
        for step, spark_only in steps:
            if spark_only and app_type != "SPARK":
                continue
            better = step(app)
            if better is not app:
                return better
        return app

    return refine
