"""How close to the oracle any planner can get: a noise-aware oracle on bench.colocation's runs.

    python -m bench.oracle_bound [--quick] [--runs-per-interferer N] [--draws M]
                                 [--levels 0.95 0.97] [--worlds simulator nodesim] [--output FILE]

bench.colocation's oracle knows each run's noise draw: the Bell repetition the target job
happens to run, and in bench.nodesim the nodes it lands on and its demands. No planner can
know those before the run. The noise-aware oracle knows everything else: the world's exact
physics, the co-runners (their jobs, scale-outs, start times and their own noise draws), the
target's submit time. It draws the target's own noise M times afresh (`target_redraw`),
simulates the run at each scale-out and plans at confidence p: the smallest scale-out that
meets the target in at least a share p of the draws. Then the run happens with the real
draw. Its node-seconds over the oracle's are what meeting the target with probability p
costs when the only uncertainty left is the run's own noise: a lower bound on what cobell,
which must also learn the physics from a few dozen runs, can reach at that level. Where even
this planner needs more than 1.05x the oracle's node-seconds to be on time in >= 95 % of the
runs of a cell, the issue's goal for that cell is out of reach for any planner.

Runs: exactly bench.colocation's (same seed, draws and noise), its post-bootstrap ones (run
index > 6), so cells compare row by row with bench/results/colocation.md. The search: per
draw, the smallest scale-out meeting the target by bisection (runtimes fall with the
scale-out but for repetition noise), the p-quantile of those as the start, then the share of
draws meeting the target, counted exactly, one scale-out at a time up or down from there.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import colocation as co
from bench import publish
from bench.simulator import Curve, load_curves

RESULTS = Path(__file__).resolve().parent / "results" / "oracle_bound.md"
BLIND_RESULTS = RESULTS.with_name("oracle_bound_blind.md")
DRAWS = 60  # fresh target noise draws per run: a 0.95 share is counted out of 60
LEVELS = (0.9, 0.95, 0.97, 0.99)


def target_redraw(noise: Any, fresh: Any, target: str) -> Any:
    """`noise` with every entry that belongs to `target` taken from `fresh`.

    A noise record's fields are mappings keyed by job (repetitions, placement, demands) or by
    (victim, co-runner) pairs (pair factors); the target's entries, and the pairs it is part
    of, are its own draw. Other fields are kept.
    """
    changes = {}
    for f in dataclasses.fields(noise):
        old, new = getattr(noise, f.name), getattr(fresh, f.name)
        if not isinstance(old, Mapping):
            continue
        changes[f.name] = {k: (new[k] if _mine(k, target) else v) for k, v in old.items()}
    return dataclasses.replace(noise, **changes)


def _mine(key: Any, target: str) -> bool:
    return key == target or (isinstance(key, tuple) and target in key)


def running_at_submit(setup: co.RunSetup, curves: Mapping[str, Curve], world: co.Truth,
                      noise: Any) -> frozenset[str]:
    """The co-runners still running when the target is submitted, under `noise`."""
    run = dataclasses.replace(setup, noise=noise)
    before = world.simulate(co._jobs(run, curves, "", None), noise, until_s=setup.submit_s)
    return frozenset(j.key for j in before if j.finish_s is None)


def blind_redraws(setup: co.RunSetup, curves: Mapping[str, Curve], world: co.Truth,
                  rng: np.random.Generator, n_draws: int) -> list[Any]:
    """n_draws of the whole run's noise, co-runners' included, that agree with what a planner
    sees at the submit: the same co-runners still running (rejection, at most 20 tries per
    draw wanted; the draws found by then). None found: the draws unconditioned."""
    seen = running_at_submit(setup, curves, world, setup.noise)
    drawn: list[Any] = []
    kept: list[Any] = []
    while len(kept) < n_draws and len(drawn) < 21 * n_draws:
        drawn.append(world.draw(rng, curves))
        if running_at_submit(setup, curves, world, drawn[-1]) == seen:
            kept.append(drawn[-1])
    return kept or drawn[:n_draws]


def runtime_at(setup: co.RunSetup, curves: Mapping[str, Curve], target: str, world: co.Truth,
               scale_out: int, noise: Any) -> float:
    """The target's runtime at `scale_out` in the run `setup` had, under `noise`."""
    run = dataclasses.replace(setup, noise=noise)
    done = world.simulate(co._jobs(run, curves, target, scale_out), noise)[-1]
    assert done.finish_s is not None
    return done.finish_s - setup.submit_s


@dataclass
class RunBound:
    """One run: the oracle's scale-out and runtime, and per level the bound planner's."""

    index: int
    oracle_x: int
    oracle_s: float
    planned: dict[float, tuple[int, float]]  # level -> (scale-out, real runtime)


class Draws:
    """Runtimes of one run's target at a scale-out under M redrawn target noises, cached."""

    def __init__(self, runtime: Callable[[int, Any], float], noises: Sequence[Any]) -> None:
        self.runtime = runtime
        self.noises = noises
        self.cache: dict[tuple[int, int], float] = {}

    def at(self, x: int, d: int) -> float:
        if (x, d) not in self.cache:
            self.cache[(x, d)] = self.runtime(x, self.noises[d])
        return self.cache[(x, d)]

    def share_meeting(self, x: int, target_s: float) -> float:
        return float(np.mean([self.at(x, d) <= target_s for d in range(len(self.noises))]))

    def smallest_meeting(self, d: int, target_s: float) -> int:
        lo, hi = co.MIN_SCALE_OUT, co.MAX_SCALE_OUT
        if self.at(hi, d) > target_s:
            return hi
        while lo < hi:
            mid = (lo + hi) // 2
            if self.at(mid, d) <= target_s:
                hi = mid
            else:
                lo = mid + 1
        return lo


def plan_at(draws: Draws, level: float, target_s: float) -> int:
    """The smallest scale-out meeting the target in a share >= level of the draws (from the
    level-quantile of the draws' own smallest scale-outs, stepping one at a time)."""
    per_draw = [draws.smallest_meeting(d, target_s) for d in range(len(draws.noises))]
    x = int(min(co.MAX_SCALE_OUT, max(co.MIN_SCALE_OUT, math.ceil(
        float(np.quantile(per_draw, level))))))
    while x < co.MAX_SCALE_OUT and draws.share_meeting(x, target_s) < level:
        x += 1
    while x > co.MIN_SCALE_OUT and draws.share_meeting(x - 1, target_s) >= level:
        x -= 1
    return x


def bound_run(setup: co.RunSetup, curves: Mapping[str, Curve], target: str, world: co.Truth,
              levels: Sequence[float], n_draws: int, seed: int, unknown: str = "target",
              ) -> RunBound:
    target_s = co.TARGETS_S[target]
    rng = np.random.default_rng([seed, 7, setup.index, sum(map(ord, target + world.name))])
    noises = ([target_redraw(setup.noise, world.draw(rng, curves), target)
               for _ in range(n_draws)] if unknown == "target"
              else blind_redraws(setup, curves, world, rng, n_draws))

    def runtime(x: int, noise: Any) -> float:
        return runtime_at(setup, curves, target, world, x, noise)

    draws = Draws(runtime, noises)
    ox = co.oracle_scale_out(setup, curves, target, target_s, world)
    planned = {}
    for p in levels:
        x = plan_at(draws, p, target_s)
        planned[p] = (x, runtime(x, setup.noise))
    return RunBound(setup.index, ox, runtime(ox, setup.noise), planned)


def run(cfg: co.Config, levels: Sequence[float], n_draws: int,
        data_dir: Path = co.DEFAULT_DATA, unknown: str = "target",
        progress: Callable[[str], None] | None = None) -> dict[co.Cell, list[RunBound]]:
    """(world, variant, target) -> the bound per post-bootstrap run of bench.colocation."""
    curves = load_curves(data_dir)
    out: dict[co.Cell, list[RunBound]] = {}
    for name in cfg.worlds:
        world = co.truth(name)
        for variant in cfg.variants:
            for target in cfg.targets:
                started = time.perf_counter()
                setups = [s for s in co.draw_runs(variant, target, cfg, curves, world)
                          if s.index > co.MODEL_FROM_USABLE]
                out[(name, variant, target)] = [
                    bound_run(s, curves, target, world, levels, n_draws, cfg.seed, unknown)
                    for s in setups]
                if progress:
                    progress(f"{name} {variant} {target}: {len(setups)} runs in"
                             f" {time.perf_counter() - started:.1f} s")
    return out


def summary(runs: Sequence[RunBound], level: float, target_s: float) -> dict[str, float]:
    return summary_over([(r, target_s) for r in runs], level)


def summary_over(runs: Sequence[tuple[RunBound, float]], level: float) -> dict[str, float]:
    """The planner at `level` over runs with their targets (cells pooled: targets differ)."""
    over = np.array([max(0.0, 100.0 * (r.planned[level][1] / target_s - 1.0))
                     for r, target_s in runs])
    node_s = sum(x * s for x, s in (r.planned[level] for r, _ in runs))
    return {"runs": len(runs), "over_share_pct": 100.0 * float(np.mean(over > 0)),
            "max_overshoot_pct": float(over.max()),
            "node_s_vs_oracle": node_s / sum(r.oracle_x * r.oracle_s for r, _ in runs)}


def reachable(s: Mapping[str, float], overshoot: bool = False) -> bool:
    """On time in >= GOAL_MEET % of the runs at <= GOAL_NODE_S x the oracle's node-seconds;
    with `overshoot`, also no run more than GOAL_OVERSHOOT_PCT % over (the whole goal)."""
    return (100 - s["over_share_pct"] >= co.GOAL_MEET and s["node_s_vs_oracle"] <= co.GOAL_NODE_S
            and (not overshoot or s["max_overshoot_pct"] <= co.GOAL_OVERSHOOT_PCT))


def _knows(unknown: str, n_draws: int) -> str:
    if unknown == "target":
        return (" The noise-aware oracle knows the world's physics, the co-runners and their"
                " noise, not the target's own draw (repetition; node placement and demands in"
                " nodesim; its pair factors in the simulator): it redraws that"
                f" {n_draws} times")
    return (" The physics-aware oracle knows the world's physics exactly and what a planner"
            " sees at the submit (the co-runners' jobs, scale-outs and start times, and which"
            " are still running), none of the run's noise (every job's repetition; node"
            " placements and demands in nodesim; pair factors in the simulator): it redraws"
            f" all of it {n_draws} times, keeping draws where the same co-runners are still"
            " running at the submit,")


def render(results: Mapping[co.Cell, Sequence[RunBound]], levels: Sequence[float], cfg: co.Config,
           n_draws: int, command: str, elapsed_s: float, unknown: str = "target") -> str:
    name = "noise-aware" if unknown == "target" else "physics-aware"
    lines = [
        f"# How close to the oracle a planner can get: the {name} oracle", "",
        f"Command: `{command}` (from the repository root; {elapsed_s:.0f} s).", "",
        "Runs: bench.colocation's post-bootstrap runs (seed"
        f" {cfg.seed}, {cfg.runs_per_interferer} runs per co-runner job)."
        + _knows(unknown, n_draws) + " and plans the smallest scale-out"
        " meeting the target in a share >= p of the draws; the run then happens with the real"
        " draw. Node-s / oracle against bench.colocation's oracle, which knows the draw."
        f" Reachable: on time in >= {co.GOAL_MEET:.0f} % of the runs at <="
        f" {co.GOAL_NODE_S}x the oracle's node-seconds at some level here (the goal for"
        " cobell's default, overshoot aside).", "",
        "| world | variant | job | p | runs | over % | max overshoot % | node-s / oracle |",
        "|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    whole_cells = dict.fromkeys(levels, 0)
    for (world, variant, target), runs in results.items():
        ok_levels, whole = [], []
        for p in levels:
            s = summary(runs, p, co.TARGETS_S[target])
            if reachable(s):
                ok_levels.append(p)
            if reachable(s, overshoot=True):
                whole.append(p)
                whole_cells[p] += 1
            lines.append(f"| {world} | {variant} | {target} | {p:g} | {s['runs']} |"
                         f" {s['over_share_pct']:.1f} | {s['max_overshoot_pct']:.1f} |"
                         f" {s['node_s_vs_oracle']:.3f} |")
        verdicts.append(f"| {world} | {variant} | {target} | "
                        + (", ".join(f"{p:g}" for p in ok_levels) or "none") + " | "
                        + (", ".join(f"{p:g}" for p in whole) or "none") + " |")
    lines += ["", "## Where the goal is within reach", "",
              f"Levels at which the {name} oracle is on time in >= 95 % of the runs at <="
              f" {co.GOAL_NODE_S}x the oracle's node-seconds ('none': out of reach at these levels"
              + (" for any planner)." if unknown == "target" else " for any planner that knows"
                 " no more than the submit shows, live progress aside)."), "",
              "| world | variant | job | reachable at | with max overshoot <= 5 % |",
              "|---|---|---|---|---|", *verdicts, "",
              "Cells meeting the whole goal (max overshoot included) at one level, as a default"
              " must: " + ", ".join(f"{p:g}: {n} of {len(results)}"
                                    for p, n in whole_cells.items()) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.oracle_bound",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="sgd, one co-runner, 2 runs per co-runner job, 10 draws; writes "
                             "nothing")
    parser.add_argument("--runs-per-interferer", type=int, default=co.Config.runs_per_interferer)
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--unknown", choices=("target", "all"), default="target",
                        help="whose noise the oracle does not know: the target's, or every"
                             " job's (the co-runners' too; what a planner sees at the submit)")
    parser.add_argument("--levels", type=float, nargs="+", default=list(LEVELS))
    parser.add_argument("--worlds", nargs="+", choices=co.WORLDS, default=list(co.WORLDS))
    parser.add_argument("--seed", type=int, default=co.Config.seed)
    parser.add_argument("--data", type=Path, default=co.DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=None,
                        help=f"default: {RESULTS.name}, with --unknown all {BLIND_RESULTS.name}")
    args = parser.parse_args(argv)
    cfg = co.Config(worlds=tuple(args.worlds), runs_per_interferer=args.runs_per_interferer,
                    seed=args.seed)
    draws = args.draws
    if args.quick:
        cfg = co.Config(worlds=tuple(args.worlds), targets=("sgd",), variants=("single",),
                        runs_per_interferer=3, seed=args.seed)
        draws = 10
    started = time.perf_counter()
    results = run(cfg, args.levels, draws, args.data, args.unknown,
                  progress=lambda m: print(m, flush=True))
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.oracle_bound", *given])
    text = render(results, args.levels, cfg, draws, command, time.perf_counter() - started,
                  args.unknown)
    output = args.output or (RESULTS if args.unknown == "target" else BLIND_RESULTS)
    publish(text, None if args.quick else output)


if __name__ == "__main__":
    main()
