"""Fold a Spark event log, streamed, into an AppProfile (core/profile.py): what the what-if and
the memory models need, and each stage's task metrics summed (its `resources`: what the run
asked of CPU, disk, network and memory).

Only a few numbers per task are kept (its launch and duration), so memory grows with the number
of tasks, not with the log's size; executor memory peaks are kept per executor.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cobell_cli.core.job_name import job_from_tag
from cobell_cli.core.memory.failures import memory_failure, memory_failure_kind
from cobell_cli.core.memory.units import memory_mb
from cobell_cli.core.profile import (
    RESOURCE_PEAKS,
    AppProfile,
    ExecutorMemory,
    ExecutorSpan,
    JobProfile,
    MemoryProfile,
    StageProfile,
)
from cobell_cli.sources.eventlog import EventLogError, iter_events


class _Fold:
    """Event handlers over raw epoch milliseconds; `profile()` makes them relative to the start."""

    def __init__(self) -> None:
        self.app: dict[str, Any] = {}
        self.props: dict[str, str] = {}
        self.executors: dict[str, list[Any]] = {}  # id -> [cores, add_ms, remove_ms]
        self.driver_cores = 1
        self.jobs: dict[int, list[Any]] = {}  # id -> [submit_ms, end_ms, stage ids]
        self.stages: dict[int, dict[str, Any]] = {}
        self.last_ms = 0
        self.memory = _MemoryFold()

    def feed(self, event: dict[str, Any]) -> None:
        name = "_" + event["Event"].removeprefix("SparkListener")
        handler = getattr(self, name, None)
        if handler is not None:
            handler(event)
        handler = getattr(self.memory, name, None)
        if handler is not None:
            handler(event)

    def _seen(self, ms: Any) -> int:
        ms = int(ms or 0)
        self.last_ms = max(self.last_ms, ms)
        return ms

    def _ApplicationStart(self, e: dict[str, Any]) -> None:
        self.app.update(app_id=e.get("App ID") or "", name=e.get("App Name") or "")
        self.app["start_ms"] = self._seen(e["Timestamp"])

    def _ApplicationEnd(self, e: dict[str, Any]) -> None:
        self.app["end_ms"] = self._seen(e["Timestamp"])

    def _EnvironmentUpdate(self, e: dict[str, Any]) -> None:
        self.props.update(e.get("Spark Properties") or {})

    def _ExecutorAdded(self, e: dict[str, Any]) -> None:
        info = e.get("Executor Info") or {}
        cores = int(info.get("Total Cores") or 1)
        if e["Executor ID"] == "driver":
            self.driver_cores = cores
            return
        host = info.get("Host")
        self.executors[e["Executor ID"]] = [cores, self._seen(e["Timestamp"]), None,
                                            str(host) if host else None]

    def _ExecutorRemoved(self, e: dict[str, Any]) -> None:
        if e["Executor ID"] in self.executors:
            self.executors[e["Executor ID"]][2] = self._seen(e["Timestamp"])

    def _JobStart(self, e: dict[str, Any]) -> None:
        job = e["Job ID"]
        infos = e.get("Stage Infos") or []
        self.jobs[job] = [self._seen(e["Submission Time"]), None, [s["Stage ID"] for s in infos]]
        for info in infos:
            self._stage(info["Stage ID"], job, info.get("Parent IDs") or [])

    def _stage(self, stage_id: int, job: int, parents: list[int]) -> dict[str, Any]:
        return self.stages.setdefault(
            stage_id,
            {
                "job": job,
                "parents": list(parents),
                "submit": None,
                "end": None,
                "tasks": [],
                "input": 0,
                "resources": {},
            },
        )

    def _JobEnd(self, e: dict[str, Any]) -> None:
        if e["Job ID"] in self.jobs:
            self.jobs[e["Job ID"]][1] = self._seen(e["Completion Time"])

    def _StageSubmitted(self, e: dict[str, Any]) -> None:
        info = e["Stage Info"]
        stage = self._stage(info["Stage ID"], -1, info.get("Parent IDs") or [])
        if stage["submit"] is None and info.get("Submission Time"):
            stage["submit"] = self._seen(info["Submission Time"])

    def _StageCompleted(self, e: dict[str, Any]) -> None:
        info = e["Stage Info"]
        stage = self._stage(info["Stage ID"], -1, info.get("Parent IDs") or [])
        if info.get("Completion Time"):
            stage["end"] = self._seen(info["Completion Time"])

    def _TaskEnd(self, e: dict[str, Any]) -> None:
        info = e.get("Task Info") or {}
        launch, finish = int(info.get("Launch Time") or 0), self._seen(info.get("Finish Time"))
        stage = self._stage(e["Stage ID"], -1, [])
        if launch and finish >= launch:
            stage["tasks"].append((launch, finish - launch, str(info.get("Executor ID", ""))))
        task_metrics = e.get("Task Metrics") or {}
        stage["input"] += int((task_metrics.get("Input Metrics") or {}).get("Bytes Read") or 0)
        _add_resources(stage["resources"], task_metrics)

    def profile(self, path: Path) -> AppProfile:
        if "start_ms" not in self.app:
            raise EventLogError(
                f"event log {path} has no application start event",
                hint="pass a complete Spark event log",
            )
        start = self.app["start_ms"]
        tags = [t.strip() for t in self.props.get("spark.yarn.tags", "").split(",") if t.strip()]
        job_tag = next((job for t in tags if (job := job_from_tag(t)) is not None), None)
        executors, local = self._executor_spans(start)
        return AppProfile(
            app_id=self.app["app_id"] or self.props.get("spark.app.id", ""),
            app_name=self.app["name"],
            start_ms=start,
            end_ms=self.app.get("end_ms"),
            last_event_s=max(0.0, (self.last_ms - start) / 1000.0),
            tags=tags,
            job_tag=job_tag,
            cores_per_executor=self._cores_per_executor(executors),
            executors=executors,
            jobs=[
                JobProfile(j, _rel(v[0], start) or 0.0, _rel(v[1], start), v[2])
                for j, v in sorted(self.jobs.items())
            ],
            stages=[self._stage_profile(i, s, start) for i, s in sorted(self.stages.items())],
            local_mode=local,
            memory=self.memory.profile(self.props),
        )

    def _executor_spans(self, start: int) -> tuple[list[ExecutorSpan], bool]:
        if not self.executors:  # local mode: the driver runs the tasks
            return [ExecutorSpan("driver", self.driver_cores, 0.0, None)], True
        spans = [
            ExecutorSpan(i, v[0], _rel(v[1], start) or 0.0, _rel(v[2], start), v[3])
            for i, v in self.executors.items()
        ]
        return spans, False

    def _cores_per_executor(self, executors: list[ExecutorSpan]) -> int:
        if self.props.get("spark.executor.cores", "").isdigit():
            return int(self.props["spark.executor.cores"])
        return Counter(e.cores for e in executors).most_common(1)[0][0]

    def _stage_profile(self, stage_id: int, s: dict[str, Any], start: int) -> StageProfile:
        tasks = sorted(s["tasks"])
        job = s["job"] if s["job"] >= 0 else self._job_of(stage_id)
        return StageProfile(
            stage_id=stage_id,
            job_id=job,
            parent_ids=sorted(s["parents"]),
            submit_s=_rel(s["submit"], start),
            end_s=_rel(s["end"], start),
            task_s=[d / 1000.0 for _, d, _ in tasks],
            launch_s=[(t - start) / 1000.0 for t, _, _ in tasks],
            input_bytes=s["input"],
            task_executor=[e for _, _, e in tasks],
            resources=dict(s["resources"]),
        )

    def _job_of(self, stage_id: int) -> int:
        return next((j for j, v in self.jobs.items() if stage_id in v[2]), -1)


# Executor metrics (Spark >= 3.0) -> ExecutorMemory fields, in bytes
_METRICS = {
    "JVMHeapMemory": "heap_mb",
    "JVMOffHeapMemory": "offheap_mb",
    "OnHeapExecutionMemory": "execution_mb",
    "OnHeapStorageMemory": "storage_mb",
    "OnHeapUnifiedMemory": "unified_mb",
    "DirectPoolMemory": "direct_mb",
    "ProcessTreeJVMRSSMemory": "jvm_rss_mb",
    "ProcessTreePythonRSSMemory": "python_rss_mb",
}
# The GC's counters (cumulative per executor; times in ms) -> ExecutorMemory fields
_GC = {
    "TotalGCTime": ("gc_s", 1e-3),
    "MinorGCCount": ("minor_gc", 1.0),
    "MajorGCCount": ("major_gc", 1.0),
    "MajorGCTime": ("major_gc_s", 1e-3),
}
_MB = 1024 * 1024


def _readings(metrics: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """One executor-metrics record as (memory in MB, GC counters)."""
    memory = {name: _number(metrics, key) / _MB for key, name in _METRICS.items()}
    gc = {name: _number(metrics, key) * scale for key, (name, scale) in _GC.items()}
    return memory, gc


class _MemoryFold:
    """Executors' memory peaks (from every event that carries executor metrics), each Spark
    job's own peaks and GC, task GC and shuffle totals, and the failures that say memory."""

    def __init__(self) -> None:
        self.peaks: dict[str, dict[str, float]] = {}
        self.stage_job: dict[int, int] = {}
        self.job_peaks: dict[int, dict[str, float]] = {}
        # the GC counters per executor: the latest seen, and per (job, executor) the value
        # before the job's first reading and the largest within it
        self.gc_seen: dict[str, dict[str, float]] = {}
        self.gc_job: dict[tuple[int, str], list[dict[str, float]]] = {}
        self.task_run_ms = 0
        self.task_gc_ms = 0
        self.shuffle_write = 0
        self.tasks = 0
        self.failures: list[str] = []
        self.log_urls: dict[str, list[str]] = {}  # executor id -> its logs' URLs (on YARN)
        self.hook_kills: list[list[str]] = []

    def _metrics(self, executor: Any, metrics: Any, stage: Any = None) -> None:
        if executor in (None, "driver") or not isinstance(metrics, dict):
            return
        if not _number(metrics, "JVMHeapMemory"):  # not polled yet: no measurement
            return
        executor = str(executor)
        memory, gc = _readings(metrics)
        peak = self.peaks.setdefault(executor, {})
        for name, value in (*memory.items(), *gc.items()):
            peak[name] = max(peak.get(name, 0.0), value)
        before = dict(self.gc_seen.get(executor, {}))
        seen = self.gc_seen.setdefault(executor, {})
        for name, value in gc.items():
            seen[name] = max(seen.get(name, 0.0), value)
        job = self.stage_job.get(stage) if stage is not None else None
        if job is None:
            return
        mine = self.job_peaks.setdefault(job, {})
        for name, value in memory.items():
            mine[name] = max(mine.get(name, 0.0), value)
        top = self.gc_job.setdefault((job, executor), [before, {}])[1]
        for name, value in gc.items():
            top[name] = max(top.get(name, 0.0), value)

    def _JobStart(self, e: dict[str, Any]) -> None:
        for info in e.get("Stage Infos") or []:
            self.stage_job.setdefault(info["Stage ID"], e["Job ID"])

    def _TaskEnd(self, e: dict[str, Any]) -> None:
        info = e.get("Task Info") or {}
        self._metrics(info.get("Executor ID"), e.get("Task Executor Metrics"), e.get("Stage ID"))
        metrics = e.get("Task Metrics") or {}
        self.tasks += 1
        self.task_run_ms += int(metrics.get("Executor Run Time") or 0)
        self.task_gc_ms += int(metrics.get("JVM GC Time") or 0)
        shuffle = metrics.get("Shuffle Write Metrics") or {}
        self.shuffle_write += int(shuffle.get("Shuffle Bytes Written") or 0)
        reason = e.get("Task End Reason") or {}
        if reason.get("Reason") not in (None, "Success"):
            self._failure(" ".join(str(v) for v in reason.values()))

    def _StageExecutorMetrics(self, e: dict[str, Any]) -> None:
        self._metrics(e.get("Executor ID"), e.get("Executor Metrics"), e.get("Stage ID"))

    def _ExecutorMetricsUpdate(self, e: dict[str, Any]) -> None:
        for update in e.get("Executor Metrics Updated") or []:
            if isinstance(update, dict):
                self._metrics(e.get("Executor ID"), update.get("Executor Metrics"),
                              update.get("Stage ID"))

    def _ExecutorAdded(self, e: dict[str, Any]) -> None:
        urls = (e.get("Executor Info") or {}).get("Log Urls") or {}
        if isinstance(urls, dict):
            self.log_urls[str(e.get("Executor ID"))] = [
                str(urls[name]) for name in ("stdout", "stderr") if urls.get(name)]

    def _ExecutorRemoved(self, e: dict[str, Any]) -> None:
        text = str(e.get("Removed Reason") or "")
        if memory_failure_kind(text) == "oom-hook" and len(self.hook_kills) < 5:
            urls = self.log_urls.get(str(e.get("Executor ID")), [])
            self.hook_kills.append([text.strip()[:300], *urls])
        self._failure(text)

    def _failure(self, text: str) -> None:
        if memory_failure(text) and len(self.failures) < 5:
            self.failures.append(text.strip()[:300])

    def _job_metrics(self) -> dict[str, dict[str, float]]:
        """Each job's memory peaks, and the GC its executors did while it ran (the counters'
        growth from before its first reading to its last, summed over the executors)."""
        out = {}
        for job, peaks in sorted(self.job_peaks.items()):
            row = {k: round(v, 1) for k, v in peaks.items()}
            for name, _ in _GC.values():
                row[name] = round(sum(max(top.get(name, 0.0) - base.get(name, 0.0), 0.0)
                                      for (j, _e), (base, top) in self.gc_job.items()
                                      if j == job), 3)
            out[str(job)] = row
        return out

    def profile(self, props: dict[str, str]) -> MemoryProfile:
        executors = [ExecutorMemory(i, **{k: (int(v) if k in ("minor_gc", "major_gc") else v)
                                          for k, v in p.items()})
                     for i, p in sorted(self.peaks.items())]
        return MemoryProfile(
            executor_memory_mb=_memory_setting(props, "spark.executor.memory"),
            executor_overhead_mb=_memory_setting(props, "spark.executor.memoryOverhead"),
            executors=executors,
            task_run_s=self.task_run_ms / 1000.0,
            task_gc_s=self.task_gc_ms / 1000.0,
            shuffle_write_bytes=self.shuffle_write,
            tasks=self.tasks,
            memory_failures=self.failures,
            oom_hook_kills=self.hook_kills,
            job_metrics=self._job_metrics(),
        )


def _memory_setting(props: dict[str, str], key: str) -> int | None:
    try:
        return memory_mb(props[key]) if key in props else None
    except ValueError:
        return None


def _number(section: dict[str, Any], key: str) -> float:
    try:
        return float(section.get(key) or 0)
    except (TypeError, ValueError):
        return 0.0


def _add_resources(total: dict[str, float], m: dict[str, Any]) -> None:
    """Add one task's metrics (JsonProtocol's "Task Metrics": times in ms, CPU and shuffle
    write times in ns) to its stage's sums (core/profile.py RESOURCE_SUMS, RESOURCE_PEAKS)."""
    if not m:
        return
    read = m.get("Shuffle Read Metrics") or {}
    write = m.get("Shuffle Write Metrics") or {}
    values = {
        "run_s": _number(m, "Executor Run Time") / 1e3,
        "cpu_s": _number(m, "Executor CPU Time") / 1e9,
        "gc_s": _number(m, "JVM GC Time") / 1e3,
        "deserialize_s": _number(m, "Executor Deserialize Time") / 1e3,
        "input_bytes": _number(m.get("Input Metrics") or {}, "Bytes Read"),
        "output_bytes": _number(m.get("Output Metrics") or {}, "Bytes Written"),
        "shuffle_read_bytes": (_number(read, "Remote Bytes Read")
                               + _number(read, "Local Bytes Read")),
        "shuffle_fetch_wait_s": _number(read, "Fetch Wait Time") / 1e3,
        "shuffle_write_bytes": _number(write, "Shuffle Bytes Written"),
        "shuffle_write_s": _number(write, "Shuffle Write Time") / 1e9,
        "memory_spill_bytes": _number(m, "Memory Bytes Spilled"),
        "disk_spill_bytes": _number(m, "Disk Bytes Spilled"),
    }
    for key, value in values.items():
        if value:
            total[key] = total.get(key, 0.0) + value
    for key, name in zip(RESOURCE_PEAKS, ("Peak Execution Memory",), strict=True):
        peak = _number(m, name)
        if peak:
            total[key] = max(total.get(key, 0.0), peak)


def _rel(ms: int | None, start: int) -> float | None:
    return None if ms is None else (ms - start) / 1000.0


def summarize(path: str | Path) -> AppProfile:
    """The profile of one log file or rolling log directory, read once, streamed."""
    fold = _Fold()
    for event in iter_events(path):
        fold.feed(event)
    return fold.profile(Path(path))
