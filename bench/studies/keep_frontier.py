"""Does the interference model earn its keep where the risks match: cost against miss rate.

    python -m bench.studies.keep_frontier [--cobell-levels point 0.5 0.7 0.8 0.9 0.97]
                                  [--bell-levels point 0.8 0.9 0.95 0.97 0.99]
                                  [--worlds simulator nodesim] [--seed N] [--quick]

bench.colocation asks issue 13's question at one nominal level: at confidence p, does cobell
need fewer node-seconds than Bell with a split-conformal margin at p, missing the target no
more often? The two do not keep the same promise at the same p: Bell's margin is the conformal
bound of Bell's own past runtime / predicted ratios, which is exchangeable only if every run
met the same co-runners, so the level it names is not the miss rate it delivers. Comparing
them at one p compares two different risks.

This replays bench.colocation's runs (same worlds, seed, draws and planner: `plan()`, as the CLI)
with cobell (`plan(confidence=p)`, "point" the point decision) and Bell + conformal margin
(`plan(interference="none")` against target / margin at p, "point": plain Bell) at several
levels each, and reads each method's cost against the miss rate it delivered, post-bootstrap:
for every Bell level, the cheapest cobell level that missed the target no more often. cobell
earns its keep there when that costs fewer node-seconds. Pooled per world, and per variant.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench import ROOT, publish
from bench import colocation as co

RESULTS = ROOT / "bench" / "results" / "keep_frontier.md"
COBELL_LEVELS = ("point", "0.5", "0.7", "0.8", "0.9", "0.97")
BELL_LEVELS = ("point", "0.8", "0.9", "0.95", "0.97", "0.99")
SCOPES: dict[str, tuple[str, ...] | None] = {
    "pooled": None, "single": ("single",), "pair": ("pair",), "triple": ("triple",)}


def register(cobell_levels: Sequence[str], bell_levels: Sequence[str]) -> tuple[str, ...]:
    """Planning strategies `cobell@LEVEL` and `bell@LEVEL` for bench.colocation's runner."""
    names = []
    for level in cobell_levels:
        name = f"cobell@{level}"
        co.PLANNERS[name] = ("joint", co.POINT if level == "point" else float(level))
        co.LABELS[name] = f"cobell {level}"
        names.append(name)
    for level in bell_levels:
        name = f"bell@{level}"
        co.PLANNERS[name] = ("none", co.POINT)
        if level != "point":
            co.MARGINS[name] = float(level)
        co.LABELS[name] = "Bell" if level == "point" else f"Bell + conformal {level}"
        names.append(name)
    return (*names, "oracle")


def _one_part(cfg: co.Config) -> dict:
    return co.run_experiment(cfg, progress=lambda m: print(m, flush=True))


def run(cfg: co.Config, cobell_levels: Sequence[str], bell_levels: Sequence[str],
        processes: int = 1) -> dict:
    """bench.colocation's experiment with every level's strategy; (world, variant) parts in
    `processes` parallel processes (the same runs: each part draws its own, as one run does)."""
    saved = co.STRATEGIES
    co.STRATEGIES = register(cobell_levels, bell_levels)
    try:
        parts_cfg = [dataclasses.replace(cfg, worlds=(w,), variants=(v,))
                     for w in cfg.worlds for v in cfg.variants]
        if processes > 1:  # forked: the registered strategies carry over
            with multiprocessing.get_context("fork").Pool(processes) as pool:
                parts = pool.map(_one_part, parts_cfg, chunksize=1)
        else:
            parts = [_one_part(c) for c in parts_cfg]
        return {cell: per for part in parts for cell, per in part.items()}
    finally:
        co.STRATEGIES = saved


def matched(points: Mapping[str, Mapping[str, float]], bell: str,
            cobell_names: Sequence[str]) -> str | None:
    """The cheapest cobell strategy that missed the target no more often than `bell`."""
    limit = points[bell]["over_share_pct"]
    fits = [c for c in cobell_names if points[c]["over_share_pct"] <= limit]
    return min(fits, key=lambda c: points[c]["node_s_vs_oracle"]) if fits else None


def _pair(s: Mapping[str, float]) -> str:
    return f"{s['over_share_pct']:.1f} / {s['node_s_vs_oracle']:.3f}"


def render(results: co.Results, cobell_levels: Sequence[str], bell_levels: Sequence[str],
           command: str, elapsed_s: float, cfg: co.Config) -> str:
    cobell = [f"cobell@{v}" for v in cobell_levels]
    bell = [f"bell@{v}" for v in bell_levels]
    lines = [
        "# Does the interference model earn its keep where the risks match?", "",
        f"Command: `{command}` (from the repository root; {elapsed_s:.0f} s).", "",
        "Runs, worlds and planner of bench/results/colocation.md (seed"
        f" {cfg.seed}, {cfg.runs_per_interferer} runs per co-runner job), post-bootstrap."
        " Each entry: runs over the target % / executor-seconds over the oracle's (older"
        " tables say node-seconds). cobell at"
        " P(meet the target) >= p (`--confidence p`; point: the point decision); Bell +"
        " conformal at p: Bell's prediction times the conformal p-bound of Bell's own past"
        " runtime / predicted ratios (point: plain Bell).", "",
        "## Cost and miss rate per level", "",
        "| world | runs | " + " | ".join(co.LABELS[s] for s in cobell + bell) + " |",
        "|---" * (2 + len(cobell) + len(bell)) + "|",
    ]
    worlds = list(dict.fromkeys(w for w, _, _ in results))
    points: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for world in worlds:
        for scope, variants in SCOPES.items():
            per = {s: co.pooled(results, s, world, variants) for s in cobell + bell}
            if not all(p["runs"] for p in per.values()):
                continue
            points[(world, scope)] = per
            lines.append(f"| {world} | {scope} | "
                         + " | ".join(_pair(per[s]) for s in cobell + bell) + " |")
    lines += [
        "", "## Matched miss rates", "",
        "For each Bell + conformal level, the cheapest cobell level that missed the target no"
        " more often. Earns: that cobell level needs fewer executor-seconds.", "",
        "| world | runs | Bell level | Bell | cobell level | cobell | earns |",
        "|---|---|---|---|---|---|---|",
    ]
    earned = total = 0
    for (world, scope), per in points.items():
        for b in bell:
            c = matched(per, b, cobell)
            earns = c is not None and per[c]["node_s_vs_oracle"] < per[b]["node_s_vs_oracle"]
            total += 1
            earned += earns
            lines.append(f"| {world} | {scope} | {b.split('@')[1]} | {_pair(per[b])} | "
                         + (f"{c.split('@')[1]} | {_pair(per[c])} |" if c else "none | - |")
                         + f" {'yes' if earns else 'no'} |")
    lines += ["", f"cobell earns its keep in {earned} of {total} matched comparisons.", "",
              *goal_rows(results, cobell)]
    return "\n".join(lines) + "\n"


def goal_rows(results: co.Results, cobell: Sequence[str]) -> list[str]:
    """Issue 13's per-cell goal for the default, at each cobell level: over % / max overshoot
    % / node-s vs oracle, and whether the cell meets it."""
    lines = ["## The per-cell goal at each cobell level", "",
             "Each entry: over % / max overshoot % / executor-s vs oracle; goal (>="
             f" {co.GOAL_MEET:.0f} % on time, overshoot <= {co.GOAL_OVERSHOOT_PCT:.0f} %, "
             "executor-s"
             f" <= {co.GOAL_NODE_S}x): yes or no.", "",
             "| world | variant | job | " + " | ".join(co.LABELS[c] for c in cobell) + " |",
             "|---" * (3 + len(cobell)) + "|"]
    met = dict.fromkeys(cobell, 0)
    for (world, variant, target), per in results.items():
        cells = []
        for c in cobell:
            s = co.summarise(per[c], per["oracle"])
            ok = co.goal_check(s)
            met[c] += ok == "yes"
            cells.append(f"{s['over_share_pct']:.1f} / {s['max_overshoot_pct']:.1f} /"
                         f" {s['node_s_vs_oracle']:.3f} {ok}")
        lines.append(f"| {world} | {variant} | {target} | " + " | ".join(cells) + " |")
    lines += ["", "Cells meeting the goal: " + ", ".join(
        f"{co.LABELS[c]}: {n} of {len(results)}" for c, n in met.items()) + "."]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.keep_frontier",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--cobell-levels", nargs="+", default=list(COBELL_LEVELS))
    parser.add_argument("--bell-levels", nargs="+", default=list(BELL_LEVELS))
    parser.add_argument("--worlds", nargs="+", choices=co.WORLDS, default=list(co.WORLDS))
    parser.add_argument("--seed", type=int, default=co.Config.seed)
    parser.add_argument("--processes", type=int, default=1,
                        help="(world, variant) parts run in parallel")
    parser.add_argument("--quick", action="store_true",
                        help="sgd, one and two co-runners, 3 runs per co-runner job; writes"
                             " nothing")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help="where the report goes (one world per run keeps a run short)")
    args = parser.parse_args(argv)
    cfg = co.Config(worlds=tuple(args.worlds), seed=args.seed)
    if args.quick:
        cfg = co.Config(worlds=tuple(args.worlds), targets=("sgd",),
                        variants=("single", "pair"), runs_per_interferer=3, seed=args.seed)
    started = time.perf_counter()
    results = run(cfg, args.cobell_levels, args.bell_levels, args.processes)
    given = argv if argv is not None else sys.argv[1:]
    command = " ".join(["python -m bench.studies.keep_frontier", *given])
    text = render(results, args.cobell_levels, args.bell_levels, command,
                  time.perf_counter() - started, cfg)
    publish(text, None if args.quick else args.output)


if __name__ == "__main__":
    main()
