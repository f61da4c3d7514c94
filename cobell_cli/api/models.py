"""A job's runtime model from Python: the runs it is fitted to, the fit, its description,
its cross-validated errors, and the what-if of one event log.

`cobell model ...` is a thin layer over these functions. Reading (`model_input`) and fitting
are separate calls so a caller closes the history before the fit, as the CLI does; the
model is the one planning fits (`cobell_cli.core.model`), from the model cache when planning
left it there. numpy loads inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cobell_cli.core.words import count
from cobell_cli.errors import HistoryError, UsageError

if TYPE_CHECKING:
    from cobell_cli.config import Settings
    from cobell_cli.store.history import History
    from cobell_cli.store.model_cache import ModelCache

EVAL_PROTOCOLS = ("nested", "loso", "extrap", "sparse3")
JOBS_HINT = "list the known jobs with `cobell history jobs`"


@dataclass
class ModelInput:
    """What a job's model is fitted to: its succeeded runs (the planning window's) and, when
    it has event-log profiles, its what-if (the candidate curve planning fits with)."""

    job: str
    runs: list[dict[str, Any]]
    whatif: Any = None
    memory: Any = None  # the job's memory model (core/memory), None without a measured peak
    memory_observations: list[Any] = field(default_factory=list)
    resource_profile: dict[str, Any] | None = None  # shares of its task time (profile_priors)


def model_input(history: History, job: str, *, window: int | None = None) -> ModelInput:
    """The job's runs and what-if, or a UsageError that says how to find a job that has some.
    `window` is the settings' history_window: the runs planning uses, so the model it uses."""
    runs = history.training_runs(job, window=window)
    known = history.job_names()
    whatif = _job_whatif(history, job, runs)
    if not runs:
        why = "has no succeeded runs" if job in known else "is not in the history"
        raise UsageError(f"job {job!r} {why}", hint=JOBS_HINT)
    from cobell_cli.api.memory import memory_model
    from cobell_cli.api.profile_priors import resource_profile

    memory, observations = memory_model(history, job, window)
    profile = resource_profile(history.resource_totals([job]).get(job, []))
    return ModelInput(job, runs, whatif, memory, observations, profile)


def _job_whatif(history: History, job: str, runs: list[dict[str, Any]]) -> Any:
    from cobell_cli.api.planning import job_profiles
    from cobell_cli.core.whatif import fit_whatif

    profiles, others = job_profiles(history, job, runs, [])
    if not profiles:
        return None
    try:
        return fit_whatif(profiles, runs, others)
    except ValueError:
        return None


def fit_model(data: ModelInput, *, whatif: bool = True, cache: ModelCache | None = None) -> Any:
    """The job's fitted RuntimeModel, as planning fits it (with its what-if unless `whatif` is
    off); from `cache` (`model_cache(settings)`) when it has it. A UsageError when the runs
    cannot be fitted."""
    from cobell_cli.core.model import fit_runtime_model

    candidate = data.whatif if whatif else None
    try:
        if cache is not None:
            return cache.fit(data.runs, candidate)
        return fit_runtime_model(data.runs, whatif=candidate)
    except ValueError as exc:
        raise UsageError(f"job {data.job!r}: {exc}", hint=JOBS_HINT) from None


def describe_model(data: ModelInput, settings: Settings | None = None) -> dict[str, Any]:
    """The chosen model, its parameters, per co-runner interference, CV errors and runs used
    (`cobell model show --json`), with the model cache's hits and misses (None when the
    settings turn the cache off, or no settings are given)."""
    from cobell_cli.api.planning import model_cache

    cache = model_cache(settings) if settings is not None else None
    description = {"job": data.job, **fit_model(data, cache=cache).describe()}
    counts = None if cache is None else {"hits": cache.hits, "misses": cache.misses}
    memory = None
    if data.memory is not None:
        from cobell_cli.core.memory.plan import bound_summary

        memory = {**data.memory.describe(), "bound": bound_summary(data.memory)}
    return {**description, "memory": memory, "resource_profile": data.resource_profile,
            "model_cache": counts}


def evaluate_model(
    data: ModelInput, protocol: str = "nested", *, seed: int = 0
) -> list[dict[str, Any]]:
    """Cross-validated errors of cobell's model next to the paper's fit, Bell (and Ernest) on
    the same splits: one row per method (splits, mean MAPE with its standard error, median
    MAPE, MAE, RMSE). A UsageError when the job has too few runs for the protocol."""
    from cobell_cli.core.model.data import prepare_runs
    from cobell_cli.core.model.evaluate import evaluation_rows

    if protocol not in EVAL_PROTOCOLS:
        raise UsageError(f"unknown protocol {protocol!r}", hint=f"use {', '.join(EVAL_PROTOCOLS)}")
    rows = evaluation_rows(prepare_runs(data.runs), protocol, seed)
    if not any(r["method"] == "cobell" for r in rows):
        n = len({r["scale_out"] for r in data.runs})
        what = (count(len(data.runs), "run") if protocol == "nested"
                else count(n, "distinct scale-out"))
        raise UsageError(f"job {data.job!r} has {what}: too few for the {protocol} protocol",
                         hint="nested needs 3 runs; loso 3, extrap 2 and sparse3 4 distinct "
                         "scale-outs")
    return rows


def cluster_profiles(history_path: str | Path) -> list[Any]:
    """Recent event-log profiles of any job in the history at `history_path`: how executor
    start-up grows with the count on this cluster, for `whatif`. None when there is no
    usable history (the what-if then learns from the log alone)."""
    from cobell_cli.api.runs import open_history

    try:
        with open_history(history_path, create=False, read_only=True) as history:
            return history.profiles()
    except HistoryError:
        return []


def default_scale_outs(observed: int) -> list[int]:
    """1, 2, 4, ... up to max(8, 4 x the observed count), and the observed count itself."""
    top = max(8, 4 * observed)
    xs = {observed}
    x = 1
    while x <= top:
        xs.add(x)
        x *= 2
    return sorted(xs)


WHATIF_INTERVAL = 0.9  # the what-if's interval in `whatif` (lower_s, upper_s)


def whatif(event_log: str | Path, scale_outs: Sequence[int] | None = None,
           cluster_profiles: Sequence[Any] = ()) -> dict[str, Any]:
    """One run's runtime at other executor counts, from its event log alone: the run it saw
    (app, scale-out, runtime, cores per executor), where its start-up came from, and the
    predicted runtime with its 90 % interval per count (default `default_scale_outs`)."""
    from cobell_cli.core.whatif import fit_whatif, workload
    from cobell_cli.sources.eventlog_profile import summarize

    profile = summarize(Path(event_log))
    try:
        workload(profile)  # the reason a log cannot be replayed, in its own words
        model = fit_whatif([profile], cluster_profiles=list(cluster_profiles))
    except ValueError as exc:
        raise UsageError(f"event log {event_log}: {exc}",
                         hint="pass the log of a finished run that ran tasks") from None
    xs = list(scale_outs or default_scale_outs(profile.scale_out))
    predicted = model.predict(xs)
    lower, upper = model.predict_interval(xs, confidence=WHATIF_INTERVAL)
    return {
        "app_id": profile.app_id,
        "app_name": profile.app_name,
        "observed_scale_out": profile.scale_out,
        "observed_runtime_s": profile.runtime_s,
        "cores_per_executor": model.workloads_[0].cores_per_executor,
        "startup_source": model.startup_choice_.source,
        "predictions": [{"scale_out": x, "runtime_s": y, "lower_s": lo, "upper_s": hi}
                        for x, y, lo, hi in zip(xs, predicted, lower, upper, strict=True)],
    }
