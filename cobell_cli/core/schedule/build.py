"""The scheduler's records built from a plan made at once (`plan()` with the deadline's
budget as target): the deciding submit (`pending_job`) and the running apps it may wait for
(`busy_apps`). The CLI (deadlines.py) and the benchmark build them here alike.

A later start is weighed in every phase with a model (runs 4 on, and the what-if's phase):
with the model's held-out errors where it has enough (error_ratios), else with the width of
the plan's own predictive distribution at its choice (`width_ratios`), the error estimate
the bootstrap decided with. Only the binary search (runs 1-3) has nothing to weigh it with.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

from cobell_cli.core.calibration import held_out_ratios
from cobell_cli.core.plan import DEFAULT_INTERVAL_CONFIDENCE, Plan
from cobell_cli.core.plan.records import log_spread
from cobell_cli.core.schedule.decision import NEW
from cobell_cli.core.schedule.records import Busy, PendingJob
from cobell_cli.core.schedule.risk import error_ratios


def job_table(model: Any, confidence: float | None, grid_max: int) -> Any:
    """The model as a table (model_table.py) at the interval level the plan used: what a
    waiting submit stores for others, and what the schedule asks (a cached model already is
    one)."""
    from cobell_cli.core.model_table import ModelTable, tabulate

    level = confidence or DEFAULT_INTERVAL_CONFIDENCE
    if isinstance(model, ModelTable) and model.confidence == level and model.grid_max >= grid_max:
        return model
    return tabulate(model, grid_max, level)


def pending_job(
    plan: Plan,
    model: Any,
    runs: Sequence[Mapping[str, Any]],
    *,
    deadline_at: float,
    submitted_at: float,
    now: float,
    target_s: float | None = None,
    latest_start_at: float | None = None,
    queue_wait_s: float = 0.0,
    start_now: bool = False,
    grid_max: int | None = None,
    container_mb: float | None = None,
    key: str = NEW,
) -> PendingJob | None:
    """The submit as the scheduler sees it; None while the binary search decides (runs 1-3:
    no model) or where neither an error record nor the plan's interval gives a probability
    to weigh a later start with. `runs`: the similar succeeded runs the plan rested on
    (their recorded outcomes join the errors)."""
    if plan.phase == "bootstrap-search" or model is None:
        return None
    table = job_table(model, plan.confidence, grid_max or plan.max_scale_out)
    ratios = error_ratios(table, runs) or width_ratios(plan)
    if not ratios:
        return None
    return PendingJob(
        key=key, job=plan.job, model=table, ratios=ratios,
        candidates=tuple(c.scale_out for c in plan.candidates), deadline_at=deadline_at,
        earliest_at=now, submitted_at=submitted_at, target_s=target_s,
        latest_start_at=latest_start_at, queue_wait_s=queue_wait_s, start_now=start_now,
        confidence=plan.confidence, container_mb=container_mb,
        containers_mb=tuple(c.container_mb for c in plan.candidates)
        if any(c.container_mb is not None for c in plan.candidates) else ())


# How many ratios stand for the plan's width (`width_ratios`): evenly spaced quantiles of a
# log-normal. A representation, not a statistic (fitted on nothing): with 99 the ratios'
# conformal bound at a level p (rank ceil(100 p), calibration.ratio_bound) is their quantile
# (ceil(100 p) - 0.5) / 99, within 0.005 of p for p in [0.8, 0.99]: the scheduler reads back
# the plan's own upper bound.
WIDTH_RATIOS = 99


def width_ratios(plan: Plan) -> tuple[float, ...]:
    """Runtime / predicted ratios standing in for an error record the model has too few
    runs for: a log-normal as wide as the plan's predictive distribution at its choice (its
    upper bound over its prediction at the level the bound is given at), read as evenly
    spaced quantiles. () where the plan has no bound above its prediction."""
    sd = log_spread(plan)
    if sd is None:
        return ()
    normal = NormalDist()
    n = WIDTH_RATIOS
    return tuple(math.exp(sd * normal.inv_cdf((i + 0.5) / n)) for i in range(n))


def busy_apps(
    plan: Plan,
    co_runner_histories: Mapping[str, Sequence[Mapping[str, Any]]],
    fit: Callable[[Sequence[Mapping[str, Any]]], Any],
) -> list[Busy]:
    """The plan's running co-runners with their predicted ends (at the plan's choice) and
    their jobs' held-out errors, which make those ends uncertain."""
    ratios: dict[str, tuple[float, ...]] = {}
    out = []
    for view in plan.co_runners:
        if view.started_at is None:
            continue
        job = view.job
        if job and view.predicted_end_at is not None and job not in ratios:
            try:
                ratios[job] = tuple(held_out_ratios(fit(co_runner_histories.get(job, ())))
                                    or ())
            except ValueError:
                ratios[job] = ()
        out.append(Busy(view.app_id, job, view.started_at, view.predicted_end_at,
                        view.scale_out, ratios.get(job or "", ())))
    return out
