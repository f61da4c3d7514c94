"""What one Spark run did, compactly: the input of the one-run what-if (core/whatif/), and
what the run asked of its nodes (each stage's task metrics summed: `StageProfile.resources`,
read as resource shares by core/profile_effects/shares.py).

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
        return cls(**raw)
