"""`cobell submit`: plan, run the command at the planned scale-out, record what happened."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
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
    open_history,
    planning_flags,
    settings,
    warn,
)

if TYPE_CHECKING:
    from cobell_cli.api import MemoryAsk, Prediction
    from cobell_cli.api.deadlines import DeadlineRequest
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
    would without cobell; the run is then recorded `killed` and never fitted. Before the job
    starts they end cobell (128+N); after it ended they only cut cobell's own work short.
    Under `nohup`, SIGHUP stays ignored by cobell and the job.

    Risk-aware by default: the smallest scale-out whose P(meet) is at least 0.9 (its upper
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
    import time

    from cobell_cli.api import check_minimize
    from cobell_cli.cli.predict import run_prediction
    from cobell_cli.run import event_capture, launch

    size = _input_bytes(input_path, input_size)
    from cobell_cli.run.child import check_can_start

    probe = launch.inject(command, 1, job, cores_per_executor)  # bad commands fail before
    if not dry_run:  # planning, and before any run is recorded (a dry run may plan for
        check_can_start(probe.argv, log_file)  # another machine's command)
    ask = _memory_ask(command, keep_memory, memory_confidence)  # and bad memory strings
    check_minimize(minimize)
    submitted_at = time.time()
    queue = launch.spark_queue(command)
    request = deadline_request(deadline, max_wait, start_now, target_runtime, submitted_at,
                               queue=queue, minimize=minimize)
    flags = {
        **planning_flags(min_scale_out, max_scale_out, step, confidence, input_tolerance),
        **cluster_flags(cluster, rm_url, standalone_url, ca_bundle, allow_no_cluster),
        "event_log_dir": event_log_dir,
        **label_flags(node_label, label_price),
    }
    row = None
    attempts: list[Outcome] = []
    try:
        while True:
            if request is not None and not attempts:
                prediction, cluster_adapter, row = _start_by_deadline(
                    ctx, job, target_runtime, request, size, flags, dry_run, strict,
                    ask if request.minimize == "memory-mb-seconds" else None)
            else:
                prediction, cluster_adapter = run_prediction(
                    ctx,
                    job=job,
                    target_s=_target_now(target_runtime, request),
                    input_bytes=size,
                    flags=flags,
                    require_history=False,
                    now=submitted_at if not attempts else time.time(),
                    memory=ask,
                    minimize=minimize,
                    queue=queue,
                )
            injected = launch.inject(command, prediction.plan.scale_out, job, cores_per_executor)
            if prediction.node_label is not None:
                injected = launch.with_node_label(injected, prediction.node_label)
            injected, memory = _with_memory(injected, prediction, ask, attempts)
            if spark_log_level is not None:
                injected = launch.with_spark_log_level(injected, spark_log_level)
            starts = not dry_run and (prediction.plan.feasible or not strict)
            injected = event_capture.prepare(
                injected, settings(ctx, **flags).event_log_path, create=starts
            )
            target_s = prediction.plan.target_s
            _show_plan(prediction, injected, dry_run, as_json, strict and row is None, target_s)
            if dry_run:
                return
            outcome = _run(ctx, prediction, cluster_adapter, injected, size,
                           submitted_at if not attempts else time.time(), log_file, memory, row)
            attempts.append(outcome)
            if not _retry(outcome, attempts, retry_on_oom):
                break
    finally:
        if row is not None:
            from cobell_cli.api.deadlines import forget

            forget(settings(ctx).db_path, row)
    planned = [*injected.warnings, *prediction.all_warnings]
    _after_the_job(ctx, attempts, as_json, flags, job, target_s, size, planned)
    raise typer.Exit(outcome.exit_code)


def _target_now(target_s: float | None, request: DeadlineRequest | None) -> float:
    """The runtime target of a plan made now: the given one, or (a retry under --deadline)
    what the deadline leaves, whichever is shorter."""
    import time

    left = None if request is None else max(request.deadline_at - time.time(), 1.0)
    if target_s is None:
        assert left is not None  # deadline_request demands one of the two
        return left
    return target_s if left is None else min(target_s, left)


def _memory_ask(command: list[str], keep: bool, confidence: float | None) -> MemoryAsk | None:
    """What the planner may size for a Spark command (None: not a Spark command); a memory
    string in the command or its properties file that Spark could not read is a usage error
    before anything starts."""
    from cobell_cli.api import MemoryAsk
    from cobell_cli.run import event_capture, launch

    launcher = launch.detect_launcher(command)
    if launcher not in launch.SPARK_LAUNCHERS:
        if launcher == "flink":
            warn("memory: not sized for Flink (taskmanager memory stays as configured)")
        return None
    inherited = event_capture.inherited_properties(
        command, prefixes=(launch.EXECUTOR_MEMORY, launch.EXECUTOR_OVERHEAD)
    )
    user = launch.user_memory(command, inherited)
    return MemoryAsk(
        backend="yarn" if launcher == "spark-yarn" else "standalone",
        user_memory_mb=user.executor_memory_mb,
        user_overhead_mb=user.executor_overhead_mb,
        confidence=confidence,
        keep=keep or user.given,
    )


def _with_memory(
    injected: Injection,
    prediction: Prediction,
    ask: MemoryAsk | None,
    attempts: list[Outcome],
) -> tuple[Injection, dict[str, int | None] | None]:
    """The command with the planned executor memory, unless the user's is kept; a retry after
    a memory failure overrides the user's (it just proved too small). Returns what the run
    is given, to record with it (None: unknown)."""
    from cobell_cli.run import launch

    memory = prediction.plan.memory
    if ask is None or memory is None:
        return injected, None
    kept = {"executor_memory_mb": ask.user_memory_mb,
            "executor_overhead_mb": ask.user_overhead_mb}
    retry = bool(attempts) and attempts[-1].failure_reason == "memory"
    if memory.get("upper_peak_mb") is None:  # not sized: nothing to change
        return injected, kept
    if ask.keep and not retry:
        return injected, kept
    heap, overhead = memory.get("executor_memory_mb"), memory.get("executor_overhead_mb")
    if retry and ask.keep:
        heap = _retry_heap(memory, attempts[-1])
        warn(f"memory: the last attempt failed for memory at {attempts[-1].executor_memory_mb} "
             f"MB; this one runs at {heap} MB")
    planned = {"executor_memory_mb": heap, "executor_overhead_mb": overhead}
    return launch.with_memory(injected, int(heap), overhead), planned  # type: ignore[arg-type]


def _retry_heap(memory: dict, failed: Outcome) -> int:
    """The heap for a retry of a run whose memory the user set: the model's bound after the
    failure, and above the memory that failed."""
    import math

    from cobell_cli.core.memory.sizing import STEP_MB

    bound = math.ceil(float(memory.get("upper_peak_mb") or 0) / STEP_MB) * STEP_MB
    return max(bound, (failed.executor_memory_mb or 0) + STEP_MB)


def _retry(outcome: Outcome, attempts: list[Outcome], retries: int) -> bool:
    """Run again? Only after a memory failure, while retries are left."""
    if outcome.failure_reason != "memory" or len(attempts) > retries:
        return False
    for message in outcome.warnings:
        warn(message)
    info(f"cobell: run {outcome.run_id} failed for memory; retrying "
         f"({len(attempts)} of {retries})")
    return True


def _start_by_deadline(
    ctx: typer.Context,
    job: str,
    target_s: float | None,
    request: DeadlineRequest,
    size: int | None,
    flags: dict,
    dry_run: bool,
    strict: bool,
    memory: MemoryAsk | None = None,
) -> tuple[Prediction, object, int | None]:
    """Decide the start with every waiting submit (recorded in the history), wait for it,
    and return the prediction the run starts on and the submit's row (None: a dry run).
    `memory`: sized for --minimize memory-mb-seconds (the starts are priced with it)."""
    import time

    from cobell_cli.api import deadlines
    from cobell_cli.cli.predict import _strict_deadline, run_deadline_prediction
    from cobell_cli.run import wait

    def planned_at(now: float, req: DeadlineRequest) -> tuple[deadlines.Planned, object]:
        return run_deadline_prediction(ctx, job=job, target_s=target_s, request=req,
                                       input_bytes=size, flags=flags, require_history=False,
                                       now=now, memory=memory)

    path = settings(ctx).db_path
    now = request.submitted_at
    planned, cluster = planned_at(now, request)
    if dry_run:
        with open_history(ctx, create=True, read_only=True) as history:  # none: empty
            decision = deadlines.read_decision(history, planned, now)
        return deadlines.run_prediction(planned, decision, now, 0.0), cluster, None
    decision, row = deadlines.decide_and_record(path, planned, now, None, give_up=_signalled)
    try:
        _strict_deadline(deadlines.run_prediction(planned, decision, now, 0.0), strict)
        if not decision.start_now:
            def replan(force: bool) -> tuple[deadlines.Planned, object]:
                nonlocal row  # a row reaped meanwhile is written anew, with a new id
                at = time.time()
                again, _ = planned_at(at, replace(request, start_now=True) if force
                                      else request)
                decided, row = deadlines.decide_and_record(path, again, at, row,
                                                           give_up=_signalled)
                return again, decided

            waited = wait.wait_for_start(
                history_path=path, row_id=lambda: row, decision=decision, planned=planned,
                replan=replan, running=_running_ids(cluster), say=info)
            planned, decision, waited_s = waited.planned, waited.decision, waited.waited_s
        else:
            waited_s = 0.0
    except BaseException:
        deadlines.forget(path, row)
        raise
    return (deadlines.run_prediction(planned, decision, time.time(), waited_s), cluster, row)


def _signalled() -> bool:
    from cobell_cli import interrupts

    return interrupts.received() is not None or interrupts.deferred() is not None


def _running_ids(cluster: object) -> object:
    """The cluster's running app ids, for the wait to notice an app that ended (None: a
    cluster that lists nothing)."""
    from cobell_cli.errors import ClusterError

    if getattr(cluster, "name", "none") == "none":
        return None

    def running() -> set[str]:
        try:
            return {a.app_id for a in cluster.running_apps()}  # type: ignore[attr-defined]
        except ClusterError:
            return set()

    return running


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
    memory: dict[str, int | None] | None = None,
    row: int | None = None,
) -> Outcome:
    """The job, with the live 'elapsed' line on a terminal; a deadline submit's row is
    linked to the run (so others do not count it twice)."""
    from cobell_cli.run import launch
    from cobell_cli.run.submit import execute

    live = LiveLine(sys.stderr.buffer, prediction.plan.predicted_s) if sys.stderr.isatty() else None
    stdout = live.wrap(sys.stdout.buffer) if live else None
    stderr = live.wrap(sys.stderr.buffer) if live else None
    try:
        return execute(
            history_path=settings(ctx).db_path,
            cluster=cluster_adapter,
            plan=prediction.plan,
            argv=injected.argv,
            stored_command=launch.redact(injected.argv),
            launcher=injected.launcher,
            input_bytes=size,
            submitted_at=submitted_at,
            log_file=log_file,
            stdout=stdout,  # type: ignore[arg-type]
            stderr=stderr,  # type: ignore[arg-type]
            on_tick=live.tick if live else None,
            cluster_ok=prediction.cluster_ok,
            memory=memory,
            run_fields={**prediction.run_fields,  # where it ran (node_types.py): its partition
                        **({"node_label": prediction.node_label} if prediction.node_label else {})},
            on_inserted=_linker(settings(ctx).db_path, row),  # type: ignore[arg-type]
        )
    finally:
        if live is not None:
            live.clear()


def _linker(path: Path, row: int | None) -> object:
    if row is None:
        return None
    from cobell_cli.api.deadlines import mark_run

    return lambda run_id: mark_run(path, row, run_id)


def _after_the_job(
    ctx: typer.Context,
    attempts: list[Outcome],
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

    outcome = attempts[-1]
    try:
        _report(attempts, as_json, planned)
        with interrupts.abandonable():
            if outcome.status == "succeeded":
                prepare_next_run(ctx, flags, job, target_s, input_bytes)
    except interrupts.Abandoned as exc:
        with contextlib.suppress(OSError):
            warn(f"{exc.line()} after the job ended: cobell's own remaining work was dropped")
    except OSError:
        pass


def _report(attempts: list[Outcome], as_json: bool, planned: list[str]) -> None:
    """The run's warnings and summary. The JSON line carries the planning's warnings too
    (printed before the job, as `predict --json` carries them): a script reads only it.
    After retries for memory (--retry-on-oom) it is the last attempt's, with `attempts`
    (every one) and `total_s` (their runtimes added) against the target."""
    from cobell_cli.output import to_json

    outcome = attempts[-1]
    for message in outcome.warnings:
        warn(message)
    if as_json:
        summary = outcome.to_dict()
        if len(attempts) > 1:
            total = sum(a.runtime_s for a in attempts)
            summary.update(attempts=[a.to_dict() for a in attempts], total_s=round(total, 3),
                           met_target_in_total=outcome.status == "succeeded"
                           and total <= outcome.target_s)
        typer.echo(to_json({**summary, "warnings": [*planned, *summary["warnings"]]}))
    else:
        verdict = "met" if outcome.met_target else "missed"
        predicted = f"prediction {outcome.predicted_s:.0f} s, " if outcome.predicted_s else ""
        info(
            f"cobell: run {outcome.run_id} {outcome.status} in {outcome.runtime_s:.1f} s at "
            f"scale-out {outcome.scale_out} ({predicted}target {outcome.target_s:g} s: "
            f"{verdict}); "
            f"{len(outcome.co_runners)} co-runner(s) recorded"
            + (f"; app {outcome.app_id}" if outcome.app_id else "")
            + ("; failed for memory" if outcome.failure_reason == "memory" else "")
        )
        if len(attempts) > 1:
            total = sum(a.runtime_s for a in attempts)
            info(f"cobell: {len(attempts)} attempts, {total:.1f} s in all "
                 f"(target {outcome.target_s:g} s)")


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
