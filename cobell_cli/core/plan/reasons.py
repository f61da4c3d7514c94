"""The words a model-phase `Plan` gives for its choice."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from cobell_cli.core.plan.infeasible import Choice
from cobell_cli.core.plan.records import Phase, Plan, Strategy
from cobell_cli.core.words import count

LONG_BOUND_S = 1e6  # 11.6 days: longer upper bounds are shown in two significant digits


def policy_text(confidence: float | None, phase: str) -> str:
    """The policy asked for, and when it is not what decides this run, what does (the plan's
    `policy:` line, and the deadline's shortfall)."""
    policy = ("point prediction (--confidence point)" if confidence is None
              else f"P(meet) >= {confidence:.0%} (--confidence {confidence:g})")
    if phase == "bootstrap-search":
        policy += ", not yet: a binary search decides the first runs"
    return policy


def probability_text(probability: float) -> str:
    """A whole percent, rounded down: 0.898 shown as "90%" next to a 0.9 policy it fails
    would read as met, so what is shown never exceeds the estimate."""
    return f"{math.floor(probability * 100 + 1e-9):d}%"


def bound_text(upper_s: float) -> str:
    """An upper bound in whole seconds, rounded up: 331.4 s shown as "331" beside a 331 s target
    it misses would read as met, so what is shown is never below the bound. Beyond
    LONG_BOUND_S, two significant digits, rounded up ("1.9e22"): a bound that far only says the
    candidate lies far outside what the runs tell, and 23 digits say it no better."""
    if not math.isfinite(upper_s):
        return "inf"
    if upper_s <= LONG_BOUND_S:
        return f"{math.ceil(upper_s - 1e-9):d}"
    exponent = math.floor(math.log10(upper_s))
    tenths = math.ceil(upper_s / 10.0 ** (exponent - 1) - 1e-9)  # 10..100
    if tenths >= 100:
        tenths, exponent = 10, exponent + 1
    return f"{tenths / 10:.1f}e{exponent}"


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
    choice: Choice | None = None,
) -> str:
    # The words of cli/predict.py's WORDS: prediction, upper bound, P(meet).
    bound = f", upper bound {bound_text(upper_s)} s" if confidence is not None else ""
    if probability is not None:
        bound += f"; P(meet) {probability_text(probability)}"
        if confidence is not None and feasible:
            bound += f" >= {confidence:.0%}"
    kind = "joint fix-point" if strategy == "joint" else "Algorithm 1, runtime assumed = target"
    slowed = (
        f" times the slow-down of {count(n_co, 'running co-runner')} the job's co-located runs"
        f" taught the model ({kind})"
        if n_co
        else ""
    )
    if phase == "bootstrap-whatif":
        how = (
            f"bootstrap run {n_runs + 1} ({count(n_runs, 'similar run')}): the what-if replay of"
            f" the job's event-log profile, corrected by its runs"
            + (f",{slowed}" if slowed else "")
        )
    elif phase == "bootstrap-parametric":
        how = (
            f"bootstrap run {n_runs + 1} ({count(n_runs, 'similar run')}): the model"
            + (slowed if n_co else " without interference")
        )
    elif n_co == 0:
        how = "the runtime model" + (
            " ignoring co-runners (Bell)" if strategy == "none" else " with no co-runner running"
        )
    else:
        how = f"the runtime model with the overlap of {count(n_co, 'co-runner')} ({kind})"
    if feasible:
        return (
            f"{chosen} is the smallest scale-out in [{candidates[0]}, {candidates[-1]}] meeting "
            f"the {target_s:.0f} s target: {how}: prediction {predicted_s:.0f} s{bound}."
        )
    level = f" with P(meet) >= {confidence:.0%}" if confidence is not None else ""
    why = unreachable_words(choice, candidates, target_s) if choice is not None else str(chosen)
    return (
        f"No scale-out in [{candidates[0]}, {candidates[-1]}] meets the {target_s:.0f} s "
        f"target{level}, so {why}: {how}: prediction {predicted_s:.0f} s{bound} there."
    )


def unreachable_words(choice: Choice, candidates: Sequence[int], target_s: float) -> str:
    """Why infeasible.py's rule chose its candidate, after "so": the choice by P(meet) and
    cost at the lowest upper bound, or the exploration rule's move."""
    chosen = candidates[choice.index]
    if choice.explored_from is not None:
        return (f"{chosen}, the cheapest scale-out as likely to meet it whose next run could"
                f" bring it there (exploration: one more run at"
                f" {candidates[choice.explored_from]} could not)")
    return (f"{chosen}, the cheapest about as likely as any to finish within"
            f" {choice.aim_s:.0f} s, the lowest upper bound")


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
