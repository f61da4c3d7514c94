"""What a plan reserves when no candidate meets the target at the confidence: the choice by
P(meet) and cost, and the exploration rule.

The paper (CoBell, Section III-C) only says "the smallest scale-out that fulfills the runtime
constraint". Past that, the plan compares the candidates by their predictive distributions
(predictive.py):

* By P(meet) and cost. The plan keeps the confidence p and gives up runtime: it aims at the
  tightest runtime some candidate stays within with probability p (the lowest upper bound),
  and reserves the cheapest candidate whose probability of staying within that runtime is
  within one standard error of the best's, sqrt(P(1 - P) / (n + 1)) for a probability P read
  from n held-out errors: candidates the errors cannot tell apart are as likely to make it, and then
  fewer executor-seconds win (the one-standard-error rule of the model selection, one_se.py,
  applied to the decision). A candidate whose distribution is wide (below the scale-outs ever
  run, between no and linear speed-up) is not as likely to stay within that runtime, however
  close its median: a miss there can be several times the target. On a falling curve this
  is the maximum or close below it; on a flat one the smallest candidate the runs vouch for;
  never executors that buy no speed.
* Exploration. A history that keeps missing at one scale-out must move. If one more run at
  the choice above, landing where its distribution is centred, could still not make it meet
  the target at the confidence, running it teaches nothing that changes the next decision.
  Then the plan takes the cheapest candidate, no less likely to meet the target now, whose
  next run could: one landing at its own median would bring its P(meet) to the confidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cobell_cli.core.predictive import Predictive


@dataclass(frozen=True)
class Choice:
    """The candidate chosen when none meets the target, the runtime the plan aimed at instead
    (the lowest upper bound), and where the exploration rule moved from (None: the choice by
    P(meet) and cost)."""

    index: int
    aim_s: float
    explored_from: int | None = None


def standard_error(probability: float, n: int) -> float:
    """The standard error of a probability estimated from n held-out errors."""
    p = min(max(probability, 0.0), 1.0)
    return math.sqrt(p * (1.0 - p) / (max(n, 0) + 1))


def by_probability(probabilities: Sequence[float], costs: Sequence[float], n: int) -> int:
    """The cheapest candidate whose probability is within one standard error of the best."""
    top = max(probabilities)
    floor = top - standard_error(top, n)
    return min((j for j, p in enumerate(probabilities) if p >= floor),
               key=lambda j: (costs[j], j))


def unreachable(dist: Predictive, costs: Sequence[float], target_s: float,
                confidence: float) -> Choice:
    """The module doc's rule over the candidates of `dist` at `costs` (executor-seconds, or
    the minimised unit): by P(meet) and cost at the lowest upper bound at `confidence`, or
    where that choice's next run could not make it meet the target, the exploration rule's."""
    js = range(len(dist.candidates))
    n = dist.errors or len(js)
    aim = max(target_s, min(dist.quantile_s(j, confidence) for j in js))
    probability = [dist.meet_probability(j, aim) for j in js]
    i = by_probability(probability, costs, n)
    if dist.meet_probability_after_run(i, target_s) >= confidence:
        return Choice(i, aim)
    at_target = [dist.meet_probability(j, target_s) for j in js]
    movers = [j for j in js if at_target[j] >= at_target[i]
              and dist.meet_probability_after_run(j, target_s) >= confidence]
    if not movers:
        return Choice(i, aim)
    return Choice(min(movers, key=lambda j: (costs[j], j)), aim, i)
