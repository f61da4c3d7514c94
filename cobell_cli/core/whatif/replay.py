"""The replay: a workload's job groups list-scheduled on N x cores task slots (Spark's FIFO
order), with the cluster's start-up (`replay_s`), or all slots free from the start and task
durations as observed (`sparklens_runtime_s`, the baseline); and a lower bound at any N."""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from cobell_cli.core.digest import blake2b
from cobell_cli.core.median import median
from cobell_cli.core.whatif.startup import Startup
from cobell_cli.core.whatif.workload import StageWork, Workload, workload_digest


def replay_s(w: Workload, executors: int, startup: Startup | None = None) -> float:
    """The runtime at `executors` executors: start-up from `startup`, cold tasks, FIFO DAG
    replay of every job group, the driver's gaps kept serial (see the module doc)."""
    if executors < 1:
        raise ValueError(f"executors must be >= 1, got {executors}")
    startup = startup or Startup()
    cores = w.cores_per_executor
    ready = [t for t in startup.registration_s(w, executors) for _ in range(cores)]
    slots = _Slots(ready)
    warmup = startup.warmup_s(w, executors)
    factor = startup.task_factor(w, executors)
    t = 0.0
    for g in w.groups:
        t += g.gap_s
        durations = [_slowed(w.warm_task_s(s), factor) for s in g.stages]
        t = _run_group(g.stages, durations, t, slots, warmup, w.stage_lag_s)
    return t + w.tail_s


def _slowed(task_s: list[float], factor: float) -> list[float]:
    """Each task longer by what the host's contention adds to the stage's typical (median)
    task: the same seconds for every task of the stage, so a straggler that waits (on I/O,
    a lock, a sleep) is not stretched in proportion to its length."""
    if factor == 1.0:
        return task_s
    extra = median(task_s) * (factor - 1.0)
    return [max(0.001, d + extra) for d in task_s]


def replay_key(workloads: Sequence[Workload], startup: Startup) -> str:
    """What replays of `workloads` under `startup` depend on: a hash of the workloads' content
    (`workload_digest`) and the start-up fit (its repr: exact floats); the same app id
    re-imported with other tasks gets another key. Replays are cached under it."""
    parts = repr(([workload_digest(w) for w in workloads], startup)).encode()
    return blake2b(parts, digest_size=20).hexdigest()


def sparklens_runtime_s(w: Workload, executors: int) -> float:
    """The plain replay: each job group on N x cores slots that are all free when it starts,
    task durations as observed, plus the driver's time (runtime minus time in jobs)."""
    if executors < 1:
        raise ValueError(f"executors must be >= 1, got {executors}")
    in_jobs = sum(g.end_s - g.start_s for g in w.groups)
    total = max(0.0, w.runtime_s - in_jobs)
    for g in w.groups:
        slots = _Slots([0.0] * (executors * w.cores_per_executor))
        total += _run_group(g.stages, [s.task_s for s in g.stages], 0.0, slots, 0.0, 0.0)
    return total


def critical_path_s(w: Workload) -> float:
    """A lower bound at any N: the driver's time plus each group's longest chain of
    longest (warm) tasks."""
    total = sum(g.gap_s for g in w.groups) + w.tail_s
    for g in w.groups:
        longest: dict[int, float] = {}
        for s in g.stages:  # sorted by (job, stage id): parents come first
            before = max((longest.get(p, 0.0) for p in s.parent_ids), default=0.0)
            longest[s.stage_id] = before + max(w.warm_task_s(s))
        total += max(longest.values())
    return total


# --- the scheduler ------------------------------------------------------------------------


class _Slots:
    """Task slots: when each is free next, and whether its next task is its first."""

    def __init__(self, ready_s: Sequence[float]) -> None:
        self.heap = [(t, i) for i, t in enumerate(ready_s)]
        heapq.heapify(self.heap)
        self.cold = [True] * len(ready_s)


def _chain(stages: Sequence[StageWork]) -> list[int] | None:
    """The stages' order when they form one chain (each waits for the one before), else
    None: most jobs, and every iterative job's, so the replay takes the fast path."""
    index = {s.stage_id: k for k, s in enumerate(stages)}
    parents = [[index[p] for p in s.parent_ids if p in index] for s in stages]
    if any(len(ps) > 1 for ps in parents):
        return None
    child = {}
    for k, ps in enumerate(parents):
        if ps:
            if ps[0] in child:
                return None
            child[ps[0]] = k
    roots = [k for k, ps in enumerate(parents) if not ps]
    if len(roots) != 1:
        return None
    order = [roots[0]]
    while order[-1] in child:
        order.append(child[order[-1]])
    return order if len(order) == len(stages) else None


def _run_chain(
    order: Sequence[int],
    durations: Sequence[Sequence[float]],
    start_s: float,
    slots: _Slots,
    warmup_s: float,
    stage_lag_s: float,
) -> float:
    """`_run_group` for a chain of stages: one stage at a time, each task on the slot that
    is free first (the same schedule, without the event queue)."""
    heap, cold = slots.heap, slots.cold
    t = start_s
    for k in order:
        ready = t + stage_lag_s
        end = ready
        for d in durations[k]:
            free, slot = heap[0]
            finish = max(free, ready) + d + (warmup_s if cold[slot] else 0.0)
            cold[slot] = False
            heapq.heapreplace(heap, (finish, slot))
            end = max(end, finish)
        t = end
    return t


def _run_group(
    stages: Sequence[StageWork],
    durations: Sequence[Sequence[float]],
    start_s: float,
    slots: _Slots,
    warmup_s: float,
    stage_lag_s: float,
) -> float:
    """List-schedule one job group's stages on the slots from `start_s`; returns its end.

    A stage becomes runnable `stage_lag_s` after its last parent in the group ended; a free
    slot takes the next task of the runnable stage first in (job id, stage id) order; a
    slot's first task ever costs `warmup_s` more.
    """
    order = _chain(stages)
    if order is not None:
        return _run_chain(order, durations, start_s, slots, warmup_s, stage_lag_s)
    run = _GroupSchedule(stages, durations, slots, warmup_s, stage_lag_s)
    run.release_roots(start_s)
    t, end = start_s, start_s
    while True:
        run.launch(t)
        next_t = run.next_event_s()
        if next_t is None:
            return end
        t = max(t, next_t)
        if run.finish(t):
            end = max(end, t)


class _GroupSchedule:
    """The event state of `_run_group` on a DAG of stages: stages waiting for parents
    (pending, by ready time), runnable ones (by job id, stage id) and running tasks."""

    def __init__(
        self,
        stages: Sequence[StageWork],
        durations: Sequence[Sequence[float]],
        slots: _Slots,
        warmup_s: float,
        stage_lag_s: float,
    ) -> None:
        self.stages, self.durations, self.slots = stages, durations, slots
        self.warmup_s, self.stage_lag_s = warmup_s, stage_lag_s
        index = {s.stage_id: k for k, s in enumerate(stages)}
        self.waiting = [sum(1 for p in s.parent_ids if p in index) for s in stages]
        self.children: list[list[int]] = [[] for _ in stages]
        for k, s in enumerate(stages):
            for p in s.parent_ids:
                if p in index:
                    self.children[index[p]].append(k)
        self.pending: list[tuple[float, int]] = []  # (ready at, stage) not yet runnable
        self.runnable: list[tuple[int, int, int]] = []  # (job id, stage id, stage)
        self.running: list[tuple[float, int]] = []  # (finish, stage)
        self.launched = [0] * len(stages)
        self.finished = [0] * len(stages)

    def release_roots(self, start_s: float) -> None:
        """Stages without a parent in the group get ready `stage_lag_s` after its start."""
        for k, n in enumerate(self.waiting):
            if n == 0:
                heapq.heappush(self.pending, (start_s + self.stage_lag_s, k))

    def launch(self, t: float) -> None:
        """Stages ready by `t` become runnable; free slots take their next tasks."""
        pending, runnable, running, stages = self.pending, self.runnable, self.running, self.stages
        slots, durations, launched = self.slots, self.durations, self.launched
        while pending and pending[0][0] <= t:
            k = heapq.heappop(pending)[1]
            heapq.heappush(runnable, (stages[k].job_id, stages[k].stage_id, k))
        while runnable and slots.heap[0][0] <= t:
            k = runnable[0][2]
            _, slot = heapq.heappop(slots.heap)
            duration = durations[k][launched[k]] + (self.warmup_s if slots.cold[slot] else 0.0)
            slots.cold[slot] = False
            heapq.heappush(slots.heap, (t + duration, slot))
            heapq.heappush(running, (t + duration, k))
            launched[k] += 1
            if launched[k] == len(durations[k]):
                heapq.heappop(runnable)

    def next_event_s(self) -> float | None:
        """When something next happens: a task ends, a stage gets ready, a slot frees up."""
        nexts = [self.running[0][0]] if self.running else []
        if self.pending:
            nexts.append(self.pending[0][0])
        if self.runnable:
            nexts.append(self.slots.heap[0][0])
        return min(nexts) if nexts else None

    def finish(self, t: float) -> bool:
        """Tasks ended by `t` are done; their stages' children may get ready. Returns whether
        a stage ended."""
        running, finished, durations = self.running, self.finished, self.durations
        ended = False
        while running and running[0][0] <= t:
            k = heapq.heappop(running)[1]
            finished[k] += 1
            if finished[k] == len(durations[k]):
                ended = True
                for c in self.children[k]:
                    self.waiting[c] -= 1
                    if self.waiting[c] == 0:
                        heapq.heappush(self.pending, (t + self.stage_lag_s, c))
        return ended


