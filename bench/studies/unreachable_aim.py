"""The 131.6 % run of `cobell --confidence 0.9` (bench/results/colocation.md), taken apart.

    python -m bench.studies.unreachable_aim [--output FILE]

bench.colocation's simulator, triple co-location, target kmeans (700 s), seed 2018: the
strategy `cobell90` plays runs 1-6 as the colocation benchmark does, then the plan of run 7 is
made again with core/plan/infeasible.py's `unreachable` watched, and every candidate's cost,
probability of staying within the plan's aim (the lowest upper bound at the confidence) and
of meeting the target are printed next to the choice and the runtime the world then gave.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import ROOT, publish
from bench import colocation as co
from cobell_cli.core.plan import infeasible, model_phase

RESULTS = ROOT / "bench" / "results" / "unreachable_aim.md"
STRATEGY, WORLD, VARIANT, TARGET = "cobell90", "simulator", "triple", "kmeans"
RUN = 7  # the late run
SHOWN = (11, 12, 16, 20, 24, 28, 32, 40, 48, 56)


@contextmanager
def watched(seen: dict[str, Any]) -> Iterator[None]:
    """model_phase's call of `unreachable`: its arguments and its choice kept in `seen`."""
    real: Callable[..., Any] = model_phase.unreachable

    def spy(dist: Any, costs: Any, target_s: float, confidence: float) -> Any:
        choice = real(dist, costs, target_s, confidence)
        seen.update(dist=dist, costs=list(costs), target_s=target_s, confidence=confidence,
                    choice=choice)
        return choice

    model_phase.unreachable = spy
    try:
        yield
    finally:
        model_phase.unreachable = real


def replay() -> tuple[Any, dict[str, Any], co.RunRecord]:
    """Runs 1..RUN-1 played, run RUN's plan watched, then run RUN played: (plan, seen, record)."""
    cfg = co.Config(worlds=(WORLD,), targets=(TARGET,), variants=(VARIANT,),
                    strategies=(STRATEGY,))
    curves = co.load_curves(co.DEFAULT_DATA)
    world = co.truth(WORLD)
    setups = co.draw_runs(VARIANT, TARGET, cfg, curves, world)
    memory = co.seed_world(TARGET, curves, world, cfg.seed)
    target_s = co.TARGETS_S[TARGET]
    for setup in setups[:RUN - 1]:
        co.play(STRATEGY, memory, setup, curves, target_s, world)
    setup = setups[RUN - 1]
    _, apps = co.at_submit(setup, curves, TARGET, world)
    seen: dict[str, Any] = {}
    with watched(seen):
        chosen = co.decide(STRATEGY, memory, setup, target_s, apps)
    record = co.play(STRATEGY, memory, setup, curves, target_s, world)
    return chosen, seen, record


def render(chosen: Any, seen: dict[str, Any], record: co.RunRecord, command: str) -> str:
    dist, costs, target_s, level = (seen["dist"], seen["costs"], seen["target_s"],
                                    seen["confidence"])
    js = range(len(dist.candidates))
    aim = seen["choice"].aim_s  # the rule's own: the lowest upper bound, or the target
    within = [dist.meet_probability(j, aim) for j in js]
    top = max(within)
    se = infeasible.standard_error(top, dist.errors or len(js))
    by_x = {c.scale_out: c for c in chosen.candidates}
    best_x = int(dist.candidates[_likeliest(dist, costs, target_s)].scale_out)
    over_pct = 100 * (record.runtime_s / target_s - 1)
    lines = [
        f"# An unreachable target's aim: the {over_pct:.1f} % run of `--confidence {level:g}`",
        "",
        f"Command: `{command}`. bench.colocation's {WORLD} world, {VARIANT} co-location, "
        f"target {TARGET} ({target_s:g} s), seed 2018 (the development seed), strategy "
        f"`cobell --confidence {level:g}`: runs 1-{RUN - 1} played as the benchmark plays "
        f"them, run {RUN}'s plan watched. No candidate meets the target at P(meet) >= "
        f"{level:g}, so core/plan/infeasible.py aims at the lowest upper bound, "
        f"{aim:.0f} s ({aim / target_s:.1f}x the target), and reserves the cheapest candidate "
        f"whose probability of staying within it is within one standard error "
        f"({se:.3f}, from {dist.errors} held-out errors) of the best ({top:.3f}).", "",
        "| scale-out | prediction s | upper bound s | executor-s | P(within the aim) | "
        "P(meet the target) | chosen |",
        "|---|---|---|---|---|---|---|"]
    for j in js:
        x = int(dist.candidates[j].scale_out)
        if x in SHOWN or x == chosen.scale_out or x == best_x:
            c = by_x[x]
            lines.append(f"| {x} | {c.predicted_s:.0f} | {c.upper_s:.0f} | {costs[j]:.0f} | "
                         f"{within[j]:.3f} | {dist.meet_probability(j, target_s):.3f} | "
                         f"{'<-' if x == chosen.scale_out else ''} |")
    lines += ["", f"Run {RUN} took {record.runtime_s:.0f} s at {record.scale_out} executors, "
              f"{over_pct:.1f} % over the target.", ""]
    lines += reading(chosen, dist, costs, target_s, level)
    return "\n".join(lines) + "\n"


def _likeliest(dist: Any, costs: list[float], target_s: float) -> int:
    """The cheapest candidate among those most likely to meet the target."""
    at_target = [dist.meet_probability(j, target_s) for j in range(len(dist.candidates))]
    top = max(at_target)
    return min((j for j, p in enumerate(at_target) if p == top), key=lambda j: costs[j])


def reading(chosen: Any, dist: Any, costs: list[float], target_s: float,
            level: float) -> list[str]:
    """What the table says, its figures computed: the cost the choice saved against the
    cheapest candidate most likely to meet the target, next to the spread of that cost."""
    js = range(len(dist.candidates))
    at_target = [dist.meet_probability(j, target_s) for j in js]
    best = _likeliest(dist, costs, target_s)
    mine = next(j for j in js if int(dist.candidates[j].scale_out) == chosen.scale_out)
    spread = dist.quantile_s(best, level) / dist.quantile_s(best, 0.5)
    by_x = {c.scale_out: c.predicted_s for c in chosen.candidates}
    predicted = [by_x[int(dist.candidates[j].scale_out)] for j in js]
    return [
        "## Reading", "",
        f"The chosen {chosen.scale_out} executors save "
        f"{100 * (1 - costs[mine] / costs[best]):.1f} % of the executor-seconds of "
        f"{int(dist.candidates[best].scale_out)}, the cheapest candidate most likely to meet "
        f"the target (P {at_target[best]:.3f} against {at_target[mine]:.3f}), while the "
        f"upper bound there is {spread:.1f}x the median: a cost difference far inside the "
        f"cost's own uncertainty decided between predictions of {predicted[mine]:.0f} s and "
        f"{predicted[best]:.0f} s. "
        "The job scales about linearly over these candidates, so executor-seconds are flat "
        "and the aim, set by the widest co-runner uncertainty (three co-runners, all six runs "
        "co-located), no longer says anything about the target.",
        "",
        "Not changed here. A second test on P(meet the target) among the candidates as "
        "likely to stay within the aim was tried on the gate (bench/results/late_runs.md, "
        "last section) and failed it: it moved late runs between cells and raised the "
        "deadline costs. The plainer rule that treats every candidate as likely to stay "
        "within the aim as equal in cost, and takes the likeliest to meet the target, then "
        f"the cheapest, takes {int(dist.candidates[best].scale_out)} here. Tried on the gate on "
        "30 Nov 2026 (main at 05107d2, one function of infeasible.py changed): FAILED, 20 "
        "figures worse and 20 better. Nodesim pooled max overshoot 27.2 -> 14.4 % but late "
        "5.8 -> 7.1 %; in the simulator's deadlines the cost against starting now rose "
        "0.889 -> 1.332 (burst5) and 1.130 -> 1.731 (isolated), as the rule buys speed "
        "wherever a deadline is out of reach. Not merged. What it lacks is a cost comparison "
        "that knows its own uncertainty (two candidates' executor-seconds come from the same "
        "model and their errors are not independent); that is the next candidate.",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.unreachable_aim",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    chosen, seen, record = replay()
    publish(render(chosen, seen, record, "python -m bench.studies.unreachable_aim"),
            args.output)


if __name__ == "__main__":
    main()
