"""What says a Spark run died of memory: a task's or an executor's end reason in the event
log, YARN's diagnostics of the app and its attempts, or a line of the driver's output.

Three kinds (`memory_failure_kind`), each from what Spark or YARN really write:

- `heap`: the JVM's own errors, Spark's exit code for an executor that ran out of memory (52,
  SparkExitCode.OOM; Spark's YarnAllocator explains it as "Possible causes: OutOfMemoryError");
- `physical`: YARN's kill of a container that exceeded its memory (the NodeManager's "running
  beyond physical memory limits", exit -104, which the driver reports as "Container killed by
  YARN for exceeding memory limits" or, on Spark >= 3, "exceeding physical memory limits"; the
  NodeManager's own diagnostics, which the RM reports for the app, say "beyond the 'PHYSICAL'
  memory limit");
- `oom-hook`: Spark on YARN starts every executor with `-XX:OnOutOfMemoryError='kill %p'`, so
  an executor whose heap ran out is killed by its own JVM with SIGTERM before it can say why:
  YARN reports exit 143 "Killed by external signal" (not by the NodeManager, not on the
  driver's request: that one reads "explicit termination request"). Measured on the local
  YARN (Spark 4.3, Hadoop 3.5): a `collect_list` of 15 M longs at a 512 MB heap ends so,
  its container's stderr showing `java.lang.OutOfMemoryError: Java heap space`. Any other
  SIGTERM from outside (an operator's `kill`, a node's shutdown) reads the same, so this kind
  says memory only with the executor's own log: `hook_verdict` reads it (the event log names
  it), and the reasons a log never backs (the driver's output, the RM's diagnostics) leave it
  out (`memory_failure`, `failure_reason`).
"""

from __future__ import annotations

from collections.abc import Iterable

HEAP_MARKERS = (
    "java.lang.OutOfMemoryError",
    "Java heap space",
    "GC overhead limit exceeded",
    "exited with code 52",
    "exit code 52",
    "exit code: 52",
    "Exit status: 52",
    "Possible causes: OutOfMemoryError",
)
PHYSICAL_MARKERS = (
    "exceeding memory limits",
    "exceeding physical memory limits",
    "beyond physical memory limits",  # Hadoop 2's NodeManager
    "beyond virtual memory limits",
    "beyond the 'PHYSICAL' memory limit",  # Hadoop 3's NodeManager diagnostics
    "beyond the 'VIRTUAL' memory limit",
    "Exit status: -104",
    "exit code is -104",
    "exit code -104",
)
# Both in one reason: the executor's own JVM ended it with SIGTERM (module doc, `oom-hook`).
OOM_HOOK_MARKERS = ("Exit status: 143", "Killed by external signal")
# What the JVM writes to the executor's log when its heap runs out, before the hook's kill.
OOM_LOG_MARKER = "java.lang.OutOfMemoryError"


def memory_failure_kind(text: str) -> str | None:
    """`heap`, `physical` or `oom-hook` when this reason or line says the run (or one of its
    executors) ran out of memory (module doc); None otherwise."""
    if any(marker in text for marker in HEAP_MARKERS):
        return "heap"
    if any(marker in text for marker in PHYSICAL_MARKERS):
        return "physical"
    if all(marker in text for marker in OOM_HOOK_MARKERS):
        return "oom-hook"
    return None


def memory_failure(text: str) -> bool:
    """Does this reason or line alone say the run (or one of its executors) ran out of memory?
    An `oom-hook` kill does not: only with the executor's log (`hook_verdict`)."""
    return memory_failure_kind(text) in ("heap", "physical")


def hook_verdict(reason: str, executor_logs: Iterable[str]) -> str | None:
    """An `oom-hook` kill's reason as a memory failure, annotated with what the executor's own
    logs (the tails of its stdout and stderr, as read) said, or None when they were read and
    show no OutOfMemoryError (the JVM writes one to stdout before its hook kills it): a kill
    from outside. No log read keeps it: the hook is how Spark on YARN ends an OOM."""
    logs = list(executor_logs)
    if any(OOM_LOG_MARKER in log for log in logs):
        return f"{reason} [executor log: {OOM_LOG_MARKER}]"
    return None if logs else f"{reason} [executor log not read]"


def failure_reason(diagnostics: Iterable[str]) -> str | None:
    """A failed run's `failure_reason` from what the cluster kept of it (YARN's diagnostics of
    the app and its attempts, the event log's reasons): `memory` if any says so."""
    return "memory" if any(memory_failure(text) for text in diagnostics if text) else None
