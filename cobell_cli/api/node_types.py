"""Planning across YARN node labels: the edges of core/nodetype.

Which labels (`--node-label a,b` or `auto`, checked against the ResourceManager: a label
with no active node, or one the submit's queue may not use, is a one-line error before
anything starts), every job's runs per label and resource profile from the history (the
types' speeds are learned from the jobs that ran on several labels), then one plan per label
with cobell's planner, the co-runners counted only in the label's own partition, and the
cheapest (label, scale-out) that meets the target, each label's price (`--label-price`)
multiplying executor-seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cobell_cli.errors import UsageError

if TYPE_CHECKING:
    from cobell_cli.core.nodetype import LabelOption
    from cobell_cli.store.history import History


@dataclass
class LabelDecision:
    node_label: str
    plan: Any  # the chosen label's Plan, in its own seconds
    options: list[LabelOption] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> list[dict[str, Any]]:
        return [o.to_dict() for o in self.options]


def resolve_labels(cluster: Any, labels: Sequence[str], queue: str | None) -> list[str]:
    """The labels to plan on: checked against the RM on YARN; as given without a cluster;
    a usage error on Spark standalone (it cannot place executors by label)."""
    if cluster.name == "standalone":
        raise UsageError("--node-label needs YARN: Spark standalone cannot place executors by "
                         "node label", hint="drop --node-label, or plan against YARN")
    if cluster.name == "yarn":
        return cluster.partitions().check(labels, queue or "default")
    if list(labels) == ["auto"]:
        raise UsageError("--node-label auto needs a YARN cluster to read the labels from",
                         hint="name the labels: --node-label a,b")
    return list(labels)


def type_speeds(history: History, profiles: Mapping[str, Mapping[str, float]],
                fit: Callable[..., Any], window: int | None) -> Any:
    """The node types' speeds from every job that ran on two labels or more."""
    from cobell_cli.core.nodetype import NodeTypeModel, TypeSpeeds, node_type

    factors = []
    for job in history.job_names():
        runs = history.training_runs(job, window=window)
        if len({node_type(r) for r in runs}) < 2:
            continue
        try:
            factors += NodeTypeModel(fit=fit).fit(runs).type_factors(job)
        except ValueError:
            continue
    return TypeSpeeds().fit(factors, profiles)


def plan_on_labels(history: History, cluster: Any, *, job: str, runs: Sequence[Any],
                   labels: Sequence[str], prices: Mapping[str, float], target_s: float,
                   confidence: float | None, apps: Sequence[Any], fit: Callable[..., Any],
                   plan_fn: Callable[..., Any], window: int | None) -> LabelDecision:
    """One plan per label, the cheapest feasible chosen (module doc)."""
    from cobell_cli.api.profile_priors import job_profiles
    from cobell_cli.cluster.node_labels import same_partition
    from cobell_cli.core.nodetype import NodeTypeModel, cheapest_label, plan_labels
    from cobell_cli.core.nodetype.labels import in_label_seconds

    profiles = job_profiles(history)
    speeds = type_speeds(history, profiles, fit, window)
    per_label = {label: same_partition(apps, label) for label in labels}
    try:
        model = NodeTypeModel(fit=fit).fit(runs, profiles.get(job), speeds)
    except ValueError:  # no run yet: the bootstrap on the first label
        first = labels[0]
        return LabelDecision(first, plan_fn(history=runs, target_s=target_s,
                                            co_runners=per_label[first]), [],
                             [f"no runs to compare node labels: the first, {first or 'default'}"])
    options, unknown = plan_labels(plan_fn, runs=runs, labels=labels, prices=prices,
                                   target_s=target_s, model=model, confidence=confidence,
                                   co_runners=per_label)
    warnings = [f"node label {t or 'default'!r} left out: the job never ran there and no "
                "job with a resource profile ran there and elsewhere" for t in unknown]
    if not options:
        raise UsageError("no node label to plan on: " + "; ".join(warnings))
    best = cheapest_label(options, target_s)
    return LabelDecision(best.node_label, in_label_seconds(best, target_s), options, warnings)
