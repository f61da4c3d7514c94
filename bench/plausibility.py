"""Which real runs the plausibility test flags, and which wild ones it catches.

    python -m bench.plausibility [--seeds N] [--quick] [--data DIR] [--output FILE]

Real runs: every succeeded run of Bell's six jobs (../shared/data/bell, 105 isolated runs
each) and of every job in history/*.csv (real co-located runs recorded by cobell, and the
synthetic example), judged the two ways the history judges them:

- import: all of a job's runs at once, each against the others (`history import`);
- record: one run at a time against the runs before it that were kept (`cobell submit`),
  in the recorded order for history/*.csv, in --seeds random orders for Bell's files
  (they are sorted by scale-out).

A flag on a real run is a false flag unless the run is genuinely implausible; each one is
listed with its reason. Wild runs: for each job with at least 10 runs, histories of 10, 30
and all-but-one of its runs (random subsets, --seeds of each), each with one run added at a
scale-out the job ran, its runtime a factor times the median there, from 0 s to 1e6 s; the
share flagged per factor is what the test catches.

The constants were chosen on the TUNING jobs and are reported on the HELD_OUT ones: the grid
below the tables shows the tuning set's false flags and catches for each choice around them.
Writes bench/results/plausibility.md.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import itertools
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import publish
from cobell_cli.core import plausibility
from cobell_cli.core.plausibility import JobRuntimes

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "bell"
RESULTS = ROOT / "bench" / "results" / "plausibility.md"
BELL_FILES = {"grep": "grep.spark.csv", "kmeans": "kmeans.flink.csv", "sgd": "sgd.spark.csv",
              "pagerank": "pagerank.spark.csv", "tpchq10": "tpchq10.flink.csv",
              "wordcount": "wordcount.flink.csv"}
TUNING = ("bell/grep", "bell/kmeans", "bell/sgd", "colocation-local.csv/")
FACTORS = (0.0, 1e-3, 0.01, 0.1, 0.25, 0.4, 3.0, 10.0, 30.0, 1e3)
HISTORY_SIZES = (10, 30, None)  # None: all runs but the one added
# One constant at a time around the chosen ones (a full grid takes too long on 2 cores).
GRID = {"FASTER": (1.25, 1.5, 3.0), "SLOWER": (5.0, 20.0), "SCALES": (2.0, 3.0)}

Runs = list[tuple[float, float, bool]]  # (scale_out, runtime_s, co-located), recorded order


def load_sets(data: Path) -> dict[str, Runs]:
    """Every real job's succeeded runs: Bell's files, then each job of history/*.csv."""
    sets: dict[str, Runs] = {}
    for job, name in BELL_FILES.items():
        with (data / name).open() as fh:
            rows = list(csv.reader(fh))[1:]
        sets[f"bell/{job}"] = [(float(x), float(ms) / 1000, False) for x, ms in rows]
    for path in sorted((ROOT / "history").glob("*.csv")):
        with path.open() as fh:
            for row in csv.DictReader(fh):
                if row["status"] == "succeeded":
                    key = f"{path.name}/{row['job']}"
                    sets.setdefault(key, []).append((float(row["scale_out"]),
                                                     float(row["runtime_s"]),
                                                     bool(row["colocations"])))
    return sets


def tuning(name: str) -> bool:
    return any(name == t or (t.endswith("/") and name.startswith(t)) for t in TUNING)


def flags_import(runs: Runs) -> list[str]:
    """The reasons of the runs an import of all of them at once flags."""
    norm = summary(runs)
    verdicts = (norm.judge(x, y, member=True) for x, y, _ in runs)
    return [v.reason or "" for v in verdicts if not v.plausible]


def summary(runs: Runs) -> JobRuntimes:
    return JobRuntimes([x for x, _, _ in runs], [y for _, y, _ in runs],
                       [co for _, _, co in runs])


def flags_record(runs: Runs, order: Sequence[int]) -> list[str]:
    """The reasons of the runs flagged when recorded one at a time in `order`."""
    kept: Runs = []
    flagged = []
    for i in order:
        verdict = summary([*kept, runs[i]]).judge(*runs[i][:2], member=True)
        if verdict.plausible:
            kept.append(runs[i])
        else:
            flagged.append(verdict.reason or "")
    return flagged


def orders(name: str, n: int, seeds: int) -> list[list[int]]:
    if not name.startswith("bell/"):
        return [list(range(n))]
    return [list(np.random.default_rng(seed).permutation(n)) for seed in range(1, seeds + 1)]


def false_flags(sets: dict[str, Runs], seeds: int) -> list[dict[str, object]]:
    rows = []
    for name, runs in sets.items():
        recorded = [flags_record(runs, o) for o in orders(name, len(runs), seeds)]
        rows.append({"set": name, "tuning": tuning(name), "runs": len(runs),
                     "import": flags_import(runs), "record": recorded})
    return rows


def catches(runs: Runs, seeds: int) -> dict[tuple[int | None, float], list[bool]]:
    """For each history size and factor, whether each added wild run was flagged."""
    x = np.array([a for a, _, _ in runs])
    y = np.array([b for _, b, _ in runs])
    levels = list(np.unique(x))
    median = {v: float(np.median(y[x == v])) for v in levels}
    out: dict[tuple[int | None, float], list[bool]] = {}
    for size, seed in itertools.product(HISTORY_SIZES, range(seeds)):
        rng = np.random.default_rng(1000 * seed + (size or 0))
        n = len(runs) - 1 if size is None else size
        if n > len(runs) - 1:
            continue
        chosen = rng.choice(len(runs), n, replace=False)
        at = float(levels[rng.integers(len(levels))])
        base = [runs[i] for i in chosen]
        for factor in FACTORS:
            wild = (at, factor * median[at], False)
            flagged = not summary([*base, wild]).judge(*wild[:2], member=True).plausible
            out.setdefault((size, factor), []).append(flagged)
    return out


def catch_table(sets: dict[str, Runs], names: Sequence[str], seeds: int) -> dict:
    total: dict[tuple[int | None, float], list[bool]] = {}
    for name in names:
        if len(sets[name]) < 11:
            continue
        for key, hits in catches(sets[name], seeds).items():
            total.setdefault(key, []).extend(hits)
    return total


@contextlib.contextmanager
def constants(**values: float) -> Iterator[None]:
    """The test's constants set to `values` for a grid point, restored afterwards."""
    before = {k: getattr(plausibility, k) for k in values}
    for k, v in values.items():
        setattr(plausibility, k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            setattr(plausibility, k, v)


def grid(sets: dict[str, Runs], seeds: int) -> list[dict[str, object]]:
    """For the chosen constants and each of them changed alone to the GRID's values: on the
    tuning set, flags of real runs and catches of 0.4x/0.25x and 3x/10x wild runs in
    histories of 10 runs; on the held-out set, flags of real runs."""
    names = [n for n in sets if tuning(n)]
    rows = []
    points = [{}] + [{name: value} for name, values in GRID.items() for value in values]
    for point in points:
        chosen = {name: point.get(name, getattr(plausibility, name)) for name in GRID}
        with constants(**chosen):
            real = false_flags({n: sets[n] for n in names}, seeds)
            held = false_flags({n: r for n, r in sets.items() if n not in names}, seeds)
            wild = catch_table(sets, names, seeds)
        rows.append({**chosen, "tuning": _flags(real), "held_out": _flags(held),
                     **{f"caught {f:g}x": _share(wild.get((10, f), [])) for f in
                        (0.4, 0.25, 3.0, 10.0)}})
    return rows


def _flags(rows: list[dict[str, Any]]) -> str:
    """Flags of real runs over runs judged, counting each recording order."""
    flagged = sum(len(r["import"]) + sum(map(len, r["record"])) for r in rows)
    judged = sum(r["runs"] * (1 + len(r["record"])) for r in rows)
    return f"{flagged} / {judged}"


def _share(hits: Sequence[bool]) -> float:
    return 100.0 * sum(hits) / len(hits) if hits else float("nan")


def render(real: list[dict[str, object]], wild: dict[str, dict], tuned: list[dict],
           command: str, elapsed_s: float) -> str:
    lines = [
        "# Plausibility: which real runs are flagged, which wild ones are caught",
        "",
        f"Command: `{command}` ({elapsed_s:.0f} s). Module doc: bench/plausibility.py; the test:",
        "cobell_cli/core/plausibility.py. Constants: "
        + ", ".join(f"{k} = {getattr(plausibility, k):g}" for k in
                    ("FASTER", "SLOWER", "SCALES", "BEYOND_BOUNDS", "CO_RUNNER_SLOWDOWN",
                     "MIN_RUNS")) + ".",
        "Tuning set: " + ", ".join(TUNING) + " (the constants were chosen there); every "
        "other row is held out.",
        "",
        "## Real runs flagged (import: all at once; record: one at a time, each order)",
        "",
        "| set | tuning | runs | import | record |",
        "|---|---|---|---|---|",
    ]
    for row in real:
        recorded = ", ".join(str(len(r)) for r in row["record"])  # type: ignore[attr-defined]
        lines.append(f"| {row['set']} | {'yes' if row['tuning'] else 'held out'} | "
                     f"{row['runs']} | {len(row['import'])} | {recorded} |")  # type: ignore[arg-type]
    lines += ["", "Each flag on a real run, with the reason cobell stores:", ""]
    for row in real:
        reasons = [*row["import"], *itertools.chain(*row["record"])]  # type: ignore[misc]
        for reason in dict.fromkeys(reasons):
            lines.append(f"- {row['set']}: {reason}")
    lines += ["", "## Wild runs caught (% flagged; one run added at a scale-out the job ran, "
              "runtime = factor x the median there)", ""]
    for label, table in wild.items():
        lines += [f"{label}:", "", "| history | " + " | ".join(f"{f:g}x" for f in FACTORS)
                  + " |", "|---" * (len(FACTORS) + 1) + "|"]
        for size in HISTORY_SIZES:
            cells = [_share(table.get((size, f), [])) for f in FACTORS]
            lines.append(f"| {size or 'all but one'} runs | "
                         + " | ".join(f"{c:.0f}" for c in cells) + " |")
        lines.append("")
    lines += ["## Each constant changed alone, on the tuning set", "",
              "Flags of real runs / runs judged (tuning, and held out); % of wild runs "
              "caught in the tuning jobs' 10-run histories; the first row is the chosen "
              "constants.", "",
              "| FASTER | SLOWER | SCALES | tuning flags | held-out flags | 0.4x | 0.25x | 3x "
              "| 10x |", "|---|---|---|---|---|---|---|---|---|"]
    for row in tuned:
        lines.append(f"| {row['FASTER']:g} | {row['SLOWER']:g} | {row['SCALES']:g} | "
                     f"{row['tuning']} | {row['held_out']} | {row['caught 0.4x']:.0f} | "
                     f"{row['caught 0.25x']:.0f} | {row['caught 3x']:.0f} | "
                     f"{row['caught 10x']:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.plausibility",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true", help="1 seed, no grid, print only")
    args = parser.parse_args(argv)
    seeds = 1 if args.quick else args.seeds
    started = time.perf_counter()
    sets = load_sets(args.data)
    real = false_flags(sets, seeds)
    wild = {
        "Tuning jobs": catch_table(sets, [n for n in sets if tuning(n)], seeds),
        "Held-out jobs": catch_table(sets, [n for n in sets if not tuning(n)], seeds),
    }
    tuned = [] if args.quick else grid(sets, seeds)
    command = "python -m bench.plausibility" + (" --quick" if args.quick else
                                                f" --seeds {seeds}")
    text = render(real, wild, tuned, command, time.perf_counter() - started)
    publish(text, None if args.quick else args.output)


if __name__ == "__main__":
    main()
