"""The executor memory a retry after a memory failure runs at (`submit --retry-on-oom`).

A run that failed for memory proves its need above the heap it had, no more: the retry runs
above every failed attempt's heap, RETRY_GROWTH times the largest (plan.py: the factor that
bounds a bisection's steps), or at the memory model's heap when that is larger; within the
largest container the cluster grants (YARN refuses a larger request outright). When even that
is no larger than a heap that failed, nothing is retried, and `why_not` says so in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cobell_cli.core.memory.plan import RETRY_GROWTH
from cobell_cli.core.memory.sizing import (
    STEP_MB,
    ContainerRules,
    Reservation,
    default_overhead_mb,
    granted,
    largest_grant,
    reserve,
)

SPARK_DEFAULT_HEAP_MB = 1024  # spark.executor.memory's default: an attempt that set none ran so


@dataclass(frozen=True)
class RetryMemory:
    """The next attempt's reservation, or why there is none (`why_not`)."""

    reservation: Reservation | None
    failed_mb: int  # the largest heap that failed
    why_not: str | None = None


def retry_memory(
    failed_heaps_mb: Sequence[int | None],
    rules: ContainerRules,
    planned_heap_mb: int | None = None,
    overhead_mb: int | None = None,
) -> RetryMemory:
    """The reservation for the attempt after memory failures at `failed_heaps_mb` (None: the
    attempt set no heap, Spark's default), at least the planned heap; `overhead_mb`: the
    overhead the user set, kept unless Spark's default for the larger heap is larger (None:
    Spark's default)."""
    failed = max(h or SPARK_DEFAULT_HEAP_MB for h in failed_heaps_mb)
    need = max(RETRY_GROWTH * failed, failed + STEP_MB, planned_heap_mb or 0)
    if overhead_mb is None:
        reservation = reserve(need, rules)
    else:
        heap = int(-(-need // STEP_MB) * STEP_MB)
        reservation = granted(heap, rules, max(overhead_mb, default_overhead_mb(heap)))
    if not reservation.fits:
        reservation = _largest(rules, overhead_mb) or reservation
    if reservation.executor_memory_mb <= failed:
        return RetryMemory(None, failed, (
            f"not retried: {failed} MB of heap failed for memory and the largest container "
            f"YARN grants ({rules.maximum_mb} MB) holds no more heap; run it on a cluster "
            "with larger containers, or with less input per executor"))
    return RetryMemory(reservation, failed)


def _largest(rules: ContainerRules, overhead_mb: int | None) -> Reservation | None:
    """The largest grant, with the user's overhead where they set one."""
    largest = largest_grant(rules)
    if largest is None or overhead_mb is None or not rules.yarn:
        return largest
    heap = (largest.container_mb - overhead_mb) // STEP_MB * STEP_MB
    return Reservation(heap, overhead_mb, largest.container_mb, False)
