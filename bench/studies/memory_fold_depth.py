"""Do the memory bound's held-out ratios depend on how much their fold trained on?

    python -m bench.studies.memory_fold_depth [--sets tune-quiet tune test-quiet]

The bound (core/memory/model.py) multiplies a prediction fitted on all of a job's sizes by a
bound on held-out ratios (measured / predicted) from forward folds (select.forward_folds), each
trained on the sizes below its test run: at a job's fifth size, folds trained on two sizes and on
three. If the shallow folds under-predict far more than the deep ones, the bound carries an
error the prediction it multiplies does not have: the lever issue 36 names for the quiet sets'
largest sizes. For every case of bench.memory_accuracy (its profile history), every fold of the
model that sizes it, grouped by the sizes it trained on. check-quiet is left out on purpose: it
is the held-out set for the next candidate this points to.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import ROOT, publish
from bench import memory_accuracy as ma

RESULTS = ROOT / "bench" / "results" / "memory_fold_depth.md"


def case_folds(obs: Sequence[Any]) -> list[tuple[int, float]]:
    """(sizes trained on, held-out ratio) of each fold of the model sizing a case from its
    observations: the ratios model.py's bound is taken on (the default's fallback, no floor)."""
    from cobell_cli.core.memory.model import MemoryModel
    from cobell_cli.core.memory.select import candidate, fold_ratios

    return fold_ratios([o for o in obs if o.demand_mb], candidate(MemoryModel().fallback))


def case_observations(runs: Sequence[Any], case: Any) -> list[Any]:
    """What cobell reads of the runs below the case (bench.memory_accuracy's history)."""
    from cobell_cli.core.memory.demand import observations

    train = [r for r in ma.training(runs, case) if r.outcome in ("succeeded", "memory")]
    return observations(ma.history_rows(train))


def fold_ratios(set_name: str) -> dict[int, list[float]]:
    """Held-out ratio (measured demand / the fold's prediction) per sizes trained on."""
    runs, cases = ma.load(set_name)
    by_depth: dict[int, list[float]] = {}
    for case in cases:
        obs = case_observations(runs, case)
        if any(o.demand_mb for o in obs):
            for depth, ratio in case_folds(obs):
                by_depth.setdefault(depth, []).append(ratio)
    return by_depth


def render(by_set: dict[str, dict[int, list[float]]], elapsed_s: float) -> str:
    doc = (__doc__ or "").split("\n\n")[2].replace("\n", " ").strip()
    lines = ["# Held-out memory ratios by how much their fold trained on", "",
             f"Command: `python -m bench.studies.memory_fold_depth --sets {' '.join(by_set)}` "
             f"({elapsed_s:.1f} s). {doc}", "",
             "| set | sizes trained on | ratios | median | largest | share above 1.25 |",
             "|---|---|---|---|---|---|"]
    for set_name, by_depth in by_set.items():
        for depth, ratios in sorted(by_depth.items()):
            share = sum(r > 1.25 for r in ratios) / len(ratios)
            lines.append(f"| {set_name} | {depth} | {len(ratios)} | "
                         f"{statistics.median(ratios):.2f} | {max(ratios):.2f} | {share:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["tune-quiet", "tune", "test-quiet"])
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    by_set = {name: fold_ratios(name) for name in args.sets}
    publish(render(by_set, time.perf_counter() - started) + "\n", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
