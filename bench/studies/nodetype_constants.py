"""Where the node-type model's constants come from, measured out of sample (issue 34, item 7).

    python -m bench.studies.nodetype_constants [--seeds 2018 7 11] [--output FILE]

Each constant is chosen on seed 2018 of bench.hetero's simulated heterogeneous cluster (the
seed the node-type method was developed on) from a grid, by the question it answers, and the
chosen value and its neighbours are reported on seeds 7 and 11, which no choice looked at:

* `PRIOR_RUNS` (core/nodetype/factors.py): how many runs on a type the profile prior is worth
  against a job's own runs there. Question: a job ran 1 or 2 times on a type (of the 3 runs it
  has there); predict its other runs on that type. Every subset of 1 and 2 runs kept, each
  type each job explored.
* `RIDGE` (core/nodetype/speeds.py): the weight of "no difference" against one job's measured
  factor when the types' speeds are learned. Question: leave one type out (bench.hetero's
  LOTO): a job's runs on a type are taken out and predicted by the prior alone.
* `BYTES_HALF_PER_S` (core/profile_effects/shares.py): the byte rate that is half a share of
  a byte-moving class; it shapes every profile, so the same LOTO question.

Error: mean and median |log(predicted / measured)| x 100 over the held-out runs; the grid value
with the lowest mean on seed 2018 is "chosen"; the one-SE column says whether the current
constant is within one standard error (over held-out jobs x types) of the best on that seed.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import import_module
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from bench.colocation import DEFAULT_DATA
from bench.hetero import History, history
from bench.simulator import load_curves
from cobell_cli.core.nodetype import NodeTypeModel, TypeSpeeds, node_type
from cobell_cli.core.profile_effects import job_profile, shares

GRIDS: dict[str, tuple[float, ...]] = {
    "PRIOR_RUNS": (0.0, 0.5, 1.0, 2.0, 4.0, 10.0),
    "RIDGE": (0.05, 0.1, 0.2, 0.5, 1.0, 2.0),
    "BYTES_HALF_PER_S": (5e6, 10e6, 20e6, 40e6, 80e6),
}
# the modules that hold them (the package re-exports a function named `shares`)
MODULES = {"PRIOR_RUNS": import_module("cobell_cli.core.nodetype.factors"),
           "RIDGE": import_module("cobell_cli.core.nodetype.speeds"),
           "BYTES_HALF_PER_S": import_module("cobell_cli.core.profile_effects.shares")}
TUNING_SEED = 2018

# held-out errors of one (job, type): |log(pred / y)| per held-out run
Cell = list[float]


@contextmanager
def constant(name: str, value: float) -> Iterator[None]:
    """The module constant set to `value` for the block (restored after)."""
    module = MODULES[name]
    before = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, before)


def _speeds(h: History, job: str, runs: Sequence[Mapping[str, Any]],
            others: Mapping[str, list[Any]]) -> TypeSpeeds:
    """The types' speeds from the other jobs' factors (computed once) and the job's own."""
    own = NodeTypeModel().fit(runs).type_factors(job)
    return TypeSpeeds().fit([f for j, fs in others.items() if j != job for f in fs] + own,
                            h.profiles, held_out=False)


def _other_factors(h: History) -> dict[str, list[Any]]:
    return {j: NodeTypeModel().fit(rs).type_factors(j) for j, rs in h.runs.items()}


def _log_errors(model: NodeTypeModel, held: Sequence[Mapping[str, Any]], t: str) -> Cell:
    return [abs(math.log(float(model.predict([r["scale_out"]], None, t)[0]) / r["runtime_s"]))
            for r in held]


def prior_runs_cells(h: History, value: float) -> list[Cell]:
    """Per (job, explored type, kept subset): the errors on the type's other runs."""
    others = _other_factors(h)
    cells = []
    for job, runs in h.runs.items():
        for t in h.explored[job]:
            on_t = [r for r in runs if node_type(r) == t]
            for k in (1, 2):
                for kept in combinations(range(len(on_t)), k):
                    held = [r for i, r in enumerate(on_t) if i not in kept]
                    train = [r for r in runs if r not in held]
                    speeds = _speeds(h, job, train, others)
                    model = NodeTypeModel(prior_runs=value).fit(train, h.profiles[job], speeds)
                    cells.append(_log_errors(model, held, t))
    return cells


def loto_cells(h: History) -> list[Cell]:
    """bench.hetero's leave-one-type-out, the shared structure only: per (job, type)."""
    others = _other_factors(h)
    cells = []
    for job, runs in h.runs.items():
        for t in sorted({node_type(r) for r in runs}):
            held = [r for r in runs if node_type(r) == t]
            rest = [r for r in runs if node_type(r) != t]
            model = NodeTypeModel().fit(rest, h.profiles[job], _speeds(h, job, rest, others))
            cells.append(_log_errors(model, held, t))
    return cells


def _with_profiles(h: History) -> History:
    """The history's profiles recomputed from its runs' resources (under the constants now
    set: BYTES_HALF_PER_S shapes them)."""
    profiles = {job: job_profile(shares(r["resources"]) for r in rs)
                for job, rs in h.runs.items()}
    return History(h.runs, profiles, h.explored)


QUESTIONS: dict[str, Callable[[History, float], list[Cell]]] = {
    "PRIOR_RUNS": prior_runs_cells,
    "RIDGE": lambda h, v: loto_cells(h),
    "BYTES_HALF_PER_S": lambda h, v: loto_cells(_with_profiles(h)),
}


def measure(curves: Mapping[str, Any], seeds: Sequence[int], names: Sequence[str],
            ) -> dict[str, dict[int, dict[float, list[Cell]]]]:
    """name -> seed -> grid value -> held-out cells."""
    out: dict[str, dict[int, dict[float, list[Cell]]]] = {}
    for seed in seeds:
        h = history(curves, seed)
        for name in names:
            for value in GRIDS[name]:
                with constant(name, value):
                    cells = QUESTIONS[name](h, value)
                out.setdefault(name, {}).setdefault(seed, {})[value] = cells
    return out


def summary(cells: Sequence[Cell]) -> tuple[float, float, float]:
    """(mean, median, standard error of the mean over cells) of the errors, x 100."""
    flat = np.array([e for c in cells for e in c]) * 100
    per_cell = np.array([np.mean(c) for c in cells if c]) * 100
    se = float(per_cell.std(ddof=1) / math.sqrt(per_cell.size)) if per_cell.size > 1 else 0.0
    return float(flat.mean()), float(np.median(flat)), se


def report(results: Mapping[str, Mapping[int, Mapping[float, Sequence[Cell]]]],
           current: Mapping[str, float], command: str, elapsed_s: float) -> str:
    lines = ["# Node-type constants, chosen on seed 2018 and reported on the others", "",
             f"Command: `{command}` ({elapsed_s:.0f} s).", "",
             (__doc__ or "").split("\n\n", 2)[2].strip(), ""]
    for name, by_seed in results.items():
        tuning = by_seed.get(TUNING_SEED)
        chosen = None
        if tuning:
            chosen = min(tuning, key=lambda v: summary(tuning[v])[0])
        lines += [f"## {name} (now {current[name]:g}; lowest mean on seed {TUNING_SEED}: "
                  f"{'-' if chosen is None else f'{chosen:g}'})", "",
                  "| seed | " + " | ".join(f"{v:g}" for v in GRIDS[name]) + " | held-out runs "
                  "| now within 1 SE of the best |",
                  "|---|" + "---:|" * len(GRIDS[name]) + "---:|---|"]
        for seed, by_value in by_seed.items():
            stats = {v: summary(c) for v, c in by_value.items()}
            best = min(stats, key=lambda v: stats[v][0])
            now = stats.get(current[name])
            ok = "-" if now is None else (
                "yes" if now[0] <= stats[best][0] + stats[best][2] else "no")
            role = "tuning" if seed == TUNING_SEED else "test"
            cells = " | ".join(f"{m:.2f} ({md:.2f})" for m, md, _ in stats.values())
            n = sum(len(c) for c in next(iter(by_value.values())))
            lines.append(f"| {seed} ({role}) | {cells} | {n} | {ok} |")
        lines.append("")
    lines.append("Cells: mean (median) |log(predicted / measured)| x 100 over the held-out runs.")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.nodetype_constants",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[TUNING_SEED, 7, 11])
    parser.add_argument("--constants", nargs="+", default=list(GRIDS), choices=list(GRIDS))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    current = {name: float(getattr(MODULES[name], name)) for name in GRIDS}
    results = measure(load_curves(args.data), args.seeds, args.constants)
    command = "python -m bench.studies.nodetype_constants " + " ".join(
        ["--seeds", *map(str, args.seeds), "--constants", *args.constants])
    text = report(results, current, command, time.perf_counter() - t0)
    print(text)
    if args.output:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
