"""`cobell submit`: plan, run the command at the planned scale-out, record what happened."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import typer

from cobell_cli.cli.common import (
    AllowNoClusterOpt,
    CaBundleOpt,
    ClusterOpt,
    ConfidenceOpt,
    DeadlineOpt,
    InputSizeOpt,
    InputToleranceOpt,
    JobOpt,
    LabelPriceOpt,
    MaxScaleOutOpt,
    MaxWaitOpt,
    MemoryConfidenceOpt,
    MinimizeOpt,
    MinScaleOutOpt,
    NodeLabelOpt,
    RmUrlOpt,
    StandaloneUrlOpt,
    StartNowOpt,
    StepOpt,
    StrictOpt,
    TargetOpt,
    cluster_flags,
    deadline_request,
    info,
    label_flags,
    planning_flags,
    settings,
    unused_options,
    warn,
)
from cobell_cli.cli.run_words import against_target, ending

if TYPE_CHECKING:
    from cobell_cli.api import Outcome, Progress, SubmitPlan, SubmitResult


class LiveLine:
    """'elapsed vs predicted' on the terminal's last line, cleared whenever the job writes."""

    def __init__(self, status: BinaryIO, predicted_s: float | None = None) -> None:
        self.status = status
        self.predicted_s = predicted_s
        self.shown = False
        self.at_line_start = True

    def clear(self) -> None:
        if self.shown:
            self.status.write(b"\r\x1b[K")
            self.status.flush()
            self.shown = False

    def wrap(self, stream: BinaryIO) -> _ClearingStream:
        return _ClearingStream(self, stream)

    def tick(self, progress: Progress) -> None:
        if not self.at_line_start:
            return  # the job is mid-line (a progress bar): do not draw over it
        self.predicted_s = progress.predicted_s
        predicted = f" / predicted {self.predicted_s:.0f} s" if self.predicted_s else ""
        self.clear()
        self.status.write(f"[cobell] elapsed {progress.elapsed_s:.0f} s{predicted}".encode())
        self.status.flush()
        self.shown = True


class _ClearingStream:
    def __init__(self, live: LiveLine, stream: BinaryIO) -> None:
        self.live = live
        self.stream = stream

    def write(self, data: bytes) -> int:
        self.live.clear()
        self.stream.write(data)
        if data:
            self.live.at_line_start = data.endswith(b"\n")
        return len(data)

    def flush(self) -> None:
        self.stream.flush()


def submit(
    ctx: typer.Context,
    job: JobOpt,
    target_runtime: TargetOpt = None,
    command: list[str] = typer.Argument(
        ..., metavar="-- COMMAND...", help="The job's command (spark-submit, flink run, ...)."
    ),
    min_scale_out: MinScaleOutOpt = None,
    max_scale_out: MaxScaleOutOpt = None,
    step: StepOpt = None,
    confidence: ConfidenceOpt = None,
    input_path: str | None = typer.Option(
        None, "--input", metavar="PATH", help="Input path or hdfs:// URL whose size is measured."
    ),
    input_size: InputSizeOpt = None,
    input_tolerance: InputToleranceOpt = None,
    cores_per_executor: int | None = typer.Option(
        None, "--cores-per-executor", min=1, help="Standalone: cores of each executor (default 1)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Print the plan and command; run nothing."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON summary line at the end (for cron and scripts)."
    ),
    log_file: Path | None = typer.Option(
        None, "--log-file", metavar="FILE", help="Also append the job's output to this file."
    ),
    strict: StrictOpt = False,
    spark_log_level: str | None = typer.Option(
        None,
        "--spark-log-level",
        metavar="LEVEL",
        help="Spark: the job's log level (spark.log.level), e.g. WARN or ERROR to keep Spark's "
        "INFO lines out of the way; a level the command sets itself is kept.",
    ),
    minimize: MinimizeOpt = "executor-seconds",
    memory_confidence: MemoryConfidenceOpt = None,
    keep_memory: bool = typer.Option(
        False,
        "--keep-memory",
        help="Spark: leave the executor memory as the command or Spark's defaults have it "
        "(implied when the command sets --executor-memory); cobell still warns when its "
        "memory model finds it too small or far too large.",
    ),
    retry_on_oom: int = typer.Option(
        0,
        "--retry-on-oom",
        min=0,
        max=10,
        metavar="N",
        help="Spark: when the run fails for memory, run it again, at most N times, each at "
        "the larger executor memory the memory model bounds the need at after the failure; "
        "every attempt is recorded as its own run. Example: --retry-on-oom 2.",
    ),
    deadline: DeadlineOpt = None,
    max_wait: MaxWaitOpt = None,
    start_now: StartNowOpt = False,
    node_label: NodeLabelOpt = None,
    label_price: LabelPriceOpt = None,
    event_log_dir: str | None = typer.Option(
        None,
        "--event-log-dir",
        metavar="DIR|off",
        help="Spark: where the run writes its event log, read afterwards for the what-if "
        "(default: event-logs/ next to the history; off: leave event logging alone).",
    ),
    cluster: ClusterOpt = None,
    rm_url: RmUrlOpt = None,
    standalone_url: StandaloneUrlOpt = None,
    ca_bundle: CaBundleOpt = None,
    allow_no_cluster: AllowNoClusterOpt = None,
) -> None:
    """Run a job at the smallest scale-out predicted to meet the target, and record the run.

    The exit code is the job's own once it ran; before that, cobell's (see EXIT STATUS).
    Nothing about the history changes that: a completion the history cannot take (locked,
    disk full) is journalled beside it and recorded by the next cobell that writes it.

    SIGINT, SIGTERM and SIGHUP (a closed terminal) are forwarded to the job, which ends as it
    would without cobell; the run is then recorded `killed` and never fitted, and its YARN
    application, if it still runs (cluster deploy mode), is killed through the
    ResourceManager: one line says so, or names the application and the command that kills
    it. Before the job starts they end cobell (128+N); after it ended they only cut cobell's
    own work short. Under `nohup`, SIGHUP stays ignored by cobell and the job.

    Risk-aware by default: the smallest scale-out whose P(meet) is at least 0.95 (its upper
    bound is within the target); every finished run's actual/predicted ratio is recorded and
    calibrates the next decision. --confidence point reproduces the paper's point
    decision. The plan it prints is predict's: its words (prediction, upper bound, P(meet),
    meets, executor-s) are explained in `cobell predict --help`.

    Example: cobell submit -j nightly-sgd -t 350 -- spark-submit --master yarn app.py

    Example: cobell submit -j nightly-sgd -t 350 --confidence 0.97 -- spark-submit app.py

    Example: cobell submit -j nightly-sgd -t 6min --spark-log-level WARN -- spark-submit app.py

    Spark: each executor's memory is sized with the scale-out from the job's runs with a
    measured memory peak (--executor-memory, and the overhead on YARN), unless the command
    sets it or --keep-memory; a run that fails for memory is recorded with failure_reason
    memory, and --retry-on-oom N runs it again at a larger memory.

    Example: cobell submit -j etl -t 600 --retry-on-oom 2 -- spark-submit --master yarn etl.py

    With --deadline it weighs starting now against waiting for running apps (and other
    waiting submits on the same history) to end, and may wait: it says on one line what for
    and until when; SIGINT or SIGTERM end the wait (128+N, nothing started). The run records
    how long it waited (waited_s), its deadline_at and its start_reason.

    Example: cobell submit -j nightly-report --deadline 06:00 -- spark-submit report.py

    Example: cobell submit -j etl -t 600 --node-label auto --label-price fast=2 -- spark-submit
    --master yarn --queue batch etl.py
    """
    from cobell_cli import api

    size = _input_bytes(input_path, input_size)
    flags = {
        **planning_flags(min_scale_out, max_scale_out, step, confidence, input_tolerance),
        **cluster_flags(cluster, rm_url, standalone_url, ca_bundle, allow_no_cluster),
        "event_log_dir": event_log_dir,
        **label_flags(node_label, label_price),
    }
    unused_options(ctx, flags, None if size is None else str(size), strict)
    request = deadline_request(deadline, max_wait, start_now, target_runtime, time.time(),
                               minimize=minimize, strict=strict)
    live = LiveLine(sys.stderr.buffer) if sys.stderr.isatty() and not dry_run else None
    view = _View(as_json, dry_run, live)
    job_run = api.Submit(
        settings(ctx, **flags), job=job, command=command, target_s=target_runtime,
        deadline=request, input_bytes=size, cores_per_executor=cores_per_executor,
        spark_log_level=spark_log_level, memory_confidence=memory_confidence,
        keep_memory=keep_memory, retry_on_oom=retry_on_oom, minimize=minimize, strict=strict,
        log_file=log_file, stdout=live.wrap(sys.stdout.buffer) if live else None,
        stderr=live.wrap(sys.stderr.buffer) if live else None, on_planned=view.planned,
        on_progress=live.tick if live else None, on_finished=view.finished,
        on_note=info, on_warning=warn)
    if dry_run:
        job_run.plan(dry_run=True)
        return
    try:
        result = job_run.run()
    finally:
        view.finished(None)
    with contextlib.suppress(OSError):  # a terminal that has gone (SIGHUP) gets nothing more
        _report(result, as_json)
        job_run.prepare_next_run()
    raise typer.Exit(result.exit_code)


class _View:
    """What the terminal shows of a submit: the plan and the command before the job, the
    live line while it runs (on a terminal)."""

    def __init__(self, as_json: bool, dry_run: bool, live: LiveLine | None) -> None:
        self.as_json, self.dry_run, self.live = as_json, dry_run, live

    def planned(self, planned: SubmitPlan) -> None:
        import shlex

        from cobell_cli.cli.predict import render
        from cobell_cli.output import to_json

        shown = shlex.join(planned.command.shown)
        if self.dry_run and self.as_json:
            typer.echo(to_json(planned.to_dict()))
        elif self.dry_run:
            typer.echo(render(planned.prediction))
            typer.echo(f"command: {shown}")
            info("dry run: nothing was started")
        elif not self.as_json:
            info(render(planned.prediction))
            info(f"cobell: running {shown}")

    def finished(self, _outcome: Outcome | None) -> None:
        if self.live is not None:
            self.live.clear()


def _input_bytes(input_path: str | None, input_size: str | None) -> int | None:
    from cobell_cli import api
    from cobell_cli.cli.common import parse_size
    from cobell_cli.errors import UsageError

    if input_path is not None and input_size is not None:
        raise UsageError("give --input or --input-size, not both")
    if input_size is not None:
        return parse_size(input_size)
    return api.measure_input(input_path) if input_path is not None else None


def _report(result: SubmitResult, as_json: bool) -> None:
    """The summary: one JSON line (with the plan's warnings, printed before the job, as
    `predict --json` carries them: a script reads only it), or one line for a person."""
    from cobell_cli.api import count, duration_text
    from cobell_cli.output import to_json

    if as_json:
        typer.echo(to_json(result.to_dict()))
        return
    o = result.outcome
    how = ending(o.status, o.runtime_s, o.exit_code, o.failure_reason)
    against = against_target(o.status, o.runtime_s, o.predicted_s, o.target_s)
    info(f"cobell: run {o.run_id} {how} at scale-out {o.scale_out} ({against}); "
         f"{count(len(o.co_runners), 'co-runner')} recorded"
         + (f"; app {o.app_id}" if o.app_id else ""))
    if len(result.attempts) > 1:
        info(f"cobell: {len(result.attempts)} attempts, {duration_text(result.total_s)} in "
             f"all (target {duration_text(o.target_s)})")
