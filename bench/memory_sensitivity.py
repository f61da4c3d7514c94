"""Is the memory accuracy goal a matter of cobell's two knobs? A sweep on real runs.

    python -m bench.memory_sensitivity [--sets tune-quiet test-quiet] [--output FILE]

bench.memory_accuracy scores cobell at one memory confidence and the bound's prior as
shipped. Here the same cases and the same scoring (its `load`, `score`, `summary`) are played
at every memory confidence in CONFIDENCES and every width of the prior (core/memory/bound.py
DEFAULT_PRIOR's spread times each of SPREADS: what a job with few held-out ratios borrows),
cobell's row only. If no cell of the tune set meets both goals, the goals are out of the
knobs' reach and need a different model, not different constants; the test set is shown
beside it, never used to choose.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench import publish
from bench.memory_accuracy import (
    DATA,
    GOAL_MEDIAN_RATIO,
    GOAL_SUCCESS_PCT,
    RESULTS,
    goals,
    load,
    score,
    summary,
)

CONFIDENCES = (0.5, 0.8, 0.95, 0.99)
SPREADS = (0.5, 1.0, 1.5, 2.0)


def sweep(set_name: str) -> list[tuple[float, float, dict[str, float]]]:
    """(confidence, spread factor, cobell's summary) for every cell of the grid, one set."""
    from dataclasses import replace

    from cobell_cli.core.memory.bound import DEFAULT_PRIOR

    runs, cases = load(set_name)
    rows = []
    for spread in SPREADS:
        prior = replace(DEFAULT_PRIOR, scale2=DEFAULT_PRIOR.scale2 * spread**2)
        for confidence in CONFIDENCES:
            rows.append((confidence, spread,
                         summary(score(runs, cases, confidence, prior), "cobell")))
    return rows


def render(tables: dict[str, list[tuple[float, float, dict[str, float]]]], shipped: tuple[
        float, float], command: str, elapsed_s: float) -> str:
    lines = [
        "# Memory accuracy: cobell's knobs swept (real Spark runs)", "",
        f"Command: `{command}` ({elapsed_s:.1f} s). Cases, runs and scoring: bench.memory_"
        "accuracy (bench/results/memory_accuracy.md says how each set was recorded). cobell's "
        "row only, at every memory confidence and every width of the bound's prior "
        "(core/memory/bound.py DEFAULT_PRIOR's spread x the factor); shipped: confidence "
        f"{shipped[0]:g}, factor {shipped[1]:g}. Goals: certainly succeeds in >= "
        f"{GOAL_SUCCESS_PCT:g} % / median container <= {GOAL_MEDIAN_RATIO:g}x the smallest grant "
        "covering the need. The tune set is where constants may be chosen; the test set is "
        "shown, never used to choose.", ""]
    for set_name, rows in tables.items():
        lines += [f"## set `{set_name}`", "",
                  "| prior spread x | confidence | certainly succeeds | median container / "
                  "need | goals met |", "|---|---|---|---|---|"]
        for confidence, spread, s in rows:
            lines.append(f"| {spread:g} | {confidence:g} | {s['ok']}/{s['cases']} "
                         f"({s['success_pct']:.0f} %) | {s['median_ratio']:.2f} | {goals(s)} |")
        met = [r for r in rows if goals(r[2]) == "yes / yes"]
        lines += ["", f"Cells meeting both goals: {len(met)} of {len(rows)}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["tune-quiet", "test-quiet"])
    parser.add_argument("--output", type=Path, default=RESULTS / "memory_sensitivity.md")
    args = parser.parse_args(argv)
    from cobell_cli.core.memory.plan import DEFAULT_MEMORY_CONFIDENCE

    started = time.perf_counter()
    tables = {s: sweep(s) for s in args.sets if (DATA / s / "needs.json").exists()}
    command = "python -m bench.memory_sensitivity " + " ".join(argv or sys.argv[1:])
    publish(render(tables, (DEFAULT_MEMORY_CONFIDENCE, 1.0), command.strip(),
                   time.perf_counter() - started) + "\n", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
