"""`cobell history`: list, show, summarise, import, export and remove recorded runs."""

from __future__ import annotations

import contextlib
import enum
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from cobell_cli.cli.common import CaBundleOpt, RmUrlOpt, info, open_history, warn

app = typer.Typer(
    help="Inspect, import, export and edit the run history.",
    no_args_is_help=True,
)

LIST_COLUMNS = [
    "id",
    "job",
    "status",
    "scale_out",
    "runtime_s",
    "target_s",
    "predicted_s",
    "submitted",
    "co_runners",
    "app_id",
    "source",
]


class ListFormat(enum.StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


class ExportFormat(enum.StrEnum):
    csv = "csv"
    json = "json"


class RuntimeUnit(enum.StrEnum):
    ms = "ms"
    s = "s"


def parse_since(text: str, now: float) -> float:
    """`--since` through the one time parser (cobell_cli/timespec.py), in the local zone."""
    from cobell_cli.timespec import local_zone
    from cobell_cli.timespec import parse_since as parse

    return parse(text, "--since", now, local_zone(now))


def _storable(number: int) -> bool:
    """A number SQLite can hold (a signed 64-bit integer): no run id or count is larger."""
    return -(2**63) <= number < 2**63


def _screen_row(run: dict[str, Any]) -> dict[str, Any]:
    from cobell_cli.output import iso

    co = run.get("colocations") or []
    return {
        **run,
        "submitted": iso(run.get("submitted_at") or run.get("started_at")),
        "co_runners": ", ".join(
            f"{c.get('co_runner_job') or 'unknown'}:{c['overlap_ratio']:.2f}" for c in co
        ),
    }


@app.command("list")
def list_runs(
    ctx: typer.Context,
    job: str | None = typer.Option(None, "--job", "-j", help="Only runs of this job."),
    status: list[str] | None = typer.Option(
        None,
        "--status",
        help="Only runs with this status (repeatable): running, succeeded, failed, killed, lost, "
        "pending (finished, waiting in the journal beside the history).",
    ),
    since: str | None = typer.Option(
        None, "--since", help=(
            "Only runs submitted since then: 7d, 12h, yesterday, or an ISO date/time "
            "(local time unless it names a zone)."
        ),
    ),
    limit: int | None = typer.Option(None, "--limit", "-n", min=1, help="At most this many runs."),
    fmt: ListFormat = typer.Option(ListFormat.table, "--format", "-f", help="Output format."),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """List recorded runs, newest first.

    A run whose completion could not be written (history locked, disk full) is listed as
    `pending` until the next cobell that writes the history applies it from the journal.

    Example: cobell history list --job sgd --since 7d --format csv
    """
    import time

    from cobell_cli.errors import UsageError
    from cobell_cli.store.history import STATUSES

    shown = (*STATUSES, "pending")
    for value in status or ():
        if value not in shown:
            raise UsageError(f"--status {value!r} is not a status", hint=f"use {', '.join(shown)}")
    fmt = _list_format(fmt, as_json)
    since_ts = parse_since(since, time.time()) if since else None
    with open_history(ctx, create=False, read_only=True) as history:
        runs = history.runs(
            job=job,
            status=status or None,
            since=since_ts,
            limit=limit if limit is None or _storable(limit) else None,  # beyond 2^63: all
            with_colocations=True,
            show_pending=True,
        )
    _print_runs(runs, fmt)


def _list_format(fmt: ListFormat, as_json: bool) -> ListFormat:
    """--json, as every other command spells it, is --format json; with another --format it is
    a contradiction, not a choice."""
    from cobell_cli.errors import UsageError

    if as_json and fmt is ListFormat.csv:
        raise UsageError("--json and --format csv ask for two formats",
                         hint="give one of them")
    return ListFormat.json if as_json else fmt


def _print_runs(runs: list[dict[str, Any]], fmt: ListFormat) -> None:
    from cobell_cli import output
    from cobell_cli.store import interchange

    if fmt is ListFormat.json:
        typer.echo(output.to_json(interchange.export_records(runs)))
    elif fmt is ListFormat.csv:
        typer.echo(interchange.to_csv(runs), nl=False)
    elif runs:
        typer.echo(output.table([_screen_row(r) for r in runs], LIST_COLUMNS))
    else:
        info("no runs match")


@app.command("show")
def show(
    ctx: typer.Context,
    run_id: int = typer.Argument(..., help="Run id (see `cobell history list`)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show one run in full, with every co-runner it overlapped.

    Example: cobell history show 42
    """
    from cobell_cli import output
    from cobell_cli.errors import UsageError
    from cobell_cli.profile_priors import profile_text, resource_profile

    with open_history(ctx, create=False, read_only=True) as history:
        run = history.run(run_id) if _storable(run_id) else None
        resources = history.run_resources(run_id) if run is not None else None
    if run is None:
        raise UsageError(f"no run with id {run_id}", hint="see `cobell history list`")
    run["resource_profile"] = resource_profile([resources]) if resources else None
    if as_json:
        typer.echo(output.to_json(run))
        return
    fields = {k: v for k, v in run.items() if k not in ("colocations", "resource_profile")}
    width = max(len(k) for k in fields) + 1  # columns that later migrations added are longer
    for key, value in fields.items():
        shown = output.iso(value) if key.endswith("_at") and value is not None else value
        typer.echo(f"{key + ':':{width}} {'' if shown is None else output.printable(shown)}")
    if run["resource_profile"]:
        typer.echo(f"{'resources:':{width}} {profile_text(run['resource_profile'])}")
    colocations = run["colocations"]
    typer.echo(f"\nco-runners ({len(colocations)}):")
    if colocations:
        rows = [
            {
                **c,
                "started": output.iso(c.get("co_runner_started_at")),
                "finished": output.iso(c.get("co_runner_finished_at")),
            }
            for c in colocations
        ]
        typer.echo(
            output.table(
                rows,
                [
                    "co_runner_app_id",
                    "co_runner_job",
                    "co_runner_scale_out",
                    "started",
                    "finished",
                    "overlap_s",
                    "overlap_ratio",
                ],
            )
        )


@app.command("jobs")
def jobs(
    ctx: typer.Context,
    fmt: ListFormat = typer.Option(ListFormat.table, "--format", "-f", help="Output format."),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """One line per job: runs, distinct scale-outs, last run, median runtime.

    Example: cobell history jobs --format json
    """
    from cobell_cli import output

    fmt = _list_format(fmt, as_json)
    with open_history(ctx, create=False, read_only=True) as history:
        rows = history.jobs()
    columns = ["job", "runs", "succeeded", "scale_outs", "last_run", "median_runtime_s"]
    if fmt is ListFormat.json:
        typer.echo(output.to_json(rows))
    elif fmt is ListFormat.csv:
        typer.echo(output.to_csv(rows, columns), nl=False)
    elif rows:
        typer.echo(
            output.table([{**r, "last_run": output.iso(r["last_run"])} for r in rows], columns)
        )
    else:
        info("the history has no runs yet")


@app.command("import")
def import_file(
    ctx: typer.Context,
    files: list[Path] | None = typer.Argument(
        None,
        metavar="FILE|PATH...",
        help="CSV or JSON history file, or - for standard input; with --from-event-logs: "
        "event log files or directories.",
    ),
    job: str | None = typer.Option(
        None,
        "--job",
        "-j",
        help="Job name for every row (default for Nodes,Runtime files: the "
        "file name up to its first dot).",
    ),
    runtime_unit: RuntimeUnit | None = typer.Option(
        None, "--runtime-unit", help="Unit of Runtime in Nodes,Runtime files (default ms)."
    ),
    skip_invalid: bool = typer.Option(
        False, "--skip-invalid", help="Import the valid rows and report the skipped ones."
    ),
    new_ids: bool = typer.Option(
        False, "--new-ids", help="Give imported runs fresh ids instead of the file's."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate only; write nothing."),
    # -- the cluster's own record (see _import_record below) --
    from_yarn: bool = typer.Option(
        False, "--from-yarn", help="Import the YARN RM's finished apps.", rich_help_panel="Record"
    ),
    from_spark_history: str | None = typer.Option(
        None,
        "--from-spark-history",
        metavar="URL",
        help="Import the apps of a Spark History Server.",
        rich_help_panel="Record",
    ),
    from_event_logs: bool = typer.Option(
        False,
        "--from-event-logs",
        help="Import Spark event logs (the PATHs: files, rolling-log or log directories; "
        "plain, zstd, lz4, snappy).",
        rich_help_panel="Record",
    ),
    since: str | None = typer.Option(
        None,
        "--since",
        help=(
            "Only apps finished since then: 30d, 12h, yesterday, or an ISO date/time "
            "(local time unless it names a zone; default 30d)."
        ),
        rich_help_panel="Record",
    ),
    vcores_per_container: float = typer.Option(
        1.0,
        "--vcores-per-container",
        min=0.001,
        help="YARN: vcores of one executor container, to turn vcore-seconds into executors.",
        rich_help_panel="Record",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the import summary as JSON.", rich_help_panel="Record"
    ),
    download_logs: bool = typer.Option(
        True,
        "--download-logs/--no-download-logs",
        help="With --from-spark-history: keep each app's event log next to the history "
        "(event-logs/), for the what-if.",
        rich_help_panel="Record",
    ),
    timeline_url: str | None = typer.Option(
        None,
        "--timeline-url",
        metavar="URL",
        help="With --from-yarn: the Timeline Server v1, for exact containers.",
        rich_help_panel="Record",
    ),
    rm_url: RmUrlOpt = None,
    ca_bundle: CaBundleOpt = None,
) -> None:
    """Import runs from cobell's CSV/JSON or Bell's Nodes,Runtime CSV, all or nothing;
    or from the cluster's record: YARN's finished apps, a Spark History Server, event logs.

    Example: cobell history import ../shared/data/bell/sgd.spark.csv --job sgd --runtime-unit ms

    Example: cobell history import --from-yarn --since 30d --dry-run

    Example: cobell history import --from-spark-history http://shs:18080 --since 90d --json

    Example: cobell history import --from-event-logs /var/log/spark-events
    """
    if from_yarn or from_spark_history or from_event_logs:
        _import_record(
            ctx,
            RecordImport(
                from_yarn=from_yarn,
                from_spark_history=from_spark_history,
                event_logs=list(files or []) if from_event_logs else None,
                since=since,
                job=job,
                dry_run=dry_run,
                as_json=as_json,
                vcores_per_container=vcores_per_container,
                rm_url=rm_url,
                ca_bundle=ca_bundle,
                timeline_url=timeline_url,
                download_logs=download_logs,
            ),
        )
        return
    _import_history_file(ctx, _one_file(files), job, runtime_unit, dry_run, skip_invalid,
                         new_ids)


def _import_history_file(
    ctx: typer.Context,
    file: Path,
    job: str | None,
    runtime_unit: RuntimeUnit | None,
    dry_run: bool,
    skip_invalid: bool,
    new_ids: bool,
) -> None:
    """cobell's CSV/JSON or Bell's CSV: validated in a first streaming pass, then written in
    one transaction (all or nothing)."""
    from cobell_cli.store.interchange import HistoryFile

    name = "<stdin>" if str(file) == "-" else str(file)
    options = {"job": job, "runtime_unit": runtime_unit.value if runtime_unit else None}
    source = HistoryFile(file, _stdin_copy(), **options) if name == "<stdin>" else None
    source = source or HistoryFile.at(file, **options)
    valid, problems, invalid = _validate(source, name)
    if invalid and not skip_invalid:
        more = invalid - 1
        raise _import_error(
            name,
            f"{problems[0]}" + (f" (and {more} more invalid rows)" if more else ""),
            hint="nothing was imported; fix the file or pass --skip-invalid",
        )
    for problem in problems:
        warn(f"skipped {name}: {problem}")
    if invalid > len(problems):
        warn(f"skipped {name}: {invalid - len(problems)} more invalid rows")
    if dry_run:
        info(f"{name}: {valid} valid runs ({source.kind}); nothing written (--dry-run)")
        return
    with open_history(ctx) as history:
        ids = history.insert_runs(_valid_runs(source, name, skip_invalid), keep_ids=not new_ids)
    skipped = f", skipped {invalid} invalid" if invalid else ""
    info(f"imported {len(ids)} runs from {name} into {history.path}{skipped}")


SHOWN_PROBLEMS = 100  # invalid rows named one by one; the rest are counted


def _stdin_copy() -> Callable[[], Any]:
    """Standard input copied to a temporary file, so that it can be read twice (validate,
    then insert) without holding it in memory; each call opens a text stream on its start."""
    import os
    import shutil
    import tempfile

    copy = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the import: reopened
    shutil.copyfileobj(sys.stdin.buffer, copy)
    copy.flush()

    def open_text() -> Any:
        fd = os.dup(copy.fileno())
        os.lseek(fd, 0, os.SEEK_SET)
        return open(fd, encoding="utf-8-sig", newline="")

    return open_text


def _import_error(name: str, message: str, hint: str | None = None) -> Exception:
    from cobell_cli.errors import ImportFileError

    return ImportFileError(f"{name}: {message}", hint=hint)


@contextlib.contextmanager
def _reading(name: str) -> Iterator[None]:
    """A file that cannot be read, or is not a history, as one line naming it."""
    from cobell_cli.errors import ImportFileError

    try:
        yield
    except ImportFileError as exc:
        raise _import_error(name, str(exc), exc.hint) from None
    except FileNotFoundError:
        raise _import_error(name, "no such file") from None
    except OSError as exc:
        raise _import_error(name, f"cannot read it ({exc.strerror or exc})") from None


def _validate(source: Any, name: str) -> tuple[int, list[Any], int]:
    """The first pass: valid runs counted, invalid ones counted and the first few kept."""
    from cobell_cli.store.interchange import Problem

    valid = invalid = 0
    problems: list[Problem] = []
    with _reading(name):
        for item in source.check():
            if isinstance(item, Problem):
                invalid += 1
                if len(problems) < SHOWN_PROBLEMS:
                    problems.append(item)
            else:
                valid += 1
    return valid, problems, invalid


def _valid_runs(source: Any, name: str, skip_invalid: bool) -> Iterator[dict[str, Any]]:
    """The second pass, inside the insert's transaction: a run that is no longer valid (the
    file changed since the first pass) raises, and the transaction rolls back."""
    from cobell_cli.store.interchange import Problem

    with _reading(name):
        for item in source:
            if not isinstance(item, Problem):
                yield item
            elif not skip_invalid:
                raise _import_error(
                    name, f"{item} (the file changed while it was imported)", "nothing was imported"
                )


@app.command("export")
def export(
    ctx: typer.Context,
    fmt: ExportFormat = typer.Option(ExportFormat.csv, "--format", "-f", help="File format."),
    output_file: Path | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Write to this file (atomically) instead of standard output (also: -).",
    ),
    job: str | None = typer.Option(None, "--job", "-j", help="Only runs of this job."),
) -> None:
    """Export runs and their co-runners; `cobell history import` reads it back exactly.

    Example: cobell history export --format json -o history.json
    """
    import os
    import tempfile

    from cobell_cli.errors import CobellError
    from cobell_cli.store import interchange

    def write(history: Any, out: Any) -> int:
        runs = history.iter_runs(job=job)
        if fmt is ExportFormat.csv:
            return interchange.write_csv(runs, out)
        count = interchange.write_json(runs, out)
        out.write("\n")
        return count

    with open_history(ctx, create=False, read_only=True) as history:
        if output_file is None or str(output_file) == "-":
            write(history, sys.stdout)
            sys.stdout.flush()
            return
        target = output_file.resolve()
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                    count = write(history, fh)
                os.replace(tmp, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            raise CobellError(f"cannot write {output_file}: {exc.strerror}") from None
    info(f"exported {count} runs to {output_file}")


@app.command("rm")
def remove(
    ctx: typer.Context,
    run_ids: list[int] = typer.Argument(..., help="Ids of the runs to remove."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Remove runs (and their co-runner records) from the history.

    Example: cobell history rm 17 18 --yes
    """
    from cobell_cli.errors import UsageError

    with open_history(ctx, create=False) as history:
        missing = [i for i in run_ids if not _storable(i) or history.run(i) is None]
        if missing:
            raise UsageError(
                f"no run with id {', '.join(map(str, missing))}",
                hint="see `cobell history list`; nothing was removed",
            )
        if not yes:
            if not sys.stdin.isatty():
                raise UsageError(
                    "refusing to remove runs without confirmation", hint="pass --yes in scripts"
                )
            typer.confirm(f"Remove {len(run_ids)} run(s) from {history.path}?", abort=True)
        removed = history.delete_runs(run_ids)
    info(f"removed {removed} run(s)")


# -- import from the cluster's record (issue 14): YARN, Spark History Server, event logs ---------


@dataclass
class RecordImport:
    """The options of `history import` that read the cluster's record."""

    from_yarn: bool
    from_spark_history: str | None
    event_logs: list[Path] | None
    since: str | None
    job: str | None
    dry_run: bool
    as_json: bool
    vcores_per_container: float
    rm_url: list[str] | None
    ca_bundle: str | None
    timeline_url: str | None = None
    download_logs: bool = True


def _one_file(files: list[Path] | None) -> Path:
    from cobell_cli.errors import UsageError

    if not files or len(files) != 1:
        raise UsageError(
            "history import takes one FILE (or -)",
            hint="or import the cluster's record with --from-yarn, --from-spark-history URL "
            "or --from-event-logs PATH...",
        )
    return files[0]


def _import_record(ctx: typer.Context, opts: RecordImport) -> None:
    """Run one record import and print its summary (a line, or JSON on stdout)."""
    import time

    from cobell_cli import output
    from cobell_cli.errors import UsageError

    chosen = [opts.from_yarn, opts.from_spark_history is not None, opts.event_logs is not None]
    if sum(chosen) != 1 and not (opts.from_yarn and sum(chosen) == 2 and opts.event_logs is None):
        raise UsageError(
            "choose one of --from-yarn, --from-spark-history, --from-event-logs "
            "(or --from-yarn with --from-spark-history for exact executors)",
            hint="run one import per source; each is idempotent",
        )
    now = time.time()
    since = parse_since(opts.since or "30d", now)
    with (
        _progress(opts.as_json) as on_page,
        open_history(ctx, read_only=opts.dry_run) as history,
    ):
        if opts.from_yarn:
            summary = _from_yarn(ctx, history, opts, since, now, on_page)
        else:
            summary = _from_spark(ctx, history, opts, since, on_page)
    for message in summary.warnings:
        warn(message)
    if opts.as_json:
        typer.echo(output.to_json(summary.to_dict()))
    else:
        info(summary.line() + ("; nothing written (--dry-run)" if opts.dry_run else ""))


def _from_yarn(
    ctx: typer.Context,
    history: Any,
    opts: RecordImport,
    since: float,
    now: float,
    on_page: Any,
) -> Any:
    from cobell_cli.cli.common import cluster_flags, connect_cluster, settings
    from cobell_cli.sources.yarn_apps import import_from_yarn

    resolved = settings(ctx, **cluster_flags("yarn", opts.rm_url, None, opts.ca_bundle))
    cluster = connect_cluster(resolved, history.job_names())
    server = _history_server(ctx, opts) if opts.from_spark_history else None
    timeline = _timeline_server(ctx, opts) if opts.timeline_url else None
    return import_from_yarn(
        history,
        cluster,
        since=since,
        until=now,
        dry_run=opts.dry_run,
        default_job=opts.job,
        vcores_per_container=opts.vcores_per_container,
        on_page=on_page,
        spark_history=server,
        timeline=timeline,
    )


def _client(ctx: typer.Context, opts: RecordImport, what: str, fix: str) -> Any:
    """A JsonClient with the cluster's auth, TLS, timeout and retries (no user.name query)."""
    from cobell_cli.cli.common import settings
    from cobell_cli.cluster.http import JsonClient

    resolved = settings(ctx, ca_bundle=opts.ca_bundle)
    return JsonClient(
        what=what,
        auth="none" if resolved.auth == "simple" else resolved.auth,
        ca_bundle=resolved.ca_bundle,
        timeout_s=resolved.timeout_s,
        retries=resolved.retries,
        budget_s=resolved.cluster_budget_s,
        fix=fix,
    )


def _history_server(ctx: typer.Context, opts: RecordImport) -> Any:
    from cobell_cli.sources.spark_history import FIX, HistoryServer

    assert opts.from_spark_history is not None
    client = _client(ctx, opts, "Spark History Server", FIX)
    return HistoryServer(opts.from_spark_history, client)


def _timeline_server(ctx: typer.Context, opts: RecordImport) -> Any:
    from cobell_cli.sources.timeline import FIX, TimelineServer

    assert opts.timeline_url is not None
    return TimelineServer(opts.timeline_url, _client(ctx, opts, "Timeline Server", FIX))


def _from_spark(
    ctx: typer.Context, history: Any, opts: RecordImport, since: float, on_page: Any
) -> Any:
    from cobell_cli.cli.common import settings
    from cobell_cli.cluster.jobs import compile_patterns
    from cobell_cli.sources.spark_history import import_from_spark_history

    if opts.from_spark_history is None:
        return _from_event_logs(ctx, history, opts, since, on_page)
    resolved = settings(ctx, ca_bundle=opts.ca_bundle)
    return import_from_spark_history(
        history,
        _history_server(ctx, opts),
        since=since,
        dry_run=opts.dry_run,
        patterns=compile_patterns(resolved.job_patterns or {}),
        default_job=opts.job,
        on_app=on_page,
        logs_into=history.path.parent / "event-logs" if opts.download_logs else None,
    )


def _from_event_logs(
    ctx: typer.Context, history: Any, opts: RecordImport, since: float, on_page: Any
) -> Any:
    """Event logs read directly: every log under the paths (or those finished since --since)."""
    from cobell_cli.cli.common import settings
    from cobell_cli.cluster.jobs import compile_patterns
    from cobell_cli.errors import UsageError
    from cobell_cli.sources.event_apps import import_from_event_logs

    try:
        from cobell_cli.sources.eventlog import discover
    except ImportError:
        raise UsageError(
            "--from-event-logs needs the event-log reader (cobell_cli/sources/eventlog.py)",
            hint="use --from-spark-history",
        ) from None
    if not opts.event_logs:
        raise UsageError(
            "--from-event-logs needs at least one PATH",
            hint="give spark.eventLog.dir, a rolling log directory or a log file",
        )
    resolved = settings(ctx)
    return import_from_event_logs(
        history,
        discover(opts.event_logs),
        where=", ".join(map(str, opts.event_logs)),
        dry_run=opts.dry_run,
        since=since if opts.since else None,
        patterns=compile_patterns(resolved.job_patterns or {}),
        default_job=opts.job,
        on_app=on_page,
    )


@contextlib.contextmanager
def _progress(quiet: bool) -> Iterator[Callable[[int], None] | None]:
    """A progress count on stderr when it is a terminal (a long import says it is alive)."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description} {task.completed} apps"),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("reading", total=None)
        yield lambda n: bar.advance(task, n)
