"""Planning across node labels: one plan per label on the job's runs brought to its base type,
then the cheapest label that meets the target.

runtime(x, t) = g(x) · φ_t (factors.py), so meeting a target T on label t is g(x) <= T / φ_t:
each label is planned by cobell's own planner (`core.plan.plan`: the bootstrap, the
co-runners, the confidence and its calibration) on the runs divided by their types' factors,
against T / φ_t. A label whose factor is only the profile prior (the job never ran there)
is planned against T / (φ_t · m): the prior's log error (sd, the types' held-out log error,
speeds.py) is independent of the runtime's around the curve, so at the plan's level their
bounds add in quadrature, m = exp(hypot(q, z · sd) - q), q the plan's log(upper / predicted)
at its choice, z the level's one-sided normal quantile (prior_margin). Its cost is
price × scale-out × g · φ_t (core/cost.py).
Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from cobell_cli.core.cost import executor_seconds
from cobell_cli.core.nodetype.factors import NodeTypeModel, node_type
from cobell_cli.core.plan.infeasible import by_probability
from cobell_cli.core.plan.records import log_spread


@dataclass(frozen=True)
class LabelOption:
    """One label's plan: made in base-type seconds, reported in the label's own."""

    node_label: str
    price: float
    factor: float
    factor_source: str  # "runs": the job ran there; "profile": the prior alone
    plan: Any  # core.plan.Plan against target_s / (factor · margin)
    margin: float = 1.0

    @property
    def scale_out(self) -> int:
        return int(self.plan.scale_out)

    @property
    def predicted_s(self) -> float | None:
        p = self.plan.predicted_s
        return None if p is None else float(p) * self.factor

    @property
    def feasible(self) -> bool:
        return bool(self.plan.feasible)

    @property
    def cost(self) -> float | None:
        """Predicted executor-seconds times the label's price (None before a model exists)."""
        p = self.predicted_s
        return None if p is None else executor_seconds(self.scale_out, p, self.price)

    def to_dict(self) -> dict[str, Any]:
        return {"node_label": self.node_label, "price": self.price, "factor": self.factor,
                "factor_source": self.factor_source, "margin": self.margin,
                "scale_out": self.scale_out, "predicted_s": self.predicted_s,
                "feasible": self.feasible, "cost": self.cost}


def base_history(runs: Sequence[Mapping[str, Any]], model: NodeTypeModel,
                 ) -> list[dict[str, Any]]:
    """The runs with their runtimes divided by their type's factor (runs on a type without
    one are left out)."""
    out = []
    for r in runs:
        phi = model.factor(node_type(r))
        if phi is None or r.get("runtime_s") is None:
            continue
        out.append({**r, "runtime_s": float(r["runtime_s"]) / phi[0]})
    return out


def plan_labels(plan_fn: Callable[..., Any], *, runs: Sequence[Mapping[str, Any]],
                labels: Sequence[str], prices: Mapping[str, float], target_s: float,
                model: NodeTypeModel, confidence: float | None,
                co_runners: Mapping[str, Sequence[Any]] | None = None,
                ) -> tuple[list[LabelOption], list[str]]:
    """One option per label with a factor, and the labels nothing says about. `plan_fn`
    takes plan()'s keywords history, target_s and co_runners; co_runners per label: only
    the apps that share its nodes."""
    history = base_history(runs, model)
    sd = model.speeds_.held_out_log_sd_ if model.speeds_ is not None else 0.0
    z = NormalDist().inv_cdf(confidence) if confidence is not None else 0.0
    options, unknown = [], []
    for label in labels:
        phi = model.factor(label)
        if phi is None:
            unknown.append(label)
            continue
        z_sd = z * sd if phi[1] == "profile" else 0.0
        plan, margin = _label_plan(plan_fn, history, target_s / phi[0],
                                   (co_runners or {}).get(label, ()), z_sd)
        options.append(LabelOption(label, float(prices.get(label, 1.0)), phi[0], phi[1], plan,
                                   margin))
    return options, unknown


def _label_plan(plan_fn: Callable[..., Any], history: Sequence[Mapping[str, Any]],
                target_s: float, co_runners: Sequence[Any], z_sd: float) -> tuple[Any, float]:
    """The label's plan against target_s (in base seconds) over its margin, and the margin:
    1 for a factor from runs; for a prior's (z_sd > 0) prior_margin of the plan made against
    exp(z_sd), then the plan against that."""
    def plan_at(margin: float) -> Any:
        return plan_fn(history=history, target_s=target_s / margin, co_runners=co_runners)

    margin = prior_margin(plan_at(math.exp(z_sd)), z_sd) if z_sd > 0 else 1.0
    return plan_at(margin), margin


def prior_margin(plan: Any, z_sd: float) -> float:
    """exp(hypot(q, z_sd) - q), q = log(upper / predicted) of `plan` at its choice: what a
    prior factor's own error (z_sd at the plan's level) adds to the plan's bound. The two
    errors are independent, so their bounds add in quadrature; exp(z_sd) on top of the bound
    would count them as one error and overstate it. The plan is the one made against the
    larger margin exp(z_sd), so q is read near the scale-out the margin moves the choice to.
    Without a bound above the prediction: exp(z_sd)."""
    up, pred = plan.upper_s, plan.predicted_s
    if up is None or pred is None or not pred > 0 or not up > pred:
        return math.exp(z_sd)
    q = math.log(float(up) / float(pred))
    return math.exp(math.hypot(q, z_sd) - q)


def cheapest_label(options: Sequence[LabelOption], target_s: float) -> LabelOption:
    """The feasible option with the least predicted cost (ties: fewer executors, then the
    label listed first); if none is feasible, the planner's own rule for an unreachable
    target (core/plan/infeasible.py) across labels: aim at the lowest upper bound, and take
    the cheapest option whose probability of staying within it is within one standard error
    of the best's; before any model (the bootstrap search predicts nothing), the first
    label."""
    if not options:
        raise ValueError("no node label to plan on")
    order = {o.node_label: i for i, o in enumerate(options)}
    priced = [o for o in options if o.cost is not None]
    if not priced:
        return options[0]
    by_cost = sorted(priced, key=lambda o: (o.cost, o.scale_out, order[o.node_label]))
    feasible = [o for o in by_cost if o.feasible]
    if feasible:
        return feasible[0]
    aim = max(target_s, min(judged_s(o) for o in by_cost))
    chances = [meet_probability(o, aim) for o in by_cost]
    n = min(_errors(o) for o in by_cost)
    costs = [float(o.cost or 0.0) for o in by_cost]
    return by_cost[by_probability(chances, costs, n)]


def meet_probability(option: LabelOption, threshold_s: float) -> float:
    """P(the option's runtime <= threshold_s), in the label's seconds: its plan's distribution
    at the chosen scale-out read as log-normal through its prediction and its upper bound at
    the plan's level (both times the factor and the prior's margin, as the plan was judged)."""
    median = float(option.plan.predicted_s) * option.factor * option.margin
    spread = log_spread(option.plan)  # judged_s / median: the plan's upper / predicted
    if spread is None or median <= 0:
        return 1.0 if threshold_s >= median else 0.0
    return NormalDist().cdf(math.log(threshold_s / median) / spread)


def _errors(option: LabelOption) -> int:
    """How many held-out errors the option's plan read its P(meet) from (else its runs)."""
    record = option.plan.calibration or {}
    return int(record.get("runs") or option.plan.usable_runs or 0)


def judged_s(option: LabelOption) -> float:
    """The option's upper bound at its plan's level in the label's seconds: times the factor
    and the prior's margin, so it is within the caller's target exactly when the plan's was
    within target / (factor · margin)."""
    p = option.plan
    base = p.upper_s if p.upper_s is not None else p.predicted_s
    return float(base) * option.factor * option.margin


def in_label_seconds(option: LabelOption, target_s: float) -> Any:
    """The option's plan with its runtimes in the label's own seconds (its factor applied)
    and the caller's target: what predict shows and submit records."""
    from dataclasses import replace

    f = option.factor

    def scaled(v: float | None) -> float | None:
        return None if v is None else float(v) * f

    p = option.plan
    candidates = tuple(replace(c, predicted_s=scaled(c.predicted_s), lower_s=scaled(c.lower_s),
                               upper_s=scaled(c.upper_s), meets_target=c.meets_target)
                       for c in p.candidates)
    return replace(p, target_s=float(target_s), predicted_s=scaled(p.predicted_s),
                   lower_s=scaled(p.lower_s), upper_s=scaled(p.upper_s), candidates=candidates)
