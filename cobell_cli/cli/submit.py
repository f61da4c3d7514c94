"""`cobell submit`: plan, run the command at the planned scale-out, record what happened."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import typer

from cobell_cli.cli.common import (
    AllowNoClusterOpt,
    CaBundleOpt,
    ClusterOpt,
    ConfidenceOpt,
    InputSizeOpt,
    InputToleranceOpt,
    JobOpt,
    LabelPriceOpt,
    MaxScaleOutOpt,
    MinScaleOutOpt,
    NodeLabelOpt,
    RmUrlOpt,
    StandaloneUrlOpt,
    StepOpt,
    StrictOpt,
    TargetOpt,
    cluster_flags,
    info,
    label_flags,
    open_history,
    planning_flags,
    settings,
    warn,
)

if TYPE_CHECKING:
    from cobell_cli.api import Prediction
    from cobell_cli.run.launch import Injection
    from cobell_cli.run.submit import Outcome


class LiveLine:
    """'elapsed vs predicted' on the terminal's last line, cleared whenever the job writes."""

    def __init__(self, status: BinaryIO, predicted_s: float | None) -> None:
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

    def tick(self, elapsed_s: float) -> None:
        if not self.at_line_start:
            return  # the job is mid-line (a progress bar): do not draw over it
        predicted = f" / predicted {self.predicted_s:.0f} s" if self.predicted_s else ""
        self.clear()
        self.status.write(f"[cobell] elapsed {elapsed_s:.0f} s{predicted}".encode())
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
    target_runtime: TargetOpt,
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
    would without cobell; the run is then recorded `killed` and never fitted. Before the job
    starts they end cobell (128+N); after it ended they only cut cobell's own work short.
    Under `nohup`, SIGHUP stays ignored by cobell and the job.

    Risk-aware by default: the smallest scale-out whose estimated probability of meeting
    the target is at least 0.9; every finished run's actual/predicted ratio is recorded and
    calibrates the next decision. --confidence point reproduces the paper's point decision.

    Example: cobell submit -j nightly-sgd -t 350 -- spark-submit --master yarn app.py

    Example: cobell submit -j nightly-sgd -t 350 --confidence 0.97 -- spark-submit app.py

    Example: cobell submit -j etl -t 600 --node-label auto --label-price fast=2 -- spark-submit
    --master yarn --queue batch etl.py
    """
    import time

    from cobell_cli.cli.predict import run_prediction
    from cobell_cli.run import event_capture, launch

    size = _input_bytes(input_path, input_size)
    launch.inject(command, 1, job, cores_per_executor)  # bad commands fail before planning
    submitted_at = time.time()
    flags = {
        **planning_flags(min_scale_out, max_scale_out, step, confidence, input_tolerance),
        **cluster_flags(cluster, rm_url, standalone_url, ca_bundle, allow_no_cluster),
        "event_log_dir": event_log_dir,
        **label_flags(node_label, label_price),
    }
    prediction, cluster_adapter = run_prediction(
        ctx,
        job=job,
        target_s=target_runtime,
        input_bytes=size,
        flags=flags,
        require_history=False,
        now=submitted_at,
        queue=launch.spark_queue(command),
    )
    injected = launch.inject(command, prediction.plan.scale_out, job, cores_per_executor)
    if prediction.node_label is not None:
        injected = launch.with_node_label(injected, prediction.node_label)
    injected = event_capture.prepare(
        injected, settings(ctx, **flags).event_log_path, create=not dry_run
    )
    _show_plan(prediction, injected, dry_run, as_json, strict, target_runtime)
    if dry_run:
        return
    outcome = _run(ctx, prediction, cluster_adapter, injected, size, submitted_at, log_file)
    planned = [*injected.warnings, *prediction.all_warnings]
    _after_the_job(ctx, outcome, as_json, flags, job, target_runtime, size, planned)
    raise typer.Exit(outcome.exit_code)


def _input_bytes(input_path: str | None, input_size: str | None) -> int | None:
    from cobell_cli.cli.common import parse_size
    from cobell_cli.errors import UsageError
    from cobell_cli.run.submit import input_size as measure

    if input_path is not None and input_size is not None:
        raise UsageError("give --input or --input-size, not both")
    if input_size is not None:
        return parse_size(input_size)
    return measure(input_path) if input_path is not None else None


def _show_plan(
    prediction: Prediction,
    injected: Injection,
    dry_run: bool,
    as_json: bool,
    strict: bool,
    target_s: float,
) -> None:
    """The plan and the command, before anything starts; --strict stops an infeasible one."""
    import shlex

    from cobell_cli.cli.predict import render
    from cobell_cli.errors import NoFeasibleScaleOut
    from cobell_cli.output import to_json
    from cobell_cli.run import launch

    plan = prediction.plan
    for message in injected.warnings:
        warn(message)
    shown = shlex.join(launch.redact(injected.argv))
    if dry_run:
        if as_json:
            typer.echo(to_json({**prediction.to_dict(), "command": launch.redact(injected.argv)}))
        else:
            typer.echo(render(prediction))
            typer.echo(f"command: {shown}")
            info("dry run: nothing was started")
    elif not as_json:
        info(render(prediction))
        info(f"cobell: running {shown}")
    if not plan.feasible:
        for message in plan.warnings:
            warn(message)
        if strict:
            raise NoFeasibleScaleOut(
                f"no scale-out in [{plan.min_scale_out}, {plan.max_scale_out}] meets the "
                f"{target_s:g} s target; nothing was started",
                hint="raise --max-scale-out or the target, or drop --strict",
            )


def _run(
    ctx: typer.Context,
    prediction: Prediction,
    cluster_adapter: object,
    injected: Injection,
    size: int | None,
    submitted_at: float,
    log_file: Path | None,
) -> Outcome:
    """The job, with the live 'elapsed' line on a terminal."""
    from cobell_cli.run import launch
    from cobell_cli.run.submit import execute

    live = LiveLine(sys.stderr.buffer, prediction.plan.predicted_s) if sys.stderr.isatty() else None
    stdout = live.wrap(sys.stdout.buffer) if live else None
    stderr = live.wrap(sys.stderr.buffer) if live else None
    try:
        return execute(
            history_path=settings(ctx).db_path,
            cluster=cluster_adapter,
            prediction=prediction,
            argv=injected.argv,
            stored_command=launch.redact(injected.argv),
            launcher=injected.launcher,
            input_bytes=size,
            submitted_at=submitted_at,
            log_file=log_file,
            stdout=stdout,  # type: ignore[arg-type]
            stderr=stderr,  # type: ignore[arg-type]
            on_tick=live.tick if live else None,
        )
    finally:
        if live is not None:
            live.clear()


def _after_the_job(
    ctx: typer.Context,
    outcome: Outcome,
    as_json: bool,
    flags: dict,
    job: str,
    target_s: float,
    input_bytes: int | None,
    planned: list[str],
) -> None:
    """The summary, then the model warm-up; a signal abandons the rest (the job's exit code
    stands), and a terminal that has gone (SIGHUP) just gets nothing more."""
    from cobell_cli import interrupts

    try:
        _report(outcome, as_json, planned)
        with interrupts.abandonable():
            if outcome.status == "succeeded":
                prepare_next_run(ctx, flags, job, target_s, input_bytes)
    except interrupts.Abandoned as exc:
        with contextlib.suppress(OSError):
            warn(f"{exc.line()} after the job ended: cobell's own remaining work was dropped")
    except OSError:
        pass


def _report(outcome: Outcome, as_json: bool, planned: list[str]) -> None:
    """The run's warnings and summary. The JSON line carries the planning's warnings too
    (printed before the job, as `predict --json` carries them): a script reads only it."""
    from cobell_cli.output import to_json

    for message in outcome.warnings:
        warn(message)
    if as_json:
        summary = outcome.to_dict()
        typer.echo(to_json({**summary, "warnings": [*planned, *summary["warnings"]]}))
    else:
        verdict = "met" if outcome.met_target else "missed"
        predicted = f"predicted {outcome.predicted_s:.0f} s, " if outcome.predicted_s else ""
        info(
            f"cobell: run {outcome.run_id} {outcome.status} in {outcome.runtime_s:.1f} s at "
            f"scale-out {outcome.scale_out} ({predicted}target {outcome.target_s:g} s {verdict}); "
            f"{len(outcome.co_runners)} co-runner(s) recorded"
            + (f"; app {outcome.app_id}" if outcome.app_id else "")
        )


def prepare_next_run(
    ctx: typer.Context, flags: dict, job: str, target_s: float, input_bytes: int | None
) -> None:
    """Warm the model cache for the next submit; a failure here must not touch the exit code."""
    import time

    from cobell_cli import api
    from cobell_cli.errors import CobellError

    resolved = settings(ctx, **flags)
    if not resolved.model_cache:
        return
    info("cobell: fitting the model for the job's next run (COBELL_MODEL_CACHE=off skips this)")
    try:
        with open_history(ctx, create=False) as history:
            api.warm_model_cache(
                history,
                resolved,
                job=job,
                target_s=target_s,
                now=time.time(),
                input_bytes=input_bytes,
            )
    except (CobellError, ValueError, OSError) as exc:
        warn(f"model cache not warmed for the next run: {exc}")
