"""From a heap need to a reservation the cluster grants: heap, overhead, container.

YARN grants a container of heap + overhead rounded up to its allocation step
(`yarn.scheduler.minimum-allocation-mb`; 1024 MB when unknown) and refuses one above its
maximum (`yarn.scheduler.maximum-allocation-mb`). Spark's overhead defaults to
max(384 MB, 10 % of the heap) (`spark.executor.memoryOverhead`); the native/off-heap need, when
predicted, raises it, never lowers it. The rounding's slack goes to the heap, with the overhead
given explicitly, so no part is counted twice and nothing reserved is idle. A standalone
worker grants exactly the heap: no overhead, no step beyond the 64 MB the need is measured in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

STEP_MB = 64
SPARK_OVERHEAD_MIN_MB = 384
SPARK_OVERHEAD_FACTOR = 0.10
YARN_DEFAULT_ALLOCATION_MB = 1024  # yarn.scheduler.minimum-allocation-mb's default
SPARK_MIN_HEAP_MB = 512  # below 1.5 x 300 MB reserved, Spark refuses to start an executor
# (select.FLOOR_MB is the same floor, for the held-out ratios)


@dataclass(frozen=True)
class ContainerRules:
    """How a cluster turns a request into a grant. `allocation_mb` None: YARN's default."""

    backend: str  # "yarn" counts an overhead and rounds; anything else grants the heap
    allocation_mb: int | None = None
    maximum_mb: int | None = None

    @property
    def yarn(self) -> bool:
        return self.backend == "yarn"

    @property
    def step_mb(self) -> int:
        if not self.yarn:
            return STEP_MB
        return self.allocation_mb or YARN_DEFAULT_ALLOCATION_MB


@dataclass(frozen=True)
class Reservation:
    """What one executor is given: `--executor-memory`, the overhead (YARN), the container."""

    executor_memory_mb: int
    executor_overhead_mb: int  # 0 where the cluster counts none (standalone)
    container_mb: int
    fits: bool  # within the cluster's largest container

    @property
    def rounding_mb(self) -> int:
        """What the scheduler's increment adds above heap + overhead: the container is the
        three terms' sum."""
        return self.container_mb - self.executor_memory_mb - self.executor_overhead_mb


def default_overhead_mb(heap_mb: float) -> int:
    return max(SPARK_OVERHEAD_MIN_MB, math.ceil(SPARK_OVERHEAD_FACTOR * heap_mb))


def _round_up(mb: float, step: int) -> int:
    return int(math.ceil(mb / step - 1e-9) * step)


def reserve(heap_need_mb: float, rules: ContainerRules, native_need_mb: float = 0.0) -> Reservation:
    """The smallest grant whose heap covers `heap_need_mb` and, on YARN, whose overhead covers
    Spark's default and `native_need_mb`."""
    heap = max(_round_up(heap_need_mb, STEP_MB), SPARK_MIN_HEAP_MB)
    if not rules.yarn:
        container = heap
        return Reservation(heap, 0, container, _fits(container, rules))
    overhead = max(default_overhead_mb(heap), _round_up(native_need_mb, STEP_MB))
    container = _round_up(heap + overhead, rules.step_mb)
    heap = container - overhead  # the rounding's slack is heap, not idle container
    overhead = max(overhead, default_overhead_mb(heap))
    heap = container - overhead
    return Reservation(heap, overhead, container, _fits(container, rules))


def largest_grant(rules: ContainerRules) -> Reservation | None:
    """The largest reservation the cluster grants (None where it names no maximum): what a
    need beyond it gets, since YARN refuses an application that asks for more outright."""
    if rules.maximum_mb is None:
        return None
    if not rules.yarn:
        return Reservation(rules.maximum_mb, 0, rules.maximum_mb, False)
    container = max(rules.maximum_mb // rules.step_mb * rules.step_mb, rules.step_mb)
    overhead = default_overhead_mb(container / (1 + SPARK_OVERHEAD_FACTOR))
    return Reservation(container - overhead, overhead, container, False)


def granted(heap_mb: int, rules: ContainerRules, overhead_mb: int | None = None) -> Reservation:
    """What a given heap (a user's --executor-memory) is granted: on YARN, the overhead Spark
    adds (the configured spark.executor.memoryOverhead, else its default) and the container
    heap + overhead rounded up to the scheduler's step; elsewhere the heap alone."""
    if not rules.yarn:
        return Reservation(heap_mb, 0, heap_mb, _fits(heap_mb, rules))
    overhead = default_overhead_mb(heap_mb) if overhead_mb is None else overhead_mb
    container = _round_up(heap_mb + overhead, rules.step_mb)
    return Reservation(heap_mb, overhead, container, _fits(container, rules))


def _fits(container_mb: int, rules: ContainerRules) -> bool:
    return rules.maximum_mb is None or container_mb <= rules.maximum_mb
