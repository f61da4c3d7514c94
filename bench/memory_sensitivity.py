"""Is the memory accuracy goal a matter of cobell's two knobs? A sweep on real runs.

    python -m bench.memory_sensitivity [--sets tune test] [--output FILE]

bench.memory_accuracy scores cobell at one memory confidence and the bound's floor as
shipped. Here the same cases and the same scoring (its `load`, `score`, `summary`) are played
at every memory confidence in CONFIDENCES and every floor of the bound (core/memory/model.py
`MIN_MARGIN`, the width given to a fit with fewer than `MIN_RATIOS` held-out ratios) in
MARGINS, cobell's row only. If no cell of the development set `tune` meets both goals, the
goals are out of the knobs' reach and need a different model, not different constants; the
set `test` is shown beside it, never used to choose.
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
MARGINS = (1.0, 1.1, 1.25, 1.4)


def sweep(set_name: str) -> list[tuple[float, float, dict[str, float]]]:
    """(confidence, floor, cobell's summary) for every cell of the grid, on one set."""
    from cobell_cli.core.memory import model

    runs, cases = load(set_name)
    shipped = model.MIN_MARGIN
    rows = []
    try:
        for margin in MARGINS:
            model.MIN_MARGIN = margin  # the one constant the sweep moves, restored below
            for confidence in CONFIDENCES:
                rows.append((confidence, margin, summary(score(runs, cases, confidence), "cobell")))
    finally:
        model.MIN_MARGIN = shipped
    return rows


def render(tables: dict[str, list[tuple[float, float, dict[str, float]]]], shipped: tuple[
        float, float], command: str, elapsed_s: float) -> str:
    lines = [
        "# Memory accuracy: cobell's knobs swept (real Spark runs)", "",
        f"Command: `{command}` ({elapsed_s:.1f} s). Cases, runs and scoring: bench.memory_"
        "accuracy (bench/results/memory_accuracy.md says how each set was recorded). cobell's "
        "row only, at every memory confidence and every floor of the bound "
        "(core/memory/model.py MIN_MARGIN); shipped: confidence "
        f"{shipped[0]:g}, floor {shipped[1]:g}. Goals: certainly succeeds in >= "
        f"{GOAL_SUCCESS_PCT:g} % / median container <= {GOAL_MEDIAN_RATIO:g}x the smallest grant "
        "covering the need. `tune` is where constants may be chosen; `test` is shown, never "
        "used to choose.", ""]
    for set_name, rows in tables.items():
        lines += [f"## set `{set_name}`", "",
                  "| floor (MIN_MARGIN) | confidence | certainly succeeds | median container / "
                  "need | goals met |", "|---|---|---|---|---|"]
        for confidence, margin, s in rows:
            lines.append(f"| {margin:g} | {confidence:g} | {s['ok']}/{s['cases']} "
                         f"({s['success_pct']:.0f} %) | {s['median_ratio']:.2f} | {goals(s)} |")
        met = [r for r in rows if goals(r[2]) == "yes / yes"]
        lines += ["", f"Cells meeting both goals: {len(met)} of {len(rows)}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["tune", "test"])
    parser.add_argument("--output", type=Path, default=RESULTS / "memory_sensitivity.md")
    args = parser.parse_args(argv)
    from cobell_cli.core.memory.model import MIN_MARGIN
    from cobell_cli.core.memory.plan import DEFAULT_MEMORY_CONFIDENCE

    started = time.perf_counter()
    tables = {s: sweep(s) for s in args.sets if (DATA / s / "needs.json").exists()}
    command = "python -m bench.memory_sensitivity " + " ".join(argv or sys.argv[1:])
    publish(render(tables, (DEFAULT_MEMORY_CONFIDENCE, MIN_MARGIN), command.strip(),
                   time.perf_counter() - started) + "\n", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
