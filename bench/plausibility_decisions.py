"""Does one run move the plan? Bell's sgd and a stand-in success, then any run in any history.

    python -m bench.plausibility_decisions case [--rows FILE.json]
    python -m bench.plausibility_decisions moves --sets PREFIX [PREFIX ...] [--seeds N]
                                                 [--rows FILE.json]
    python -m bench.plausibility_decisions table FILE.json [...] [--output FILE]

Every plan is `api.predict` (what `cobell predict --cluster none` calls) on a real SQLite
history; every added run is written the way `cobell submit` writes its completion
(History.start_run, then complete_run, which judges it in the same write). "Without the
test" is the same history after `history include` of the added run (what main did before
the test: the run steers).

case: the issue's failure. Bell's sgd (105 runs, imported with --runtime-unit ms) planned at
200 s, then one success at the planned scale-out of 0 s, 0.00317 s (what `submit -- echo`
recorded) or 0.2 s (`sleep 0.2`): the next plan with the test and without it.

moves: for each history of bench.plausibility.load_sets whose name starts with a PREFIX and
that has at least 11 runs: histories of 10, 30 (where it has more) and all of its runs (random
subsets, --seeds of each; imported judged, as `history import` does), planned at the median
runtime of their runs; one run added at the planned scale-out and at a random one of 1..64,
its runtime each of RUNTIMES (0 s .. 1e6 s). A move is |scale-out after - before| / the
planner's step (candidate steps). The goal (issue 34): no single run moves a history of >= 10
runs by more than one step; flagged runs are this test's part, accepted ones the planner's
(helper `decision`).

table: bench/results/plausibility_decisions.md from the rows.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from bench import publish
from bench.plausibility import DEFAULT_DATA, Runs, load_sets
from cobell_cli import api

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "plausibility_decisions.md"
RUNTIMES = (0.0, 1e-3, 0.2, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1e3, 3e3, 1e4, 1e5, 1e6)
CASE_RUNTIMES = (0.0, 0.00317, 0.2)
HISTORY_SIZES = (10, 30, None)  # None: all of the set's runs
SGD_TARGET_S = 200.0
NOW = 2e9


def settings() -> Any:
    return api.load_settings(cluster="none", allow_no_cluster=True, model_cache=False)


def plan(db: Path, job: str, target_s: float) -> dict[str, Any]:
    """The scale-out, step and feasibility `cobell predict -t TARGET --cluster none` gives."""
    config = settings()
    with api.open_history(db, read_only=True) as history:
        cluster = api.connect_cluster(config, [job])
        chosen = api.predict(history, cluster, config, job=job, target_s=target_s, now=NOW).plan
    return {"scale_out": chosen.scale_out, "step": chosen.step, "feasible": chosen.feasible}


def add_run(db: Path, job: str, scale_out: int, runtime_s: float) -> tuple[int, str | None]:
    """A completion written as `cobell submit` writes it: the id and the reason if kept out."""
    with api.open_history(db) as history:
        run_id = history.start_run(job=job, scale_out=scale_out, started_at=NOW - 600)
        kept_out = history.complete_run(run_id, status="succeeded", runtime_s=runtime_s)
    return run_id, kept_out.get(run_id)


def include(db: Path, run_id: int) -> None:
    with api.open_history(db) as history:
        history.set_excluded([run_id], False)


def trial(base: Path, job: str, target_s: float, before: dict[str, Any], scale_out: int,
          runtime_s: float) -> dict[str, Any]:
    """One run added to a copy of the history at `base`: the plans with and without the test."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "h.db"
        shutil.copy(base, db)
        run_id, reason = add_run(db, job, scale_out, runtime_s)
        after = plan(db, job, target_s)
        without = after
        if reason is not None:
            include(db, run_id)
            without = plan(db, job, target_s)
    step = before["step"] or 1
    return {"at": scale_out, "runtime_s": runtime_s, "flagged": reason is not None,
            "reason": reason, "before": before["scale_out"], "after": after["scale_out"],
            "without": without["scale_out"], "feasible_after": after["feasible"],
            "feasible_without": without["feasible"],
            "moved": abs(after["scale_out"] - before["scale_out"]) / step,
            "moved_without": abs(without["scale_out"] - before["scale_out"]) / step}


def base_history(db: Path, job: str, runs: Runs) -> None:
    """The runs imported as `history import` imports a file: judged against each other."""
    records = [{"job": job, "status": "succeeded", "scale_out": int(x), "runtime_s": y,
                "started_at": NOW - 3600 * (len(runs) - i)} for i, (x, y, _) in enumerate(runs)]
    with api.open_history(db) as history:
        history.insert_runs(records, judge=True)


def case(data: Path) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "h.db"
        with api.open_history(db) as history:
            api.import_file(history, data / "sgd.spark.csv", job="sgd", runtime_unit="ms")
        before = plan(db, "sgd", SGD_TARGET_S)
        for runtime_s in CASE_RUNTIMES:
            row = trial(db, "sgd", SGD_TARGET_S, before, before["scale_out"], runtime_s)
            rows.append({"part": "case", "set": "bell/sgd", "runs": 105,
                         "target_s": SGD_TARGET_S, "feasible_before": before["feasible"],
                         **row})
    return rows


def moves(sets: dict[str, Runs], prefixes: Sequence[str], seeds: int) -> list[dict[str, Any]]:
    rows = []
    for name, runs in sets.items():
        if not name.startswith(tuple(prefixes)) or len(runs) < 11:
            continue
        job = name.split("/")[-1] or "job"
        for size in (s for s in HISTORY_SIZES if s is None or s < len(runs)):
            for seed in range(seeds if size is not None else 1):
                rows += _moves_of(name, job, runs, size, seed)
    return rows


def _moves_of(name: str, job: str, runs: Runs, size: int | None, seed: int
              ) -> list[dict[str, Any]]:
    rng = np.random.default_rng(1000 * seed + (size or 0))
    chosen = sorted(rng.choice(len(runs), size, replace=False)) if size else range(len(runs))
    base_runs = [runs[i] for i in chosen]
    target_s = float(median(y for _, y, _ in base_runs))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "h.db"
        base_history(db, job, base_runs)
        before = plan(db, job, target_s)
        for at in dict.fromkeys((before["scale_out"], int(rng.integers(1, 65)))):
            for runtime_s in RUNTIMES:
                row = trial(db, job, target_s, before, at, runtime_s)
                rows.append({"part": "moves", "set": name, "runs": len(base_runs),
                             "size": size, "seed": seed, "target_s": target_s,
                             "feasible_before": before["feasible"], **row})
    return rows


def render(rows: Sequence[dict[str, Any]], commands: Sequence[str]) -> str:
    lines = ["# One run and the plan: Bell's sgd after a stand-in success, and any run in any "
             "history", "", "Commands (bench/plausibility_decisions.py):", ""]
    lines += [f"    {c}" for c in commands]
    lines += ["", "## The issue's case: Bell's sgd (105 runs) at 200 s, one success added at "
              "the planned scale-out", "",
              "| runtime added | flagged | before | after (with the test) | without the test |",
              "|---|---|---|---|---|"]
    for r in (r for r in rows if r["part"] == "case"):
        lines.append(f"| {r['runtime_s']:g} s | {'yes' if r['flagged'] else 'no'} | "
                     f"{_plan(r['before'], r['feasible_before'])} | "
                     f"{_plan(r['after'], r['feasible_after'])} | "
                     f"{_plan(r['without'], r['feasible_without'])} |")
    moved = [r for r in rows if r["part"] == "moves"]
    histories = {(r["set"], r["size"], r["seed"]) for r in moved}
    lines += ["", "## Any run (0 s .. 1e6 s) added to a history of >= 10 runs", "",
              f"{len(moved)} runs added to {len(histories)} histories. Moved: candidate steps"
              " between the plans before and after.", "",
              "| runtime added | runs added | flagged | moved > 1 step: flagged, with the test "
              "| accepted (the planner's part) | all, without the test | most steps without |",
              "|---|---|---|---|---|---|---|"]
    groups = [(f"{t:g} s", [r for r in moved if r["runtime_s"] == t]) for t in RUNTIMES]
    for label, at in [*groups, ("**all**", moved)]:
        if at:
            lines.append(_moves_row(label, at))
    far = [r for r in moved if not r["flagged"] and r["moved"] > 1]
    lines += ["", "Accepted runs that moved the plan by more than one step (the planner's "
              "part, issue 34 item 1):", ""]
    lines += [f"- {r['set']} ({r['runs']} runs, target {r['target_s']:.0f} s): "
              f"{r['runtime_s']:g} s at {r['at']}: {r['before']} -> {r['after']}"
              for r in far] or ["- none"]
    return "\n".join(lines) + "\n"


def _moves_row(label: str, at: Sequence[dict[str, Any]]) -> str:
    """One row of the moves table: the runs added at one runtime (or all of them)."""
    flagged = [r for r in at if r["flagged"]]
    accepted = [r for r in at if not r["flagged"]]
    return (f"| {label} | {len(at)} | {len(flagged)} | "
            f"{sum(r['moved'] > 1 for r in flagged)} | "
            f"{sum(r['moved'] > 1 for r in accepted)} of {len(accepted)} | "
            f"{sum(r['moved_without'] > 1 for r in at)} | "
            f"{max(r['moved_without'] for r in at):g} |")


def _plan(scale_out: int, feasible: bool) -> str:
    return f"{scale_out}" + ("" if feasible else " (no scale-out meets the target)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.plausibility_decisions",
                                     description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    c = sub.add_parser("case")
    c.add_argument("--data", type=Path, default=DEFAULT_DATA)
    c.add_argument("--rows", type=Path)
    m = sub.add_parser("moves")
    m.add_argument("--sets", nargs="+", required=True)
    m.add_argument("--seeds", type=int, default=1)
    m.add_argument("--data", type=Path, default=DEFAULT_DATA)
    m.add_argument("--rows", type=Path)
    t = sub.add_parser("table")
    t.add_argument("files", type=Path, nargs="+")
    t.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.part == "table":
        saved = [json.loads(f.read_text()) for f in args.files]
        text = render([r for s in saved for r in s["rows"]], [s["command"] for s in saved])
        publish(text, args.output)
        return
    started = time.perf_counter()
    if args.part == "case":
        rows = case(args.data)
        command = "python -m bench.plausibility_decisions case"
    else:
        rows = moves(load_sets(args.data), args.sets, args.seeds)
        command = (f"python -m bench.plausibility_decisions moves --sets {' '.join(args.sets)}"
                   f" --seeds {args.seeds}")
    elapsed = time.perf_counter() - started
    saved = {"command": f"{command}  # {elapsed:.0f} s", "rows": rows}
    if args.rows:
        args.rows.write_text(json.dumps(saved, indent=1))
    print(render(rows, [saved["command"]]))


if __name__ == "__main__":
    main()
