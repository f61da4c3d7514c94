"""Which parts of cobell's runtime model earn their parameters out of sample (issues 23 and 34).

    python -m bench.selection [--quick] [--processes N] [--seeds N] [--only PREFIX]
                              [--cache DIR] [--output FILE]

Each variant is cobell's whole fitting procedure (every CV choice inside it included) with one
component switched off, offered, or forced, scored on runs none of its choices saw, so every
number is the error of the selection procedure itself, not the optimistic CV score of its
pick; beside them the CoBell paper's model fitted as published, all parameters at once
(bench/joint_fit.py), its form fitted by cobell's alternating NNLS, and Bell:

* real: the project's recorded co-location runs (history/colocation-local.csv, the tuning set),
  each run predicted by a model fitted on all the others (leave-one-run-out around the whole
  procedure: nested CV); also its runs with at most one co-runner, the issue's held-out design;
  and history/profiles-local.csv (issue 28's dev set: four job kinds alone and in pairs), each
  job's runs left out one at a time;
* bell: the Bell authors' runs (../shared/data/bell, no co-runners), histories of 6, 12 and 24
  runs drawn at random, every other run of the job the test set;
* simulator / nodesim: bench.coverage's worlds (not cobell's formula), targets sgd and kmeans,
  histories of 12, 24 and 50 runs meeting 0-3 co-runner apps from a pool of 2 or 20 co-runner
  jobs, scored on 40 fresh runs with co-runners at their measured overlaps.

Per data set: the mean absolute percentage error over its test runs, and each variant's
difference to cobell with its standard error over the histories (tasks): a component whose
removal does not make the error worse by more than that standard error anywhere does not earn
its parameters; a second table lists, per variant, where it and the default differ so.
"""

from __future__ import annotations

import argparse
import hashlib
import pickle
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import BELL_DATA, publish
from cobell_cli.core.model.evaluate import PAPER_FIT

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "selection.md"
PROFILES = ROOT / "history" / "profiles-local.csv"
JOINT = "CoBell (paper's joint fit)"
# Each row names what it changes against the default: "-" a default component switched off,
# "+" a candidate offered to the CV (or switched on), "... always" a CV choice forced.
VARIANTS: dict[str, dict[str, Any] | None] = {
    "cobell": {},
    "lowest CV error (no one-SE rule)": {"selection": "best"},
    "+ bisquare reweighting": {"reweigh": True},
    "+ broken line (CV)": {"alone_curve": "auto"},
    "broken line always": {"alone_curve": "broken-line"},
    "before (issue 34: + both)": {"reweigh": True, "alone_curve": "auto"},
    "+ combination rules (CV)": {"combination": "auto"},
    "a always (- b/x)": {"scaled": False},
    "b/x always": {"scaled": True},
    "+ size weights (CV)": {"sized": None},
    "- pooling": {"pooling": False},
    "- LLR": {"llr": False},
    "- power-law extrapolation": {"power_law": False},
    "- cliff detection": {"regimes": False},
    "- repetition outliers": {"repetition_outliers": False},
    "CoBell (paper's form, alternating fit)": PAPER_FIT,
    JOINT: None,
    "Bell": None,
}
DESCRIPTION = (
    "Each variant is cobell's whole fitting procedure (every CV choice inside it) with one "
    "component switched off (-), offered to its CV (+, where it has one; else switched on) "
    "or forced (always), scored on runs none of its choices saw: the error of the selection "
    "procedure itself. Beside them the CoBell paper's model fitted as published, all "
    "parameters at once by bounded least squares (bench/joint_fit.py), its form fitted by "
    "cobell's alternating NNLS, and Bell. **real**: history/colocation-local.csv (the tuning "
    "set), leave-one-run-out around the whole procedure (nested CV), all runs and the runs "
    "with at most one co-runner (the issue's held-out design); history/profiles-local.csv "
    "(issue 28's dev set), each job's runs left out in turn. **bell**: the Bell authors' "
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
    overlaps = [dict(r.get("overlaps") or {}) for r in test]
    if variant == JOINT:
        from bench.joint_fit import fit_joint

        return np.asarray(fit_joint(train).predict(xs, overlaps), float)
    params = VARIANTS[variant]
    if params is None:
        return np.asarray(fit_bell(train).predict(xs), float)
    return np.asarray(fit_runtime_model(train, **params).predict(xs, overlaps), float)


def score(task: Task) -> dict[str, np.ndarray]:
    """APE % of every test run, per variant."""
    y = np.array([r["runtime_s"] for r in task.test], float)
    return {v: np.abs(predict(v, task.train, task.test) / y - 1.0) * 100.0 for v in VARIANTS}


def real_tasks(path: Path) -> list[Task]:
    from bench.real_colocation import at_most_one_co_runner, load_runs

    runs = load_runs(path)
    out = []
    for name, rows in (("real: all runs", runs), ("real: <= 1 co-runner",
                                                   at_most_one_co_runner(runs))):
        out += _left_out(name, rows)
    return out


def profile_tasks(path: Path) -> list[Task]:
    """Leave one run out per job of a recorded profiles history (history/record-profiles.py:
    four job kinds alone and in pairs, each job's runs beside the other three kinds)."""
    from bench.real_colocation import job_names, load_runs

    out = []
    for job in job_names(path):
        out += _left_out("real: profiles dev", load_runs(path, job), f"{job} ")
    return out


def _left_out(dataset: str, rows: Sequence[Mapping[str, Any]], prefix: str = "") -> list[Task]:
    rows = list(rows)
    return [Task(dataset, f"{prefix}run {i}", rows[:i] + rows[i + 1:], [run])
            for i, run in enumerate(rows)]


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


def evaluate(tasks: Sequence[Task], processes: int, cache: Path | None = None,
             ) -> list[dict[str, np.ndarray]]:
    """Every task's scores; with `cache`, a task scored before (same data set and label,
    same variants) is read from there and a new one written, so a long run can be made in
    chunks (--only) and rendered whole at the end."""
    done = {i: _cached(cache, t) for i, t in enumerate(tasks)} if cache else {}
    todo = [t for i, t in enumerate(tasks) if done.get(i) is None]
    if processes <= 1:
        fresh = [score(t) for t in todo]
    else:
        with ProcessPoolExecutor(processes) as pool:
            fresh = list(pool.map(score, todo, chunksize=4))
    if cache:
        for t, s in zip(todo, fresh, strict=True):
            _cache_path(cache, t).write_bytes(pickle.dumps(s))
    it = iter(fresh)
    return [done[i] if done.get(i) is not None else next(it) for i in range(len(tasks))]


def _cache_path(cache: Path, task: Task) -> Path:
    key = hashlib.sha256(repr((task.dataset, task.label, list(VARIANTS))).encode()).hexdigest()
    return cache / f"{key[:24]}.pickle"


def _cached(cache: Path, task: Task) -> dict[str, np.ndarray] | None:
    path = _cache_path(cache, task)
    return pickle.loads(path.read_bytes()) if path.is_file() else None


def render(tasks: Sequence[Task], scores: Sequence[Mapping[str, np.ndarray]], command: str,
           elapsed_s: float) -> str:
    datasets = list(dict.fromkeys(t.dataset for t in tasks))
    by_set = {d: [s for t, s in zip(tasks, scores, strict=True) if t.dataset == d]
              for d in datasets}
    lines = ["# Which parts of the runtime model earn their parameters", "",
             f"Command: `{command}` ({elapsed_s:.0f} s).", "", DESCRIPTION, "",
             "Mean APE % over the data set's test runs; in brackets the variant minus cobell "
             "(percentage points) ± its standard error over the histories. Positive: the "
             "default is better than the variant there.", "",
             "| variant | " + " | ".join(datasets) + " |",
             "|---|" + "---:|" * len(datasets)]
    verdicts = []
    for v in VARIANTS:
        cells, better, worse = [], [], []
        for d in datasets:
            mean = float(np.mean(np.concatenate([r[v] for r in by_set[d]])))
            if v == "cobell":
                cells.append(f"{mean:.2f}")
                continue
            diff, se = paired(by_set[d], v)
            cells.append(f"{mean:.2f} ({diff:+.2f} ± {se:.2f})")
            if diff > se:
                better.append(d)
            elif diff < -se:
                worse.append(d)
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
        if v != "cobell":
            verdicts.append(f"| {v} | {', '.join(better) or '-'} | {', '.join(worse) or '-'} |")
    lines += ["", "Histories per data set: " + ", ".join(
        f"{d} {len(by_set[d])}" for d in datasets) + ".", "",
        "## Where the default and each variant differ by more than one standard error", "",
        "The rule (CONVENTIONS, Models): a default component stays only where removing it "
        "costs more than a standard error somewhere and it costs as much nowhere; an offered "
        "one joins the default only where it wins so.", "",
        "| variant | default better by > 1 SE on | variant better by > 1 SE on |",
        "|---|---|---|", *verdicts]
    return "\n".join(lines) + "\n"


def paired(rows: Sequence[Mapping[str, np.ndarray]], variant: str) -> tuple[float, float]:
    """Mean over the histories of the variant's mean APE minus cobell's, and its standard
    error."""
    diff = np.array([r[variant].mean() - r["cobell"].mean() for r in rows])
    se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else 0.0
    return float(diff.mean()), se


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
    parser.add_argument("--profiles", type=Path, default=PROFILES,
                        help="a recorded profiles history (every job left one run out)")
    parser.add_argument("--data", type=Path, default=BELL_DATA)
    parser.add_argument("--only", action="append", default=None, metavar="PREFIX",
                        help="keep the data sets whose name starts so (repeatable), e.g. real; "
                        "writes nothing")
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR",
                        help="keep each history's scores in DIR and reuse them (run in chunks "
                        "with --only, then once without it to write the whole table)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    tasks = real_tasks(args.history)
    if args.profiles.is_file():
        tasks += profile_tasks(args.profiles)
    if args.quick:
        tasks = [t for t in tasks if t.dataset == "real: <= 1 co-runner"]
        tasks += [t for t in bell_tasks(args.data, 2) if t.dataset == "bell: 12 runs"]
        tasks += sim_tasks(args.data, 1, ("simulator",))
    else:
        tasks += bell_tasks(args.data, args.draws)
        tasks += sim_tasks(args.data, args.seeds, ("simulator", "nodesim"))
    if args.only:
        tasks = [t for t in tasks if t.dataset.startswith(tuple(args.only))]
    if args.cache:
        args.cache.mkdir(parents=True, exist_ok=True)
    scores = evaluate(tasks, args.processes, args.cache)
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.selection", *given])
    if args.cache:
        command += " (its histories scored in chunks: the same command with --only)"
    text = render(tasks, scores, command, time.perf_counter() - started)
    publish(text, None if args.quick or args.only else args.output)


if __name__ == "__main__":
    main()
