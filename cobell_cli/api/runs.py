"""The run history from Python: open it, list, show, remove, export and import runs.

`cobell history ...` is a thin layer over these functions, so a script gets what the CLI does,
with the same checks and the same messages, and no need to know the store's or the importers'
modules. The history is an open `History` (`open_history`); reading functions want it
read-only, the ones that write want it writable. Errors are `cobell_cli.errors` exceptions
(`UsageError`, `ImportFileError`, `HistoryError`, `ClusterError`), each one line with a hint.

Heavy modules (sqlite-utils, requests, the importers) load inside the functions, so importing
the API stays cheap for every command.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from cobell_cli.errors import CobellError, ImportFileError, UsageError

if TYPE_CHECKING:
    from cobell_cli.config import Settings
    from cobell_cli.sources.record import ImportSummary
    from cobell_cli.store.history import History
    from cobell_cli.store.interchange import HistoryFile, Problem

SHOWN_PROBLEMS = 100  # invalid rows of an import file named one by one; the rest are counted
EXPORT_FORMATS = ("csv", "json")


def open_history(path: str | Path, *, create: bool = True, read_only: bool = False,
                 settings: Settings | None = None) -> History:
    """The history file at `path` (a context manager). `read_only` never changes the file (a
    missing one then reads as empty when `create`); otherwise a missing file is created when
    `create`, and is an error when not. The whole file is checked for damage when it has
    changed since the last check that passed, which is kept beside the model cache when
    `settings` has that cache on; without `settings`, on every open."""
    from cobell_cli.api.planning import cache_directory
    from cobell_cli.store.history import History

    verdicts = cache_directory(settings) if settings is not None else None
    return History.open(path, create=create, read_only=read_only, verdicts=verdicts)


def history_jobs(path: str | Path) -> list[str]:
    """The jobs the history at `path` knows, so running apps named like one map to it; none
    when the file does not exist (read-only: it is never created). A HistoryError for a file
    that is not a readable history."""
    with open_history(path, read_only=True) as history:
        return history.job_names()


def storable(number: int) -> bool:
    """A number SQLite can hold (a signed 64-bit integer): no run id or count is larger."""
    return -(2**63) <= number < 2**63


def run_statuses() -> tuple[str, ...]:
    """The statuses a listing can ask for: the stored five, and `pending` (finished, its
    completion waiting in the journal beside the history)."""
    from cobell_cli.store.schema import STATUSES

    return (*STATUSES, "pending")


def check_statuses(statuses: Iterable[str] | None) -> None:
    """A UsageError for a status no run can have, before any history is opened."""
    shown = run_statuses()
    for value in statuses or ():
        if value not in shown:
            raise UsageError(f"--status {value!r} is not a status", hint=f"use {', '.join(shown)}")


def list_runs(
    history: History,
    *,
    job: str | None = None,
    status: Sequence[str] | None = None,
    since: float | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Runs newest first, each with its `colocations`; journalled completions show as
    `pending`. `since` is epoch seconds (submitted then or later); a `limit` beyond what SQLite
    can count means all."""
    check_statuses(status)
    return history.runs(
        job=job,
        status=list(status) if status else None,
        since=since,
        limit=limit if limit is None or storable(limit) else None,
        with_colocations=True,
        show_pending=True,
    )


def get_run(history: History, run_id: int) -> dict[str, Any]:
    """One run in full, with every co-runner it overlapped and its resource profile (the
    shares of its task time, None without task metrics); a UsageError if there is none."""
    from cobell_cli.api.profile_priors import resource_profile

    run = history.run(run_id) if storable(run_id) else None
    if run is None:
        raise UsageError(f"no run with id {run_id}", hint="see `cobell history list`")
    resources = history.run_resources(run_id)
    run["resource_profile"] = resource_profile([resources]) if resources else None
    return run


def run_command(run: dict[str, Any]) -> list[str] | str | None:
    """The command a run was launched with, as its list of arguments (the history stores it as
    their JSON text); a stored text that is no such list as it is; None without one."""
    from cobell_cli.store.interchange import command_argv

    command = run.get("command")
    if not isinstance(command, str):
        return command
    return command_argv(command) or command


def list_jobs(history: History) -> list[dict[str, Any]]:
    """One row per job: runs, succeeded, distinct scale-outs, last run, median runtime."""
    return history.jobs()


def remove_runs(
    history: History, run_ids: Sequence[int], *, confirm: Callable[[int], None] | None = None
) -> int:
    """Remove runs and their co-runner records; all of them or, if one is missing, none.
    `confirm(count)` runs after the check and before anything is removed: it raises to stop."""
    missing = [i for i in run_ids if not storable(i) or history.run(i) is None]
    if missing:
        raise UsageError(
            f"no run with id {', '.join(map(str, missing))}",
            hint="see `cobell history list`; nothing was removed",
        )
    if confirm is not None:
        confirm(len(run_ids))
    return history.delete_runs(run_ids)


def set_excluded(history: History, run_ids: Sequence[int], excluded: bool) -> list[int]:
    """Keep runs out of fitting and planning (or let them back in) without deleting them;
    returns the ids whose flag changed. Letting a run in undoes either kind of exclusion, by
    hand or by cobell (an implausible runtime), for good. An unknown id is a UsageError and
    changes nothing."""
    bad = [i for i in run_ids if not storable(i)]
    if bad:
        raise UsageError(
            f"no run with id {', '.join(map(str, bad))}",
            hint="see `cobell history list`; nothing was changed",
        )
    return history.set_excluded(run_ids, excluded)


def run_columns() -> list[str]:
    """Every stored field of a run, in the history's order (what `--columns` may name)."""
    from cobell_cli.store.schema import RUN_COLUMNS

    return list(RUN_COLUMNS)


def run_records(runs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs in the JSON form `export_runs` writes and `import_file` reads back."""
    from cobell_cli.store.interchange import export_records

    return export_records(runs)


def runs_csv(runs: Iterable[dict[str, Any]]) -> str:
    """Runs as the CSV `export_runs` writes and `import_file` reads back."""
    from cobell_cli.store.interchange import to_csv

    return to_csv(runs)


def export_runs(
    history: History, out: str | Path | IO[str], *, fmt: str = "csv", job: str | None = None
) -> int:
    """Write every run (of `job`) with its co-runners as CSV or JSON to a text stream, or
    atomically to a file (a reader never sees half of it). Returns how many runs. (A damaged
    history was refused when it was opened: nothing is written.)"""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format {fmt!r}", hint="use csv or json")
    if not isinstance(out, str | Path):
        return _write_runs(history, out, fmt, job)
    import os
    import tempfile

    target = Path(out).resolve()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                count = _write_runs(history, fh, fmt, job)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise CobellError(f"cannot write {out}: {exc.strerror}") from None
    return count


def _write_runs(history: History, out: IO[str], fmt: str, job: str | None) -> int:
    from cobell_cli.store import interchange

    runs = history.iter_runs(job=job)
    if fmt == "csv":
        return interchange.write_csv(runs, out)
    count = interchange.write_json(runs, out)
    out.write("\n")
    return count


# -- import a history file: cobell's CSV/JSON or Bell's Nodes,Runtime CSV ---------------------


@dataclass
class CheckedFile:
    """A history file after the first, validating pass: how many runs are valid, the first
    SHOWN_PROBLEMS invalid ones and how many there are. `import_checked` writes it, and counts
    the runs it skipped because the history holds them already (`duplicates`)."""

    name: str
    source: HistoryFile
    valid: int = 0
    invalid: int = 0
    problems: list[Problem] = field(default_factory=list)
    run_ids: list[int] = field(default_factory=list)  # once imported
    kept_out: dict[int, str] = field(default_factory=dict)  # implausible runs: id -> why
    jobs: set[str] = field(default_factory=set)  # of the valid runs
    duplicates: int = 0  # valid runs the history held already: not imported again

    @property
    def kind(self) -> str | None:
        """cobell-csv, cobell-json or bell-csv."""
        return self.source.kind

    def kept_out_line(self) -> str | None:
        """The runs the import kept out of fitting as implausible, in a few words."""
        if not self.kept_out:
            return None
        from cobell_cli.sources.record import kept_out_line

        return kept_out_line(self.kept_out)

    def skipped(self) -> list[str]:
        """One line per invalid row shown, and one for the rest."""
        lines = [f"skipped {self.name}: {problem}" for problem in self.problems]
        if self.invalid > len(self.problems):
            lines.append(f"skipped {self.name}: {self.invalid - len(self.problems)} more "
                         "invalid rows")
        return lines

    def to_dict(self, into: str | Path | None = None, *, dry_run: bool = False) -> dict[str, Any]:
        """The import's summary as `history import --json` prints it (the keys of the record
        imports' summary where they mean the same: under `dry_run`, `imported` counts what
        would be)."""
        return {
            "source": "file", "from": self.name, "format": self.kind,
            "into": None if into is None else str(into), "dry_run": dry_run,
            "seen": self.valid + self.invalid,
            "imported": self.valid - self.duplicates if dry_run else len(self.run_ids),
            "run_ids": list(self.run_ids),
            "skipped": self.invalid + self.duplicates,
            "skipped_by_reason": {"invalid": self.invalid, "duplicate": self.duplicates},
            "problems": [str(p) for p in self.problems],
            "kept_out": {str(k): v for k, v in sorted(self.kept_out.items())},
        }

    def line(self, into: str | Path | None = None, *, dry_run: bool = False) -> str:
        """The summary for a person: what was imported, and what was skipped and why."""
        from cobell_cli.core.words import count

        skipped = [f"{self.invalid} invalid" if self.invalid else "",
                   f"{self.duplicates} already in the history" if self.duplicates else ""]
        skip = "; would skip " if dry_run else "; skipped "
        tail = skip + ", ".join(filter(None, skipped)) if any(skipped) else ""
        if dry_run:
            return (f"{self.name}: {count(self.valid, 'valid run')} ({self.kind}); would "
                    f"import {self.valid - self.duplicates}{tail}; nothing written (--dry-run)")
        kept_out = self.kept_out_line()
        return (f"imported {count(len(self.run_ids), 'run')} from {self.name} into {into}{tail}"
                + (f"; {kept_out}" if kept_out else ""))


def check_file(
    file: str | Path,
    *,
    job: str | None = None,
    runtime_unit: str | None = None,
    skip_invalid: bool = False,
    open_text: Callable[[], IO[str]] | None = None,
) -> CheckedFile:
    """Validate a history file in one streaming pass, before any history is opened. Without
    `skip_invalid` an invalid row is an ImportFileError naming it. `open_text` reads another
    stream than the file (each call a new text stream on its start; `-` names it <stdin>).
    `job` names every run; `runtime_unit` (ms or s) is that of Bell's Runtime column."""
    from cobell_cli.store.interchange import HistoryFile, Problem

    name = "<stdin>" if str(file) == "-" else str(file)
    path, options = Path(file), {"job": job, "runtime_unit": runtime_unit}
    source = HistoryFile(path, open_text, **options) if open_text else None
    source = source or HistoryFile.at(path, **options)
    checked = CheckedFile(name, source)
    with _reading(name):
        for item in source.check():
            if isinstance(item, Problem):
                checked.invalid += 1
                if len(checked.problems) < SHOWN_PROBLEMS:
                    checked.problems.append(item)
            else:
                checked.valid += 1
                checked.jobs.add(item["job"])
    if checked.invalid and not skip_invalid:
        more = checked.invalid - 1
        raise _import_error(
            name,
            f"{checked.problems[0]}" + (f" (and {more} more invalid rows)" if more else ""),
            hint="nothing was imported; fix the file or pass --skip-invalid",
        )
    return checked


def import_checked(
    history: History, checked: CheckedFile, *, skip_invalid: bool = False, new_ids: bool = False
) -> list[int]:
    """Write a checked file's valid runs in one transaction (all or nothing); their ids.
    The file is read again: a run no longer valid then (it changed meanwhile) rolls back.
    Runs the history holds already (the same job, start, runtime and scale-out: a file
    imported again) are skipped and counted in `checked.duplicates`. `new_ids` gives the runs
    fresh ids instead of the file's. Runs whose runtime cannot be right for their job are
    kept out of fitting (`.kept_out`; a file with an `excluded_reason` column was judged when
    it was written and is kept as it is)."""
    checked.run_ids = history.insert_runs(
        _new_runs(history, checked, _valid_runs(checked, skip_invalid)), keep_ids=not new_ids,
        judge=True)
    checked.kept_out = history.kept_out(checked.run_ids)
    return checked.run_ids


def count_duplicates(history: History, checked: CheckedFile) -> int:
    """How many of a checked file's valid runs the history holds already (`--dry-run`)."""
    for _ in _new_runs(history, checked, _valid_runs(checked, skip_invalid=True)):
        pass
    return checked.duplicates


def _new_runs(history: History, checked: CheckedFile,
              runs: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The runs beyond those the history holds already, counted as store/queries.py RUN_KEY
    says; read inside the import's transaction (its first run is asked for there), so a
    concurrent import of the same file cannot slip in between."""
    from cobell_cli.store.queries import RUN_KEY

    stored = None
    checked.duplicates = 0
    for run in runs:
        if stored is None:
            stored = history.run_keys(sorted(checked.jobs))
        key = tuple(run.get(c) for c in RUN_KEY)
        if stored[key] > 0:
            stored[key] -= 1
            checked.duplicates += 1
            continue
        yield run


def import_file(
    history: History,
    file: str | Path,
    *,
    job: str | None = None,
    runtime_unit: str | None = None,
    skip_invalid: bool = False,
    new_ids: bool = False,
) -> CheckedFile:
    """`check_file`, then `import_checked`: the file's runs in the history, all or nothing
    (without `skip_invalid`, any invalid row imports none). The ids are in `.run_ids`."""
    checked = check_file(file, job=job, runtime_unit=runtime_unit, skip_invalid=skip_invalid)
    import_checked(history, checked, skip_invalid=skip_invalid, new_ids=new_ids)
    return checked


def _import_error(name: str, message: str, hint: str | None = None) -> ImportFileError:
    return ImportFileError(f"{name}: {message}", hint=hint)


@contextlib.contextmanager
def _reading(name: str) -> Iterator[None]:
    """A file that cannot be read, or is not a history, as one line naming it."""
    try:
        yield
    except ImportFileError as exc:
        raise _import_error(name, str(exc), exc.hint) from None
    except FileNotFoundError:
        raise _import_error(name, "no such file") from None
    except OSError as exc:
        raise _import_error(name, f"cannot read it ({exc.strerror or exc})") from None


def _valid_runs(checked: CheckedFile, skip_invalid: bool) -> Iterator[dict[str, Any]]:
    """The second pass, inside the insert's transaction: a run that is no longer valid (the
    file changed since the first pass) raises, and the transaction rolls back."""
    from cobell_cli.store.interchange import Problem

    with _reading(checked.name):
        for item in checked.source:
            if not isinstance(item, Problem):
                yield item
            elif not skip_invalid:
                raise _import_error(checked.name,
                                    f"{item} (the file changed while it was imported)",
                                    "nothing was imported")


# -- import the cluster's record: YARN's finished apps, a Spark History Server, event logs ----


def import_from_yarn(
    history: History,
    settings: Settings,
    *,
    since: float,
    until: float,
    dry_run: bool = False,
    job: str | None = None,
    vcores_per_container: float = 1.0,
    spark_history_url: str | None = None,
    timeline_url: str | None = None,
    on_page: Callable[[int], None] | None = None,
) -> ImportSummary:
    """The YARN ResourceManager's apps finished in [since, until] (settings name the RM, its
    auth and TLS), with their co-locations; a History Server adds exact executor counts, a
    Timeline Server exact containers. Idempotent: apps already in the history are skipped."""
    from cobell_cli.cluster import YARN_RECORD_FIX, connect
    from cobell_cli.sources.yarn_apps import import_from_yarn as read_yarn

    cluster = connect(settings, history.job_names(), yarn_fix=YARN_RECORD_FIX)
    server = _history_server(settings, spark_history_url) if spark_history_url else None
    timeline = _timeline_server(settings, timeline_url) if timeline_url else None
    return read_yarn(
        history,
        cluster,
        since=since,
        until=until,
        dry_run=dry_run,
        default_job=job,
        vcores_per_container=vcores_per_container,
        on_page=on_page,
        spark_history=server,
        timeline=timeline,
    )


def import_from_spark_history(
    history: History,
    settings: Settings,
    url: str,
    *,
    since: float,
    dry_run: bool = False,
    job: str | None = None,
    download_logs: bool = True,
    on_app: Callable[[int], None] | None = None,
) -> ImportSummary:
    """The completed apps of a Spark History Server finished since `since`; with
    `download_logs` each app's event log is kept in event-logs/ beside the history and its
    profile stored for the what-if. Idempotent, like every record import."""
    from cobell_cli.cluster.jobs import compile_patterns
    from cobell_cli.sources.spark_history import import_from_spark_history as read_server

    return read_server(
        history,
        _history_server(settings, url),
        since=since,
        dry_run=dry_run,
        patterns=compile_patterns(settings.job_patterns or {}),
        default_job=job,
        on_app=on_app,
        logs_into=history.path.parent / "event-logs" if download_logs else None,
    )


def import_from_event_logs(
    history: History,
    settings: Settings,
    paths: Sequence[str | Path],
    *,
    since: float | None = None,
    dry_run: bool = False,
    job: str | None = None,
    on_app: Callable[[int], None] | None = None,
) -> ImportSummary:
    """Every Spark event log under `paths` (files, rolling-log or log directories; plain,
    zstd, lz4, snappy), or those finished since `since`, with their profiles."""
    from cobell_cli.cluster.jobs import compile_patterns
    from cobell_cli.sources.event_apps import import_from_event_logs as read_logs

    try:
        from cobell_cli.sources.eventlog import discover
    except ImportError:
        raise UsageError(
            "--from-event-logs needs the event-log reader (cobell_cli/sources/eventlog.py)",
            hint="use --from-spark-history",
        ) from None
    if not paths:
        raise UsageError(
            "--from-event-logs needs at least one PATH",
            hint="give spark.eventLog.dir, a rolling log directory or a log file",
        )
    return read_logs(
        history,
        discover(paths),
        where=", ".join(map(str, paths)),
        dry_run=dry_run,
        since=since,
        patterns=compile_patterns(settings.job_patterns or {}),
        default_job=job,
        on_app=on_app,
    )


def _client(settings: Settings, what: str, fix: str) -> Any:
    """A JsonClient with the cluster's auth, TLS, timeout and retries (no user.name query)."""
    from cobell_cli.cluster.http import JsonClient

    return JsonClient(
        what=what,
        auth="none" if settings.auth == "simple" else settings.auth,
        ca_bundle=settings.ca_bundle,
        timeout_s=settings.timeout_s,
        retries=settings.retries,
        budget_s=settings.cluster_budget_s,
        fix=fix,
    )


def _history_server(settings: Settings, url: str) -> Any:
    from cobell_cli.sources.spark_history import FIX, HistoryServer

    return HistoryServer(url, _client(settings, "Spark History Server", FIX))


def _timeline_server(settings: Settings, url: str) -> Any:
    from cobell_cli.sources.timeline import FIX, TimelineServer

    return TimelineServer(url, _client(settings, "Timeline Server", FIX))
