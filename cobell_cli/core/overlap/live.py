"""Co-runners whose Spark driver answered, restated as the work they have left from now on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from cobell_cli.core.overlap.algorithm1 import TOL_S
from cobell_cli.core.overlap.records import CoRunnerInput, OverlapPrediction, _slow_down
from cobell_cli.core.remaining import remaining_work


def with_live_progress(
    co_runners: Sequence[CoRunnerInput], now: float, tol_s: float = TOL_S
) -> tuple[list[CoRunnerInput], list[bool], list[str | None]]:
    """Co-runners whose driver answered, restated as what is left of them from `now` on.

    A modelled co-runner with driver progress becomes one that starts now with its remaining
    isolated work (`remaining.remaining_work`) as its runtime alone, so the fix-point slows
    only the rest of it, by the new job and the other co-runners alike. One whose progress
    carries no weight keeps its model exactly (Algorithm 1). Returns the
    inputs, which of them are live, and a note per co-runner.
    """
    out: list[CoRunnerInput] = []
    live: list[bool] = []
    notes: list[str | None] = []
    for k, app in enumerate(co_runners):
        rest = _remaining(k, app, co_runners, now)
        if rest is None:
            out.append(app)
            live.append(False)
            notes.append(None)
            continue
        work, note = rest
        out.append(replace(app, started_at=now, base_runtime_s=max(work, tol_s)))
        live.append(True)
        notes.append(note)
    return out, live, notes


def _remaining(
    k: int, app: CoRunnerInput, co_runners: Sequence[CoRunnerInput], now: float
) -> tuple[float, str] | None:
    """(remaining isolated seconds, note) of co-runner k from its live progress, else None."""
    if app.driver is None or not app.has_model or app.started_at is None:
        return None
    elapsed_s = now - app.started_at
    if elapsed_s <= 0:
        return None
    assert app.interference is not None and app.base_runtime_s is not None
    x_k = float(app.scale_out or 1.0)
    slowed_s = 0.0  # alpha-weighted seconds other running co-runners shared with it so far
    for other, o in enumerate(co_runners):
        if other == k:
            continue
        a, b = _slow_down(app.interference, o.job)
        since = max(app.started_at, now if o.started_at is None else o.started_at)
        slowed_s += (a + b / x_k) * max(now - since, 0.0)
    elapsed_iso_s = elapsed_s * elapsed_s / (elapsed_s + slowed_s)
    startup_iso_s = None
    if app.driver.first_job_at is not None:
        startup_iso_s = (app.driver.first_job_at - app.started_at) * elapsed_iso_s / elapsed_s
    est = remaining_work(
        app.driver,
        elapsed_iso_s,
        float(app.base_runtime_s),
        app.stage_plan,
        startup_iso_s=startup_iso_s,
        model_log_sd=app.base_log_sd,
    )
    if est.weight == 0:
        return None  # the progress changes nothing: Algorithm 1 as it stands
    model_left_s = max(float(app.base_runtime_s) - elapsed_iso_s, 0.0)
    d, plan = app.driver, app.stage_plan
    assert plan is not None
    note = (
        f"live progress: {d.stages_done:.1f} of {d.stages_known} known stages done, "
        f"{plan.stages:g} expected{' (shares known)' if plan.shares else ''}; weight "
        f"{est.weight:.2f}{' (measured errors)' if est.measured else ''}: "
        f"{est.remaining_s:.0f} s of work left alone (model: "
        f"{model_left_s:.0f} s)"
    )
    return est.remaining_s, note


def _mark_live(result: OverlapPrediction, live: Sequence[bool]) -> OverlapPrediction:
    """Co-runners restated from live progress are reported with source "progress"."""
    if not any(live):
        return result
    marked = tuple(
        replace(c, source="progress") if live[k] and c.source == "model" else c
        for k, c in enumerate(result.co_runners)
    )
    return replace(result, co_runners=marked)
