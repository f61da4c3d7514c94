"""cobell's Python API for deadlines (`--deadline`): plan a submit against its deadline,
decide its start together with every other waiting submit, and what its run records.

`plan_for_deadline` asks the cluster and plans at once (as `api.predict`, with the runtime the
deadline leaves as target, less what the YARN queue will hold the app); `decide` weighs the
starts (core/schedule) with the history's waiting submits; `decide_and_record` does that
under the history's write lock and writes every waiting submit's new plan, so two submits
never both take the same slot. Nothing here waits: run/wait.py does.
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cobell_cli.core.cost import DEFAULT_MINIMIZE, Minimize
from cobell_cli.core.plan.reasons import policy_text
from cobell_cli.core.schedule.decision import NEW, StartDecision
from cobell_cli.core.schedule.queue import DEFAULT_QUEUE
from cobell_cli.errors import UsageError

if TYPE_CHECKING:
    from cobell_cli.api.memory import MemoryAsk
    from cobell_cli.api.planning import Prediction
    from cobell_cli.config import Settings
    from cobell_cli.core.schedule import Busy, PendingJob, Schedule
    from cobell_cli.store.history import History

WEEK_S = 7 * 86400.0
PAST_TARGET_S = 1e-3  # a deadline already passed: plan for "as fast as possible"


@dataclass(frozen=True)
class DeadlineRequest:
    """What `--deadline`, `--max-wait`, `--start-now` and `--minimize` ask for."""

    deadline_at: float
    submitted_at: float
    max_wait_s: float | None = None
    start_now: bool = False
    queue: str = DEFAULT_QUEUE
    minimize: Minimize = DEFAULT_MINIMIZE
    container_mb: float | None = None  # one executor's container; memory-MB-seconds needs it

    @property
    def latest_start_at(self) -> float | None:
        return None if self.max_wait_s is None else self.submitted_at + self.max_wait_s

    def budget_s(self, target_s: float | None, at: float) -> float:
        """The runtime the deadline leaves a run starting `at` (the target too, if given)."""
        left = self.deadline_at - at
        return min(left, target_s) if target_s is not None else left


def check_deadline(request: DeadlineRequest, now: float, option: str = "--deadline") -> None:
    """A deadline more than a week ahead is a usage error unless --max-wait allows it."""
    if request.deadline_at - now > WEEK_S and request.max_wait_s is None:
        from cobell_cli.core.words import duration_text

        raise UsageError(
            f"{option} is more than a week ahead (in {duration_text(request.deadline_at - now)})",
            hint="check the date, or give --max-wait to allow a wait that long")


@dataclass
class Planned:
    """A deadline submit planned at `now`, before anything is decided or written."""

    prediction: Prediction
    pending: PendingJob | None  # None: no model to weigh a later start with (bootstrap)
    busy: list[Busy]
    cluster_app_ids: frozenset[str]
    request: DeadlineRequest
    target_s: float | None
    now: float
    warnings: list[str] = field(default_factory=list)


def plan_for_deadline(
    history: History,
    cluster: Any,
    settings: Settings,
    *,
    job: str,
    target_s: float | None,
    request: DeadlineRequest,
    now: float,
    input_bytes: int | None = None,
    require_history: bool = True,
    memory: MemoryAsk | None = None,
) -> Planned:
    """Plan `job` to start now within what its deadline leaves, and gather what the
    scheduler weighs later starts with: its model, its errors, the running apps' ends.
    `memory` sizes each candidate's executor memory (api.predict); with --minimize
    memory-mb-seconds every start is priced at the container sized at the plan's choice."""
    from cobell_cli.api import planning as api

    settings = at_deadline_confidence(settings)
    captured: dict[str, Any] = {}
    budget = request.budget_s(target_s, now)

    def predict(budget_s: float) -> Prediction:
        return api.predict(
            history, cluster, settings, job=job, target_s=max(budget_s, PAST_TARGET_S), now=now,
            input_bytes=input_bytes, require_history=require_history, memory=memory,
            minimize=request.minimize,
            on_model=lambda model, phase: captured.update(model=model, phase=phase))

    prediction = predict(budget)
    wait_s, note = _queue_wait(cluster, prediction, request.queue, now)
    if wait_s > 0:
        prediction = predict(budget - wait_s)
    request = _with_container(request, prediction)
    warnings = [note] if note else []
    if request.deadline_at <= now:
        prediction.plan = _without_stand_in_target(prediction.plan)
        warnings.append(passed_text(request.deadline_at, now) + ": planning the fastest start")
    pending = _pending(history, settings, prediction, captured, request, target_s, now,
                       wait_s, input_bytes)
    busy = _busy(history, settings, prediction)
    ids = frozenset(a.app_id for a in prediction.co_runners)
    return Planned(prediction, pending, busy, ids, request, target_s, now, warnings)


def passed_text(deadline_at: float, now: float) -> str:
    """`the deadline 2026-01-01T06:00:00+01:00 passed 3 h 10 min ago`, for a person."""
    from cobell_cli.core.words import duration_text
    from cobell_cli.timespec import local_iso

    return f"the deadline {local_iso(deadline_at)} passed {duration_text(now - deadline_at)} ago"


def _without_stand_in_target(plan: Any) -> Any:
    """A plan for a deadline that has passed, without the warnings about the stand-in target
    it was planned for (PAST_TARGET_S, "the 0 s target"): the deadline's own line says it."""
    stand_in = f"the {PAST_TARGET_S:.0f} s target"
    return replace(plan, warnings=tuple(w for w in plan.warnings if stand_in not in w))


def _with_container(request: DeadlineRequest, prediction: Prediction) -> DeadlineRequest:
    """The request with the container the plan sized (memory-MB-seconds prices with it), or,
    where the plan could not minimise memory-MB-seconds (api.predict warned why), with the
    executor-seconds the plan minimised: the starts are priced as the plan chose."""
    plan = prediction.plan
    if plan.minimize != request.minimize:
        return replace(request, minimize=plan.minimize)  # type: ignore[arg-type]
    if request.minimize != "memory-mb-seconds" or request.container_mb is not None:
        return request
    container = (plan.memory or {}).get("container_mb")
    if container is None:  # the plan priced every candidate's container: never without one
        return replace(request, minimize=DEFAULT_MINIMIZE)
    return replace(request, container_mb=float(container))


def at_deadline_confidence(settings: Settings) -> Settings:
    """The settings a deadline plans with: --confidence as given, or the deadline's default
    (core/schedule/risk.DEADLINE_CONFIDENCE) where the runtime target's default stood."""
    from cobell_cli.core.schedule.risk import deadline_confidence

    given = settings.sources.get("confidence", "default") != "default"
    level = deadline_confidence(settings.confidence, given)
    if level == settings.confidence:
        return settings
    return replace(settings, values={**settings.values, "confidence": level})


def _queue_wait(cluster: Any, prediction: Prediction, queue: str, now: float,
                ) -> tuple[float, str | None]:
    """What the RM says of the new app's queue (core/schedule/queue.py); 0 where the cluster
    has no queues or does not answer."""
    from cobell_cli.core.schedule.queue import queue_wait_s
    from cobell_cli.errors import ClusterError

    accepted_apps = getattr(cluster, "accepted_apps", None)
    if accepted_apps is None:
        return 0.0, None
    try:
        accepted = accepted_apps()
    except ClusterError as exc:
        return 0.0, f"the YARN queue could not be read ({exc.line()}): no queueing counted"
    ends = {v.app_id: v.predicted_end_at for v in prediction.plan.co_runners}
    return queue_wait_s(queue, accepted, prediction.co_runners, ends, now)


def _pending(
    history: History, settings: Settings, prediction: Prediction, captured: Mapping[str, Any],
    request: DeadlineRequest, target_s: float | None, now: float, queue_wait_s: float,
    input_bytes: int | None,
) -> PendingJob | None:
    """The deciding submit as the scheduler sees it (core/schedule/build.py)."""
    from cobell_cli.core.plan import similar_runs
    from cobell_cli.core.schedule.build import pending_job

    plan = prediction.plan
    runs = similar_runs(
        [r for r in history.training_runs(plan.job, window=settings.history_window)
         if r.get("status") == "succeeded"], input_bytes, settings.input_tolerance)
    return pending_job(
        plan, captured.get("model"), runs, deadline_at=request.deadline_at,
        submitted_at=request.submitted_at, now=now, target_s=target_s,
        latest_start_at=request.latest_start_at, queue_wait_s=queue_wait_s,
        start_now=request.start_now, grid_max=max(plan.max_scale_out, settings.max_scale_out),
        container_mb=request.container_mb)


def _busy(history: History, settings: Settings, prediction: Prediction) -> list[Busy]:
    """The running co-runners, their ends and errors (core/schedule/build.py)."""
    from cobell_cli.api import planning as api
    from cobell_cli.core.schedule.build import busy_apps

    cache = api.model_cache(settings)
    jobs = {v.job for v in prediction.plan.co_runners if v.job}
    histories = {job: history.training_runs(job, window=settings.history_window)
                 for job in jobs}
    return busy_apps(prediction.plan, histories, cache.fit if cache is not None else _fit)


def _fit(runs: Sequence[Mapping[str, Any]]) -> Any:
    from cobell_cli.core.model import fit_runtime_model

    return fit_runtime_model(runs)


def decide(
    planned: Planned, rows: Sequence[Mapping[str, Any]], run_apps: Mapping[int, tuple],
    now: float, own_row: int | None = None,
) -> tuple[StartDecision, Schedule | None]:
    """The deciding submit's start, weighed jointly with the history's other submits with
    deadlines (`rows`, store/waiting.py): waiting ones may move; started ones run where they
    are, but what starts beside them must keep their deadlines too. A started row without a
    model is a running app (unless the cluster lists it already: `run_apps`: run id -> (app
    id, status)); a row whose run is over is skipped."""
    from cobell_cli.core.schedule.decision import busy_from_row, pending_from_row
    from cobell_cli.core.schedule.decision import decide as decide_jointly

    others, started, listed = [], [], set()
    for r in rows:
        run = run_apps.get(r.get("run_id") or -1)
        if r["id"] == own_row or (run is not None and run[1] != "running"):
            continue
        if r.get("model"):
            if r["state"] == "waiting" or r.get("start_at"):
                others.append(pending_from_row(r, now))
                listed.add(run[0] if run is not None else None)
        elif r["state"] == "started" and r.get("start_at") and not (
                run is not None and run[0] in planned.cluster_app_ids):
            started.append(busy_from_row(r))
    if planned.pending is None:
        return _at_once(planned, now, len(others)), None
    busy = [b for b in planned.busy if b.key not in listed]  # the row knows it better
    return decide_jointly(replace(planned.pending, earliest_at=now), others,
                          [*busy, *started], now, minimize=planned.request.minimize)


def _at_once(planned: Planned, now: float, others: int) -> StartDecision:
    """No model yet (runs 1-3) or no error estimate: the plan at once decides."""
    plan = planned.prediction.plan
    return StartDecision(
        deadline_at=planned.request.deadline_at, now=now, start_at=now,
        scale_out=plan.scale_out, predicted_s=plan.predicted_s,
        meet_probability=plan.meet_probability, feasible=plan.feasible, waits_for=None,
        start_reason=_at_once_reason(plan.phase),
        others_waiting=others, minimize=planned.request.minimize)


def _at_once_reason(phase: str) -> str:
    """Why no later start was weighed: the binary search (runs 1-3) has no model, and a
    model without an interval has no probability to weigh one with."""
    if phase == "bootstrap-search":
        return "starting now: runs 1-3 are a binary search, with no model to weigh a wait"
    return "starting now: the model has no error estimate to weigh a wait with"


def read_decision(history: History, planned: Planned, now: float) -> StartDecision:
    """`decide` against the history's waiting submits, read only (cobell predict)."""
    from cobell_cli.store import waiting

    try:
        rows = waiting.rows(history, now)
        apps = waiting.run_app_ids(history, [r["run_id"] for r in rows if r.get("run_id")])
    except sqlite3.OperationalError:  # a history from before deadlines: nobody waits
        rows, apps = [], {}
    return decide(planned, rows, apps, now)[0]


def decide_and_record(
    history_path: Path, planned: Planned, now: float, own_row: int | None,
    *, give_up: Callable[[], bool] = lambda: False, pid: int | None = None,
) -> tuple[StartDecision, int]:
    """Decide under the history's write lock and write every waiting submit's plan: the
    deciding submit's row is inserted (or updated), `started` when it starts now."""
    import os

    from cobell_cli.store import waiting
    from cobell_cli.store.history import write_retrying

    def write(history: History) -> tuple[StartDecision, int]:
        with waiting.deciding(history, now) as rows:
            apps = waiting.run_app_ids(history, [r["run_id"] for r in rows if r.get("run_id")])
            decision, found = decide(planned, rows, apps, now, own_row)
            for p in found.placements if found is not None else ():
                if p.key not in (NEW, str(own_row)):
                    waiting.update(history, int(p.key), start_at=p.start_at,
                                   scale_out=p.scale_out, predicted_s=p.predicted_s,
                                   meet_probability=p.meet_probability,
                                   waits_for=p.waits_for, decided_at=now)
            fields = _own_fields(planned, decision, now)
            if own_row is None or not waiting.update(history, own_row, **fields):
                row = waiting.insert(history, pid=pid or os.getpid(),
                                     **_identity(planned), **fields)
            else:
                row = own_row
        return decision, row

    return write_retrying(history_path, write, give_up=give_up)


def _identity(planned: Planned) -> dict[str, Any]:
    """What a waiting row keeps of its submit: job, deadline, model and errors."""
    request, pending = planned.request, planned.pending
    return {
        "job": planned.prediction.plan.job,
        "submitted_at": request.submitted_at,
        "deadline_at": request.deadline_at,
        "target_s": planned.target_s,
        "latest_start_at": request.latest_start_at,
        "start_now": int(request.start_now),
        "confidence": pending.confidence if pending is not None else None,
        "model": pending.model.to_payload() if pending is not None else None,
        "ratios": list(pending.ratios) if pending is not None else None,
        "candidates": list(pending.candidates) if pending is not None else None,
        "container_mb": request.container_mb,
    }


def _own_fields(planned: Planned, decision: StartDecision, now: float) -> dict[str, Any]:
    queue_wait = planned.pending.queue_wait_s if planned.pending is not None else 0.0
    return {
        "state": "started" if decision.start_now else "waiting",
        "start_at": decision.start_at,
        "scale_out": decision.scale_out,
        "predicted_s": decision.predicted_s,
        "meet_probability": decision.meet_probability,
        "waits_for": decision.waits_for,
        "queue_wait_s": queue_wait,
        "decided_at": now,
    }


def run_prediction(planned: Planned, decision: StartDecision, started_at: float,
                   waited_s: float) -> Prediction:
    """The prediction the run is recorded with: the plan at its start, at the scale-out the
    schedule chose, its target what the deadline left (and the runtime target), and the wait."""
    prediction = planned.prediction
    plan = prediction.plan
    chosen = next((c for c in plan.candidates if c.scale_out == decision.scale_out), None)
    target = planned.request.budget_s(planned.target_s, started_at)
    fields: dict[str, Any] = {"target_s": max(target, 0.0) if math.isfinite(target) else None,
                              "feasible": decision.feasible}
    if chosen is not None:
        fields.update(scale_out=chosen.scale_out, predicted_s=chosen.predicted_s,
                      lower_s=chosen.lower_s, upper_s=chosen.upper_s,
                      meet_probability=chosen.meet_probability)
        fields.update(_memory_at(plan, chosen))
    fields["reason"] = f"{plan.reason} | {decision.start_reason}"
    return replace(prediction, plan=replace(plan, **fields), start=decision, run_fields={
        "waited_s": round(max(waited_s, 0.0), 3),
        "deadline_at": planned.request.deadline_at,
        "start_reason": decision.start_reason,
    })


def _rounding(chosen: Any) -> int | None:
    """The scheduler's step above heap + overhead in the chosen candidate's container."""
    if chosen.container_mb is None or chosen.executor_overhead_mb is None:
        return None
    return chosen.container_mb - chosen.executor_memory_mb - chosen.executor_overhead_mb


def start_prediction(planned: Planned, decision: StartDecision) -> Prediction:
    """What `cobell predict --deadline` shows: the plan at once with the start decided, and
    its memory sized for the scale-out that start runs at."""
    plan = planned.prediction.plan
    chosen = next((c for c in plan.candidates if c.scale_out == decision.scale_out), None)
    fields = _memory_at(plan, chosen) if chosen is not None else {}
    return replace(planned.prediction, plan=replace(plan, **fields), start=decision)


def _memory_at(plan: Any, chosen: Any) -> dict[str, Any]:
    """The plan's `memory` object at the candidate the schedule chose, not the plan's choice
    (core/memory/sizing.reserve: the heap is the container less the overhead); {} unsized."""
    if plan.memory is None or chosen.executor_memory_mb is None:
        return {}
    memory = {**plan.memory, "scale_out": chosen.scale_out,
              "executor_memory_mb": chosen.executor_memory_mb,
              "container_mb": chosen.container_mb,
              "executor_overhead_mb": chosen.executor_overhead_mb,
              "rounding_mb": _rounding(chosen)}
    return {"memory": memory}


def mark_run(history_path: Path, own_row: int, run_id: int) -> None:
    """Link a started row to its run (best effort: the row only helps others dedupe)."""
    from cobell_cli.run.recorder import WRITE_ERRORS
    from cobell_cli.store import waiting
    from cobell_cli.store.history import write_retrying

    with contextlib.suppress(WRITE_ERRORS):
        write_retrying(history_path, lambda h: waiting.update(h, own_row, run_id=run_id),
                       wait_s=1.0)


def forget(history_path: Path, own_row: int) -> None:
    """Remove the submit's row (it started and ended, or it was interrupted); best effort:
    a row left behind is reaped once its process is gone."""
    from cobell_cli.run.recorder import WRITE_ERRORS
    from cobell_cli.store import waiting
    from cobell_cli.store.history import write_retrying

    with contextlib.suppress(WRITE_ERRORS):
        write_retrying(history_path, lambda h: waiting.remove(h, own_row), wait_s=2.0)


def check_start(prediction: Prediction, strict: bool) -> str | None:
    """No start meets the deadline: under `strict` a NoFeasibleScaleOut (exit 3: nothing is
    started), else the warning to show; None when a start meets it (or there is no deadline,
    or it has passed: that is refused before planning under --strict, and warned of without)."""
    from cobell_cli.errors import NoFeasibleScaleOut
    from cobell_cli.timespec import local_iso

    start = prediction.start
    if start is None or start.feasible or start.deadline_at <= start.now:
        return None
    shortfall = (f"no start meets the deadline {local_iso(start.deadline_at)} at "
                 f"{policy_text(prediction.policy, prediction.plan.phase)}")
    if strict:
        raise NoFeasibleScaleOut(f"{shortfall}; nothing was started",
                                 hint="give a later --deadline, raise --max-scale-out, "
                                 "or drop --strict")
    return f"{shortfall}; best effort: scale-out {start.scale_out}, now"
