"""From history, running co-runners and a runtime target to a scale-out: the `Plan`.

One function, `plan()`, serves both `cobell predict`/`cobell submit` and the benchmark's
simulated cluster, so the three interference strategies the benchmark compares are exactly the
code users run:

* "joint"  cobell: every co-runner's overlap from a joint fix-point with the new job's own
           predicted runtime at each candidate scale-out (`overlap.predict_overlaps`).
* "paper"  CoBell as published: Algorithm 1 per co-runner, the new job's runtime assumed to
           equal the target.
* "none"   Bell: co-runners ignored, in fitting and in prediction.

Bootstrap (Section IV-D of the paper), driven by the number n of usable similar runs:

* n = 0..2 with at least one event-log profile of the job's runs, "bootstrap-whatif": the
  what-if curve (core/whatif.py: the profiles' stages replayed at every candidate, corrected
  by the runs the job has) decides like a model, on its upper bound at a confidence.
  Co-runners are not considered (as in the rest of the bootstrap). At n = 3..5 the what-if
  replaces the model without interference when its leave-one-out error on the runs is lower;
  from n = 3 on it is also one more candidate curve in the runtime model's cross-validation.
* n = 0..2 (runs 1-3) otherwise, "bootstrap-search": binary search over the candidates.
  State: the index bracket [lo, hi] of the candidates (initially all of them) that may be the
  smallest meeting the target. Each previous similar run, oldest first, at scale-out x:
  met the *current* target (runtime_s <= target_s) -> hi = the smallest candidate >= x (the
  answer is no larger: search the lower half); missed -> lo = the smallest candidate > x (search
  the upper half; if x >= max, lo = hi = max and the plan is infeasible). When an observation
  contradicts the bracket (noise), the newer observation wins and the other bound is reset.
  The next run probes the lower midpoint candidates[(lo + hi) // 2]: run 1 is the midpoint of
  [min, max]. The current target is used, not the one each run had, because the question is
  which scale-out meets today's target. Co-runners are not considered, as in the paper.
* n = 3..5 (runs 4-6), "bootstrap-parametric": the runtime model fitted on the runs with their
  overlaps removed and predicted without interference (Bell); co-runners are not considered.
* n >= 6 (run 7 on), "model": the runtime model with interference and the chosen strategy.
  If the model cannot be fitted (e.g. every run at one scale-out), the search continues.

Input-size similarity: with a known new input size s, only runs whose input_bytes is known and
within ±tolerance·s count; runs of unknown size are left out as they may be of any size. With
an unknown new size nothing can be compared, so every succeeded run counts (with a warning if
their known sizes differ by more than the tolerance).

Pure: no I/O, no clock; `now` is passed in. Raises `UsageError` for impossible arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Protocol

from cobell_cli.cluster.base import RunningApp
from cobell_cli.core.calibration import DEFAULT_CONFIDENCE, calibrated_upper
from cobell_cli.core.overlap import (
    MAX_ITER,
    TOL_S,
    CoRunnerInput,
    OverlapPrediction,
    predict_overlaps,
)
from cobell_cli.core.remaining import stage_plan
from cobell_cli.errors import UsageError
from cobell_cli.output import jsonable

if TYPE_CHECKING:
    from cobell_cli.core.profile import AppProfile

Strategy = Literal["joint", "paper", "none"]
Phase = Literal["bootstrap-search", "bootstrap-whatif", "bootstrap-parametric", "model"]
STRATEGIES: tuple[str, ...] = ("joint", "paper", "none")

SEARCH_RUNS = 3  # runs 1-3: binary search
PARAMETRIC_RUNS = 3  # runs 4-6: model without interference
MODEL_FROM_USABLE = SEARCH_RUNS + PARAMETRIC_RUNS  # usable runs needed for the full model
DEFAULT_INTERVAL_CONFIDENCE = 0.9  # the interval shown when no --confidence decides


class RuntimeModel(Protocol):
    """The contract of `cobell_cli.core.model.fit_runtime_model`'s result that planning relies on.

    Predictions may come back as numpy arrays or plain lists: planning only iterates them.
    `cobell_cli.core.model_table.ModelTable` (a cached model) honours the same contract.
    """

    scale_out_range_: tuple[float, float]  # smallest and largest scale-out fitted on

    def predict(self, scale_outs: Any, overlaps: Any = None) -> Iterable[float]: ...

    def predict_interval(
        self, scale_outs: Any, overlaps: Any = None, confidence: float = 0.9
    ) -> tuple[Iterable[float], Iterable[float]]: ...

    def interference(self, job: str | None) -> tuple[float, float]: ...

    def describe(self) -> dict: ...


FitFn = Callable[[Sequence[Mapping[str, Any]]], RuntimeModel]


def _default_fit(runs: Sequence[Mapping[str, Any]], **params: Any) -> RuntimeModel:
    from cobell_cli.core.model import fit_runtime_model

    return fit_runtime_model(runs, **params)


def _fit_whatif(
    profiles: Sequence[AppProfile],
    runs: Sequence[Mapping[str, Any]],
    cluster_profiles: Sequence[AppProfile],
    warnings: list[str],
    memory: MutableMapping[str, dict[int, float]] | None = None,
) -> Any:
    """The job's what-if (core/whatif.py), or None with a warning when no profile replays."""
    if not profiles:
        return None
    from cobell_cli.core.whatif import fit_whatif

    try:
        return fit_whatif(profiles, runs, cluster_profiles, memory=memory)
    except ValueError as exc:
        warnings.append(f"the what-if cannot use the job's event-log profiles ({exc})")
        return None


# --- records -------------------------------------------------------------------------------


@dataclass(frozen=True)
class CandidatePrediction:
    """One candidate scale-out; `overlap_ratio` maps co-runner app id -> predicted ratio."""

    scale_out: int
    predicted_s: float
    lower_s: float | None
    upper_s: float | None
    overlap_ratio: Mapping[str, float]
    meets_target: bool
    meet_probability: float | None = None  # estimated P(runtime <= target); None: unknown


@dataclass(frozen=True)
class CoRunnerView:
    """A running app the plan considered, with its predicted end at the chosen scale-out."""

    app_id: str
    job: str | None
    has_history: bool  # its job's runtime model could be fitted
    source: str  # "model" | "progress" | "outlasts" | "ignored" (bootstrap, strategy none)
    started_at: float | None
    scale_out: int | None
    progress: float | None
    predicted_end_at: float | None  # None: unknown or assumed to outlast the new job
    overlap_s: float | None
    overlap_ratio: float | None
    note: str | None = None
    driver: Mapping[str, Any] | None = None  # its Spark driver's jobs and stages, if it answered
    stage_plan: Mapping[str, Any] | None = None  # what its job's past runs executed


@dataclass(frozen=True)
class SearchObservation:
    run_id: Any
    scale_out: int
    runtime_s: float
    met_target: bool


@dataclass(frozen=True)
class SearchState:
    """The bootstrap binary search after the observations, in scale-outs (bounds inclusive)."""

    lo_scale_out: int
    hi_scale_out: int
    probe_scale_out: int
    max_missed: bool  # the maximum itself was observed to miss the target
    observations: tuple[SearchObservation, ...]


@dataclass(frozen=True)
class Plan:
    """What was chosen and why; `to_dict()` is what `cobell predict --json` prints."""

    job: str
    scale_out: int
    phase: Phase
    strategy: Strategy
    reason: str
    target_s: float
    feasible: bool
    predicted_s: float | None
    lower_s: float | None
    upper_s: float | None
    interval_confidence: float | None
    confidence: float | None  # set when the upper bound, not the point prediction, decided
    meet_probability: float | None  # estimated P(runtime <= target) at scale_out; None: unknown
    now: float
    min_scale_out: int
    max_scale_out: int
    step: int
    input_bytes: int | None
    usable_runs: int
    run_number: int  # the run this plan is for, counted over usable similar runs
    warnings: tuple[str, ...] = ()
    co_runners: tuple[CoRunnerView, ...] = ()
    candidates: tuple[CandidatePrediction, ...] = ()
    search: SearchState | None = None
    model: Mapping[str, Any] | None = None
    overlap_iterations: int | None = None
    overlap_converged: bool | None = None
    calibration: Mapping[str, Any] | None = None  # the job's own prediction record, if used

    def to_dict(self) -> dict[str, Any]:
        return jsonable(asdict(self))


def _floats(values: Iterable[Any]) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def _median(values: Sequence[float]) -> float:
    """The middle value, or the mean of the middle two (statistics.median costs an import)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


# --- history selection ---------------------------------------------------------------------


def _order_key(run: Mapping[str, Any]) -> tuple:
    started = run.get("started_at")
    rid = run.get("id")
    id_key = (0, rid, "") if isinstance(rid, int | float) else (1, 0, str(rid))
    return (started is None, started if started is not None else 0.0, id_key)


def _is_usable(run: Mapping[str, Any]) -> bool:
    if run.get("status") != "succeeded":
        return False
    x, r = run.get("scale_out"), run.get("runtime_s")
    return (
        isinstance(x, int | float)
        and x >= 1
        and isinstance(r, int | float)
        and math.isfinite(r)
        and r > 0
    )


def similar_runs(
    history: Iterable[Mapping[str, Any]],
    input_bytes: int | None,
    input_tolerance: float = 0.10,
) -> list[Mapping[str, Any]]:
    """Succeeded runs of similar input size, oldest first (see the module doc for the rule)."""
    runs = sorted((r for r in history if _is_usable(r)), key=_order_key)
    if input_bytes is None:
        return runs
    return [
        r
        for r in runs
        if r.get("input_bytes") is not None
        and abs(r["input_bytes"] - input_bytes) <= input_tolerance * input_bytes
    ]


def candidate_scale_outs(min_scale_out: int, max_scale_out: int, step: int = 1) -> list[int]:
    """min, min+step, ... and always max, so the largest allowed reservation is considered."""
    out = list(range(min_scale_out, max_scale_out + 1, step))
    if out[-1] != max_scale_out:
        out.append(max_scale_out)
    return out


def search_state(
    runs: Sequence[Mapping[str, Any]], candidates: Sequence[int], target_s: float
) -> SearchState:
    """The bootstrap binary search state machine (rules in the module doc)."""
    n = len(candidates)
    lo, hi, max_missed = 0, n - 1, False
    observations: list[SearchObservation] = []
    for run in runs:
        x = int(run["scale_out"])
        runtime_s = float(run["runtime_s"])
        met = runtime_s <= target_s
        observations.append(SearchObservation(run.get("id"), x, runtime_s, met))
        if met:
            new_hi = next((i for i, c in enumerate(candidates) if c >= x), n - 1)
            if new_hi < lo:
                lo = 0
            hi = min(hi, new_hi)
            max_missed = False
        else:
            new_lo = next((i for i, c in enumerate(candidates) if c > x), None)
            if new_lo is None:
                new_lo, max_missed = n - 1, True
            if new_lo > hi:
                hi = n - 1
            lo = max(lo, new_lo)
    probe = candidates[(lo + hi) // 2]
    return SearchState(candidates[lo], candidates[hi], probe, max_missed, tuple(observations))


# --- planning ------------------------------------------------------------------------------


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


def _without_overlaps(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "overlaps": {}} for r in runs]


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"  # pragma: no cover


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

    common: dict[str, Any] = dict(
        job=job,
        strategy=interference,
        target_s=float(target_s),
        now=float(now),
        min_scale_out=min_scale_out,
        max_scale_out=max_scale_out,
        step=step,
        input_bytes=input_bytes,
        usable_runs=n,
        run_number=n + 1,
    )

    whatif = _fit_whatif(profiles, runs, cluster_profiles, warnings, whatif_memory)
    own_fit: FitFn = fit_fn if whatif is None else partial(fit_fn, whatif=whatif)
    model, phase, choice = _job_model(runs, whatif, own_fit, interference, warnings)
    if model is None:
        return _search_plan(runs, candidates, apps, warnings, common)
    chosen = _model_plan(
        model,
        phase,
        runs,
        candidates,
        apps,
        co_runner_histories or {},
        fit_fn,
        warnings,
        common,
        confidence,
        tol_s,
        max_iter,
        own_fit,
    )
    if choice is not None:
        chosen = replace(chosen, reason=f"{chosen.reason} {choice}")
    return _note_whatif(chosen) if whatif is not None and phase != "bootstrap-whatif" else chosen


def _input_size_warnings(
    succeeded: Sequence[Mapping[str, Any]],
    runs: Sequence[Mapping[str, Any]],
    input_bytes: int | None,
    input_tolerance: float,
) -> list[str]:
    """What the input-size match left out, or that runs of different sizes all count."""
    if input_bytes is not None and len(runs) < len(succeeded):
        return [
            f"{len(succeeded) - len(runs)} of {len(succeeded)} succeeded runs left out: input "
            f"size unknown or not within ±{input_tolerance:.0%} of {_fmt_bytes(input_bytes)}"
        ]
    sizes = [r["input_bytes"] for r in runs if r.get("input_bytes") is not None]
    if input_bytes is None and sizes and max(sizes) > (1 + input_tolerance) * min(sizes):
        return [
            "input size unknown: runs of different input sizes "
            f"({_fmt_bytes(min(sizes))} to {_fmt_bytes(max(sizes))}) all count"
        ]
    return []


def _job_model(
    runs: Sequence[Mapping[str, Any]],
    whatif: Any,
    own_fit: FitFn,
    interference: Strategy,
    warnings: list[str],
) -> tuple[Any, Phase, str | None]:
    """The job's model (None: search), the phase it plans in, and why the what-if was or was
    not preferred. Runs 4-6 fit without the overlaps; the what-if stands in for too few runs."""
    n = len(runs)
    model = None
    phase: Phase = "model" if n >= MODEL_FROM_USABLE else "bootstrap-parametric"
    if n >= SEARCH_RUNS:
        with_interference = n >= MODEL_FROM_USABLE and interference != "none"
        try:
            model = own_fit(runs if with_interference else _without_overlaps(runs))
        except ValueError as exc:
            warnings.append(f"the runtime model could not be fitted ({exc}); searching instead")
    choice = None
    if whatif is not None:
        model, choice = _whatif_or_model(model, whatif, runs, own_fit, phase == "model")
        if model is None:
            model = whatif
        if model is whatif:
            phase = "bootstrap-whatif"
    return model, phase, choice


def _whatif_or_model(
    model: RuntimeModel | None,
    whatif: Any,
    runs: Sequence[Mapping[str, Any]],
    own_fit: FitFn,
    with_interference: bool,
) -> tuple[Any, str | None]:
    """The what-if (corrected by the runs) or the fitted model, whichever predicts the
    job's runs better, in mean |log(runtime / predicted)|: the what-if's leave-one-out
    error against the larger of the model's own errors on its runs and its leave-one-out
    errors (runs 4-6: refitted without each run; later: the model's leave-one-out ratios).
    A handful of runs, some with co-runners, at clustered scale-outs can bend a fitted
    curve anywhere (its cross-validation holds out only interior scale-outs, so an edge run
    can be sacrificed and no fold notices); the replay keeps the job's shape."""
    if model is None:
        return whatif, None
    fitted = []
    for r in runs:
        overlaps = (r.get("overlaps") or {}) if with_interference else None
        predicted = _floats(model.predict([float(r["scale_out"])], overlaps))[0]
        if predicted > 0:
            fitted.append(abs(math.log(float(r["runtime_s"]) / predicted)))
    held = _held_out_errors(model, runs, own_fit, with_interference)
    if not fitted or not held:
        return model, None
    own = max(sum(fitted) / len(fitted), sum(held) / len(held))
    mine = whatif.loo_error_
    if mine >= own:
        return model, None
    return whatif, (
        f"The what-if replaced the runtime model: its leave-one-out error on the {len(runs)}"
        f" runs is {100 * mine:.0f} % (mean |log ratio|), the model's {100 * own:.0f} %."
    )


def _held_out_errors(
    model: RuntimeModel,
    runs: Sequence[Mapping[str, Any]],
    own_fit: FitFn,
    with_interference: bool,
) -> list[float]:
    """|log(runtime / predicted)| of each run by the model without it."""
    if with_interference:  # runs 7 on: no refits, the model's own leave-one-out ratios
        ratios = getattr(model, "loo_ratios_", None)
        return [] if ratios is None else [abs(math.log(float(r))) for r in ratios if r > 0]
    errors = []
    for i, held in enumerate(runs):
        try:
            fold = own_fit(_without_overlaps([r for k, r in enumerate(runs) if k != i]))
        except ValueError:
            continue
        predicted = _floats(fold.predict([float(held["scale_out"])], None))[0]
        if predicted > 0:
            errors.append(abs(math.log(float(held["runtime_s"]) / predicted)))
    return errors


def _note_whatif(chosen: Plan) -> Plan:
    """Say so in the reason when cross-validation chose the what-if replay as a curve."""
    roles = [
        role
        for role in ("interpolation", "extrapolation")
        if ((chosen.model or {}).get(role) or {}).get("kind") == "what-if"
    ]
    if not roles:
        return chosen
    return replace(
        chosen,
        reason=f"{chosen.reason} The model's {' and '.join(roles)} curve is the what-if "
        "replay of the job's event-log profile (chosen by cross-validation).",
    )


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


def _search_plan(
    runs: Sequence[Mapping[str, Any]],
    candidates: Sequence[int],
    apps: Sequence[RunningApp],
    warnings: list[str],
    common: dict[str, Any],
) -> Plan:
    target_s = common["target_s"]
    state = search_state(runs, candidates, target_s)
    lo_all, hi_all = candidates[0], candidates[-1]
    run_no = common["run_number"]
    head = (
        f"Bootstrap run {run_no} of {SEARCH_RUNS}"
        if run_no <= SEARCH_RUNS
        else f"Run {run_no} (no model could be fitted)"
    )
    if not state.observations:
        why = f"no similar run yet, so start at the midpoint of [{lo_all}, {hi_all}]"
    else:
        last = state.observations[-1]
        verdict = "met" if last.met_target else "missed"
        half = "lower" if last.met_target else "upper"
        why = (
            f"the previous run at {last.scale_out} took {last.runtime_s:.0f} s and {verdict} "
            f"the {target_s:.0f} s target, so search the {half} part "
            f"[{state.lo_scale_out}, {state.hi_scale_out}]"
        )
    reason = f"{head}: binary search; {why}: {state.probe_scale_out}."
    feasible = not state.max_missed
    if state.max_missed:
        warnings.append(
            f"the maximum scale-out {hi_all} already missed the {target_s:.0f} s target; "
            "reserving the maximum"
        )
    if apps:
        warnings.append(
            f"{len(apps)} running co-runner(s) not considered during the bootstrap (as in CoBell)"
        )
    return Plan(
        scale_out=state.probe_scale_out,
        phase="bootstrap-search",
        reason=reason,
        feasible=feasible,
        predicted_s=None,
        lower_s=None,
        upper_s=None,
        interval_confidence=None,
        confidence=None,
        meet_probability=None,
        warnings=tuple(warnings),
        co_runners=_ignored_views(apps, "not considered during the bootstrap"),
        search=state,
        **common,
    )


def _co_runner_inputs(
    apps: Sequence[RunningApp],
    job: str,
    co_runner_histories: Mapping[str, Sequence[Mapping[str, Any]]],
    fit_fn: FitFn,
    own_model: RuntimeModel,
    own_runs: Sequence[Mapping[str, Any]],
) -> tuple[list[CoRunnerInput], list[str | None]]:
    """Fit each co-runner job's model once; a co-runner without one gets base_runtime_s None."""
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
            x = int(_median([r["scale_out"] for r in runs]))
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
            )
        )
        notes.append(note)
    return inputs, notes


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


@dataclass(frozen=True)
class _Bounds:
    """Point prediction, interval and calibrated upper bound per candidate."""

    predicted: tuple[float, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    interval_confidence: float
    calibration: Mapping[str, Any] | None
    meet_probability: tuple[float, ...] | None


@dataclass(frozen=True)
class _Decision:
    """The runtime each candidate is judged on, which meet the target, and the chosen index."""

    decide: tuple[float, ...]
    meets: tuple[bool, ...]
    feasible: bool
    index: int


def _predict_overlaps(
    model: RuntimeModel,
    xs: Sequence[float],
    apps: Sequence[RunningApp],
    co_runner_histories: Mapping[str, Sequence[Mapping[str, Any]]],
    fit_fn: FitFn,
    runs: Sequence[Mapping[str, Any]],
    common: Mapping[str, Any],
    tol_s: float,
    max_iter: int,
) -> _Overlaps:
    """Each running co-runner's overlap at each candidate, by the plan's strategy."""
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
        tol_s=tol_s,
        max_iter=max_iter,
    )
    return _Overlaps(prediction, tuple(inputs), tuple(notes), weights)


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


def _runtime_bounds(
    model: RuntimeModel,
    phase: Phase,
    xs: Sequence[float],
    overlaps: list[dict[str | None, float]] | None,
    runs: Sequence[Mapping[str, Any]],
    candidates: Sequence[int],
    fit_fn: FitFn,
    confidence: float | None,
    target_s: float,
) -> _Bounds:
    """The point prediction and the interval, its upper end calibrated on real errors, and
    the probability of meeting the target read from the same errors."""
    predicted = _floats(model.predict(xs, overlaps))
    interval_conf = confidence if confidence is not None else DEFAULT_INTERVAL_CONFIDENCE
    lower, upper = (
        _floats(b) for b in model.predict_interval(xs, overlaps, confidence=interval_conf)
    )
    # The interval knows only the scale-out curve's errors; widen it by the model's recorded
    # (else leave-one-out) errors and for co-runners it has no (a, b) of their own.
    bound = calibrated_upper(
        runs=runs,
        scale_outs=candidates,
        predicted_s=predicted,
        upper_s=upper,
        overlaps=overlaps,
        model=model,
        fit=fit_fn,
        confidence=interval_conf,
        jackknife=phase == "model",
        target_s=target_s,
        widen=confidence is not None,
    )
    probability = bound.meet_probability
    return _Bounds(
        predicted,
        lower,
        tuple(bound.upper_s),
        interval_conf,
        bound.calibration,
        tuple(probability) if probability is not None else None,
    )


def _decide(
    xs: Sequence[float],
    bounds: _Bounds,
    observed: tuple[float, float],
    confidence: float | None,
    target_s: float,
) -> _Decision:
    """The smallest candidate meeting the target, else the fastest (the largest among equals).

    With a confidence p the upper bound decides: the largest of the model's own interval
    (the curve's leave-one-scale-out errors, which cover scale-outs never run) and predicted
    times the p-quantile of the job's past runtime / predicted ratios, so a candidate that
    meets the target has an estimated probability of at least p of doing so (calibration.py)
    and one between observed scale-outs must also pass the curve's own interval. Without a
    confidence (the point decision) the point prediction decides. Below the smallest
    observed scale-out the model can only bound the runtime (between no and linear
    speed-up); judge those candidates on the cautious bound, or a flat history would make
    every smaller scale-out "meet" the target. Infeasible: the fastest predicted candidate
    is the maximum when runtime falls with scale-out, but not past a job's sweet spot
    (overheads, co-runners).
    """
    lo = observed[0]
    decide = tuple(
        u if x < lo or confidence is not None else p
        for x, p, u in zip(xs, bounds.predicted, bounds.upper, strict=True)
    )
    meets = tuple(d <= target_s for d in decide)
    feasible = any(meets)
    fastest_s = min(decide)
    i = meets.index(True) if feasible else max(j for j, d in enumerate(decide) if d == fastest_s)
    return _Decision(decide, meets, feasible, i)


def _co_runner_views(
    apps: Sequence[RunningApp],
    ov: _Overlaps,
    i: int,
    phase: Phase,
    max_iter: int,
    warnings: list[str],
) -> tuple[CoRunnerView, ...]:
    """What the plan assumed of each co-runner at the chosen candidate `i`; warns in place."""
    pred = ov.prediction
    if pred is None:
        why = (
            "not considered during the bootstrap"
            if phase != "model"
            else "ignored by the 'none' (Bell) strategy"
        )
        if apps:
            warnings.append(f"{len(apps)} running co-runner(s) {why}")
        return _ignored_views(apps, why)
    by_app = {c.app_id: c for c in pred.co_runners}
    views = tuple(
        CoRunnerView(
            app_id=a.app_id,
            job=a.job,
            has_history=inp.base_runtime_s is not None,
            source=by_app[a.app_id].source,
            started_at=a.started_at,
            scale_out=a.scale_out,
            progress=a.progress,
            predicted_end_at=_finite(by_app[a.app_id].end_at[i]),
            overlap_s=by_app[a.app_id].overlap_s[i],
            overlap_ratio=by_app[a.app_id].overlap_ratio[i],
            note="; ".join(x for x in (note, by_app[a.app_id].note) if x) or None,
            driver=a.driver.to_dict() if a.driver is not None else None,
            stage_plan=inp.stage_plan.to_dict() if inp.stage_plan is not None else None,
        )
        for a, inp, note in zip(apps, ov.inputs, ov.notes, strict=True)
    )
    for v in views:
        if v.source == "outlasts":
            why = by_app[v.app_id].note or "it has no usable history or progress"
            warnings.append(
                f"co-runner {v.app_id} ({v.job or 'unknown job'}) assumed to run alongside "
                f"the whole job: {why}"
            )
    if not all(pred.converged):
        warnings.append(
            f"the overlap fix-point did not converge within {max_iter} iterations for "
            f"{pred.converged.count(False)} candidate(s); the last iterate is used"
        )
    return views


def _candidate_rows(
    candidates: Sequence[int], bounds: _Bounds, decision: _Decision, ov: _Overlaps
) -> tuple[CandidatePrediction, ...]:
    pred = ov.prediction
    return tuple(
        CandidatePrediction(
            scale_out=int(c),
            predicted_s=bounds.predicted[j],
            lower_s=bounds.lower[j],
            upper_s=bounds.upper[j],
            overlap_ratio=(
                {co.app_id: co.overlap_ratio[j] for co in pred.co_runners}
                if pred is not None
                else {}
            ),
            meets_target=decision.meets[j],
            meet_probability=(
                bounds.meet_probability[j] if bounds.meet_probability is not None else None
            ),
        )
        for j, c in enumerate(candidates)
    )


def _model_plan(
    model: RuntimeModel,
    phase: Phase,
    runs: Sequence[Mapping[str, Any]],
    candidates: Sequence[int],
    apps: Sequence[RunningApp],
    co_runner_histories: Mapping[str, Sequence[Mapping[str, Any]]],
    fit_fn: FitFn,
    warnings: list[str],
    common: dict[str, Any],
    confidence: float | None,
    tol_s: float,
    max_iter: int,
    own_fit: FitFn | None = None,
) -> Plan:
    """Plan with a fitted model: overlaps, bounds, the decision, and the record of why.
    `own_fit` refits the job's own model (with its what-if), `fit_fn` the co-runners'."""
    target_s = common["target_s"]
    xs = [float(c) for c in candidates]
    ov = _Overlaps()
    if phase == "model" and common["strategy"] != "none" and apps:
        ov = _predict_overlaps(
            model, xs, apps, co_runner_histories, fit_fn, runs, common, tol_s, max_iter
        )
    bounds = _runtime_bounds(
        model, phase, xs, ov.per_candidate(), runs, candidates, own_fit or fit_fn, confidence,
        target_s,
    )
    if phase != "model" and apps:  # co-runners ignored: the errors do not cover them
        bounds = replace(bounds, meet_probability=None)
    decision = _decide(xs, bounds, model.scale_out_range_, confidence, target_s)
    i, chosen = decision.index, candidates[decision.index]
    probability = bounds.meet_probability[i] if bounds.meet_probability is not None else None
    views = _co_runner_views(apps, ov, i, phase, max_iter, warnings)
    reason = _model_reason(
        phase,
        common["strategy"],
        chosen,
        decision.feasible,
        bounds.predicted[i],
        bounds.upper[i],
        confidence,
        target_s,
        candidates,
        len(apps) if ov.prediction is not None else 0,
        common["usable_runs"],
        probability,
    )
    if not decision.feasible:
        warnings.append(
            f"no scale-out in [{candidates[0]}, {candidates[-1]}] meets the {target_s:.0f} s "
            f"target (predicted {decision.decide[i]:.0f} s at {chosen}); reserving "
            + ("the maximum" if chosen == candidates[-1] else "the fastest predicted scale-out")
        )
    pred = ov.prediction
    return Plan(
        scale_out=chosen,
        phase=phase,
        reason=reason,
        feasible=decision.feasible,
        predicted_s=bounds.predicted[i],
        lower_s=bounds.lower[i],
        upper_s=bounds.upper[i],
        interval_confidence=bounds.interval_confidence,
        confidence=confidence,
        meet_probability=probability,
        warnings=tuple(warnings),
        co_runners=views,
        candidates=_candidate_rows(candidates, bounds, decision, ov),
        model=jsonable(model.describe()),
        overlap_iterations=max(pred.iterations) if pred is not None else None,
        overlap_converged=all(pred.converged) if pred is not None else None,
        calibration=bounds.calibration,
        **common,
    )


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _model_reason(
    phase: Phase,
    strategy: Strategy,
    chosen: int,
    feasible: bool,
    predicted_s: float,
    upper_s: float,
    confidence: float | None,
    target_s: float,
    candidates: Sequence[int],
    n_co: int,
    n_runs: int,
    probability: float | None = None,
) -> str:
    bound = f" (upper {confidence:.0%} bound {upper_s:.0f} s)" if confidence is not None else ""
    if probability is not None:
        bound += f"; estimated P(meet) {probability:.0%}"
        if confidence is not None and feasible:
            bound += f" >= {confidence:.0%}"
    if phase == "bootstrap-whatif":
        how = (
            f"bootstrap run {n_runs + 1} ({n_runs} similar runs): the what-if replay of the"
            " job's event-log profile, corrected by its runs,"
        )
    elif phase == "bootstrap-parametric":
        how = f"bootstrap run {n_runs + 1} ({n_runs} similar runs): the model without interference"
    elif n_co == 0:
        how = "the runtime model" + (
            " ignoring co-runners (Bell)" if strategy == "none" else " with no co-runner running"
        )
    else:
        kind = "joint fix-point" if strategy == "joint" else "Algorithm 1, runtime assumed = target"
        how = f"the runtime model with the overlap of {n_co} co-runner(s) ({kind})"
    if feasible:
        return (
            f"{chosen} is the smallest scale-out in [{candidates[0]}, {candidates[-1]}] meeting "
            f"the {target_s:.0f} s target: {how} predicts {predicted_s:.0f} s{bound}."
        )
    return (
        f"No scale-out in [{candidates[0]}, {candidates[-1]}] meets the {target_s:.0f} s "
        f"target, so the {'maximum' if chosen == candidates[-1] else 'fastest predicted'} "
        f"{chosen}: {how} predicts {predicted_s:.0f} s{bound} there."
    )


__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_INTERVAL_CONFIDENCE",
    "MODEL_FROM_USABLE",
    "STRATEGIES",
    "CandidatePrediction",
    "CoRunnerView",
    "Plan",
    "SearchObservation",
    "SearchState",
    "candidate_scale_outs",
    "plan",
    "search_state",
    "similar_runs",
]
