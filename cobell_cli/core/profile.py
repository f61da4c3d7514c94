"""What one Spark run did, compactly: the input of the one-run what-if (core/whatif/) and of
the memory models (core/memory/), and what the run asked of its nodes (each stage's task
metrics summed: `StageProfile.resources`, read as resource shares by
core/profile_effects/shares.py).

Built from an event log by sources/eventlog_profile.py and stored as JSON in the history's
`run_profiles` table. Times are seconds from the application's start, so a profile is the same
wherever the clock was. Pure data: no I/O.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# 1: stages, tasks and executors; 2: + each stage's summed task metrics (`resources`).
# A format-1 summary still loads (no resources); readers skip only formats newer than theirs.
PROFILE_FORMAT = 2

# The task metrics a stage's `resources` sums (times in seconds, sizes in bytes), and the one
# it keeps the largest of: what a resource profile is computed from.
RESOURCE_SUMS = (
    "run_s",  # Executor Run Time: the task-seconds every share is a part of
    "cpu_s",  # Executor CPU Time (the JVM's threads; a Python worker's CPU is not in it)
    "gc_s",  # JVM GC Time
    "deserialize_s",  # Executor Deserialize Time
    "input_bytes",
    "output_bytes",
    "shuffle_read_bytes",  # local + remote
    "shuffle_fetch_wait_s",
    "shuffle_write_bytes",
    "shuffle_write_s",
    "memory_spill_bytes",
    "disk_spill_bytes",
)
RESOURCE_PEAKS = ("peak_execution_bytes",)  # Peak Execution Memory of one task


@dataclass
class StageProfile:
    """One stage (all its attempts): when it ran, what it waited for, its tasks' durations."""

    stage_id: int
    job_id: int
    parent_ids: list[int]
    submit_s: float | None = None
    end_s: float | None = None
    task_s: list[float] = field(default_factory=list)  # launch to finish, in launch order
    launch_s: list[float] = field(default_factory=list)
    input_bytes: int = 0
    # the executor each task ran on (aligned with task_s; empty in profiles written before
    # it was kept): the what-if tells an executor's first, cold task from the warm ones
    task_executor: list[str] = field(default_factory=list)
    # the stage's task metrics summed (RESOURCE_SUMS) and maxed (RESOURCE_PEAKS); empty in
    # profiles of format 1
    resources: dict[str, float] = field(default_factory=dict)


@dataclass
class JobProfile:
    """A Spark job (an action): the driver is busy between one job's end and the next's start."""

    job_id: int
    submit_s: float
    end_s: float | None
    stage_ids: list[int]


@dataclass
class ExecutorSpan:
    executor_id: str
    cores: int
    add_s: float
    remove_s: float | None = None
    # the host it ran on (None in profiles written before it was kept): how many executors
    # share a host, whose start-up and CPU they contend for (core/whatif/startup.py)
    host: str | None = None


@dataclass
class ExecutorMemory:
    """The peaks of one executor's memory metrics over the run, MB (Spark's executor metrics:
    "Peak JVM Memory OnHeap" is `heap_mb`); the GC time it reported, seconds."""

    executor_id: str
    heap_mb: float = 0.0  # JVMHeapMemory: heap used, garbage included
    offheap_mb: float = 0.0  # JVMOffHeapMemory: metaspace, code cache, ...
    execution_mb: float = 0.0  # OnHeapExecutionMemory: shuffles, joins, sorts, aggregations
    storage_mb: float = 0.0  # OnHeapStorageMemory: cached blocks and broadcasts
    unified_mb: float = 0.0  # OnHeapUnifiedMemory: the two together, at one moment
    direct_mb: float = 0.0  # DirectPoolMemory (NIO buffers)
    jvm_rss_mb: float = 0.0  # ProcessTreeJVMRSSMemory (0 unless process-tree metrics are on)
    python_rss_mb: float = 0.0  # ProcessTreePythonRSSMemory (PySpark workers)
    gc_s: float = 0.0  # TotalGCTime
    minor_gc: int = 0  # MinorGCCount (G1: young and mixed collections)
    major_gc: int = 0  # MajorGCCount (G1: full collections, a heap at its limit)
    major_gc_s: float = 0.0  # MajorGCTime


@dataclass
class MemoryProfile:
    """What a run's event log says about its executors' memory.

    `executors` is empty when the log carries no executor metrics (Spark before 3.0, or
    metrics off): then there is no peak, and nothing is guessed.
    """

    executor_memory_mb: int | None = None  # spark.executor.memory, as the run had it
    executor_overhead_mb: int | None = None  # spark.executor.memoryOverhead, if set
    executors: list[ExecutorMemory] = field(default_factory=list)
    task_run_s: float = 0.0  # executor run time of all tasks
    task_gc_s: float = 0.0  # JVM GC time within them
    shuffle_write_bytes: int = 0
    tasks: int = 0
    memory_failures: list[str] = field(default_factory=list)  # why tasks/executors died of it
    # executors their own JVM killed with SIGTERM (failures.py `oom-hook`), not yet checked
    # against their logs: [reason, the URLs of the executor's logs...]; memory until disproved
    oom_hook_kills: list[list[str]] = field(default_factory=list)
    # Spark job id -> its executors' metric peaks (ExecutorMemory's field names, the largest
    # over the executors) and the GC its executors did while it ran (counts and seconds,
    # summed over them): what one action of a long application used
    job_metrics: dict[str, dict[str, float]] = field(default_factory=dict)

    def peak(self, metric: str) -> float | None:
        """The largest value of one metric over the executors; None without metrics."""
        values = [getattr(e, metric) for e in self.executors]
        return max(values) if values else None


@dataclass
class AppProfile:
    """One application: identity, lifetime, executors, jobs and stages."""

    app_id: str
    app_name: str
    start_ms: int
    end_ms: int | None  # None: no end event (still running, or the driver died)
    last_event_s: float
    tags: list[str] = field(default_factory=list)
    job_tag: str | None = None  # the `cobell-job:<name>` tag, if any
    cores_per_executor: int = 1
    executors: list[ExecutorSpan] = field(default_factory=list)
    jobs: list[JobProfile] = field(default_factory=list)
    stages: list[StageProfile] = field(default_factory=list)
    local_mode: bool = False
    memory: MemoryProfile | None = None  # None in profiles written before it was kept

    @property
    def runtime_s(self) -> float:
        """Application start to end (to the last event when there is no end event)."""
        if self.end_ms is None:
            return self.last_event_s
        return (self.end_ms - self.start_ms) / 1000.0

    @property
    def scale_out(self) -> int:
        """Peak live executors: what `--num-executors` asked for (1 in local mode)."""
        events = sorted(
            [(e.add_s, 1) for e in self.executors]
            + [(e.remove_s, -1) for e in self.executors if e.remove_s is not None],
            key=lambda t: (t[0], t[1]),
        )
        live = peak = 0
        for _, step in events:
            live += step
            peak = max(peak, live)
        return max(peak, 1)

    @property
    def mean_scale_out(self) -> float:
        """Time-weighted mean of live executors over the run (differs under dynamic allocation)."""
        end = self.runtime_s
        if end <= 0 or not self.executors:
            return float(self.scale_out)
        alive = sum(
            max(0.0, min(end, e.remove_s if e.remove_s is not None else end) - max(0.0, e.add_s))
            for e in self.executors
        )
        return alive / end

    @property
    def resources(self) -> dict[str, float]:
        """The run's task metrics, all stages together (empty for a format-1 profile)."""
        total: dict[str, float] = {}
        for stage in self.stages:
            for key, value in stage.resources.items():
                total[key] = (max(total.get(key, 0.0), value) if key in RESOURCE_PEAKS
                              else total.get(key, 0.0) + value)
        return total

    @property
    def input_bytes(self) -> int:
        """Bytes read from storage by the first stages (those without parents)."""
        return sum(s.input_bytes for s in self.stages if not s.parent_ids)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable, with the derived figures beside the raw ones."""
        data = asdict(self)
        data.update(
            format=PROFILE_FORMAT,
            runtime_s=self.runtime_s,
            scale_out=self.scale_out,
            mean_scale_out=self.mean_scale_out,
            input_bytes=self.input_bytes,
            resources=self.resources,
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AppProfile:
        derived = {"format", "runtime_s", "scale_out", "mean_scale_out", "input_bytes",
                   "resources"}
        raw = {k: v for k, v in data.items() if k not in derived}
        raw["executors"] = [ExecutorSpan(**e) for e in raw.get("executors", [])]
        raw["jobs"] = [JobProfile(**j) for j in raw.get("jobs", [])]
        raw["stages"] = [StageProfile(**s) for s in raw.get("stages", [])]
        if raw.get("memory") is not None:
            memory = dict(raw["memory"])
            memory.pop("job_heap_mb", None)  # kept before job_metrics (the heap peak alone)
            memory["executors"] = [ExecutorMemory(**e) for e in memory.get("executors", [])]
            raw["memory"] = MemoryProfile(**memory)
        return cls(**raw)
