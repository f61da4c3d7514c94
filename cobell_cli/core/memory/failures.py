"""What says a Spark run died of memory: in a task's or an executor's end reason in the event
log, or in a line of the driver's output.

The JVM's own errors, Spark's exit code for an executor that ran out of memory (52,
SparkExitCode.OOM), and YARN's kill of a container that exceeded its memory (the NodeManager's
"running beyond physical memory limits", which the driver reports as "Container killed by
YARN for exceeding memory limits" or, on Spark >= 3, "exceeding physical memory limits"; the
NodeManager's own diagnostics, which the RM reports for the app, say "beyond the 'PHYSICAL'
memory limit").
"""

from __future__ import annotations

MEMORY_FAILURE_MARKERS = (
    "java.lang.OutOfMemoryError",
    "Java heap space",
    "GC overhead limit exceeded",
    "exited with code 52",
    "exit code 52",
    "exit code: 52",
    "exceeding memory limits",
    "exceeding physical memory limits",
    "beyond physical memory limits",  # Hadoop 2's NodeManager
    "beyond virtual memory limits",
    "beyond the 'PHYSICAL' memory limit",  # Hadoop 3's NodeManager diagnostics
    "beyond the 'VIRTUAL' memory limit",
)


def memory_failure(text: str) -> bool:
    """Does this reason or line say the run (or one of its executors) ran out of memory?"""
    return any(marker in text for marker in MEMORY_FAILURE_MARKERS)
