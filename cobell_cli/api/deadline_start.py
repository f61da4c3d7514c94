"""When a deadline submit starts: decided with every other waiting submit on the history, then
waited for (run/wait.py), re-planned when the wait ends; `api.Submit`'s plan step with a
deadline.

The submit's row in the `waiting` table is written under the history's lock with the decision
(api/deadlines.py); a signal during the wait ends it (128+N, nothing started) and the row is
removed; once the job starts, the row is linked to its run and removed when the submit ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cobell_cli.errors import ClusterError

if TYPE_CHECKING:
    from cobell_cli.api.deadlines import DeadlineRequest, Planned
    from cobell_cli.api.planning import Prediction
    from cobell_cli.run.wait import Clock

# plan(now, request) -> (what api.deadlines.plan_for_deadline planned, the cluster adapter)
PlanAt = Callable[[float, "DeadlineRequest"], tuple["Planned", Any]]


@dataclass(frozen=True)
class Started:
    """The prediction the run starts on (its target what the deadline leaves), the cluster,
    and the submit's row in the waiting table (None: a dry run wrote none)."""

    prediction: Prediction
    cluster: Any
    row: int | None


def dry_start(history_path: Path, plan_at: PlanAt, request: DeadlineRequest) -> Started:
    """The start decided now against the other waiting submits, read only: nothing waits,
    nothing is written (a dry run)."""
    from cobell_cli.api import deadlines
    from cobell_cli.api.runs import open_history

    now = request.submitted_at
    planned, cluster = plan_at(now, request)
    with open_history(history_path, create=True, read_only=True) as history:  # none: empty
        decision = deadlines.read_decision(history, planned, now)
    return Started(deadlines.run_prediction(planned, decision, now, 0.0), cluster, None)


def start(
    history_path: Path,
    plan_at: PlanAt,
    request: DeadlineRequest,
    *,
    check: Callable[[Prediction], None],
    say: Callable[[str], None],
    give_up: Callable[[], bool],
    clock: Clock | None = None,
) -> Started:
    """Decide the start with every waiting submit (recorded in the history), wait for it, and
    return what the run starts on. `check(prediction)` sees the decision before any wait (a
    --strict submit raises there); `say` tells the waits; `give_up()`: a signal came, stop
    waiting for the history's lock."""
    from cobell_cli.api import deadlines
    from cobell_cli.run import wait

    now = request.submitted_at
    planned, cluster = plan_at(now, request)
    decision, row = deadlines.decide_and_record(history_path, planned, now, None,
                                                give_up=give_up)
    try:
        check(deadlines.run_prediction(planned, decision, now, 0.0))
        waited_s = 0.0
        if not decision.start_now:
            def replan(force: bool) -> tuple[Planned, Any]:
                nonlocal row  # a row reaped meanwhile is written anew, with a new id
                at = time.time()
                again, _ = plan_at(at, replace(request, start_now=True) if force else request)
                decided, row = deadlines.decide_and_record(history_path, again, at, row,
                                                           give_up=give_up)
                return again, decided

            waited = wait.wait_for_start(
                history_path=history_path, row_id=lambda: row, decision=decision,
                planned=planned, replan=replan, running=running_ids(cluster), say=say,
                clock=clock)
            planned, decision, waited_s = waited.planned, waited.decision, waited.waited_s
    except BaseException:
        deadlines.forget(history_path, row)
        raise
    return Started(deadlines.run_prediction(planned, decision, time.time(), waited_s), cluster,
                   row)


def running_ids(cluster: Any) -> Callable[[], set[str]] | None:
    """The cluster's running app ids, for the wait to notice an app that ended (None: a
    cluster that lists nothing)."""
    if getattr(cluster, "name", "none") == "none":
        return None

    def running() -> set[str]:
        try:
            return {a.app_id for a in cluster.running_apps()}
        except ClusterError:
            return set()

    return running


def target_now(target_s: float | None, request: DeadlineRequest | None) -> float:
    """The runtime target of a plan made now: the given one, or (a retry under a deadline)
    what the deadline leaves, whichever is shorter."""
    left = None if request is None else max(request.deadline_at - time.time(), 1.0)
    if target_s is None:
        assert left is not None  # a submit has a target, a deadline, or both
        return left
    return target_s if left is None else min(target_s, left)
