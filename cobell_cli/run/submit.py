"""Run a planned job and record what happened: the edge between plan, child process and history.

Recording rules (the history must stay consistent whatever happens to this process, and once
the job has started nothing about the history may change its fate or its exit code):
- the run is inserted as `running` (with host and our pid) before the child starts, and every
  later update is its own short transaction: no lock is held while the job runs;
- the app id is written as soon as the child prints it, in the background (run/recorder.py), so
  a killed cobell still leaves a traceable row, which the next `History.open` on this host marks
  `lost`, and a locked history never holds the job up;
- a completion the history cannot take is journalled beside it (store/journal.py);
- once cobell has forwarded a signal to the job the run is `killed`, whatever the job's exit
  status: only uninterrupted successful runs are ever fitted; so is a run whose application
  the cluster reports KILLED afterwards (`yarn application -kill`, an admin): the job itself
  only says it failed;
- the YARN application of a run cobell interrupted is killed through the ResourceManager
  once the job's completion is written (run/app_kill.py): a cluster-mode driver outlives
  spark-submit; the RM's last word is added to the run (`app_state`). Killed while it asks
  the RM (SIGKILL, a lost machine), cobell leaves the run recorded, only without app_state;
- co-runners are read from the cluster after the run and stored with the measured overlap;
  a cluster that does not answer, or a signal, then costs the colocations, never the run.
"""
from __future__ import annotations

import getpass
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from cobell_cli import interrupts
from cobell_cli.cluster import query
from cobell_cli.core.colocation import measured_overlaps
from cobell_cli.errors import ClusterError, CobellError, UsageError
from cobell_cli.run.app_kill import end_interrupted_app
from cobell_cli.run.recorder import WRITE_ERRORS, RunRecorder, why_not_written
from cobell_cli.store.processes import this_host

if TYPE_CHECKING:
    from cobell_cli.core.plan import Plan
    from cobell_cli.run.child import ChildResult

BACKENDS = {
    "spark-yarn": "yarn",
    "spark-standalone": "standalone",
    "flink": "flink",
    "placeholder": "generic",
}


@dataclass
class Outcome:
    run_id: int
    job: str
    app_id: str | None
    scale_out: int
    status: str
    exit_code: int
    predicted_s: float | None
    runtime_s: float
    target_s: float
    meet_probability: float | None = None  # estimated at planning; None: unknown
    confidence: float | None = None  # the level planned at; None: the point decision
    recorded_in: str = "history"  # or the pending journal's path (run/recorder.py)
    co_runners: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    failure_reason: str | None = None  # "memory": the reservation was too small
    executor_memory_mb: int | None = None  # the heap the run had, where cobell knows it
    deadline: dict[str, Any] | None = None  # deadline_at, waited_s, start_reason (--deadline)
    excluded_reason: str | None = None  # why cobell kept the run out of fitting, if it did
    app_state: str | None = None  # what the RM last said of the run's app (killed: KILLED)
    notes: list[str] = field(default_factory=list)  # lines to tell (the app was killed)

    @property
    def met_target(self) -> bool:
        return self.status == "succeeded" and self.runtime_s <= self.target_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "run_id": self.run_id,
            "app_id": self.app_id,
            "scale_out": self.scale_out,
            "status": self.status,
            "predicted_s": self.predicted_s,
            "runtime_s": round(self.runtime_s, 3),
            "target_s": self.target_s,
            "met_target": self.met_target,
            "meet_probability": self.meet_probability,
            "confidence": self.confidence,
            "exit_code": self.exit_code,
            "failure_reason": self.failure_reason,
            "excluded_reason": self.excluded_reason,
            "executor_memory_mb": self.executor_memory_mb,
            "app_state": self.app_state,
            "co_runners": len(self.co_runners),
            "recorded_in": self.recorded_in,
            "warnings": self.warnings,
            **(self.deadline or {}),
        }


def status_of(exit_code: int, interrupted: bool) -> str:
    if interrupted or exit_code in (129, 130, 143):  # signalled, or SIGHUP/INT/TERM as a shell says
        return "killed"
    return "succeeded" if exit_code == 0 else "failed"


def execute(
    *,
    history_path: Path,
    cluster: Any,
    plan: Plan,
    argv: Sequence[str],
    stored_command: Sequence[str],
    launcher: str,
    input_bytes: int | None,
    submitted_at: float,
    log_file: Path | None = None,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    on_tick: Callable[[float], None] | None = None,
    cluster_ok: bool = True,
    memory: dict[str, int | None] | None = None,
    run_fields: Mapping[str, Any] | None = None,
    on_inserted: Callable[[int], None] | None = None,
    on_start: Callable[[int, float], None] | None = None,
    on_app_id: Callable[[str], None] | None = None,
    rm: Callable[[], Any] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Outcome:
    """Record, run, record again. Returns what happened; the child's exit code is in it.

    What can fail before the job starts is tried before its run is recorded (the command,
    the log file): a job that never started leaves no run. `cluster_ok` says whether the
    cluster answered when the run was planned; `memory`: the executor memory the run is
    given (executor_memory_mb, executor_overhead_mb) and `run_fields` (a deadline's
    deadline_at, waited_s, start_reason), recorded with it; `on_inserted(run_id)` is called
    once the run's row exists, before the job starts, `on_start(pid, started_at)` once it
    runs, `on_app_id(app_id)` when its output names its application. `rm()` gives the YARN
    ResourceManager to kill the application of a run cobell interrupted (run/app_kill.py;
    None: none configured); `cancelled()` says that the caller ended the job itself (an
    orchestrator's kill), which interrupts it as a forwarded signal does."""
    from cobell_cli.run.child import check_can_start, open_log

    check_can_start(argv, log_file)
    log = open_log(log_file) if log_file is not None else None
    try:
        row = {**_planned_row(plan, launcher, input_bytes, submitted_at, stored_command),
               **(run_fields or {})}
        row.update({k: v for k, v in (memory or {}).items() if v is not None})
        recorder = _insert_run(history_path, row)
    except BaseException:
        if log is not None:
            log.close()
        raise
    try:
        if on_inserted is not None:
            on_inserted(recorder.run_id)
        result = _run_job(recorder, argv, log, stdout, stderr, on_tick, on_start, on_app_id)
        if cancelled is not None and cancelled():
            result = replace(result, interrupted=True)
        outcome = _record_completion(recorder, plan, result)
        if result.interrupted:
            _end_the_app(recorder, rm, result, launcher, plan.job, outcome)
        outcome.deadline = dict(run_fields or {}) or None
        try:
            with interrupts.abandonable():
                outcome.warnings += _collect_event_log(recorder, argv, launcher, result, cluster)
                _memory_from_history(recorder, outcome)
                _memory_from_cluster(recorder, cluster, outcome)
            if _cluster_failed_before(cluster_ok, cluster):
                outcome.warnings.append(
                    "co-runners not recorded: the cluster did not answer before the run "
                    "(one cluster budget per submit)")
            else:
                with interrupts.abandonable(), query(cluster):  # after the run: one budget
                    _record_co_runners(recorder, cluster, result, outcome)
        except interrupts.Abandoned as exc:
            outcome.warnings.append(f"co-runners not recorded: {exc.line()}")
    finally:
        recorder.close()
    return outcome


def _cluster_failed_before(cluster_ok: bool, cluster: Any) -> bool:
    """The cluster could not be asked when the run was planned (--allow-no-cluster went on
    without it): one dead cluster costs one budget per submit, so it is not asked again."""
    return not cluster_ok and getattr(cluster, "name", "none") != "none"


def _insert_run(history_path: Path, row: dict[str, Any]) -> RunRecorder:
    """The `running` row; a signal from here on never leaves it behind (interrupts.hold)."""
    interrupts.hold()
    try:
        return RunRecorder.start(history_path, row, give_up=_signalled)
    except WRITE_ERRORS:
        signum = interrupts.received() or interrupts.deferred()
        if signum:  # it stopped waiting for the lock because of the signal
            raise interrupts.Interrupted(signum) from None
        raise


def _signalled() -> bool:
    return interrupts.deferred() is not None or interrupts.received() is not None


def _planned_row(
    plan: Any,
    launcher: str,
    input_bytes: int | None,
    submitted_at: float,
    stored_command: Sequence[str],
) -> dict[str, Any]:
    return {
        "job": plan.job,
        "input_bytes": input_bytes,
        "scale_out": plan.scale_out,
        "backend": BACKENDS.get(launcher, launcher),
        "user": _user(),
        "host": this_host(),
        "pid": os.getpid(),
        "submitted_at": submitted_at,
        "target_s": plan.target_s,
        "predicted_s": plan.predicted_s,
        "meet_probability": plan.meet_probability,
        "confidence": plan.confidence,
        "model": plan.phase,
        "reason": plan.reason,
        "command": json.dumps(list(stored_command)),
    }


def _run_job(
    recorder: RunRecorder,
    argv: Sequence[str],
    log_file: BinaryIO | None,
    stdout: BinaryIO | None,
    stderr: BinaryIO | None,
    on_tick: Callable[[float], None] | None,
    on_start: Callable[[int, float], None] | None = None,
    on_app_id: Callable[[str], None] | None = None,
) -> ChildResult:
    """The child, its start time and app id recorded in the background (and told to the
    caller); a job that could not be started is recorded as such (the error is raised on)."""
    from cobell_cli.run import child

    def started(pid: int, at: float) -> None:
        recorder.update(started_at=at)
        if on_start is not None:
            on_start(pid, at)

    def app_id_seen(app_id: str) -> None:
        recorder.update(app_id=app_id)
        if on_app_id is not None:
            on_app_id(app_id)

    try:
        return child.run(
            argv,
            log_file=log_file,
            on_start=started,
            on_app_id=app_id_seen,
            on_tick=on_tick,
            stdout=stdout,
            stderr=stderr,
        )
    except BaseException as exc:
        code = getattr(exc, "exit_code", 1)
        status = "killed" if isinstance(exc, interrupts.Interrupted) else "failed"
        why = exc.line() if isinstance(exc, CobellError | interrupts.Interrupted) else str(exc)
        reason = f"{recorder.row['reason']} | not started: {why}"
        recorder.finish(_signalled, status=status, exit_code=code, reason=reason)
        raise


def _record_completion(recorder: RunRecorder, plan: Any, result: ChildResult) -> Outcome:
    status = status_of(result.exit_code, result.interrupted)
    failure = "memory" if status == "failed" and result.memory_failure else None
    warning = recorder.finish(
        _signalled,
        status=status,
        started_at=result.started_at,
        finished_at=result.finished_at,
        runtime_s=result.runtime_s,
        exit_code=result.exit_code,
        app_id=result.app_id,
        failure_reason=failure,
    )
    return Outcome(
        run_id=recorder.run_id,
        job=plan.job,
        app_id=result.app_id,
        scale_out=plan.scale_out,
        status=status,
        exit_code=result.exit_code,
        predicted_s=plan.predicted_s,
        runtime_s=result.runtime_s,
        target_s=plan.target_s,
        meet_probability=plan.meet_probability,
        confidence=plan.confidence,
        recorded_in=str(recorder.journalled) if recorder.journalled else "history",
        warnings=[w for w in (warning, _log_warning(result), _kept_out(recorder)) if w],
        failure_reason=failure,
        executor_memory_mb=recorder.row.get("executor_memory_mb"),
        excluded_reason=recorder.excluded_reason,
    )


def _kept_out(recorder: RunRecorder) -> str | None:
    """The warning for a run recorded but kept out of fitting as implausible."""
    if recorder.excluded_reason is None:
        return None
    return (f"run {recorder.run_id} kept out of fitting: {recorder.excluded_reason} "
            f"(`cobell history include {recorder.run_id}` uses it)")


def _end_the_app(
    recorder: RunRecorder, rm: Callable[[], Any] | None, result: ChildResult, launcher: str,
    job: str, outcome: Outcome,
) -> None:
    """Kill the interrupted run's YARN application (run/app_kill.py), then add what the RM
    said to the run already recorded: the completion never waits on the RM."""
    ended = end_interrupted_app(rm, result.app_id, launcher, job)
    if ended is None:
        return
    outcome.app_state = ended.app_state
    outcome.notes += [ended.note] if ended.note else []
    outcome.warnings[:0] = [ended.warning] if ended.warning else []
    warning = recorder.amend(app_state=ended.app_state) if ended.app_state else None
    if warning:
        outcome.warnings.append(warning)


def _memory_from_history(recorder: RunRecorder, outcome: Outcome) -> None:
    """What the event log added (core/memory/measure.py): the reservation the run really
    had, and a memory failure its log shows when the output did not."""
    from cobell_cli.store.history import History

    if recorder.journalled is not None:
        return
    try:
        with History.open(recorder.history_path, reap_lost=False, read_only=True) as history:
            run = history.run(recorder.run_id) or {}
    except WRITE_ERRORS:
        return
    outcome.failure_reason = outcome.failure_reason or run.get("failure_reason")
    outcome.executor_memory_mb = outcome.executor_memory_mb or run.get("executor_memory_mb")


def _memory_from_cluster(recorder: RunRecorder, cluster: Any, outcome: Outcome) -> None:
    """A failed run's memory failure from what YARN kept of its app (the diagnostics of the
    app and its attempts: an AM container killed for exceeding its memory) when neither the
    output nor the event log said so; a cluster that does not answer costs only this."""
    from cobell_cli.core.memory.failures import failure_reason

    ask = getattr(cluster, "diagnostics", None)
    if outcome.status != "failed" or outcome.failure_reason or not outcome.app_id or not ask:
        return
    try:
        with query(cluster):
            reason = failure_reason(ask(outcome.app_id))
    except (ClusterError, UsageError):
        return
    if reason is not None:
        outcome.failure_reason = reason
        warning = recorder.amend(failure_reason=reason)
        outcome.warnings += [warning] if warning else []


def _log_warning(result: ChildResult) -> str | None:
    if result.log_error is None:
        return None
    return f"the --log-file copy of the job's output stopped: {result.log_error}"


def _collect_event_log(
    recorder: RunRecorder, argv: Sequence[str], launcher: str, result: ChildResult, cluster: Any
) -> list[str]:
    """The run's event-log profile (issue 14, item 2); skipped while the history is journalled.
    Executors' logs are read with the cluster client's auth and TLS where it has one (YARN)."""
    from cobell_cli.run import event_capture

    if recorder.journalled is not None:
        return []
    return event_capture.collect(recorder.history_path, recorder.run_id, argv, launcher,
                                 result.app_id, fetch=event_capture.log_fetch(cluster))


def _record_co_runners(
    recorder: RunRecorder, cluster: Any, result: ChildResult, outcome: Outcome
) -> None:
    """The co-runners that overlapped the run, then those that finished during it (imported)."""
    try:
        apps = [
            *cluster.running_apps(),
            *cluster.apps_finished_since(result.started_at),
        ]
    except ClusterError as exc:
        outcome.warnings.append(f"co-runners not recorded: {exc.line()}")
        return
    own = {result.app_id} if result.app_id else set()
    _killed_on_the_cluster(recorder, apps, result, outcome)
    rows = measured_overlaps(
        result.started_at, result.finished_at, [a for a in apps if a.app_id not in own]
    )
    if rows:
        warning = recorder.add_colocations(rows)
        outcome.warnings += [warning] if warning else []
    outcome.co_runners = rows
    if recorder.journalled is not None:  # the history cannot be written now
        if getattr(cluster, "name", "none") != "none":
            outcome.warnings.append("finished co-runners not learned: see the journal above")
        return
    outcome.warnings += _learn_co_runners(recorder.history_path, cluster, result, own)


def _killed_on_the_cluster(
    recorder: RunRecorder, apps: Sequence[Any], result: ChildResult, outcome: Outcome
) -> None:
    """The run is `killed` when the cluster lists its own app as KILLED (module doc)."""
    if outcome.status == "killed" or not result.app_id:
        return
    mine = next((a for a in apps if a.app_id == result.app_id), None)
    if mine is None or mine.state != "KILLED":
        return
    outcome.status = "killed"
    outcome.app_state = mine.state
    warning = recorder.amend(status="killed", app_state=mine.state)
    if warning:
        outcome.warnings.append(warning)


def _learn_co_runners(
    history_path: Path, cluster: Any, result: ChildResult, own: set[str]
) -> list[str]:
    """Co-runners that finished during the run become imported runs (issue 14, item 2)."""
    from cobell_cli.sources.co_runners import learn_co_runners

    try:
        return learn_co_runners(
            history_path, cluster, result.started_at, result.finished_at, own
        )
    except WRITE_ERRORS as exc:
        return [f"finished co-runners not recorded: {why_not_written(exc)}"]


def _user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return os.environ.get("USER")


def input_size(path: str) -> int:
    """Bytes under a local path or an hdfs:// URL (needs the `hdfs` CLI)."""
    import shutil
    import subprocess

    from cobell_cli.errors import UsageError

    if path.startswith(("hdfs://", "viewfs://", "s3a://", "abfs://", "gs://")):
        hdfs = shutil.which("hdfs")
        if hdfs is None:
            raise UsageError(
                f"cannot measure {path}: the `hdfs` command is not on PATH",
                hint="give --input-size BYTES instead",
            )
        proc = subprocess.run(
            [hdfs, "dfs", "-du", "-s", path], capture_output=True, text=True, timeout=120
        )
        if proc.returncode != 0 or not proc.stdout.split():
            raise UsageError(
                f"`hdfs dfs -du -s {path}` failed: {proc.stderr.strip().splitlines()[-1:] or ''}",
                hint="give --input-size BYTES instead",
            )
        return int(proc.stdout.split()[0])
    local = Path(path.removeprefix("file://")).expanduser()
    if not local.exists():
        raise UsageError(f"--input {path}: no such file or directory")
    if local.is_file():
        return local.stat().st_size
    return sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
