"""Planning the next run: the edges (history, cluster, model cache) wired to the pure planner.

`cobell predict` and `cobell submit` are thin layers over `predict`; `cobell_cli.core.plan.plan`
stays pure, everything that reads the world for it happens here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cobell_cli.errors import ClusterError, UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from cobell_cli.api.memory import MemoryAsk
    from cobell_cli.cluster.progress import ProgressReport
    from cobell_cli.config import Settings
    from cobell_cli.core.plan import Plan
    from cobell_cli.core.running import RunningApp
    from cobell_cli.core.schedule.decision import StartDecision
    from cobell_cli.store.history import History
    from cobell_cli.store.model_cache import ModelCache


@dataclass
class Prediction:
    """A plan plus what the edges found out while making it."""

    plan: Plan
    cluster: str  # which cluster answered, or why there was none
    cluster_ok: bool
    co_runners: list[RunningApp] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    model_cache: dict[str, int] | None = None  # hits and misses; None when the cache is off
    live_progress: ProgressReport | None = None  # what the co-runners' drivers answered
    policy: float | None = None  # the P(meet) level asked for (None: point); plan.confidence
    # is the level that decided, None while the bootstrap's binary search decides
    start: StartDecision | None = None  # with --deadline: start now or wait (deadlines.py)
    run_fields: dict[str, Any] = field(default_factory=dict)  # recorded with the run
    # co-runners the job never met, their pairs from resource profiles (profile_priors.py)
    pair_priors: dict[str, Any] | None = None
    # with --node-label: the label chosen and every label's plan (node_types.py)
    node_label: str | None = None
    label_options: list[dict[str, Any]] | None = None
    # why the --minimize asked could not act (minimize_note), None when it did: what --strict
    # reads and --json shows, not the warnings' text
    minimize_cannot_act: str | None = None

    @property
    def all_warnings(self) -> list[str]:
        """The plan's warnings, then the edges'."""
        return [*self.plan.warnings, *self.warnings]

    def to_dict(self) -> dict[str, Any]:
        out = {
            **self.plan.to_dict(),
            "cluster": self.cluster,
            "cluster_ok": self.cluster_ok,
            "warnings": self.all_warnings,
            "model_cache": self.model_cache,
            "live_progress": self.live_progress.to_dict() if self.live_progress else None,
            "policy": self.policy,
            "pair_priors": self.pair_priors,
            **self._labels(),
        }
        if self.minimize_cannot_act is not None:
            out["minimize_cannot_act"] = self.minimize_cannot_act
        if self.start is not None:  # the start decided, not the plan at once, is the answer
            start = self.start.to_dict()
            out.update(start, scale_out=self.start.scale_out,
                       meet_probability=self.start.meet_probability,
                       predicted_s=self.start.predicted_s, feasible=self.start.feasible)
        return out

    def _labels(self) -> dict[str, Any]:
        """With --node-label: the chosen label at the top level and with each candidate."""
        if self.label_options is None:
            return {}
        candidates = [{**c, "node_label": self.node_label}
                      for c in self.plan.to_dict()["candidates"]]
        return {"node_label": self.node_label, "labels": self.label_options,
                "candidates": candidates}


def check_request(target_s: float, min_scale_out: int, max_scale_out: int) -> None:
    """Usage errors a planner call would otherwise hit late."""
    if not target_s > 0:
        raise UsageError(f"--target-runtime must be > 0 seconds, got {target_s:g}")
    if min_scale_out < 1:
        raise UsageError(f"--min-scale-out must be >= 1, got {min_scale_out}")
    if min_scale_out > max_scale_out:
        raise UsageError(
            f"--min-scale-out {min_scale_out} is larger than --max-scale-out {max_scale_out}",
            hint="give a range with min <= max",
        )


def check_minimize(minimize: str) -> str:
    """The cost a reservation minimises (`executor-seconds` or `memory-mb-seconds`), checked
    before anything is asked; a UsageError naming the choices."""
    from cobell_cli.core.cost import MINIMIZE_CHOICES

    if minimize not in MINIMIZE_CHOICES:
        raise UsageError(
            f"--minimize {minimize!r} is not one of {', '.join(MINIMIZE_CHOICES)}",
            hint="e.g. --minimize memory-mb-seconds",
        )
    return minimize


def minimize_note(plan: Plan, asked: str, memory: MemoryAsk | None) -> str | None:
    """Why the plan minimised executor-seconds where memory-MB-seconds was asked (the
    plan's `minimize` says what it did): "--minimize X cannot act: why"; None when it did
    what was asked."""
    if plan.minimize == asked:
        return None
    if plan.phase == "bootstrap-search":
        why = "the binary search decides the first runs, by executor-seconds"
    elif memory is None:
        why = "memory is not sized for this command (not a Spark command)"
    else:
        why = ((plan.memory or {}).get("note")
               or "no memory model yet (no run of the job with a measured executor memory peak)")
    return f"--minimize {asked} cannot act: {why}"


def check_minimized(prediction: Prediction, asked: str) -> None:
    """--strict: a --minimize the plan could not act on is a usage error (exit 2), before
    anything starts."""
    if prediction.plan.minimize == asked:
        return
    note = prediction.minimize_cannot_act or f"--minimize {asked} cannot act on this plan"
    raise UsageError(note + "; nothing was started",
                     hint="drop --strict, or --minimize executor-seconds")


def check_memory_confidence(prediction: Prediction) -> None:
    """--strict: a --memory-confidence the plan could not act on (the job's history supports
    no such level, or nothing is sized) is a usage error (exit 2), before anything starts."""
    from cobell_cli.core.memory.plan import CONFIDENCE_OPTION

    note = (prediction.plan.memory or {}).get("confidence_cannot_act")
    if note is not None:
        raise UsageError(note + "; nothing was started",
                         hint=f"drop --strict, or lower {CONFIDENCE_OPTION} to a level the "
                         "history supports")


def check_options_act(prediction: Prediction, minimize: str) -> None:
    """--strict: --minimize and --memory-confidence each act on the plan, or exit 2."""
    check_minimized(prediction, minimize)
    check_memory_confidence(prediction)


def running_co_runners(
    cluster: Any, settings: Settings, exclude_app_ids: Iterable[str] = ()
) -> tuple[list[RunningApp], str, bool, list[str]]:
    """Apps running now; with allow_no_cluster a dead cluster becomes 'no co-runners', loudly."""
    excluded = set(exclude_app_ids)
    try:
        apps = [a for a in cluster.running_apps() if a.app_id not in excluded]
    except ClusterError as exc:
        if not settings.allow_no_cluster:
            raise
        note = f"cluster unavailable, planning WITHOUT co-runner information: {exc.line()}"
        return [], "none (cluster unavailable)", False, [note]
    description = cluster.describe()
    warnings = []
    if cluster.name == "none":
        warnings.append(description)
    return apps, description, cluster.name != "none", warnings


def predict(
    history: History,
    cluster: Any,
    settings: Settings,
    *,
    job: str,
    target_s: float,
    now: float,
    input_bytes: int | None = None,
    require_history: bool = True,
    exclude_app_ids: Iterable[str] = (),
    memory: MemoryAsk | None = None,
    minimize: str = "executor-seconds",
    on_model: Any = None,
    queue: str | None = None,
) -> Prediction:
    """Plan the next run of `job` against the history and what runs on the cluster now;
    with `memory`, size each candidate's executor memory too; with node labels
    (settings.node_labels), on each label, the cheapest chosen (`queue`: the submit's, whose
    labels `auto` means). `on_model(model, phase)` receives the job's model the plan used
    (deadlines.py)."""
    check_request(target_s, settings.min_scale_out, settings.max_scale_out)
    runs = history.training_runs(job, window=settings.history_window)
    if require_history and not runs and job not in history.job_names():
        raise UsageError(
            f"no runs of job {job!r} in the history {history.path}",
            hint="`cobell history jobs` lists the known jobs; `cobell submit` starts a new job",
        )
    labels = _node_labels(cluster, settings, queue)
    world = _read_world(history, cluster, settings, job, runs, exclude_app_ids, memory)
    world.warnings += kept_out_warnings(history, job, runs)
    cache = model_cache(settings)
    replays = _replay_cache(cache, world.profiles)
    fit, priors = _fit_with_priors(history, job, world.co_jobs, cache, settings.history_window)
    plan_fn = _planner(world, settings, job=job, now=now, input_bytes=input_bytes, fit=fit,
                       replays=replays, minimize=minimize, on_model=on_model)
    warnings = world.warnings
    decision = None
    if labels is not None:
        from cobell_cli.api.node_types import plan_on_labels

        decision = plan_on_labels(
            history, cluster, job=job, runs=runs, labels=labels,
            prices=settings.label_prices, target_s=target_s, confidence=settings.confidence,
            apps=world.apps, fit=fit or _fit_default, plan_fn=plan_fn,
            window=settings.history_window)
        chosen = decision.plan
        warnings += decision.warnings
    else:
        chosen = plan_fn(history=runs, target_s=target_s, co_runners=world.apps)
    note = minimize_note(chosen, minimize, memory)
    if note is not None:
        warnings.append(note + "; minimised executor-seconds instead")
    if replays is not None:
        replays.save()
    counts = {"hits": cache.hits, "misses": cache.misses} if cache is not None else None
    return Prediction(chosen, world.description, world.cluster_ok, world.apps, warnings, counts,
                      world.progress, policy=settings.confidence,
                      pair_priors=priors.describe() if priors is not None else None,
                      node_label=decision.node_label if decision is not None else None,
                      label_options=decision.describe() if decision is not None else None,
                      minimize_cannot_act=note)


@dataclass
class _World:
    """What `predict` read from the edges for one plan: the co-runners and their jobs' runs,
    the drivers' progress, the job's memory observations and container rules, its profiles."""

    apps: list[RunningApp]
    description: str
    cluster_ok: bool
    warnings: list[str]
    co_histories: dict[str, list[dict[str, Any]]]
    progress: ProgressReport | None
    memory_runs: list[dict[str, Any]]
    memory_request: Any
    memory_model: Any
    profiles: list[Any]
    cluster_profiles: list[Any]

    @property
    def co_jobs(self) -> list[str]:
        return sorted({a.job for a in self.apps if a.job})


def _read_world(
    history: History, cluster: Any, settings: Settings, job: str,
    runs: Sequence[dict[str, Any]], exclude_app_ids: Iterable[str], memory: MemoryAsk | None,
) -> _World:
    """The cluster (its apps, their drivers' progress, its container rules: one budget for
    all) and the history's side of the plan."""
    from cobell_cli.api.memory import memory_model, memory_request
    from cobell_cli.cluster import query

    window = settings.history_window
    with query(cluster) as deadline:
        apps, description, ok, warnings = running_co_runners(cluster, settings, exclude_app_ids)
        co_histories = {name: history.training_runs(name, window=window)
                        for name in sorted({a.job for a in apps if a.job})}
        apps, co_histories, progress = live_progress(
            history, cluster, settings, apps, co_histories, left_s=deadline.remaining_s()
        )
        memory_runs = history.memory_runs(job, window=window) if memory is not None else []
        request = memory_request(cluster, memory, memory_runs) if memory is not None else None
    sizing = memory_model(history, job, runs=memory_runs, request=request)[0] \
        if memory_runs else None
    profiles, cluster_profiles = job_profiles(history, job, runs, warnings,
                                              decode=_profile_decoder(settings))
    return _World(apps, description, ok, warnings, co_histories, progress, memory_runs,
                  request, sizing, profiles, cluster_profiles)


KEPT_OUT_NAMED = 2  # implausible runs a plan's warning names with their reasons
CHANGED_AFTER = 3  # this many newest runs all implausible: perhaps the job itself changed


def kept_out_warnings(
    history: History, job: str, runs: Sequence[dict[str, Any]]
) -> list[str]:
    """One warning naming the job's runs cobell kept out of fitting as implausible
    (store/implausible.py) since the oldest run the plan learns from, and why."""
    times = [t for r in runs if (t := r.get("started_at") or r.get("submitted_at")) is not None]
    named, count = history.implausible_runs(job, since=min(times) if times else None,
                                            limit=KEPT_OUT_NAMED)
    if not count:
        return []
    if count == 1:
        (run_id, why), = named
        text = (f"run {run_id} kept out of fitting: {why} (`cobell history include {run_id}` "
                "uses it)")
    else:
        import shlex  # here: a plan without kept-out runs (the usual one) needs none

        listed = "; ".join(f"run {run_id}: {why}" for run_id, why in named)
        more = f"; and {count - len(named)} more" if count > len(named) else ""
        text = (f"{count} runs kept out of fitting as implausible, newest first: {listed}"
                f"{more} (`cobell history list --job {shlex.quote(job)}` marks them; "
                "`cobell history include ID` uses one)")
    if history.newest_kept_out(job, CHANGED_AFTER):
        text += (f"; the job's {CHANGED_AFTER} newest runs were all kept out: if the job "
                 "itself changed, include them")
    return [text]


def _replay_cache(cache: ModelCache | None, profiles: Sequence[Any]) -> Any:
    """The what-if's replays kept beside the model cache (None when either is off)."""
    if cache is None or not profiles:
        return None
    from cobell_cli.store.replay_cache import ReplayCache

    return ReplayCache(cache.directory)


def _planner(
    world: _World, settings: Settings, *, job: str, now: float, input_bytes: int | None,
    fit: Any, replays: Any, minimize: str, on_model: Any,
) -> Any:
    """The pure planner with everything but the runs, target and co-runners bound: node
    labels call it once per label with that label's runs and co-runners."""
    from cobell_cli.core.plan import plan

    def plan_fn(*, history: Sequence[Any], target_s: float, co_runners: Sequence[Any]) -> Plan:
        return plan(
            job=job,
            history=history,
            now=now,
            target_s=target_s,
            min_scale_out=settings.min_scale_out,
            max_scale_out=settings.max_scale_out,
            step=settings.scale_out_step,
            confidence=settings.confidence,
            input_bytes=input_bytes,
            input_tolerance=settings.input_tolerance,
            co_runners=co_runners,
            co_runner_histories=world.co_histories,
            fit=fit,
            profiles=world.profiles,
            cluster_profiles=world.cluster_profiles,
            whatif_memory=replays,
            memory=world.memory_request,
            memory_runs=world.memory_runs,
            memory_model=world.memory_model,
            minimize=minimize,  # type: ignore[arg-type]
            on_model=on_model,
        )

    return plan_fn


def _node_labels(cluster: Any, settings: Settings, queue: str | None) -> list[str] | None:
    """The node labels to plan on (node_types.py), checked before anything else is asked;
    None without --node-label."""
    if not settings.node_labels:
        return None
    from cobell_cli.api.node_types import resolve_labels

    return resolve_labels(cluster, settings.node_labels, queue)


def _fit_with_priors(
    history: History, job: str, co_jobs: Sequence[str], cache: ModelCache | None,
    window: int | None,
) -> tuple[Any, Any]:
    """The planner's `fit` (the model cache's when on), and, when the resource profiles
    inform co-runners the job never met (profile_priors.py), one that gives the job's model
    their priors."""
    from cobell_cli.api.profile_priors import unseen_pair_structure

    fit = cache.fit if cache is not None else None
    structure = unseen_pair_structure(history, job, co_jobs, fit or _fit_default, window)
    if structure is None:
        return fit, None
    from cobell_cli.core.profile_effects import PriorFit

    priors = PriorFit(fit or _fit_default, job, co_jobs, structure)
    return priors, priors


def _fit_default(runs: Sequence[Any], **params: Any) -> Any:
    from cobell_cli.core.model import fit_runtime_model

    return fit_runtime_model(runs, **params)


def live_progress(
    history: History,
    cluster: Any,
    settings: Settings,
    apps: list[RunningApp],
    co_histories: dict[str, list[dict[str, Any]]],
    left_s: float = float("inf"),
) -> tuple[list[RunningApp], dict[str, list[dict[str, Any]]], ProgressReport | None]:
    """Ask the drivers of co-runners whose job has runs how far they are (cluster/progress.py),
    and give those jobs' runs the stage weights of their event-log profiles. The drivers get
    `timeout_s`, or what is left of the cluster query's budget (`left_s`) if that is less.

    Only co-runners with history are asked: without a model the planner has nothing to
    combine the progress with. Failures only leave an app without progress.
    """
    asked = [a for a in apps if a.job and co_histories.get(a.job)]
    if not asked or getattr(cluster, "name", "none") == "none":
        return apps, co_histories, None
    from cobell_cli.cluster.progress import read_progress

    read, report = read_progress(cluster, asked, budget_s=min(settings.timeout_s, left_s))
    answered = {a.app_id: a for a in read}
    apps = [answered.get(a.app_id, a) for a in apps]
    for job in {a.job for a in read if a.driver is not None and a.job}:
        runs = co_histories[job]
        shares = history.stage_task_seconds([r["id"] for r in runs])
        co_histories[job] = [{**r, "stage_shares": shares[r["id"]]} if r["id"] in shares else r
                             for r in runs]
    return apps, co_histories, report


JOB_PROFILES = 3  # the job's newest profiles the what-if replays
CLUSTER_PROFILES = 12  # other apps' profiles its executor start-up trends are learned from


def job_profiles(
    history: History, job: str, runs: Sequence[dict[str, Any]], warnings: list[str],
    decode: Any = None,
) -> tuple[list[Any], list[Any]]:
    """The job's event-log profiles for the what-if (newest first) and other apps' for the
    cluster's start-up trends. A job without a stored profile but with a recorded event-log
    path, and fewer runs than the bootstrap search needs, has that log read once (streamed).
    `decode`: the stored JSON's decoder (`History.profiles`)."""
    from cobell_cli.core.plan import SEARCH_RUNS

    profiles = history.profiles(job, limit=JOB_PROFILES, decode=decode)
    if not profiles and len(runs) < SEARCH_RUNS:
        profiles = _profiles_from_logs(history.event_log_paths(job), warnings)
    if not profiles:
        return [], []
    own = {p.app_id for p in profiles}
    others = [p for p in history.profiles(limit=CLUSTER_PROFILES + len(own), decode=decode)
              if p.app_id not in own][:CLUSTER_PROFILES]
    return profiles, others


def _profile_decoder(settings: Settings) -> Any:
    """The profiles' decoder that keeps them beside the model cache (None, json.loads, when
    the cache is off)."""
    directory = cache_directory(settings)
    if directory is None:
        return None
    from cobell_cli.store.profile_cache import ProfileCache

    return ProfileCache(directory).decode


def _profiles_from_logs(paths: Sequence[str], warnings: list[str]) -> list[Any]:
    from cobell_cli.sources.eventlog import EventLogError
    from cobell_cli.sources.eventlog_profile import summarize

    out = []
    for path in paths:
        try:
            out.append(summarize(path))
        except (EventLogError, OSError) as exc:
            line = exc.line() if isinstance(exc, EventLogError) else str(exc)
            warnings.append(f"the what-if cannot read the job's event log: {line}")
    return out


def cache_directory(settings: Settings) -> Path | None:
    """Where fitted models, replays, decoded profiles and the history's last integrity check
    are kept; None when `model_cache` is off."""
    if not settings.model_cache:
        return None
    from cobell_cli.config import cache_dir

    return cache_dir() / "models"


def model_cache(settings: Settings) -> ModelCache | None:
    """The on-disk cache of fitted models that planning reads and writes (None when
    `model_cache` is off); `cobell model show` reads the entries `submit` left."""
    directory = cache_directory(settings)
    if directory is None:
        return None
    from cobell_cli.core.plan import DEFAULT_INTERVAL_CONFIDENCE
    from cobell_cli.store.model_cache import ModelCache

    return ModelCache(
        directory,
        confidence=settings.confidence or DEFAULT_INTERVAL_CONFIDENCE,
        grid_max=settings.max_scale_out,
    )


def warm_model_cache(
    history: History,
    settings: Settings,
    *,
    job: str,
    target_s: float,
    now: float,
    input_bytes: int | None = None,
) -> Prediction | None:
    """Fit and cache the model the next run of `job` will be planned with, now that nobody waits.

    The run just recorded changed the job's history, so the next `cobell submit` would refit
    before it can launch; planning the next run here, with the same settings, leaves the model
    in the cache instead. Co-runners do not change which runs are fitted, so none are asked for.
    """
    if not settings.model_cache:
        return None
    from cobell_cli.cluster.none import NoCluster

    return predict(
        history,
        NoCluster("warming the model cache"),
        settings,
        job=job,
        target_s=target_s,
        now=now,
        input_bytes=input_bytes,
        require_history=False,
    )
