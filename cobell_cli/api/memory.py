"""Executor memory for the planner (issue 26): what the caller knows of the next run's memory,
the cluster's container rules, and the job's memory model (core/memory) on its measured runs,
guided by the nearest known job's when the job has too few input sizes of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cobell_cli.core.memory.plan import MemoryRequest
    from cobell_cli.store.history import History

FEATURE_PROFILES = 3  # a job's newest profiles its selector features are averaged over


@dataclass(frozen=True)
class MemoryAsk:
    """What the caller knows of the next run's executor memory (issue 26): the launcher's
    backend ("yarn", "standalone"; None: the cluster's), a memory the command sets itself
    (kept), and the confidence the heap must cover the need with."""

    backend: str | None = None
    user_memory_mb: int | None = None
    user_overhead_mb: int | None = None
    confidence: float | None = None  # None: core/memory/plan.py's default
    keep: bool = False  # the memory stays as the command or Spark's defaults have it


def memory_request(
    cluster: Any, ask: MemoryAsk, runs: Sequence[dict[str, Any]]
) -> Any:
    """What the planner needs to size memory: the cluster's container rules (YARN's
    allocation step and maximum from the RM, else yarn-site.xml, else the defaults; a
    standalone worker grants the heap as asked), the user's memory and the confidence."""
    from cobell_cli.core.memory.plan import DEFAULT_MEMORY_CONFIDENCE, MemoryRequest
    from cobell_cli.core.memory.sizing import ContainerRules

    backend = ask.backend or getattr(cluster, "name", None)
    if backend not in ("yarn", "standalone"):  # no cluster to ask: where the job ran
        backend = next((r["backend"] for r in reversed(runs) if r.get("backend")), "yarn")
    rules = ContainerRules(str(backend))
    if backend == "yarn":
        from cobell_cli.cluster.allocation import DEFAULT
        from cobell_cli.cluster.yarnconf import site_allocation

        allocation = (
            cluster.allocation() if hasattr(cluster, "allocation") else site_allocation()
        ) or DEFAULT
        rules = ContainerRules("yarn", allocation.step_mb, allocation.maximum_mb)
    return MemoryRequest(
        rules=rules,
        confidence=ask.confidence or DEFAULT_MEMORY_CONFIDENCE,
        confidence_asked=ask.confidence is not None,
        user_memory_mb=ask.user_memory_mb,
        user_overhead_mb=ask.user_overhead_mb,
        keep=ask.keep,
    )


MEMORY_NEIGHBOURS = 30  # jobs the expert selector compares a new job with, at most


def memory_model(
    history: History, job: str, window: int | None = None, runs: list | None = None,
    request: MemoryRequest | None = None,
) -> tuple[Any, list]:
    """The job's memory model (core/memory/model.py) on its runs with memory columns (`runs`,
    else read), and those observations; (None, observations) when no run has a measured
    peak. With too few input sizes to choose its own function, the nearest known job's by
    event-log profile (core/memory/selector.py) guides it; a job whose runs never gave an
    input size is modelled by its peaks alone. `request`: how many runs its bound holds out
    (core/memory/plan.py bound_folds); None: the default."""
    from cobell_cli.core.memory.demand import observations
    from cobell_cli.core.memory.model import MemoryModel
    from cobell_cli.core.memory.plan import bound_folds
    from cobell_cli.core.memory.select import MIN_SIZES

    obs = observations(runs if runs is not None else history.memory_runs(job, window=window))
    if not any(o.demand_mb for o in obs):
        return None, obs
    sizes = {o.input_bytes for o in obs if o.demand_mb and o.input_bytes}
    few = 0 < len(sizes) <= MIN_SIZES
    neighbour = nearest_memory_job(history, job, window) if few else None
    return MemoryModel(neighbour=neighbour, bound_folds=bound_folds(request)).fit(obs), obs


def nearest_memory_job(history: History, job: str, window: int | None) -> Any:
    """The known job nearest to `job` by event-log profile, with its memory function (None
    without profiles or known jobs)."""
    from cobell_cli.core.memory.demand import observations
    from cobell_cli.core.memory.model import MemoryModel
    from cobell_cli.core.memory.select import MIN_SIZES
    from cobell_cli.core.memory.selector import KnownJob, job_features, nearest

    mine = job_features(history.profiles(job, limit=FEATURE_PROFILES))
    if mine is None:
        return None
    known = []
    for other in [j for j in history.job_names() if j != job][:MEMORY_NEIGHBOURS]:
        obs = observations(history.memory_runs(other, window=window))
        if len({o.input_bytes for o in obs if o.demand_mb and o.input_bytes}) <= MIN_SIZES:
            continue
        features = job_features(history.profiles(other, limit=FEATURE_PROFILES))
        if features is not None:
            model = MemoryModel(nested=False).fit(obs)
            known.append(KnownJob(other, features, model.candidate_.label, model.fitted_))
    return nearest(mine, known)


