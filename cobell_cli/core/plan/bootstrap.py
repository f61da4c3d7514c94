"""The bootstrap (Section IV-D of the paper), driven by the number n of usable similar runs:

* n = 0..2 with at least one event-log profile of the job's runs, "bootstrap-whatif": the
  what-if curve (core/whatif/: the profiles' stages replayed at every candidate, corrected
  by the runs the job has) decides like a model, on its upper bound at a confidence.
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
  That is the paper's search (policy "binary"); the default ("bounded") adds what the
  runtimes say under Amdahl's law (`_amdahl_bounds`).
* n = 3..5 (runs 4-6), "bootstrap-parametric": the runtime model without interference (Bell),
  fitted on the runs with their overlaps removed, as the paper's bootstrap does; but where
  some of the runs met co-runners and the model fitted with them pins an effect down (a
  co-runner job's own pair, or the pooled one, not on thin evidence), its interference term
  multiplies that curve and the running co-runners' overlaps are predicted, as from run 7.
* n >= 6 (run 7 on), "model": the runtime model with interference and the chosen strategy.
  If the model cannot be fitted (e.g. every run at one scale-out), the search continues.

From n = 3 on the what-if replaces the model's scale-out curve f(x) when its leave-one-out
error on the runs is lower (phase "bootstrap-whatif"), and is also one more candidate curve
in the runtime model's cross-validation. Where the model knows co-runners' effects, the
what-if is corrected on the runs with their slow-down divided out and the interference term
multiplies it (curve_effects.py), so a running co-runner whose effect is known is never
ignored, whichever phase decides. Without any co-located run no effect is known, and the
running co-runners are left out with a warning that says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from cobell_cli.core.plan.co_runners import _ignored_views
from cobell_cli.core.plan.curve_effects import (
    CurveWithInterference,
    knows_interference,
    normalized_runs,
)
from cobell_cli.core.plan.history import _without_overlaps
from cobell_cli.core.plan.records import (
    FitFn,
    Phase,
    Plan,
    RuntimeModel,
    SearchObservation,
    SearchState,
    Strategy,
    _floats,
)
from cobell_cli.core.running import RunningApp
from cobell_cli.core.words import count

if TYPE_CHECKING:
    from cobell_cli.core.profile import AppProfile


SEARCH_RUNS = 3  # runs 1-3: binary search
SearchPolicy = Literal["binary", "bounded"]
SEARCH_POLICIES: tuple[str, ...] = ("binary", "bounded")
PARAMETRIC_RUNS = 3  # runs 4-6: model without interference
MODEL_FROM_USABLE = SEARCH_RUNS + PARAMETRIC_RUNS  # usable runs needed for the full model


def _fit_whatif(
    profiles: Sequence[AppProfile],
    runs: Sequence[Mapping[str, Any]],
    cluster_profiles: Sequence[AppProfile],
    warnings: list[str],
    memory: MutableMapping[str, dict[int, float]] | None = None,
) -> Any:
    """The job's what-if (core/whatif/), or None with a warning when no profile replays."""
    if not profiles:
        return None
    from cobell_cli.core.whatif import fit_whatif

    try:
        return fit_whatif(profiles, runs, cluster_profiles, memory=memory)
    except ValueError as exc:
        warnings.append(f"the what-if cannot use the job's event-log profiles ({exc})")
        return None


def search_state(
    runs: Sequence[Mapping[str, Any]],
    candidates: Sequence[int],
    target_s: float,
    policy: SearchPolicy = "binary",
) -> SearchState:
    """The bootstrap search state machine (rules in the module doc; `policy` "bounded" adds
    Amdahl's bounds, `_amdahl_bounds`)."""
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
    probe = (lo + hi) // 2
    if policy == "bounded" and not max_missed:
        lo, probe = _amdahl_bounds(observations, candidates, target_s, lo, hi)
    elif policy not in SEARCH_POLICIES:
        raise ValueError(f"search policy must be one of {SEARCH_POLICIES}, not {policy!r}")
    return SearchState(candidates[lo], candidates[hi], candidates[probe], max_missed,
                       tuple(observations))


def _amdahl_bounds(
    observations: Sequence[SearchObservation],
    candidates: Sequence[int],
    target_s: float,
    lo: int,
    hi: int,
) -> tuple[int, int]:
    """The bracket's lower end and the probe with what the runtimes say under Amdahl's law
    (runtime = serial + parallel / x: more executors never slow the job, and at most
    speed it up linearly). A run that missed at x in R seconds needs at least x·R/target
    executors, so the bracket starts there. A run that met the target at x in R seconds
    bounds the runtime at x' <= x by R·x/x', so the smallest x' >= x·R/target meets it too:
    the probe is there, not at the midpoint below it, where the binary search often misses
    (bench/results/coldstart.md). Without a met run the probe is the bracket's midpoint."""
    need = [o.scale_out * o.runtime_s / target_s for o in observations if not o.met_target]
    if need:
        floor = max(need)
        lo = max(lo, next((i for i in range(lo, hi + 1) if candidates[i] >= floor), hi))
    safe = [o.scale_out * o.runtime_s / target_s for o in observations if o.met_target]
    if not safe:
        return lo, (lo + hi) // 2
    bound = min(safe)
    probe = next((i for i in range(lo, hi + 1) if candidates[i] >= bound), hi)
    return lo, probe


def _search_plan(
    runs: Sequence[Mapping[str, Any]],
    candidates: Sequence[int],
    apps: Sequence[RunningApp],
    warnings: list[str],
    common: dict[str, Any],
    policy: SearchPolicy = "binary",
) -> Plan:
    target_s = common["target_s"]
    state = search_state(runs, candidates, target_s, policy)
    hi_all = candidates[-1]
    reason = _search_reason(state, common["run_number"], candidates, target_s, policy)
    feasible = not state.max_missed
    if state.max_missed:
        warnings.append(
            f"the maximum scale-out {hi_all} already missed the {target_s:.0f} s target; "
            "reserving the maximum"
        )
    if apps:
        warnings.append(
            f"{count(len(apps), 'running co-runner')} not considered during the bootstrap "
            "(as in CoBell)"
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


def _search_reason(
    state: SearchState,
    run_no: int,
    candidates: Sequence[int],
    target_s: float,
    policy: SearchPolicy = "binary",
) -> str:
    """Why the search probes where it does: the previous run's verdict, or no run yet."""
    head = (
        f"Bootstrap run {run_no} of {SEARCH_RUNS}"
        if run_no <= SEARCH_RUNS
        else f"Run {run_no} (no model could be fitted)"
    )
    if not state.observations:
        why = f"no similar run yet, so start at the midpoint of [{candidates[0]}, {candidates[-1]}]"
    else:
        last = state.observations[-1]
        verdict = "met" if last.met_target else "missed"
        half = "lower" if last.met_target else "upper"
        why = (
            f"the previous run at {last.scale_out} took {last.runtime_s:.0f} s and {verdict} "
            f"the {target_s:.0f} s target, so search the {half} part "
            f"[{state.lo_scale_out}, {state.hi_scale_out}]"
        )
    if policy == "bounded":
        met = [o for o in state.observations if o.met_target]
        if met and not state.max_missed:
            best = min(met, key=lambda o: o.scale_out * o.runtime_s)
            why += (
                f"; by Amdahl's law the run at {best.scale_out} in {best.runtime_s:.0f} s"
                f" bounds the runtime at {state.probe_scale_out} by"
                f" {best.runtime_s * best.scale_out / state.probe_scale_out:.0f} s"
            )
        return f"{head}: search with Amdahl's bounds; {why}: {state.probe_scale_out}."
    return f"{head}: binary search; {why}: {state.probe_scale_out}."


def _job_model(
    runs: Sequence[Mapping[str, Any]],
    whatif: Any,
    own_fit: FitFn,
    interference: Strategy,
    warnings: list[str],
) -> tuple[Any, Phase, str | None]:
    """The job's model (None: search), the phase it plans in, and why the what-if was or was
    not preferred. The model is fitted on the runs with their co-runners (unless the
    strategy is 'none'): from run 7 as CoBell does, and at runs 4-6 too, where it has learned
    a co-runner's effect from the job's co-located runs (`knows_interference`); otherwise
    runs 4-6 fit without the overlaps, as the paper's bootstrap does. The what-if stands in
    for too few runs, or replaces the fitted curve f(x) where it predicts the runs better;
    the interference term the model learned then multiplies it (`CurveWithInterference`)."""
    n = len(runs)
    model = effects = None
    phase: Phase = "model" if n >= MODEL_FROM_USABLE else "bootstrap-parametric"
    if n >= SEARCH_RUNS and phase == "model":
        model = _fit_or_warn(own_fit, runs if interference != "none" else
                             _without_overlaps(runs), warnings)
        effects = model if interference != "none" and knows_interference(model) else None
    elif n >= SEARCH_RUNS:
        model = _fit_or_warn(own_fit, _without_overlaps(runs), warnings)
        effects = _bootstrap_effects(runs, own_fit, interference)
        if model is not None and effects is not None:
            model = CurveWithInterference(model, effects)
    choice = None
    if whatif is not None:
        curve = whatif.refit(normalized_runs(runs, effects)) if effects is not None else whatif
        with_interference = phase == "model" and model is not None
        model, choice = _whatif_or_model(model, curve, runs, own_fit, with_interference)
        if model is None:
            model = curve
        if model is curve:
            phase = "bootstrap-whatif"
            if effects is not None:
                model = CurveWithInterference(curve, effects)
    return model, phase, choice


def _fit_or_warn(own_fit: FitFn, runs: Sequence[Mapping[str, Any]], warnings: list[str],
                 ) -> Any:
    try:
        return own_fit(runs)
    except ValueError as exc:
        warnings.append(f"the runtime model could not be fitted ({exc}); searching instead")
        return None


def _bootstrap_effects(runs: Sequence[Mapping[str, Any]], own_fit: FitFn,
                       interference: Strategy) -> Any:
    """Runs 4-6: the model fitted with the co-runners, whose interference term multiplies
    the paper's curve, where the job's runs met co-runners and pin an effect down (a pair
    not resting on thin evidence); else None, and co-runners stay out as in the paper. Its
    own curve is not used: three to five runs, some slowed, can bend a curve fitted with
    interference anywhere (bench.coldstart: 11 executors planned where 26 had just missed)."""
    if interference == "none" or not _co_located(runs):
        return None
    try:
        model = own_fit(runs)
    except ValueError:
        return None
    return model if knows_interference(model, resolved=True) else None


def _co_located(runs: Sequence[Mapping[str, Any]]) -> bool:
    return any(float(v) > 0 for r in runs for v in (r.get("overlaps") or {}).values())


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
    errors (runs 4-6: the curve fitted without the overlaps, refitted without each run;
    from run 7: the model's leave-one-out ratios at the overlaps each run had), while the
    what-if's are on the runs with the model's known slow-down divided out. A handful of
    runs, some with co-runners, at clustered scale-outs can bend a fitted curve anywhere
    (its cross-validation holds out only interior scale-outs, so an edge run can be
    sacrificed and no fold notices); the replay keeps the job's shape."""
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
        f"The what-if replaced the runtime model's scale-out curve: its leave-one-out error"
        f" on the {count(len(runs), 'run')} is {100 * mine:.0f} % (mean |log ratio|), the model's"
        f" {100 * own:.0f} %."
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
