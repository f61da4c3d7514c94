"""An application the cluster recorded, as cobell's run rows: the part every importer shares.

Rules (the same for YARN, the Spark History Server and event logs):

- an imported run is a real run: status from the app's final status, runtime from the app's
  start to its end, `scale_out` the peak number of executors (or the best estimate the source
  allows, see `scale_out_how`), `mean_scale_out` the time-weighted mean beside it; it has no
  target, prediction or model, and `source` says where it came from;
- the job is the `cobell-job:` tag, then the configured `job_patterns`, then `--job`, then
  the app name (`job_of`);
- every pair of imported apps that overlapped in time is a co-location, stored on both runs
  with the overlap relative to each run's own runtime (`api.measured_overlaps`, the same rule
  `cobell submit` records with), so imported co-runners get models too;
- an application id is imported once; skips are counted by reason in `ImportSummary`;
- where the app's event log was read (event logs, the History Server's download), its
  profile (core/profile.py, what the what-if replays) is stored in `run_profiles` in the same
  transaction as the run.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cobell_cli.cluster.jobs import map_job
from cobell_cli.core.colocation import measured_overlaps
from cobell_cli.core.job_name import JOB_NAME_RULE, job_from_tag, valid_job_name
from cobell_cli.core.running import RunningApp
from cobell_cli.core.words import count
from cobell_cli.output import printable
from cobell_cli.store.implausible import flag_implausible

if TYPE_CHECKING:
    from cobell_cli.store.history import History

FINAL_STATUS = {"SUCCEEDED": "succeeded", "FAILED": "failed", "KILLED": "killed"}


@dataclass(frozen=True)
class ImportedApp:
    """One finished application as a source saw it; times in epoch seconds."""

    app_id: str
    name: str
    job: str
    status: str  # succeeded | failed | killed
    started_at: float
    finished_at: float
    source: str  # yarn | spark-history | event-log
    scale_out: int | None = None  # peak live executors (or the source's best estimate)
    mean_scale_out: float | None = None  # time-weighted mean of live executors
    scale_out_how: str = ""  # which source gave the scale-out, e.g. "executors", "vcore-seconds"
    user: str | None = None
    queue: str | None = None
    input_bytes: int | None = None
    event_log: str | None = None
    backend: str | None = None
    profile: str | None = field(default=None, repr=False, compare=False)  # AppProfile JSON
    memory: Mapping[str, Any] = field(default_factory=dict)  # its memory columns (the log's)
    no_profile: str = ""  # why a log that was read gave no profile (counted when imported)
    node_label: str | None = None  # the YARN partition its executors ran in (None: default)

    @property
    def runtime_s(self) -> float:
        return max(self.finished_at - self.started_at, 0.0)

    def as_co_runner(self) -> RunningApp:
        return RunningApp(
            app_id=self.app_id,
            name=self.name,
            job=self.job,
            user=self.user,
            queue=self.queue,
            state="FINISHED",
            started_at=self.started_at,
            finished_at=self.finished_at,
            scale_out=self.scale_out,
            backend=self.backend or self.source,
            node_label=self.node_label,
        )


@dataclass
class ImportSummary:
    """What an import did: imported, skipped (by reason, with a few examples), and from where."""

    source: str
    where: str
    seen: int = 0
    imported: int = 0
    colocations: int = 0
    profiles: int = 0  # event-log profiles stored for the what-if (run_profiles)
    unprofiled: Counter[str] = field(default_factory=Counter)  # logs without one, by reason
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    scale_out_how: Counter[str] = field(default_factory=Counter)
    oldest_finished_at: float | None = None
    dry_run: bool = False
    run_ids: list[int] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    renamed: dict[str, str] = field(default_factory=dict)  # app name -> the valid job name
    kept_out: dict[int, str] = field(default_factory=dict)  # implausible runs: id -> why

    def skip(self, reason: str, app_id: str | None = None) -> None:
        self.skipped[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if app_id and len(shown) < 3:
            shown.append(app_id)

    def note_finished(self, finished_at: float) -> None:
        if self.oldest_finished_at is None or finished_at < self.oldest_finished_at:
            self.oldest_finished_at = finished_at

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "from": self.where,
            "dry_run": self.dry_run,
            "seen": self.seen,
            "imported": self.imported,
            "colocations": self.colocations,
            "profiles": self.profiles,
            "unprofiled_by_reason": dict(sorted(self.unprofiled.items())),
            "skipped": sum(self.skipped.values()),
            "skipped_by_reason": dict(sorted(self.skipped.items())),
            "skipped_examples": {k: v for k, v in sorted(self.examples.items()) if v},
            "scale_out_from": dict(sorted(self.scale_out_how.items())),
            "oldest_finished_at": self.oldest_finished_at,
            "warnings": list(self.warnings),
            "renamed_jobs": dict(sorted(self.renamed.items())),
            "kept_out": {str(k): v for k, v in sorted(self.kept_out.items())},
        }

    def line(self) -> str:
        verb = "would import" if self.dry_run else "imported"
        text = (
            f"{verb} {self.imported} of {count(self.seen, 'app')} from {self.where} "
            f"({count(self.colocations, 'co-location')}"
            + (f", {self.profiles} event-log profiles" if self.profiles else "")
            + ")"
        )
        if self.skipped:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
            text += f"; skipped {sum(self.skipped.values())}: {reasons}"
        if self.unprofiled:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(self.unprofiled.items()))
            text += f"; no event-log profile for {sum(self.unprofiled.values())}: {reasons}"
        if self.kept_out:
            text += "; " + kept_out_line(self.kept_out)
        if self.renamed:
            shown = ", ".join(f"{printable(name[:40])!r} -> {job}"
                              for name, job in sorted(self.renamed.items())[:3])
            more = f" and {len(self.renamed) - 3} more" if len(self.renamed) > 3 else ""
            text += (f"; app names that are not job names ({JOB_NAME_RULE}) became: "
                     f"{shown}{more} (--job or job_patterns name them yourself)")
        return text


def kept_out_line(kept_out: Mapping[int, str]) -> str:
    """What an import kept out of fitting as implausible, in a few words."""
    ids = sorted(kept_out)
    named = ", ".join(map(str, ids[:5])) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return (f"{len(ids)} kept out of fitting as implausible (run {named}: `cobell history "
            "show ID` says why, `cobell history include ID` uses one)")


def first_line(exc: BaseException, limit: int = 120) -> str:
    """An error's first line, short enough for a skip reason in a summary."""
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:limit]


def job_of(
    name: str,
    tags: Iterable[str],
    known_jobs: Iterable[str],
    patterns: Mapping[str, Any] | None,
    default_job: str | None,
) -> str:
    """The `cobell-job:` tag (as the known job it names, whose spelling YARN lower-cased),
    `job_patterns`, `--job`, else the app name (module doc)."""
    known_list = list(known_jobs)
    tagged = next((j for t in tags if (j := job_from_tag(t, known_list)) is not None), None)
    mapped = tagged or map_job(name, (), (), patterns)
    if mapped is not None:
        return mapped
    if default_job:
        return default_job
    known = {j.lower(): j for j in known_list}
    return known.get(name.lower()) or (valid_job_name(name) if name else "unnamed")


def status_of(final_status: str | None, state: str | None = None) -> str | None:
    """succeeded / failed / killed from a final status (YARN's or Spark's); None if unknown."""
    for value in (state, final_status):
        text = (value or "").upper()
        if text in ("FAILED", "KILLED"):
            return FINAL_STATUS[text]
    return FINAL_STATUS.get((final_status or "").upper())


def run_record(app: ImportedApp, where: str) -> dict[str, Any]:
    """The `runs` row of an imported app (no target, prediction or model: nothing was planned)."""
    how = f"; scale-out from {app.scale_out_how}" if app.scale_out_how else ""
    memory = {k: v for k, v in app.memory.items()
              if k != "failure_reason" or app.status == "failed"}
    return {
        **memory,
        "job": app.job,
        "input_bytes": app.input_bytes,
        "scale_out": app.scale_out,
        "mean_scale_out": app.mean_scale_out,
        "backend": app.backend or app.source,
        "app_id": app.app_id,
        "queue": app.queue,
        "user": app.user,
        "submitted_at": app.started_at,
        "started_at": app.started_at,
        "finished_at": app.finished_at,
        "runtime_s": round(app.runtime_s, 3),
        "status": app.status,
        "source": app.source,
        "event_log": app.event_log,
        "node_label": app.node_label,
        "reason": f"imported from {where}{how}",
    }


def overlapping_pairs(apps: Sequence[ImportedApp | RunningApp]) -> dict[int, list[int]]:
    """For each index, the indexes of the other apps whose [start, end] overlaps its own.

    A sweep over the apps sorted by start: O(n log n + pairs), so 10 000 apps a day apart
    cost little more than reading them.
    """
    spans = [
        (float(a.started_at), float(a.finished_at), i)
        for i, a in enumerate(apps)
        if a.started_at is not None and a.finished_at is not None
    ]
    spans.sort()
    out: dict[int, list[int]] = {}
    for k, (start, end, i) in enumerate(spans):
        for m in range(k + 1, len(spans)):
            start_j, end_j, j = spans[m]
            if start_j >= end:
                break
            if end_j > start:
                out.setdefault(i, []).append(j)
                out.setdefault(j, []).append(i)
    return out


def colocation_rows(
    app: ImportedApp | RunningApp, co_runners: Sequence[RunningApp]
) -> list[dict[str, Any]]:
    """Co-location rows of `app` with the apps that overlapped it (the submit-time rule)."""
    assert app.started_at is not None and app.finished_at is not None
    return measured_overlaps(app.started_at, app.finished_at, co_runners)


def store_imported(
    history: History, apps: Sequence[ImportedApp], summary: ImportSummary, *, dry_run: bool = False
) -> None:
    """Insert the apps not yet in the history, with their co-locations, in ONE transaction.

    The check for already-imported application ids runs inside the write lock, so two imports
    racing each other still import every app once. Runs already in the history that overlap an
    imported app get the co-location too (unless they already recorded that co-runner, as
    `cobell submit` does for what it saw).
    """
    summary.dry_run = dry_run
    with contextlib.nullcontext() if dry_run else history.transaction():
        fresh = _fresh(history, apps, summary)
        existing = _recorded_between(history, fresh)
        views = [a.as_co_runner() for a in fresh] + [view for _, view in existing]
        pairs = overlapping_pairs(views)
        for i, app in enumerate(fresh):  # one run at a time: memory stays flat
            record = run_record(app, summary.where)
            record["colocations"] = colocation_rows(app, [views[j] for j in pairs.get(i, [])])
            summary.colocations += len(record["colocations"])
            summary.scale_out_how[app.scale_out_how or "unknown"] += 1
            if app.job != app.name and app.job == valid_job_name(app.name):
                summary.renamed[app.name] = app.job
            if app.profile is not None:
                summary.profiles += 1
            elif app.no_profile:
                summary.unprofiled[app.no_profile] += 1
            if not dry_run:
                run_id = _insert_run(history, record, summary.where)
                summary.run_ids.append(run_id)
                if app.profile is not None:
                    history.save_profile(run_id, app.profile)
        backfill = _backfill(history, existing, len(fresh), views, pairs)
        summary.colocations += len(backfill)
        summary.imported = len(fresh)
        if not dry_run:
            _insert_colocations(history, backfill)
            summary.kept_out = flag_implausible(history.conn, summary.run_ids)


def _fresh(
    history: History, apps: Sequence[ImportedApp], summary: ImportSummary
) -> list[ImportedApp]:
    ids = [a.app_id for a in apps]
    present: set[str] = set()
    for k in range(0, len(ids), 500):
        chunk = ids[k : k + 500]
        marks = ", ".join("?" for _ in chunk)
        present.update(
            r[0]
            for r in history.conn.execute(
                f"SELECT app_id FROM runs WHERE app_id IN ({marks})", chunk
            )
        )
    fresh, seen = [], set()
    for app in apps:
        if app.app_id in present or app.app_id in seen:
            summary.skip("already in the history", app.app_id)
            continue
        seen.add(app.app_id)
        fresh.append(app)
    return fresh


def _recorded_between(
    history: History, fresh: Sequence[ImportedApp]
) -> list[tuple[int, RunningApp]]:
    """Runs in the history (with an app id and both times) that may overlap an imported app."""
    if not fresh:
        return []
    begin = min(a.started_at for a in fresh)
    end = max(a.finished_at for a in fresh)
    rows = history.conn.execute(
        "SELECT id, app_id, job, scale_out, started_at, finished_at, user, queue, backend "
        "FROM runs WHERE app_id IS NOT NULL AND started_at IS NOT NULL "
        "AND finished_at IS NOT NULL AND started_at < ? AND finished_at > ?",
        (end, begin),
    )
    return [
        (
            int(run_id),
            RunningApp(
                app_id=app_id,
                name=job,
                job=job,
                user=user,
                queue=queue,
                state="FINISHED",
                started_at=started,
                finished_at=finished,
                scale_out=scale_out,
                backend=backend or "none",
            ),
        )
        for run_id, app_id, job, scale_out, started, finished, user, queue, backend in rows
    ]


def _backfill(
    history: History,
    existing: Sequence[tuple[int, RunningApp]],
    n_fresh: int,
    views: Sequence[RunningApp],
    pairs: Mapping[int, list[int]],
) -> list[tuple[int, dict[str, Any]]]:
    """Co-location rows for runs already recorded, with the newly imported apps they overlapped."""
    out: list[tuple[int, dict[str, Any]]] = []
    for k, (run_id, view) in enumerate(existing):
        partners = [views[j] for j in pairs.get(n_fresh + k, []) if j < n_fresh]
        if not partners:
            continue
        known = {
            r[0]
            for r in history.conn.execute(
                "SELECT co_runner_app_id FROM colocations WHERE run_id = ?", (run_id,)
            )
        }
        rows = colocation_rows(view, [p for p in partners if p.app_id not in known])
        out.extend((run_id, row) for row in rows)
    return out


def _insert_run(history: History, record: Mapping[str, Any], where: str) -> int:
    """A validated insert inside the caller's transaction; a bad row raises and rolls back all."""
    from cobell_cli.errors import CobellError
    from cobell_cli.store.history import validate_run

    try:
        clean = validate_run(record)
    except ValueError as exc:
        raise CobellError(
            f"{where}: app {record.get('app_id')} cannot be stored ({exc}); nothing was imported",
            hint="report it with the app's JSON; --dry-run shows what would be imported",
        ) from None
    rows = clean.pop("colocations")
    clean["id"] = history.next_run_id()  # above every run ever removed too
    cur = history.conn.execute(
        f"INSERT INTO runs ({', '.join(clean)}) VALUES ({', '.join('?' for _ in clean)})",
        list(clean.values()),
    )
    run_id = int(cur.lastrowid or 0)
    _insert_colocations(history, [(run_id, row) for row in rows])
    return run_id


def _insert_colocations(history: History, rows: Sequence[tuple[int, Mapping[str, Any]]]) -> None:
    columns = ["run_id", *COLOCATION_KEYS]
    marks = ", ".join("?" for _ in columns)
    history.conn.executemany(
        f"INSERT INTO colocations ({', '.join(columns)}) VALUES ({marks})",
        [(run_id, *(row.get(k) for k in COLOCATION_KEYS)) for run_id, row in rows],
    )


COLOCATION_KEYS = (
    "co_runner_app_id",
    "co_runner_job",
    "co_runner_scale_out",
    "co_runner_started_at",
    "co_runner_finished_at",
    "overlap_s",
    "overlap_ratio",
)
