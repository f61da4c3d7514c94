"""`cobell history`: list, show, summarise, import, export and remove recorded runs.

A thin layer over cobell_cli/api/runs.py: parse the options, call the API, render.
"""

from __future__ import annotations

import contextlib
import enum
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from cobell_cli.cli.common import CaBundleOpt, RmUrlOpt, info, job_name, open_history, warn

app = typer.Typer(
    help="Inspect, import, export and edit the run history.",
    no_args_is_help=True,
)

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




@app.command("list")
def list_runs(
    ctx: typer.Context,
    job: str | None = typer.Option(None, "--job", "-j", parser=job_name,
                                   help="Only runs of this job."),
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
    columns: list[str] | None = typer.Option(
        None, "--columns", "-c", metavar="NAME,...",
        help="The table's columns (default: id, job, status, scale_out, runtime_s, target_s, "
        "predicted_s, submitted, co_runners); also co_runner_jobs, app_id, source, excluded "
        "or any field of a run. JSON and CSV always have every field.",
    ),
) -> None:
    """List recorded runs, newest first.

    A run whose completion could not be written (history locked, disk full) is listed as
    `pending` until the next cobell that writes the history applies it from the journal.
    A run kept out of fitting by `history exclude` shows `(excl.)` after its status, one
    cobell kept out because its runtime cannot be right for its job `(implausible)`.

    Example: cobell history list --job sgd --since 7d --format csv

    Example: cobell history list --columns id,job,runtime_s,co_runner_jobs,app_id
    """
    import time

    from cobell_cli import api

    api.check_statuses(status)
    fmt = _list_format(fmt, as_json)
    since_ts = parse_since(since, time.time()) if since else None
    with open_history(ctx, create=False, read_only=True) as history:
        runs = api.list_runs(history, job=job, status=status, since=since_ts, limit=limit)
    _print_runs(runs, fmt, columns)


def _list_format(fmt: ListFormat, as_json: bool) -> ListFormat:
    """--json, as every other command spells it, is --format json; with another --format it is
    a contradiction, not a choice."""
    from cobell_cli.errors import UsageError

    if as_json and fmt is ListFormat.csv:
        raise UsageError("--json and --format csv ask for two formats",
                         hint="give one of them")
    return ListFormat.json if as_json else fmt


def _print_runs(runs: list[dict[str, Any]], fmt: ListFormat,
                columns: list[str] | None = None) -> None:
    from cobell_cli import api, output
    from cobell_cli.cli import history_view

    chosen = (history_view.check_columns(columns, api.run_columns()) if columns
              else history_view.DEFAULT_COLUMNS)
    if fmt is ListFormat.json:  # as `show --json`: the command as its list of arguments
        typer.echo(output.to_json([history_view.show_record(r) for r in api.run_records(runs)]))
    elif fmt is ListFormat.csv:
        typer.echo(api.runs_csv(runs), nl=False)
    elif runs:
        typer.echo(history_view.list_table(runs, chosen))
    else:
        info("no runs match")


@app.command("show")
def show(
    ctx: typer.Context,
    run_id: int = typer.Argument(..., help="Run id (see `cobell history list`)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show one run in full, with every co-runner it overlapped (times in local time; in
    --json epoch seconds in the `_at` fields and the command as its list of arguments).

    Example: cobell history show 42
    """
    from cobell_cli import api, output
    from cobell_cli.cli import history_view

    with open_history(ctx, create=False, read_only=True) as history:
        run = api.get_run(history, run_id)
    if as_json:
        typer.echo(output.to_json(history_view.show_record(run)))
        return
    for line in history_view.show_lines(run):
        typer.echo(line)


@app.command("jobs")
def jobs(
    ctx: typer.Context,
    fmt: ListFormat = typer.Option(ListFormat.table, "--format", "-f", help="Output format."),
    as_json: bool = typer.Option(False, "--json", help="Same as --format json."),
) -> None:
    """One line per job: runs, distinct scale-outs, last run, median runtime.

    Example: cobell history jobs --format json
    """
    from cobell_cli import api, output

    fmt = _list_format(fmt, as_json)
    with open_history(ctx, create=False, read_only=True) as history:
        rows = api.list_jobs(history)
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
        False, "--json", help="Print the import summary as JSON (on standard output)."
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

    Importing a file again adds only the runs the history does not hold yet (the same job,
    start, runtime and scale-out), and says how many it skipped.

    Example: cobell history import ../shared/data/bell/sgd.spark.csv --job sgd --runtime-unit ms

    Example: cobell history import --from-yarn --since 30d --dry-run

    Example: cobell history import --from-spark-history http://shs:18080 --since 90d --json

    Example: cobell history import --from-event-logs /var/log/spark-events
    """
    if job is not None:
        from cobell_cli import api

        api.check_job_name(job)
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
    _import_history_file(ctx, _one_file(files), job, runtime_unit,
                         FileImport(dry_run, skip_invalid, new_ids, as_json))


def _import_history_file(
    ctx: typer.Context,
    file: Path,
    job: str | None,
    runtime_unit: RuntimeUnit | None,
    opts: FileImport,
) -> None:
    """cobell's CSV/JSON or Bell's CSV: validated in a first streaming pass, then written in
    one transaction (all or nothing); runs the history holds already are skipped and counted.
    The summary goes to stderr, or with --json to stdout."""
    from cobell_cli import api, output

    checked = api.check_file(
        file,
        job=job,
        runtime_unit=runtime_unit.value if runtime_unit else None,
        skip_invalid=opts.skip_invalid,
        open_text=_stdin_copy() if str(file) == "-" else None,
    )
    for line in checked.skipped():
        warn(line)
    with open_history(ctx, read_only=opts.dry_run) as history:
        if opts.dry_run:
            api.count_duplicates(history, checked)
        else:
            api.import_checked(history, checked, skip_invalid=opts.skip_invalid,
                               new_ids=opts.new_ids)
    if opts.as_json:
        typer.echo(output.to_json(checked.to_dict(history.path, dry_run=opts.dry_run)))
    else:
        info(checked.line(history.path, dry_run=opts.dry_run))


@dataclass
class FileImport:
    """The options of `history import FILE` besides the file's own (job, unit)."""

    dry_run: bool
    skip_invalid: bool
    new_ids: bool
    as_json: bool


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
    job: str | None = typer.Option(None, "--job", "-j", parser=job_name,
                                   help="Only runs of this job."),
) -> None:
    """Export runs and their co-runners; `cobell history import` reads it back exactly.

    Example: cobell history export --format json -o history.json
    """
    from cobell_cli import api

    with open_history(ctx, create=False, read_only=True) as history:
        if output_file is None or str(output_file) == "-":
            api.export_runs(history, sys.stdout, fmt=fmt.value, job=job)
            sys.stdout.flush()
            return
        count = api.export_runs(history, output_file, fmt=fmt.value, job=job)
    info(f"exported {_runs_text(count)} to {output_file}")


def _runs_text(n: int) -> str:
    from cobell_cli.api import count

    return count(n, "run")


@app.command("rm")
def remove(
    ctx: typer.Context,
    run_ids: list[int] = typer.Argument(..., help="Ids of the runs to remove."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
) -> None:
    """Remove runs (and their co-runner records) from the history.

    Example: cobell history rm 17 18 --yes
    """
    from cobell_cli import api

    with open_history(ctx, create=False) as history:
        removed = api.remove_runs(history, run_ids,
                                  confirm=None if yes else _confirm_removal(history.path))
    info(f"removed {_runs_text(removed)}")


def _confirm_removal(path: Path) -> Callable[[int], None]:
    """Ask on a terminal; refuse without one (a script says --yes)."""
    from cobell_cli.errors import UsageError

    def confirm(count: int) -> None:
        if not sys.stdin.isatty():
            raise UsageError(
                "refusing to remove runs without confirmation", hint="pass --yes in scripts"
            )
        typer.confirm(f"Remove {_runs_text(count)} from {path}?", abort=True)

    return confirm


@app.command("exclude")
def exclude(
    ctx: typer.Context,
    run_ids: list[int] = typer.Argument(..., help="Ids of the runs to keep out of the model."),
    as_json: bool = typer.Option(False, "--json", help="Print what changed as JSON."),
) -> None:
    """Keep runs out of fitting and planning without deleting them (a stray 0.01 s run, a run
    on a broken node): they stay in the history, marked excluded; `include` undoes it.

    Example: cobell history exclude 17
    """
    _set_excluded(ctx, run_ids, True, as_json)


@app.command("include")
def include(
    ctx: typer.Context,
    run_ids: list[int] = typer.Argument(..., help="Ids of excluded runs to use again."),
    as_json: bool = typer.Option(False, "--json", help="Print what changed as JSON."),
) -> None:
    """Use runs kept out of fitting and planning again: by `history exclude`, or by cobell
    for an implausible runtime (`history show` says which and why); for good.

    Example: cobell history include 17
    """
    _set_excluded(ctx, run_ids, False, as_json)


def _set_excluded(ctx: typer.Context, run_ids: list[int], excluded: bool, as_json: bool) -> None:
    from cobell_cli import api, output

    with open_history(ctx, create=False) as history:
        changed = api.set_excluded(history, run_ids, excluded)
    verb = "excluded" if excluded else "included"
    if as_json:
        typer.echo(output.to_json({verb: changed, "unchanged": [
            i for i in dict.fromkeys(run_ids) if i not in changed]}))
        return
    already = len(dict.fromkeys(run_ids)) - len(changed)
    info(f"{verb} {_runs_text(len(changed))}" + (f"; {already} already {verb}" if already else "")
         + ("; planning and fitting leave them out" if excluded and changed else ""))


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
    from cobell_cli import api
    from cobell_cli.cli.common import cluster_flags, settings

    return api.import_from_yarn(
        history,
        settings(ctx, **cluster_flags("yarn", opts.rm_url, None, opts.ca_bundle)),
        since=since,
        until=now,
        dry_run=opts.dry_run,
        job=opts.job,
        vcores_per_container=opts.vcores_per_container,
        spark_history_url=opts.from_spark_history,
        timeline_url=opts.timeline_url,
        on_page=on_page,
    )


def _from_spark(
    ctx: typer.Context, history: Any, opts: RecordImport, since: float, on_page: Any
) -> Any:
    from cobell_cli import api
    from cobell_cli.cli.common import settings

    if opts.from_spark_history is None:
        return _from_event_logs(ctx, history, opts, since, on_page)
    return api.import_from_spark_history(
        history,
        settings(ctx, ca_bundle=opts.ca_bundle),
        opts.from_spark_history,
        since=since,
        dry_run=opts.dry_run,
        job=opts.job,
        download_logs=opts.download_logs,
        on_app=on_page,
    )


def _from_event_logs(
    ctx: typer.Context, history: Any, opts: RecordImport, since: float, on_page: Any
) -> Any:
    """Event logs read directly: every log under the paths (or those finished since --since)."""
    from cobell_cli import api
    from cobell_cli.cli.common import settings

    return api.import_from_event_logs(
        history,
        settings(ctx),
        opts.event_logs or [],
        since=since if opts.since else None,
        dry_run=opts.dry_run,
        job=opts.job,
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
