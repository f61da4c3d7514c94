"""Submitting a job through cobell from Python: plan, launch, wait, record.

`cobell submit` is a thin layer over `Submit`, and so can a script, an Airflow operator or a
Dagster op be: the same plan, the same run record, the same signals and exceptions.

    from cobell_cli import api

    submit = api.Submit(api.load_settings(db="runs.db"), job="nightly", target_s=600,
                        command=["spark-submit", "--master", "yarn", "etl.py"],
                        on_launched=lambda run: print("run", run.run_id, run.app_id))
    result = submit.run()             # plan, launch, wait, record; the job's exit code:
    result.exit_code, result.outcome.status, result.outcome.runtime_s

The steps, each reported to a callback as it happens:

- plan (`plan()`; `run()` starts with it): the job's history and the cluster now give the
  scale-out (with a deadline: when to start, decided with the other waiting submits, then
  waited for); the command gets it, the executor memory sized for it (a step of its own,
  api/command.py), the Spark log level and the event log. `on_planned(SubmitPlan)`.
- launch: the run is recorded `running`, then the job starts. `on_launched(Launched)`, and
  once more when the job prints its cluster application's id (`Launched.app_id`).
- wait: the job's output streams to `stdout`/`stderr` (default: this process's), and
  `on_progress(Progress)` comes every second. SIGINT, SIGTERM and SIGHUP are forwarded to the
  job (`run()` installs cobell's handlers when called from the main thread); the run is then
  `killed`, and its YARN application, if it still runs, is killed through the
  ResourceManager. `cancel()` (from another thread, an operator's on_kill) does the same.
- record: the completion, the event log's profile, the co-runners. `on_finished(Outcome)`.
  With `retry_on_oom`, a run that failed for memory is planned and run again.

Lines for a person (`on_note`, `on_warning`; every warning is in the result too) are what
`cobell submit` prints. Errors are cobell's exceptions (cobell_cli.errors, each with its exit
code); a signal before the job started raises `Interrupted` (exit_code 128+N): nothing ran.
`prepare_next_run()` afterwards fits the model the next submit of the job plans with.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from cobell_cli import interrupts
from cobell_cli.api.command import (
    CommandSpec,
    JobCommand,
    MemoryFailure,
    command_at,
    retry_memory,
)
from cobell_cli.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from cobell_cli.api.deadlines import DeadlineRequest
    from cobell_cli.api.memory import MemoryAsk
    from cobell_cli.api.planning import Prediction
    from cobell_cli.config import Settings
    from cobell_cli.run.submit import Outcome
    from cobell_cli.store.history import History

MAX_RETRIES_ON_OOM = 10


@dataclass(frozen=True)
class SubmitPlan:
    """One attempt's plan: the prediction, the command at it, and what both warn about."""

    prediction: Prediction
    command: JobCommand
    cluster: Any = field(repr=False)  # the adapter planned with; asked again after the run
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """`cobell submit --dry-run --json`: the plan and the command (secrets redacted)."""
        return {**self.prediction.to_dict(), "command": self.command.shown}


@dataclass(frozen=True)
class Launched:
    """The job has started: its run in the history, its process, and (once the job has
    printed it) its cluster application's id."""

    run_id: int
    pid: int
    started_at: float
    command: list[str]  # as stored and shown (secrets redacted)
    app_id: str | None = None


@dataclass(frozen=True)
class Progress:
    """The job runs: seconds since it started, against the prediction."""

    run_id: int
    elapsed_s: float
    predicted_s: float | None
    app_id: str | None


@dataclass
class SubmitResult:
    """Every attempt (more than one after a retry for memory), the last one deciding, and
    the warnings of the plan the last attempt ran on."""

    attempts: list[Outcome]
    planned_warnings: list[str]

    @property
    def outcome(self) -> Outcome:
        return self.attempts[-1]

    @property
    def exit_code(self) -> int:
        """The job's own exit code (128+N when a signal N ended it)."""
        return self.outcome.exit_code

    @property
    def warnings(self) -> list[str]:
        return [*self.planned_warnings, *self.outcome.warnings]

    @property
    def total_s(self) -> float:
        return sum(a.runtime_s for a in self.attempts)

    def to_dict(self) -> dict[str, Any]:
        """`cobell submit --json`'s summary: the last attempt's, and after retries every
        attempt with their runtimes added (`total_s`) against the target."""
        summary = self.outcome.to_dict()
        if len(self.attempts) > 1:
            summary.update(attempts=[a.to_dict() for a in self.attempts],
                           total_s=round(self.total_s, 3),
                           met_target_in_total=self.outcome.status == "succeeded"
                           and self.total_s <= self.outcome.target_s)
        return {**summary, "warnings": self.warnings}


Callback = Callable[[Any], None] | None


class Submit:
    """One `cobell submit` (module doc). Checks its arguments when made (UsageError)."""

    def __init__(
        self,
        settings: Settings,
        *,
        job: str,
        command: Sequence[str],
        target_s: float | None = None,
        deadline: DeadlineRequest | None = None,
        input_bytes: int | None = None,
        cores_per_executor: int | None = None,
        spark_log_level: str | None = None,
        memory_confidence: float | None = None,
        keep_memory: bool = False,
        retry_on_oom: int = 0,
        minimize: str = "executor-seconds",
        strict: bool = False,
        log_file: Path | None = None,
        stdout: BinaryIO | None = None,
        stderr: BinaryIO | None = None,
        on_planned: Callable[[SubmitPlan], None] | None = None,
        on_launched: Callable[[Launched], None] | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        on_finished: Callable[[Outcome], None] | None = None,
        on_note: Callable[[str], None] | None = None,
        on_warning: Callable[[str], None] | None = None,
    ) -> None:
        from cobell_cli.api.command import check_command, memory_ask, spark_queue
        from cobell_cli.api.planning import check_minimize

        _check_arguments(target_s, deadline, retry_on_oom)
        check_command(command, job, cores_per_executor, log_file, will_run=False)
        self.settings = settings
        self.job = job
        self.target_s = target_s
        self.input_bytes = input_bytes
        self.minimize = check_minimize(minimize)
        self.strict = strict
        self.retry_on_oom = retry_on_oom
        self.log_file = log_file
        self.streams = (stdout, stderr)
        self.spec = CommandSpec(tuple(command), job, cores_per_executor, spark_log_level,
                                settings.event_log_path)
        self.memory, self._memory_notes = memory_ask(command, keep_memory, memory_confidence)
        self.queue = spark_queue(command)
        self.deadline = _with_queue(deadline, self.queue, self.minimize)
        self.submitted_at = deadline.submitted_at if deadline is not None else time.time()
        self._on = {"planned": on_planned, "launched": on_launched, "progress": on_progress,
                    "finished": on_finished, "note": on_note, "warning": on_warning}
        self._attempts: list[Outcome] = []
        self._deadline_row: int | None = None
        self._last_plan: SubmitPlan | None = None
        self._pid: int | None = None
        self._cancelled = False
        self._why_not_retried = ""

    # -- plan ------------------------------------------------------------------------------

    def plan(self, *, dry_run: bool = False) -> SubmitPlan:
        """Plan the next attempt (with a deadline, the first one also waits for its start,
        unless `dry_run`: then nothing waits, nothing is written and no directory made)."""
        for note in self._memory_notes:  # once per submit
            self._tell("warning", note)
        self._memory_notes = []
        if self.deadline is not None and not self._attempts:
            prediction, cluster = self._start_by_deadline(dry_run)
        else:
            now = self.submitted_at if not self._attempts else time.time()
            prediction, cluster = self._predict(now)
        starts = not dry_run and (prediction.plan.feasible or not self.strict)
        command = command_at(self.spec, prediction, self.memory, self._after_failure(
            cluster, prediction), create=starts, cluster_here=_on_this_host(cluster))
        planned = SubmitPlan(prediction, command, cluster,
                             [*command.warnings, *prediction.all_warnings])
        self._last_plan = planned
        self._tell("planned", planned)
        for message in [*command.warnings, *prediction.plan.warnings]:
            self._tell("warning", message)
        if self.strict and self._deadline_row is None:
            _refuse_infeasible(prediction)
        return planned

    @contextlib.contextmanager
    def _world(self, target_s: float | None) -> Iterator[tuple[History, Any]]:
        """The history (created if missing) and the cluster a plan is made against; the
        target checked against the scale-out range first."""
        from cobell_cli.api.clusters import connect_cluster
        from cobell_cli.api.planning import check_request
        from cobell_cli.api.runs import open_history

        settings = self.settings
        if target_s is not None:
            check_request(target_s, settings.min_scale_out, settings.max_scale_out)
        with open_history(settings.db_path, create=True, settings=settings) as history:
            yield history, connect_cluster(settings, history.job_names())

    def _predict(self, now: float) -> tuple[Prediction, Any]:
        from cobell_cli.api.deadline_start import target_now
        from cobell_cli.api.planning import check_options_act, predict

        target = target_now(self.target_s, self.deadline)
        with self._world(target) as (history, cluster):
            prediction = predict(history, cluster, self.settings, job=self.job,
                                 target_s=target, now=now, input_bytes=self.input_bytes,
                                 require_history=False, memory=self._memory_to_plan(),
                                 minimize=self.minimize, queue=self.queue)
        if self.strict:
            check_options_act(prediction, self.minimize)
        for message in prediction.warnings:
            self._tell("warning", message)
        return prediction, cluster

    def _start_by_deadline(self, dry_run: bool) -> tuple[Prediction, Any]:
        from cobell_cli.api import deadline_start
        from cobell_cli.run.wait import Clock

        assert self.deadline is not None
        path = self.settings.db_path
        if dry_run:
            started = deadline_start.dry_start(path, self._plan_for_deadline, self.deadline)
        else:
            started = deadline_start.start(
                path, self._plan_for_deadline, self.deadline, check=self._check_start,
                say=lambda line: self._tell("note", line), give_up=_signalled,
                clock=Clock(sleep=self._sleep))
            self._deadline_row = started.row
        return started.prediction, started.cluster

    def _check_start(self, prediction: Prediction) -> None:
        """No start meets the deadline: a warning, or under `strict` NoFeasibleScaleOut."""
        from cobell_cli.api.deadlines import check_start

        shortfall = check_start(prediction, self.strict)
        if shortfall is not None:
            self._tell("warning", shortfall)

    def _plan_for_deadline(self, now: float, request: DeadlineRequest) -> tuple[Any, Any]:
        """api.deadlines.plan_for_deadline on the history and the cluster now, each
        candidate's memory sized as without a deadline (api.predict); under `strict`, a
        --minimize the plan cannot act on stops it before anything is decided."""
        from cobell_cli.api.deadlines import plan_for_deadline
        from cobell_cli.api.planning import check_options_act

        with self._world(self.target_s) as (history, cluster):
            planned = plan_for_deadline(
                history, cluster, self.settings, job=self.job, target_s=self.target_s,
                request=request, now=now, input_bytes=self.input_bytes,
                require_history=False, memory=self.memory)
        if self.strict:
            check_options_act(planned.prediction, request.minimize)
        for message in [*planned.prediction.warnings, *planned.warnings]:
            self._tell("warning", message)
        return planned, cluster

    # -- launch, wait, record ----------------------------------------------------------------

    def run(self) -> SubmitResult:
        """Plan, launch, wait and record, again after a memory failure while `retry_on_oom`
        allows; returns every attempt (module doc). Nothing runs when planning fails or a
        signal comes first."""
        from cobell_cli.api.command import check_command

        with _signal_phases():
            check_command(self.spec.command, self.job, self.spec.cores_per_executor,
                          self.log_file)
            try:
                while True:
                    planned = self.plan()
                    outcome = self._launch_and_wait(planned)
                    self._attempts.append(outcome)
                    if not self._retry(outcome):
                        break
            finally:
                self._forget_deadline_row()
        assert self._last_plan is not None
        return SubmitResult(list(self._attempts), self._last_plan.warnings)

    def _launch_and_wait(self, planned: SubmitPlan) -> Outcome:
        """The job at the plan, recorded; its notes and warnings told, then `on_finished`."""
        from cobell_cli.run.submit import execute

        if self._cancelled:
            raise interrupts.Interrupted(signal.SIGTERM)
        run = _RunEvents(self, planned)
        plan = planned.prediction.plan
        outcome = execute(
            history_path=self.settings.db_path, cluster=planned.cluster, plan=plan,
            argv=planned.command.argv, stored_command=planned.command.shown,
            launcher=planned.command.launcher, input_bytes=self.input_bytes,
            submitted_at=self.submitted_at if not self._attempts else time.time(),
            log_file=self.log_file, stdout=self.streams[0], stderr=self.streams[1],
            on_tick=run.tick if self._on["progress"] else None,
            cluster_ok=planned.prediction.cluster_ok, memory=planned.command.memory,
            run_fields=_run_fields(planned.prediction), on_inserted=run.inserted,
            on_start=run.started, on_app_id=run.app_id_seen,
            rm=_resource_manager(planned.cluster, self.settings),
            cancelled=lambda: self._cancelled)
        self._pid = None
        for note in outcome.notes:
            self._tell("note", note)
        for message in outcome.warnings:
            self._tell("warning", message)
        self._tell("finished", outcome)
        return outcome

    def _retry(self, outcome: Outcome) -> bool:
        """Run again? Only after a memory failure, while retries are left and a larger
        memory than every failed attempt's fits the cluster's containers (else one line)."""
        attempts = len(self._attempts)
        if outcome.failure_reason != "memory" or attempts > self.retry_on_oom:
            return False
        assert self._last_plan is not None
        grown = self._after_failure(self._last_plan.cluster, None)
        if grown is None:
            self._tell("warning", f"run {outcome.run_id} failed for memory; "
                                  f"{self._why_not_retried}")
            return False
        self._tell("note", f"cobell: run {outcome.run_id} failed for memory; retrying "
                           f"({attempts} of {self.retry_on_oom})")
        return True

    def _memory_to_plan(self) -> MemoryAsk | None:
        """What the planner may size: after a memory failure, the memory the command set no
        longer binds (the retry overrides it), so the model's bound is planned and priced."""
        from dataclasses import replace

        failed = any(a.failure_reason == "memory" for a in self._attempts)
        if self.memory is None or not failed:
            return self.memory
        return replace(self.memory, user_memory_mb=None, user_overhead_mb=None, keep=False)

    def _after_failure(self, cluster: Any, prediction: Prediction | None) -> MemoryFailure | None:
        """The next attempt's memory after memory failures (api/command.py retry_memory: above
        every failed attempt's heap, at least the memory model's bound), None before any or
        where it cannot grow (`_why_not_retried` then says why)."""
        failed = [a.executor_memory_mb for a in self._attempts if a.failure_reason == "memory"]
        if not failed:
            return None
        memory = prediction.plan.memory if prediction is not None else None
        upper = (memory or {}).get("upper_peak_mb")
        grown = retry_memory(cluster, self.memory, failed, upper)
        if grown is None or grown.reservation is None:
            self._why_not_retried = (grown.why_not if grown is not None else
                                     "not retried: cobell sizes executor memory for Spark only")
            return None
        return MemoryFailure(grown.reservation, grown.failed_mb)

    def _forget_deadline_row(self) -> None:
        if self._deadline_row is not None:
            from cobell_cli.api.deadlines import forget

            forget(self.settings.db_path, self._deadline_row)
            self._deadline_row = None

    def cancel(self, signum: int = signal.SIGTERM) -> None:
        """End the submit from another thread (an orchestrator's kill): a job that runs gets
        `signum` and its run is `killed` (its YARN application too); one that has not started
        never starts (`run()` raises Interrupted)."""
        self._cancelled = True
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._pid, signum)

    def _sleep(self, seconds: float) -> None:
        """The deadline wait's sleep: a cancel ends the wait, nothing started."""
        if self._cancelled:
            raise interrupts.Interrupted(signal.SIGTERM)
        time.sleep(seconds)

    # -- afterwards -------------------------------------------------------------------------

    def prepare_next_run(self) -> None:
        """Fit the model the job's next submit plans with, so that it starts at once (after a
        successful run; off with model_cache). A signal drops it (said in a warning); a
        failure is a warning too: nothing here changes the job's exit code."""
        try:
            with interrupts.abandonable():
                if self._attempts and self._attempts[-1].status == "succeeded":
                    self._warm()
        except interrupts.Abandoned as exc:
            self._tell("warning", f"{exc.line()} after the job ended: cobell's own remaining "
                                  "work was dropped")

    def _warm(self) -> None:
        from cobell_cli.api.planning import warm_model_cache
        from cobell_cli.api.runs import open_history
        from cobell_cli.errors import CobellError

        if not self.settings.model_cache or self._last_plan is None:
            return
        self._tell("note", "cobell: fitting the model for the job's next run "
                           "(COBELL_MODEL_CACHE=off skips this)")
        try:
            with open_history(self.settings.db_path, create=False,
                              settings=self.settings) as history:
                warm_model_cache(history, self.settings, job=self.job,
                                 target_s=self._last_plan.prediction.plan.target_s,
                                 now=time.time(), input_bytes=self.input_bytes)
        except (CobellError, ValueError, OSError) as exc:
            self._tell("warning", f"model cache not warmed for the next run: {exc}")

    def _tell(self, what: str, value: Any) -> None:
        callback = self._on[what]
        if callback is not None:
            callback(value)


class _RunEvents:
    """One attempt's run as the callbacks see it: launched (twice with an app id), progress."""

    def __init__(self, submit: Submit, planned: SubmitPlan) -> None:
        self.submit = submit
        self.planned = planned
        self.launched: Launched | None = None
        self.run_id = 0

    def inserted(self, run_id: int) -> None:
        self.run_id = run_id
        row = self.submit._deadline_row
        if row is not None:  # others then do not count this submit twice
            from cobell_cli.api.deadlines import mark_run

            mark_run(self.submit.settings.db_path, row, run_id)

    def started(self, pid: int, started_at: float) -> None:
        self.submit._pid = pid
        if self.submit._cancelled:  # cancelled while it was being started
            self.submit.cancel()
        self.launched = Launched(self.run_id, pid, started_at, self.planned.command.shown)
        self.submit._tell("launched", self.launched)

    def app_id_seen(self, app_id: str) -> None:
        if self.launched is not None:
            self.launched = Launched(self.run_id, self.launched.pid, self.launched.started_at,
                                     self.launched.command, app_id)
            self.submit._tell("launched", self.launched)

    def tick(self, elapsed_s: float) -> None:
        app_id = self.launched.app_id if self.launched is not None else None
        self.submit._tell("progress", Progress(self.run_id, elapsed_s,
                                               self.planned.prediction.plan.predicted_s, app_id))


def _check_arguments(target_s: float | None, deadline: Any, retry_on_oom: int) -> None:
    if target_s is None and deadline is None:
        raise UsageError("give --target-runtime SECONDS or --deadline TIME",
                         hint="e.g. --target-runtime 600 or --deadline 06:00")
    if not 0 <= retry_on_oom <= MAX_RETRIES_ON_OOM:
        raise UsageError(f"--retry-on-oom must be within 0-{MAX_RETRIES_ON_OOM}, "
                         f"got {retry_on_oom}")


def _with_queue(deadline: DeadlineRequest | None, queue: str | None,
                minimize: str) -> DeadlineRequest | None:
    """The deadline request in the command's YARN queue (its queue's wait counts against the
    deadline), minimising what the submit minimises."""
    from dataclasses import replace

    if deadline is None:
        return None
    return replace(deadline, minimize=minimize, **({"queue": queue} if queue else {}))


def _on_this_host(cluster: Any) -> bool:
    """Does the cluster run its drivers on this host (a YARN on loopback)?"""
    here = getattr(cluster, "on_this_host", None)
    return bool(here()) if callable(here) else False


def _refuse_infeasible(prediction: Prediction) -> None:
    """--strict: no scale-out meets the target, so nothing starts (exit 3)."""
    from cobell_cli.errors import NoFeasibleScaleOut

    plan = prediction.plan
    if not plan.feasible:
        raise NoFeasibleScaleOut(
            f"no scale-out in [{plan.min_scale_out}, {plan.max_scale_out}] meets the "
            f"{plan.target_s:g} s target; nothing was started",
            hint="raise --max-scale-out or the target, or drop --strict",
        )


def _run_fields(prediction: Prediction) -> dict[str, Any]:
    """What the run records besides the plan: where it ran (node_types.py: its partition),
    and a deadline's wait."""
    label = {"node_label": prediction.node_label} if prediction.node_label else {}
    return {**prediction.run_fields, **label}


def _resource_manager(cluster: Any, settings: Settings) -> Callable[[], Any]:
    """The YARN ResourceManager an interrupted run's application is killed through: the one
    the submit planned with, else the one the settings or yarn-site.xml name (None: none)."""
    def rm() -> Any:
        if getattr(cluster, "name", None) == "yarn":
            return cluster
        from cobell_cli.cluster import connect
        from cobell_cli.config import Settings as Resolved

        try:
            return connect(Resolved({**settings.values, "cluster": "yarn"}, settings.sources,
                                    [], settings.config_file))
        except ConfigError:
            return None

    return rm


def _signalled() -> bool:
    return interrupts.received() is not None or interrupts.deferred() is not None


@contextlib.contextmanager
def _signal_phases() -> Iterator[None]:
    """cobell's signal handling for a submit (cobell_cli/interrupts.py): the CLI installs it
    for the whole command; called from Python, `run()` installs it for its own duration (in
    the main thread: elsewhere signals keep their default effect)."""
    if interrupts.installed():
        yield
        return
    with interrupts.handled(), interrupts.raising():
        yield
