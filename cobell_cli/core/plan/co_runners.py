"""The running co-runners at each candidate scale-out: their jobs' models, their predicted
overlaps with the new job (`overlap.predict_overlaps`, by the plan's strategy), and what the
plan records of each."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cobell_cli.core.calibration import RatioDistribution, held_out_ratios
from cobell_cli.core.median import median
from cobell_cli.core.plan.curve_effects import knows_interference
from cobell_cli.core.plan.history import _is_usable
from cobell_cli.core.plan.records import (
    CoRunnerView,
    FitFn,
    Phase,
    RuntimeModel,
    _floats,
)
from cobell_cli.core.running import RunningApp
from cobell_cli.core.words import count

if TYPE_CHECKING:  # overlap loads with the first co-runner: a plan without any needs none of it
    from cobell_cli.core.overlap import CoRunnerInput, CoRunnerOverlap, OverlapPrediction


def _co_runner_inputs(
    apps: Sequence[RunningApp],
    job: str,
    co_runner_histories: Mapping[str, Sequence[Mapping[str, Any]]],
    fit_fn: FitFn,
    own_model: RuntimeModel,
    own_runs: Sequence[Mapping[str, Any]],
) -> tuple[list[CoRunnerInput], list[str | None]]:
    """Fit each co-runner job's model once; a co-runner without one gets base_runtime_s None."""
    from cobell_cli.core.overlap import CoRunnerInput
    from cobell_cli.core.remaining import stage_plan

    models: dict[str, tuple[RuntimeModel | None, list[Mapping[str, Any]]]] = {}
    inputs: list[CoRunnerInput] = []
    notes: list[str | None] = []
    for app in apps:
        m: RuntimeModel | None = None
        runs: list[Mapping[str, Any]] = []
        if app.job is not None:
            if app.job not in models:
                if app.job == job and app.job not in co_runner_histories:
                    models[app.job] = (own_model, list(own_runs))
                else:
                    hist = [r for r in co_runner_histories.get(app.job, ()) if _is_usable(r)]
                    try:
                        models[app.job] = (fit_fn(hist) if hist else None, hist)
                    except ValueError:
                        models[app.job] = (None, hist)
            m, runs = models[app.job]
        note = None
        x = app.scale_out
        if m is not None and x is None and runs:
            x = int(median([r["scale_out"] for r in runs]))
            note = f"scale-out unknown; assumed {x}, the median of its job's runs"
        base = None
        if m is not None and x is not None and x >= 1:
            base = _floats(m.predict([x], None))[0]
        inputs.append(
            CoRunnerInput(
                app_id=app.app_id,
                job=app.job,
                started_at=app.started_at,
                progress=app.progress,
                base_runtime_s=base,
                scale_out=x,
                interference=m.interference if m is not None else None,
                driver=app.driver,
                stage_plan=stage_plan(runs) if app.driver is not None else None,
                base_log_sd=_log_sd(m) if app.driver is not None and m is not None else None,
            )
        )
        notes.append(note)
    return inputs, notes


def _log_sd(model: RuntimeModel) -> float | None:
    """The relative error of the model's runtimes: the sd of its held-out log ratios."""
    ratios = [r for r in held_out_ratios(model) or () if r > 0]
    return RatioDistribution(ratios).log_sd if len(ratios) >= 3 else None


@dataclass(frozen=True)
class _Overlaps:
    """The co-runners' predicted overlaps per candidate (None: none considered), and the
    model's weight on each co-runner app's overlap for its size (`size_weight`)."""

    prediction: OverlapPrediction | None = None
    inputs: tuple[CoRunnerInput, ...] = ()
    notes: tuple[str | None, ...] = ()
    weights: Mapping[str, float] | None = None  # app id -> weight; None: all 1

    def per_candidate(self) -> list[dict[str | None, float]] | None:
        """The model's input per candidate: each app's ratio times its weight, summed per
        co-runner job."""
        if self.prediction is None:
            return None
        if not self.weights:
            return self.prediction.overlaps_per_candidate()
        out: list[dict[str | None, float]] = []
        for i in range(len(self.prediction.scale_outs)):
            row: dict[str | None, float] = {}
            for c in self.prediction.co_runners:
                row[c.job] = row.get(c.job, 0.0) + c.overlap_ratio[i] * self.weights[c.app_id]
            out.append(row)
        return out


def _predict_overlaps(
    model: RuntimeModel,
    xs: Sequence[float],
    apps: Sequence[RunningApp],
    co_runner_histories: Mapping[str, Sequence[Mapping[str, Any]]],
    fit_fn: FitFn,
    runs: Sequence[Mapping[str, Any]],
    common: Mapping[str, Any],
    tol_s: float | None,
    max_iter: int | None,
) -> _Overlaps:
    """Each running co-runner's overlap at each candidate, by the plan's strategy (`tol_s`,
    `max_iter`: the fix-point's, None for overlap's own)."""
    from cobell_cli.core.overlap import predict_overlaps

    job, strategy = common["job"], common["strategy"]
    inputs, notes = _co_runner_inputs(apps, job, co_runner_histories, fit_fn, model, runs)
    weights = _size_weights(model, inputs)
    prediction = predict_overlaps(
        xs,
        _floats(model.predict(xs, None)),
        _sized_interference(model.interference, inputs, weights),
        job,
        inputs,
        common["now"],
        mode="paper" if strategy == "paper" else "joint",
        target_s=common["target_s"],
        **_fix_point_limits(tol_s, max_iter),
    )
    return _Overlaps(prediction, tuple(inputs), tuple(notes), weights)


def _fix_point_limits(tol_s: float | None, max_iter: int | None) -> dict[str, Any]:
    """The overlap fix-point's tolerance and iteration cap: the plan's, else overlap's own."""
    from cobell_cli.core.overlap import MAX_ITER, TOL_S

    return {"tol_s": TOL_S if tol_s is None else tol_s,
            "max_iter": MAX_ITER if max_iter is None else max_iter}


def _size_weights(model: RuntimeModel, inputs: Sequence[CoRunnerInput]) -> dict[str, float] | None:
    """Per co-runner app, the weight the model puts on its overlap for its scale-out (a model
    that weighs co-runner sizes: model/select.py); None when every weight is 1."""
    weigh = getattr(model, "size_weight", None)
    if weigh is None:
        return None
    weights = {c.app_id: float(weigh(c.job, c.scale_out)) for c in inputs}
    return weights if any(w != 1.0 for w in weights.values()) else None


def _sized_interference(
    interference: Callable[[str | None], tuple[float, float]],
    inputs: Sequence[CoRunnerInput],
    weights: Mapping[str, float] | None,
) -> Callable[[str | None], tuple[float, float]]:
    """The pairs the overlap fix-point slows the new job by, each co-runner job's scaled by
    the mean weight of its running apps."""
    if not weights:
        return interference
    per_job: dict[str | None, list[float]] = {}
    for c in inputs:
        per_job.setdefault(c.job, []).append(weights[c.app_id])

    def sized(job: str | None) -> tuple[float, float]:
        a, b = interference(job)
        w = per_job.get(job)
        scale = sum(w) / len(w) if w else 1.0
        return a * scale, b * scale

    return sized


def considers_co_runners(model: RuntimeModel, phase: Phase, strategy: str) -> bool:
    """Whether the plan predicts the running co-runners' overlaps and slows the job by them:
    from run 7 on (the runtime model with interference), and in any phase before whose model
    knows a co-runner's effect on the job (its own co-located runs, or the pooled pair); never
    with the 'none' (Bell) strategy."""
    if strategy == "none":
        return False
    return phase == "model" or knows_interference(model)


def _co_runner_views(
    apps: Sequence[RunningApp],
    ov: _Overlaps,
    i: int,
    phase: Phase,
    max_iter: int | None,
    warnings: list[str],
) -> tuple[CoRunnerView, ...]:
    """What the plan assumed of each co-runner at the chosen candidate `i`; warns in place."""
    pred = ov.prediction
    if pred is None:
        why = (
            "not considered during the bootstrap: the job has no co-located run yet, so"
            " no co-runner's effect on it is known"
            if phase != "model"
            else "ignored by the 'none' (Bell) strategy"
        )
        if apps:
            warnings.append(f"{count(len(apps), 'running co-runner')} {why}")
        return _ignored_views(apps, why)
    by_app = {c.app_id: c for c in pred.co_runners}
    views = tuple(
        _view(a, inp, note, by_app[a.app_id], i)
        for a, inp, note in zip(apps, ov.inputs, ov.notes, strict=True)
    )
    warnings.extend(_overlap_warnings(views, by_app, pred, max_iter))
    return views


def _view(
    a: RunningApp, inp: CoRunnerInput, note: str | None, overlap: CoRunnerOverlap, i: int
) -> CoRunnerView:
    """One co-runner as the plan saw it at candidate `i`."""
    return CoRunnerView(
        app_id=a.app_id,
        job=a.job,
        has_history=inp.base_runtime_s is not None,
        source=overlap.source,
        started_at=a.started_at,
        scale_out=a.scale_out,
        progress=a.progress,
        predicted_end_at=_finite(overlap.end_at[i]),
        overlap_s=overlap.overlap_s[i],
        overlap_ratio=overlap.overlap_ratio[i],
        note="; ".join(x for x in (note, overlap.note) if x) or None,
        driver=a.driver.to_dict() if a.driver is not None else None,
        stage_plan=inp.stage_plan.to_dict() if inp.stage_plan is not None else None,
    )


def _overlap_warnings(
    views: Sequence[CoRunnerView],
    by_app: Mapping[str, CoRunnerOverlap],
    pred: OverlapPrediction,
    max_iter: int | None,
) -> list[str]:
    """Co-runners assumed to outlast the job, and candidates whose fix-point did not settle."""
    out = []
    for v in views:
        if v.source == "outlasts":
            why = by_app[v.app_id].note or "it has no usable history or progress"
            out.append(
                f"co-runner {v.app_id} ({v.job or 'unknown job'}) assumed to run alongside "
                f"the whole job: {why}"
            )
    if not all(pred.converged):
        out.append(
            f"the overlap fix-point did not converge within "
            f"{_fix_point_limits(None, max_iter)['max_iter']} iterations for "
            f"{count(pred.converged.count(False), 'candidate')}; the last iterate is used"
        )
    return out


def _ignored_views(apps: Sequence[RunningApp], note: str) -> tuple[CoRunnerView, ...]:
    return tuple(
        CoRunnerView(
            app_id=a.app_id,
            job=a.job,
            has_history=False,
            source="ignored",
            started_at=a.started_at,
            scale_out=a.scale_out,
            progress=a.progress,
            predicted_end_at=None,
            overlap_s=None,
            overlap_ratio=None,
            note=note,
            driver=a.driver.to_dict() if a.driver is not None else None,
        )
        for a in apps
    )


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None
