"""The planner's rule for an unreachable target, the previous one next to the current one.

    python -m bench.infeasible_rule hetero --seeds 2018 [--tolerances 0 0.01 0.02 0.05 0.1]
                                          [--rows FILE.json]
    python -m bench.infeasible_rule table FILE.json [FILE.json ...]
    python -m bench.infeasible_rule wrap {previous|current} MODULE [ARGS ...]

When no candidate meets the target, the planner (core/plan/model_phase.py `_decide`) used to
reserve the fastest judged runtime, the largest scale-out among exact equals ("previous"); it
now reserves the smallest scale-out within INFEASIBLE_TOLERANCE of the fastest
(core/plan/infeasible.py `near_fastest`). Both are swapped into the same planner here (the
previous rule lives only in this file, for the comparison).

hetero: bench.hetero's allocation (its histories, targets, fresh runs and oracle, all drawn as
there) with every (job, target) planned under each rule, the fits shared, so the rows differ
only where a plan was infeasible. `table` renders saved rows: per seed, rule and strategy, the
targets met and the cost over the oracle's (mean of ratios, and total).

wrap: runs another bench's `main` (bench.coldstart, bench.colocation, ...) with one rule, and
prints how many planner decisions were infeasible and in how many of them the two rules differ
(none: the bench's numbers are the same under both rules).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import cobell_cli.core.plan.model_phase as model_phase
from cobell_cli.core.plan.infeasible import INFEASIBLE_TOLERANCE, near_fastest

Rule = Callable[[Sequence[float]], int]


def previous(judged_s: Sequence[float]) -> int:
    """The rule before: the fastest, the largest among exact equals."""
    fastest = min(judged_s)
    return max(j for j, d in enumerate(judged_s) if d == fastest)


def current(tolerance: float) -> Rule:
    return lambda judged_s: near_fastest(judged_s, tolerance)


def use(rule: Rule) -> None:
    """The planner's infeasible rule, for this process."""
    model_phase.near_fastest = lambda judged_s, *_: rule(judged_s)  # type: ignore[assignment]


def hetero_rows(seed: int, rules: dict[str, Rule]) -> list[dict[str, Any]]:
    """bench.hetero.allocate with every (job, target) chosen under each rule."""
    from bench import hetero as h
    from bench.colocation import DEFAULT_DATA
    from bench.simulator import load_curves

    curves = load_curves(DEFAULT_DATA)
    hist = h.history(curves, seed)
    rng = np.random.default_rng([seed, 282])
    fast = h._fastest_type(hist)
    rows = []
    for job in sorted(hist.runs):
        curve = curves[job]
        fits: dict[Any, Any] = {}
        for x_t in h.TARGET_SCALE_OUTS:
            target = h.TARGET_SLACK * curve.median_s(x_t)
            chosen = {}
            for name, rule in rules.items():
                use(rule)
                chosen[name] = h.choose(hist, job, target, fast, fits)
            for _ in range(h.REPS):
                rep = [int(i) for i in rng.integers(0, curve.reps, len(curve.scale_outs))]
                noise = float(rng.lognormal(0, h.RUN_NOISE))

                def run(t: str, x: int, rep: list[int] = rep, noise: float = noise,
                        curve: Any = curve, job: str = job) -> float:
                    return h.true_runtime(curve, job, t, x, rep, noise)

                row: dict[str, Any] = {"seed": seed, "job": job, "x_t": x_t, "target_s": target,
                                       "oracle": h._oracle(run, target)}
                for name, by_strategy in chosen.items():
                    for strategy, (t, x) in by_strategy.items():
                        y = run(t, x)
                        row[f"{name}/{strategy}"] = {"type": t or "default", "x": x,
                                                     "miss": y > target,
                                                     "cost": h.TYPES[t][1] * x * y}
                rows.append(row)
    return rows


STRATEGIES = ("shared", "one-for-all", "per-type", "fastest")


def _order(key: str) -> tuple[int, float]:
    """Strategies as bench.hetero lists them; the previous rule, then tolerances ascending."""
    rule, strategy = key.split("/")
    return STRATEGIES.index(strategy), (-1.0 if rule == "previous" else float(rule.split()[1]))


def table(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| seed | rule | strategy | targets met | mean cost / oracle's | total cost / "
             "oracle's | submits whose choice differs from the previous rule's |",
             "|---|---|---|---|---|---|---|"]
    for seed in sorted({r["seed"] for r in rows}, key=lambda s: (s != 2018, s)):
        mine = [r for r in rows if r["seed"] == seed]
        keys = sorted({k for r in mine for k in r if "/" in k}, key=_order)
        for k in keys:
            rule, strategy = k.split("/")
            met = 100 * np.mean([not r[k]["miss"] for r in mine])
            mean = np.mean([r[k]["cost"] / r["oracle"]["cost"] for r in mine])
            total = sum(r[k]["cost"] for r in mine) / sum(r["oracle"]["cost"] for r in mine)
            old = f"previous/{strategy}"
            differ = sum((r[k]["type"], r[k]["x"]) != (r[old]["type"], r[old]["x"])
                         for r in mine)
            lines.append(f"| {seed} | {rule} | {strategy} | {met:.1f} % | {mean:.3f} | "
                         f"{total:.3f} | {differ} of {len(mine)} |")
    return "\n".join(lines)


def wrap(which: str, module: str, argv: list[str]) -> None:
    counts = {"infeasible": 0, "differ": 0}
    new = current(INFEASIBLE_TOLERANCE)

    def rule(judged_s: Sequence[float]) -> int:
        a, b = previous(judged_s), new(judged_s)
        counts["infeasible"] += 1
        counts["differ"] += a != b
        return a if which == "previous" else b

    use(rule)
    atexit.register(lambda: print(
        f"infeasible_rule {which}: {counts['infeasible']} infeasible planner decisions, the "
        f"rules differ in {counts['differ']}", flush=True))
    importlib.import_module(module).main(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["wrap"]:
        wrap(args[1], args[2], args[3:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    het = sub.add_parser("hetero")
    het.add_argument("--seeds", type=int, nargs="+", default=[2018])
    het.add_argument("--tolerances", type=float, nargs="+",
                     default=[INFEASIBLE_TOLERANCE])
    het.add_argument("--rows", type=Path, default=None)
    tab = sub.add_parser("table")
    tab.add_argument("files", type=Path, nargs="+")
    ns = parser.parse_args(args)
    if ns.command == "table":
        print(table([r for f in ns.files for r in json.loads(f.read_text())]))
        return 0
    t0 = time.time()
    rules: dict[str, Rule] = {"previous": previous,
                              **{f"tolerance {t:g}": current(t) for t in ns.tolerances}}
    rows = [r for seed in ns.seeds for r in hetero_rows(seed, rules)]
    if ns.rows:
        ns.rows.write_text(json.dumps(rows))
    print(table(rows))
    print(f"\n{time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
