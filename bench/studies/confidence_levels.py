"""Which default confidence: cobell's risk-aware plan at several levels in both simulated worlds.

    python -m bench.studies.confidence_levels [--levels 0.9 0.93 0.95 0.97] [--seed N]
                                      [--worlds simulator nodesim] [--output FILE]

`cobell predict`/`submit` without `--confidence` plan at P(meet the target) >= a default level.
This replays bench.colocation's experiment (same runs, same worlds, same planner) with cobell's
joint strategy at each level and the oracle, and writes the post-bootstrap summary per world,
variant and target job, against the issue's goal for the default: >= 95 % of runs within the
target, max overshoot <= 5 %, node-seconds <= 1.05x the oracle's. A level is chosen on both
worlds together, so that it is not tuned to one.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench import ROOT, publish
from bench import colocation as co

RESULTS = ROOT / "bench" / "results" / "confidence_levels.md"
GOAL_NODE_S = 1.05


def run(levels: list[float], seed: int, cfg: co.Config | None = None) -> dict:
    """bench.colocation's experiment with the strategies `joint@level` and the oracle."""
    names = {f"joint@{p:g}": p for p in levels}
    saved = co.STRATEGIES
    for name, p in names.items():
        co.PLANNERS[name] = ("joint", p)
        co.LABELS[name] = f"cobell, P(meet) >= {p:g}"
    co.STRATEGIES = (*names, "oracle")
    try:
        return co.run_experiment(cfg or co.Config(seed=seed),
                                 progress=lambda m: print(m, flush=True))
    finally:
        co.STRATEGIES = saved


def render(results: dict, levels: list[float], command: str, elapsed_s: float) -> str:
    lines = ["# The default confidence level", "",
             f"Command: `{command}` (from the repository root; {elapsed_s:.0f} s).", "",
             "Worlds, runs and planner of bench/results/colocation.md (`bench.colocation`),"
             " cobell's joint strategy at each level. Post-bootstrap runs. Goal for the default:"
             f" >= 95 % within the target, max overshoot <= 5 %, node-s <= {GOAL_NODE_S}x the"
             " oracle's. What any planner could reach at a level, knowing the worlds' physics"
             " and all but the run's own noise: bench/results/oracle_bound.md.", "",
             "| world | variant | job | level | runs | over % | max overshoot % |"
             " node-s / oracle | goal met |", "|---|---|---|---|---|---|---|---|---|"]
    met = {p: 0 for p in levels}
    by_world: dict[str, dict[float, int]] = {}
    cells = 0
    for (world, variant, target), per in results.items():
        cells += 1
        for p in levels:
            s = co.summarise(per[f"joint@{p:g}"], per["oracle"])
            ok = (s["over_share_pct"] <= 5 and s["max_overshoot_pct"] <= 5
                  and s["node_s_vs_oracle"] <= GOAL_NODE_S)
            met[p] += ok
            by_world.setdefault(world, {q: 0 for q in levels})[p] += ok
            lines.append(f"| {world} | {variant} | {target} | {p:g} | {s['runs']} |"
                         f" {s['over_share_pct']:.1f} | {s['max_overshoot_pct']:.1f} |"
                         f" {s['node_s_vs_oracle']:.2f} | {'yes' if ok else 'no'} |")
    lines += ["", "Cells meeting the whole goal: "
              + ", ".join(f"{p:g}: {met[p]}/{cells}" for p in levels) + " ("
              + "; ".join(f"{w}: " + ", ".join(f"{p:g}: {n}" for p, n in counts.items())
                          for w, counts in by_world.items()) + ")."]
    lines += ["", "Pooled per world (post-bootstrap): over % / max overshoot % / node-s vs"
              " oracle.", "", "| world | " + " | ".join(f"{p:g}" for p in levels) + " |",
              "|---" * (len(levels) + 1) + "|"]
    for world in by_world:
        cells_w = [s for s in (
            co.pooled(results, f"joint@{p:g}", world) for p in levels)]
        lines.append(f"| {world} | " + " | ".join(
            f"{s['over_share_pct']:.1f} / {s['max_overshoot_pct']:.1f} /"
            f" {s['node_s_vs_oracle']:.3f}" for s in cells_w) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=float, nargs="+", default=[0.9, 0.93, 0.95, 0.97])
    parser.add_argument("--seed", type=int, default=co.Config.seed)
    parser.add_argument("--worlds", nargs="+", choices=co.WORLDS, default=list(co.WORLDS))
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = run(args.levels, args.seed, co.Config(worlds=tuple(args.worlds), seed=args.seed))
    command = "python -m bench.studies.confidence_levels --levels " + " ".join(
        f"{p:g}" for p in args.levels) + (f" --seed {args.seed}" if args.seed != co.Config.seed
                                          else "") + (
        " --worlds " + " ".join(args.worlds) if tuple(args.worlds) != co.WORLDS else "")
    text = render(results, args.levels, command, time.perf_counter() - started)
    publish(text, args.output)


if __name__ == "__main__":
    main()
