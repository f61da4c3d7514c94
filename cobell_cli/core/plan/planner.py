"""`plan()`: the arguments checked, the similar runs selected, and the phase that plans chosen
(the bootstrap search, or a model: bootstrap.py, model_phase.py)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from cobell_cli.cluster.base import RunningApp
from cobell_cli.core.overlap import MAX_ITER, TOL_S
from cobell_cli.core.plan.bootstrap import _fit_whatif, _job_model, _search_plan
from cobell_cli.core.plan.history import (
    _input_size_warnings,
    _is_usable,
    candidate_scale_outs,
    similar_runs,
)
from cobell_cli.core.plan.model_phase import _model_plan
from cobell_cli.core.plan.reasons import _note_whatif
from cobell_cli.core.plan.records import STRATEGIES, FitFn, Phase, Plan, RuntimeModel, Strategy
from cobell_cli.errors import UsageError

if TYPE_CHECKING:
    from cobell_cli.core.profile import AppProfile


def _default_fit(runs: Sequence[Mapping[str, Any]], **params: Any) -> RuntimeModel:
    from cobell_cli.core.model import fit_runtime_model

    return fit_runtime_model(runs, **params)


def _check_args(
    target_s: float,
    min_scale_out: int,
    max_scale_out: int,
    step: int,
    confidence: float | None,
    input_tolerance: float,
    interference: str,
) -> None:
    if not (isinstance(target_s, int | float) and math.isfinite(target_s) and target_s > 0):
        raise UsageError(f"the runtime target must be a positive number of seconds, not {target_s}")
    if min_scale_out < 1 or max_scale_out < min_scale_out:
        raise UsageError(
            f"scale-out bounds must satisfy 1 <= min <= max, got [{min_scale_out}, {max_scale_out}]"
        )
    if step < 1:
        raise UsageError(f"the scale-out step must be >= 1, got {step}")
    if confidence is not None and not 0 < confidence < 1:
        raise UsageError(f"confidence must be in (0, 1), got {confidence}")
    if input_tolerance < 0:
        raise UsageError(f"the input-size tolerance must be >= 0, got {input_tolerance}")
    if interference not in STRATEGIES:
        raise UsageError(
            f"interference strategy must be one of {', '.join(STRATEGIES)}, not {interference!r}"
        )


def _common_fields(
    job: str,
    interference: Strategy,
    target_s: float,
    now: float,
    min_scale_out: int,
    max_scale_out: int,
    step: int,
    input_bytes: int | None,
    usable_runs: int,
) -> dict[str, Any]:
    """The `Plan` fields every phase fills alike: the question and the runs it rests on."""
    return dict(
        job=job,
        strategy=interference,
        target_s=float(target_s),
        now=float(now),
        min_scale_out=min_scale_out,
        max_scale_out=max_scale_out,
        step=step,
        input_bytes=input_bytes,
        usable_runs=usable_runs,
        run_number=usable_runs + 1,
    )


def plan(
    *,
    job: str,
    history: Sequence[Mapping[str, Any]],
    now: float,
    target_s: float,
    min_scale_out: int,
    max_scale_out: int,
    co_runners: Sequence[RunningApp] = (),
    co_runner_histories: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    step: int = 1,
    confidence: float | None = None,
    input_bytes: int | None = None,
    input_tolerance: float = 0.10,
    interference: Strategy = "joint",
    fit: FitFn | None = None,
    tol_s: float = TOL_S,
    max_iter: int = MAX_ITER,
    profiles: Sequence[AppProfile] = (),
    cluster_profiles: Sequence[AppProfile] = (),
    whatif_memory: MutableMapping[str, dict[int, float]] | None = None,
    on_model: Callable[[RuntimeModel, Phase], None] | None = None,
) -> Plan:
    """Choose the scale-out for the next run of `job` starting at `now`.

    `history` holds the job's runs (any status; only similar succeeded ones count),
    `co_runners` the apps on the cluster (finished ones are ignored), `co_runner_histories`
    the runs of their jobs. `fit` turns runs into a runtime model and raises ValueError when it
    cannot; it defaults to `cobell_cli.core.model.fit_runtime_model`. Callers planning many times
    over the same history (the benchmark) may pass a memoising `fit`. `profiles`: event-log
    profiles of the job's runs, newest first (the what-if; with them a custom `fit` must
    accept a `whatif` keyword for the job's own model); `cluster_profiles`: other jobs'
    profiles, for how executor start-up grows with the scale-out on this cluster;
    `whatif_memory`: where the what-if keeps its replays (`WhatIfModel`'s `memory`), so that a
    caller that stores it replays a job's profiles once, not on every plan. `on_model` is
    called with the job's own model and the phase it plans in, when there is one (the deadline
    scheduler weighs later starts with the very model this plan used).
    """
    _check_args(
        target_s, min_scale_out, max_scale_out, step, confidence, input_tolerance, interference
    )
    fit_fn: FitFn = fit or _default_fit
    candidates = candidate_scale_outs(min_scale_out, max_scale_out, step)
    succeeded = [r for r in history if _is_usable(r)]
    runs = similar_runs(succeeded, input_bytes, input_tolerance)
    n = len(runs)
    warnings = _input_size_warnings(succeeded, runs, input_bytes, input_tolerance)
    apps = list({a.app_id: a for a in co_runners if a.running}.values())
    common = _common_fields(
        job, interference, target_s, now, min_scale_out, max_scale_out, step, input_bytes, n
    )

    whatif = _fit_whatif(profiles, runs, cluster_profiles, warnings, whatif_memory)
    own_fit: FitFn = fit_fn if whatif is None else partial(fit_fn, whatif=whatif)
    model, phase, choice = _job_model(runs, whatif, own_fit, interference, warnings)
    if model is not None and on_model is not None:
        on_model(model, phase)
    if model is None:
        return _search_plan(runs, candidates, apps, warnings, common)
    chosen = _model_plan(
        model, phase, runs, candidates, apps, co_runner_histories or {}, fit_fn, warnings,
        common, confidence, tol_s, max_iter, own_fit
    )
    if choice is not None:
        chosen = replace(chosen, reason=f"{chosen.reason} {choice}")
    return _note_whatif(chosen) if whatif is not None and phase != "bootstrap-whatif" else chosen
