"""The job's command at a plan: the scale-out, the node label, the executor memory, the Spark
log level and the event log put into what the user gave (run/launch.py, run/event_capture.py).

`cobell submit` and `api.Submit` prepare every attempt's command here, so the memory step stays
one place: what the command already says about memory (`memory_ask`), and what the plan sized
(`with_memory`, with the larger heap a retry after a memory failure needs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cobell_cli.api.memory import MemoryAsk
    from cobell_cli.api.planning import Prediction
    from cobell_cli.core.memory.sizing import Reservation
    from cobell_cli.run.launch import Injection


@dataclass(frozen=True)
class JobCommand:
    """The command one attempt runs: `argv` (what runs), `shown` (secrets redacted: what is
    printed and stored), `launcher` (spark-yarn, spark-standalone, flink, placeholder), the
    notes of what cobell changed in it (`warnings`), and the executor memory it gives the job
    (`memory`: executor_memory_mb, executor_overhead_mb; None: not known)."""

    argv: list[str]
    shown: list[str]
    launcher: str
    warnings: list[str] = field(default_factory=list)
    memory: dict[str, int | None] | None = None


def check_command(
    command: Sequence[str], job: str, cores_per_executor: int | None, log_file: Path | None,
    *, will_run: bool = True,
) -> None:
    """What can fail before planning and before a run is recorded (a job that never started
    leaves no run): a command cobell cannot set a scale-out in (a usage error), and, for a
    command that `will_run` (not a dry run, which may plan another machine's command), one
    that does not exist or cannot be executed, or a log file that cannot be opened."""
    from cobell_cli.run import launch
    from cobell_cli.run.child import check_can_start

    probe = launch.inject(command, 1, job, cores_per_executor)
    if will_run:
        check_can_start(probe.argv, log_file)


def spark_queue(command: Sequence[str]) -> str | None:
    """The YARN queue a spark-submit command names (--queue, else spark.yarn.queue)."""
    from cobell_cli.run import launch

    return launch.spark_queue(command)


def memory_ask(
    command: Sequence[str], keep: bool, confidence: float | None
) -> tuple[MemoryAsk | None, list[str]]:
    """What the planner may size for a Spark command (None: not a Spark command), and notes;
    a memory string in the command or its properties file that Spark could not read is a
    usage error before anything starts."""
    from cobell_cli.api.memory import MemoryAsk
    from cobell_cli.run import event_capture, launch

    launcher = launch.detect_launcher(command)
    if launcher not in launch.SPARK_LAUNCHERS:
        flink = launcher == "flink"
        return None, ["memory: not sized for Flink (taskmanager memory stays as configured)"
                      ] if flink else []
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
    ), []


@dataclass(frozen=True)
class CommandSpec:
    """What shapes every attempt's command besides the plan."""

    command: tuple[str, ...]
    job: str
    cores_per_executor: int | None = None
    spark_log_level: str | None = None
    event_log_dir: Path | None = None  # None: event-log capture off


@dataclass(frozen=True)
class MemoryFailure:
    """The attempts before this one failed for memory: the reservation this one runs at
    (core/memory/retry.py) and the largest heap that failed."""

    reservation: Reservation
    failed_mb: int


def command_at(
    spec: CommandSpec,
    prediction: Prediction,
    ask: MemoryAsk | None,
    failed: MemoryFailure | None = None,
    *,
    create: bool = True,
    cluster_here: bool = False,
) -> JobCommand:
    """The command at the prediction's scale-out (and node label), its executor memory
    sized (`with_memory`), the Spark log level, and the event log turned on (`create`: make
    its directory; a dry run leaves the file system alone; `cluster_here`: the cluster runs
    on this host, so a driver on it writes the log here too)."""
    from cobell_cli.run import event_capture, launch

    injected = launch.inject(spec.command, prediction.plan.scale_out, spec.job,
                             spec.cores_per_executor)
    if prediction.node_label is not None:
        injected = launch.with_node_label(injected, prediction.node_label)
    injected, memory, notes = with_memory(injected, prediction, ask, failed)
    if spec.spark_log_level is not None:
        injected = launch.with_spark_log_level(injected, spec.spark_log_level)
    injected = event_capture.prepare(injected, spec.event_log_dir, create=create,
                                     cluster_here=cluster_here)
    return JobCommand(injected.argv, launch.redact(injected.argv), injected.launcher,
                      [*notes, *injected.warnings], memory)


def with_memory(
    injected: Injection,
    prediction: Prediction,
    ask: MemoryAsk | None,
    failed: MemoryFailure | None = None,
) -> tuple[Injection, dict[str, int | None] | None, list[str]]:
    """The command with the planned executor memory, unless the user's is kept; a retry after
    a memory failure (`failed`) runs at its own reservation, whatever the user or the plan
    said (the last one just proved too small). Returns the command, what the run is given
    (to record with it; None: unknown) and notes."""
    from cobell_cli.run import launch

    if ask is None:
        return injected, None, []
    if failed is not None:
        return _at_retry(injected, failed)
    memory = prediction.plan.memory
    if memory is None:
        return injected, None, []
    kept = {"executor_memory_mb": ask.user_memory_mb,
            "executor_overhead_mb": ask.user_overhead_mb}
    if memory.get("upper_peak_mb") is None or ask.keep:
        return injected, kept, []  # not sized, or the user's memory stays
    heap, overhead = memory.get("executor_memory_mb"), memory.get("executor_overhead_mb")
    planned = {"executor_memory_mb": heap, "executor_overhead_mb": overhead}
    return launch.with_memory(injected, int(heap), overhead), planned, []  # type: ignore[arg-type]


def _at_retry(
    injected: Injection, failed: MemoryFailure
) -> tuple[Injection, dict[str, int | None], list[str]]:
    from cobell_cli.run import launch

    grant = failed.reservation
    overhead = grant.executor_overhead_mb or None  # 0: a cluster that counts none
    container = f" (container {grant.container_mb} MB)" if overhead else ""
    note = (f"memory: the last attempt failed for memory at {failed.failed_mb} MB of heap; "
            f"this one runs at {grant.executor_memory_mb} MB{container}")
    memory = {"executor_memory_mb": grant.executor_memory_mb, "executor_overhead_mb": overhead}
    return launch.with_memory(injected, grant.executor_memory_mb, overhead), memory, [note]


def retry_memory(
    cluster: Any, ask: MemoryAsk | None, failed_heaps_mb: list[int | None],
    upper_peak_mb: float | None = None,
) -> Any:
    """The reservation of the attempt after memory failures at `failed_heaps_mb`
    (core/memory/retry.py), within the largest container the cluster grants; the memory
    model's bound `upper_peak_mb` when larger. None for a job cobell sizes no memory of."""
    from cobell_cli.api.memory import memory_request
    from cobell_cli.core.memory.retry import retry_memory as ladder

    if ask is None:
        return None
    request = memory_request(cluster, ask, [])
    planned = math.ceil(upper_peak_mb) if upper_peak_mb else None
    return ladder(failed_heaps_mb, request.rules, planned, ask.user_overhead_mb)


def measure_input(path: str) -> int:
    """Bytes under a local path or an hdfs:// URL (needs the `hdfs` CLI): `--input`."""
    from cobell_cli.run.submit import input_size

    return input_size(path)
