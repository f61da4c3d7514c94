"""`plan()`: the arguments checked, the similar runs selected, and the phase that plans chosen
(the bootstrap search, or a model: bootstrap.py, model_phase.py)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from cobell_cli.core.cost import DEFAULT_MINIMIZE, MINIMIZE_CHOICES, Minimize
from cobell_cli.core.plan.bootstrap import (
    SearchPolicy,
    _fit_whatif,
    _job_model,
    _search_plan,
)
from cobell_cli.core.plan.history import (
    _input_size_warnings,
    _is_usable,
    candidate_scale_outs,
    refined,
    similar_runs,
    sparse_scale_outs,
)
from cobell_cli.core.plan.model_phase import _model_plan
from cobell_cli.core.plan.reasons import _note_whatif
from cobell_cli.core.plan.records import STRATEGIES, FitFn, Phase, Plan, RuntimeModel, Strategy
from cobell_cli.core.running import RunningApp
from cobell_cli.errors import UsageError

if TYPE_CHECKING:
    from cobell_cli.core.memory.model import MemoryModel
    from cobell_cli.core.memory.plan import MemoryPlan, MemoryRequest
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
    tol_s: float | None = None,  # the overlap fix-point's; None: overlap.TOL_S, MAX_ITER
    max_iter: int | None = None,
    profiles: Sequence[AppProfile] = (),
    cluster_profiles: Sequence[AppProfile] = (),
    whatif_memory: MutableMapping[str, dict[int, float]] | None = None,
    search_policy: SearchPolicy = "bounded",
    memory: MemoryRequest | None = None,
    memory_runs: Sequence[Mapping[str, Any]] = (),
    memory_model: MemoryModel | None = None,
    minimize: Minimize = DEFAULT_MINIMIZE,
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
    caller that stores it replays a job's profiles once, not on every plan.
    `search_policy`: how runs 1-3 without a profile search: "bounded" (the default: the
    binary search with Amdahl's bounds from the runtimes, bootstrap._amdahl_bounds; half the
    binary search's runs over the target in bench.coldstart's two worlds) or "binary" (the
    paper's).
    `memory`: size each candidate's executor memory too (core/memory/plan.py) from
    `memory_runs`, the job's runs with memory columns (any status; `memory_model` a fitted
    model of them, if the caller keeps one); `minimize`: what the smallest-reservation rule
    minimises (core/cost.py): executor-seconds takes the smallest scale-out that meets the
    target, memory-MB-seconds the one whose containers cost least over the predicted runtime;
    the plan's `minimize` is what its choice minimised: executor-seconds where no container
    was sized for every candidate, or while the binary search decides (runs 1-3).
    `on_model` is called with the job's own model and the phase it plans in, when there is
    one (the deadline scheduler weighs later starts with the very model this plan used).
    A model judges at most history.DENSE_CANDIDATES candidates one by one: past them a sparse
    grid, then the decision's bracket densely (history.sparse_scale_outs, refined); the plan's
    `candidates` are the judged ones.
    """
    _check_args(
        target_s, min_scale_out, max_scale_out, step, confidence, input_tolerance, interference
    )
    if minimize not in MINIMIZE_CHOICES:
        choices = ", ".join(MINIMIZE_CHOICES)
        raise UsageError(f"--minimize must be one of {choices}, not {minimize!r}")
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
    if model is None:  # the binary search prices nothing: it minimises executor-seconds
        sized = _memory_plan(memory, memory_runs, memory_model, candidates, input_bytes)
        return _with_memory(_search_plan(runs, candidates, apps, warnings, common,
                                         search_policy), sized, DEFAULT_MINIMIZE)

    def judge(judged: list[int]) -> tuple[Plan, MemoryPlan | None]:
        sized = _memory_plan(memory, memory_runs, memory_model, judged, input_bytes)
        return _model_plan(
            model, phase, runs, judged, apps, co_runner_histories or {}, fit_fn,
            list(warnings), common, confidence, tol_s, max_iter, own_fit,
            _prices(sized, minimize)
        ), sized

    judged = sparse_scale_outs(candidates, model.scale_out_range_)
    chosen, sized = judge(judged)
    while len(judged) < len(candidates):  # a sparse grid: judge the decision's bracket densely
        finer = refined(candidates, judged, chosen.scale_out)
        if len(finer) == len(judged):
            break
        judged = finer
        chosen, sized = judge(judged)
    prices = _prices(sized, minimize)
    if choice is not None:
        chosen = replace(chosen, reason=f"{chosen.reason} {choice}")
    if whatif is not None and phase != "bootstrap-whatif":
        chosen = _note_whatif(chosen)
    return _with_memory(chosen, sized, minimize if prices is not None else DEFAULT_MINIMIZE)


def _memory_plan(
    request: MemoryRequest | None,
    runs: Sequence[Mapping[str, Any]],
    model: MemoryModel | None,
    candidates: Sequence[int],
    input_bytes: int | None,
) -> MemoryPlan | None:
    if request is None:
        return None
    from cobell_cli.core.memory.plan import plan_memory

    if request.input_bytes is None and input_bytes is not None:
        request = replace(request, input_bytes=input_bytes)
    return plan_memory(runs, candidates, request, model)


def _prices(sized: MemoryPlan | None, minimize: Minimize) -> list[float] | None:
    """Container MB per candidate for memory-MB-seconds (a container over the cluster's
    largest cannot be granted: never chosen); None for the default rule or when unsized."""
    if minimize != "memory-mb-seconds" or sized is None:
        return None
    if any(c.container_mb is None for c in sized.candidates):
        return None
    return [float(c.container_mb) if c.fits else math.inf  # type: ignore[arg-type]
            for c in sized.candidates]


def _with_memory(chosen: Plan, sized: MemoryPlan | None, minimize: Minimize) -> Plan:
    """The plan with each candidate's memory, the `memory` object at the choice, and what the
    memory model says of a memory the user set; `minimize`: what the choice minimised (not
    always what was asked: api/planning.py says why)."""
    if sized is None:
        return replace(chosen, minimize=minimize)
    from cobell_cli.core.memory.plan import user_memory_warnings

    rows = []
    for c in chosen.candidates:
        mem = sized.at(c.scale_out)
        container = mem.container_mb if mem is not None else None
        rows.append(replace(
            c,
            executor_memory_mb=mem.executor_memory_mb if mem is not None else None,
            container_mb=container,
            executor_overhead_mb=mem.executor_overhead_mb if mem is not None else None,
            memory_mb_seconds=(container * c.scale_out * c.predicted_s
                               if container is not None else None),
        ))
    notes = [*user_memory_warnings(sized, chosen.scale_out), *sized.warnings]
    at = sized.at(chosen.scale_out)
    if at is not None and not at.fits:
        notes.append(f"the memory needed at scale-out {chosen.scale_out} (up to "
                     f"{at.upper_peak_mb or 0:.0f} MB heap) is more than the cluster's largest "
                     f"container grants: reserving that container ({at.container_mb} MB), "
                     "which may be too small")
    return replace(
        chosen,
        candidates=tuple(rows),
        memory=sized.to_dict(chosen.scale_out),
        minimize=minimize,
        warnings=(*chosen.warnings, *notes),
    )
