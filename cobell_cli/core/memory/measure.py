"""A run's memory columns from its event-log profile: what it reserved and what it used.

`peak_memory_mb` is the largest JVM heap one executor used over the run (Spark's executor
metric JVMHeapMemory, "Peak JVM Memory OnHeap" in its UI), garbage included: what the user
sees, and the input of the memory models (demand.py says how it relates to the need). A log
without executor metrics gives no peak: None, never a guess.
"""

from __future__ import annotations

from typing import Any

from cobell_cli.core.profile import AppProfile


def memory_columns(profile: AppProfile) -> dict[str, Any]:
    """executor_memory_mb, executor_overhead_mb and peak_memory_mb as far as the log says, and
    `failure_reason` `memory` when a task or executor died of memory, an executor its own JVM
    killed included until its log disproves it (a failed run's reason: a run that succeeded
    after such a retry keeps none)."""
    memory = profile.memory
    if memory is None:
        return {}
    peak = memory.peak("heap_mb")
    columns = {
        "executor_memory_mb": memory.executor_memory_mb,
        "executor_overhead_mb": memory.executor_overhead_mb,
        "peak_memory_mb": round(peak, 1) if peak is not None else None,
        "failure_reason": "memory" if memory.memory_failures or memory.oom_hook_kills else None,
    }
    return {k: v for k, v in columns.items() if v is not None}
