"""Which parts of cobell's runtime model earn their parameters out of sample (issue 23, item 1).

    python -m bench.selection [--quick] [--processes N] [--seeds N] [--output FILE]

Each variant is cobell's whole fitting procedure (every CV choice inside it included) with one
component switched off, scored on runs none of its choices saw, so every number is the error
of the selection procedure itself, not the optimistic CV score of its pick:

* real: the project's recorded co-location runs (history/colocation-local.csv, the tuning set),
  each run predicted by a model fitted on all the others (leave-one-run-out around the whole
  procedure: nested CV); also its runs with at most one co-runner, the issue's held-out design;
* bell: the Bell authors' runs (../shared/data/bell, no co-runners), histories of 6, 12 and 24
  runs drawn at random, every other run of the job the test set;
* simulator / nodesim: bench.coverage's worlds (not cobell's formula), targets sgd and kmeans,
  histories of 12, 24 and 50 runs meeting 0-3 co-runner apps from a pool of 2 or 20 co-runner
  jobs, scored on 40 fresh runs with co-runners at their measured overlaps.

Per data set: the mean absolute percentage error over its test runs, and each variant's
difference to cobell with its standard error over the histories (tasks): a component whose
removal does not make the error worse by more than that standard error anywhere does not earn
its parameters.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import BELL_DATA, publish

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "selection.md"

PAPER_FIT = {"combination": "additive", "scaled": True, "pooling": False, "propagate": False,
             "alone_curve": "ernest"}
VARIANTS: dict[str, dict[str, Any] | None] = {
    "cobell": {},
    "lowest CV error (no one-SE rule)": {"selection": "best"},
    "- broken-line separation": {"alone_curve": "ernest"},
    "broken line always": {"alone_curve": "broken-line"},
    "+ combination rules (CV)": {"combination": "auto"},
    "- b/x": {"scaled": False},
    "b/x always": {"scaled": True},
    "+ size weights (CV)": {"sized": None},
    "- pooling": {"pooling": False},
    "- LLR": {"llr": False},
    "- power-law extrapolation": {"power_law": False},
    "- cliff detection": {"regimes": False},
    "CoBell (paper's fit)": PAPER_FIT,
    "Bell": None,
}
DESCRIPTION = (
    "Each variant is cobell's whole fitting procedure (every CV choice inside it) with one "
    "component switched off, forced on, or (+) offered to its CV, scored on runs none of its "
    "choices saw: the error "
    "of the selection procedure itself. **real**: history/colocation-local.csv (the tuning "
    "set), leave-one-run-out around the whole procedure (nested CV), all runs and the runs "
    "with at most one co-runner (the issue's held-out design). **bell**: the Bell authors' "
    "runs, random histories of 6, 12 and 24 runs, the job's other runs the test set. "
    "**simulator / nodesim**: bench.coverage's worlds (not cobell's formula), targets sgd and "
    "kmeans, histories of 12, 24 and 50 runs meeting 0-3 co-runner apps from a pool of 2 or "
    "20 co-runner jobs (and of 2 whose apps each run at a scale-out of their own, 8-48, where "
    "size weights can matter), 40 fresh runs with co-runners each, at their measured "
    "overlaps.")
BELL_SIZES = (6, 12, 24)
SIM_SIZES = (12, 24, 50)
SIM_POOLS = (2, 20, "2 varying")  # co-runner jobs; "varying": each app at its own scale-out
SIM_TARGETS = ("sgd", "kmeans")
SIM_FRESH = 40


@dataclass(frozen=True)
class Task:
    """One history and the runs it is scored on."""

    dataset: str
    label: str
    train: list[dict[str, Any]]
    test: list[dict[str, Any]]


def predict(variant: str, train: Sequence[Mapping[str, Any]],
            test: Sequence[Mapping[str, Any]]) -> np.ndarray:
    from cobell_cli.core.model import fit_bell, fit_runtime_model

    xs = [r["scale_out"] for r in test]
    params = VARIANTS[variant]
    if params is None:
        return np.asarray(fit_bell(train).predict(xs), float)
    model = fit_runtime_model(train, **params)
    return np.asarray(model.predict(xs, [dict(r.get("overlaps") or {}) for r in test]), float)


def score(task: Task) -> dict[str, np.ndarray]:
    """APE % of every test run, per variant."""
    y = np.array([r["runtime_s"] for r in task.test], float)
    return {v: np.abs(predict(v, task.train, task.test) / y - 1.0) * 100.0 for v in VARIANTS}


def real_tasks(path: Path) -> list[Task]:
    from bench.real_colocation import load_runs

    runs = load_runs(path)
    single = [r for r in runs if sum(1 for v in r["overlaps"].values() if v > 0) <= 1]
    out = []
    for name, rows in (("real: all runs", runs), ("real: <= 1 co-runner", single)):
        out += [Task(name, f"run {i}", rows[:i] + rows[i + 1:], [run])
                for i, run in enumerate(rows)]
    return out


def bell_tasks(data: Path, draws: int) -> list[Task]:
    out = []
    for path in sorted(data.glob("*.csv")):
        runs = _bell_runs(path)
        for n in BELL_SIZES:
            for seed in range(draws):
                rng = np.random.default_rng([seed, n, len(path.stem)])
                pick = rng.choice(len(runs), n, replace=False)
                chosen = set(int(i) for i in pick)
                out.append(Task(f"bell: {n} runs", f"{path.stem} seed {seed}",
                                [runs[i] for i in sorted(chosen)],
                                [r for i, r in enumerate(runs) if i not in chosen]))
    return out


def _bell_runs(path: Path) -> list[dict[str, Any]]:
    import csv

    with path.open(newline="") as fh:
        return [{"scale_out": float(row["Nodes"]), "runtime_s": float(row["Runtime"]) / 1000.0,
                 "overlaps": {}} for row in csv.DictReader(fh)]


def sim_tasks(data: Path, seeds: int, worlds: Sequence[str]) -> list[Task]:
    from bench import colocation, coverage
    from bench.simulator import load_curves

    curves = load_curves(data)
    out = []
    for world_name in worlds:
        world = colocation.truth(world_name)
        for target in SIM_TARGETS:
            for n in SIM_SIZES:
                for pool_kind in SIM_POOLS:
                    pool_size, vary = int(str(pool_kind).split()[0]), isinstance(pool_kind, str)
                    for seed in range(seeds):
                        rng = np.random.default_rng([seed, n, pool_size, len(target), 23, vary])
                        pool = coverage.draw_pool(pool_size, rng)
                        runs = [coverage.one_run(i, pool, curves, world, rng, target, vary)
                                for i in range(n)]
                        fresh, i = [], n
                        while len(fresh) < SIM_FRESH:
                            run = coverage.one_run(i, pool, curves, world, rng, target, vary)
                            i += 1
                            if run["overlaps"]:
                                fresh.append(run)
                        out.append(Task(f"{world_name}: {n} runs",
                                        f"{target} pool {pool_kind} seed {seed}", runs, fresh))
    return out


def evaluate(tasks: Sequence[Task], processes: int) -> list[dict[str, np.ndarray]]:
    if processes <= 1:
        return [score(t) for t in tasks]
    with ProcessPoolExecutor(processes) as pool:
        return list(pool.map(score, tasks, chunksize=4))


def render(tasks: Sequence[Task], scores: Sequence[Mapping[str, np.ndarray]], command: str,
           elapsed_s: float) -> str:
    datasets = list(dict.fromkeys(t.dataset for t in tasks))
    names = list(VARIANTS)
    lines = ["# Which parts of the runtime model earn their parameters", "",
             f"Command: `{command}` ({elapsed_s:.0f} s).", "", DESCRIPTION, "",
             "Mean APE % over the data set's test runs; in brackets the variant minus cobell "
             "(percentage points) ± its standard error over the histories. Positive for a "
             "'-' row: worse without the component, which earns its keep there; negative for "
             "a '+' row: the offered component would earn its keep.", "",
             "| variant | " + " | ".join(datasets) + " |",
             "|---|" + "---:|" * len(datasets)]
    by_set = {d: [s for t, s in zip(tasks, scores, strict=True) if t.dataset == d]
              for d in datasets}
    for v in names:
        cells = []
        for d in datasets:
            rows = by_set[d]
            mean = float(np.mean(np.concatenate([r[v] for r in rows])))
            if v == "cobell":
                cells.append(f"{mean:.2f}")
                continue
            diff = np.array([r[v].mean() - r["cobell"].mean() for r in rows])
            se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else 0.0
            cells.append(f"{mean:.2f} ({diff.mean():+.2f} ± {se:.2f})")
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    lines += ["", "Histories per data set: " + ", ".join(
        f"{d} {len(by_set[d])}" for d in datasets) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.selection",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="real runs with <= 1 co-runner, bell at 12 runs, one sim seed; "
                        "writes nothing")
    parser.add_argument("--seeds", type=int, default=3, help="histories per simulated cell")
    parser.add_argument("--draws", type=int, default=5, help="Bell histories per job and size")
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--history", type=Path,
                        default=ROOT / "history" / "colocation-local.csv")
    parser.add_argument("--data", type=Path, default=BELL_DATA)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    tasks = real_tasks(args.history)
    if args.quick:
        tasks = [t for t in tasks if t.dataset == "real: <= 1 co-runner"]
        tasks += [t for t in bell_tasks(args.data, 2) if t.dataset == "bell: 12 runs"]
        tasks += sim_tasks(args.data, 1, ("simulator",))
    else:
        tasks += bell_tasks(args.data, args.draws)
        tasks += sim_tasks(args.data, args.seeds, ("simulator", "nodesim"))
    scores = evaluate(tasks, args.processes)
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.selection", *given])
    text = render(tasks, scores, command, time.perf_counter() - started)
    publish(text, None if args.quick else args.output)


if __name__ == "__main__":
    main()
