"""Leave-one-run-out accuracy on real co-location runs recorded on the local Spark cluster.

    python -m bench.real_colocation [--history FILE ...] [--quick]

The sets, side by side: history/colocation-local.csv, the tuning set (every constant and
choice of the model was made looking at it), and history/colocation-test.csv, recorded after
the method was frozen (other job parameters, one co-runner at a time, six one-core workers,
another machine load; history/record-colocation.py says how); and issue 28's profile sets
(history/profiles-local.csv, dev; history/profiles-local-test.csv, test; record-profiles.py:
four job kinds alone and in pairs), where every job's runs are left out in turn.

The history (recorded by history/record-colocation.py, every run through `cobell submit`) is
imported into a fresh SQLite file by the CLI's own import and read back with the query
planning uses (`History.training_runs`), so the runs and their measured overlaps are exactly
what `cobell predict` would fit. For every run of the target job, each model is fitted on all
the other runs of that job and predicts the left-out run at its scale-out and its *measured*
overlap ratios (the model's accuracy, apart from the overlap prediction):

* cobell: `fit_runtime_model` with its defaults (what predict/submit fit);
* CoBell (paper's joint fit): the published model as the paper fits it, Ernest's curve times
  additive a + b/x per co-runner, all parameters at once by bounded least squares
  (bench/joint_fit.py, scipy's trust-region reflective solver, as curve_fit with bounds);
* CoBell (paper's form, alternating fit): the same form fitted by cobell's alternating NNLS
  and then its curve selection, unpooled (`RuntimeModel(combination="additive", scaled=True,
  pooling=False, propagate=False, alone_curve="ernest")`);
* Bell: Bell's model selection on every run, co-runners ignored (`fit_bell`);
* Ernest: Ernest's NNLS curve on every run, co-runners ignored (`fit_ernest`).

The tuning set is also reported restricted to its runs with at most one co-runner (the test
set's design; models fitted on that subset only). Per set, the paired difference cobell minus
the paper's joint fit, with its standard error over runs, says whether a gap is more than
noise.

Goals: cobell's mean error <= GOAL_RATIO x the paper's joint fit's on every set (issue 34),
and <= 4 % mean leave-one-run-out MAPE (issue 13). Writes bench/results/real_colocation.md
(nothing with --quick, which uses the first 12 runs of each job and set).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import publish
from bench.joint_fit import fit_joint
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.model.baselines import fit_bell, fit_ernest
from cobell_cli.core.model.evaluate import PAPER_FIT

ROOT = Path(__file__).resolve().parents[1]
HISTORY = ROOT / "history" / "colocation-local.csv"
TEST_HISTORY = ROOT / "history" / "colocation-test.csv"
PROFILES = ROOT / "history" / "profiles-local.csv"
PROFILES_TEST = ROOT / "history" / "profiles-local-test.csv"
PROFILES_CHECK = ROOT / "history" / "profiles-local-check.csv"
PROFILES_FRESH = ROOT / "history" / "profiles-local-fresh.csv"
SETS = {"tuning": HISTORY, "test": TEST_HISTORY, "profiles dev": PROFILES,
        "profiles test": PROFILES_TEST, "profiles check": PROFILES_CHECK,
        "profiles fresh": PROFILES_FRESH}
RESULTS = ROOT / "bench" / "results" / "real_colocation.md"
TARGET_JOB = "colo-target"
GOAL_MAPE = 4.0
GOAL_RATIO = 0.95  # cobell's mean APE over the paper's joint fit's, on every set (issue 34)
COBELL, JOINT, ALTERNATING = "cobell", "CoBell (paper's joint fit)", \
    "CoBell (paper's form, alternating fit)"
BELL, ERNEST = "Bell (co-runners ignored)", "Ernest (co-runners ignored)"

Runs = Sequence[Mapping[str, Any]]
Predictor = Callable[[Runs, Mapping[str, Any]], float]


def load_runs(csv_path: Path, job: str = TARGET_JOB) -> list[dict[str, Any]]:
    """The job's training runs, read through the CLI's import and planning query."""
    from cobell_cli.cli import main
    from cobell_cli.store.history import History

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "history.db"
        try:
            main(["--db", str(db), "history", "import", str(csv_path)])
        except SystemExit as exc:
            if exc.code:
                raise SystemExit(f"cannot import {csv_path} (exit {exc.code})") from None
        with History.open(db, read_only=True) as history:
            return list(history.training_runs(job))


def job_names(csv_path: Path) -> list[str]:
    """The jobs whose runs a set predicts: the co-location sets' target (its co-runners'
    runs are there only as co-runners), else every job with a succeeded run."""
    import csv

    with csv_path.open(newline="") as fh:
        jobs = sorted({row["job"] for row in csv.DictReader(fh)
                       if row.get("status") == "succeeded"})
    return [TARGET_JOB] if TARGET_JOB in jobs else jobs


def _cobell(train: Runs, run: Mapping[str, Any]) -> float:
    return float(fit_runtime_model(train).predict([run["scale_out"]], run["overlaps"])[0])


def _paper(train: Runs, run: Mapping[str, Any]) -> float:
    model = fit_runtime_model(train, **PAPER_FIT)
    return float(model.predict([run["scale_out"]], run["overlaps"])[0])


def _joint(train: Runs, run: Mapping[str, Any]) -> float:
    return float(fit_joint(train).predict([run["scale_out"]], run["overlaps"])[0])


def _bell(train: Runs, run: Mapping[str, Any]) -> float:
    return float(fit_bell(train).predict([run["scale_out"]])[0])


def _ernest(train: Runs, run: Mapping[str, Any]) -> float:
    return float(fit_ernest(train).predict([run["scale_out"]])[0])


PREDICTORS: dict[str, Predictor] = {COBELL: _cobell, JOINT: _joint, ALTERNATING: _paper,
                                    BELL: _bell, ERNEST: _ernest}


def leave_one_out(runs: Runs, predictors: Mapping[str, Predictor] = PREDICTORS,
                  ) -> dict[str, np.ndarray]:
    """Absolute percentage error of each left-out run, per model."""
    errors: dict[str, list[float]] = {name: [] for name in predictors}
    for i, run in enumerate(runs):
        train = [r for j, r in enumerate(runs) if j != i]
        for name, predict in predictors.items():
            errors[name].append(abs(predict(train, run) / run["runtime_s"] - 1.0) * 100.0)
    return {name: np.asarray(e) for name, e in errors.items()}


def set_errors(groups: Sequence[Runs], predictors: Mapping[str, Predictor] = PREDICTORS,
               ) -> dict[str, np.ndarray]:
    """leave_one_out within each job's runs, the jobs' errors one after the other."""
    parts = [leave_one_out(runs, predictors) for runs in groups]
    return {name: np.concatenate([p[name] for p in parts]) for name in predictors}


def repetition_floor(runs: Runs) -> np.ndarray:
    """APE of each run without co-runners predicted by the mean of the other such runs at its
    scale-out: the machine's own run-to-run noise, which no model of scale-out and overlap
    can predict (runs alone only; with co-runners the overlaps differ run to run)."""
    alone = [r for r in runs if _kind(r) == "alone"]
    out = []
    for i, run in enumerate(alone):
        others = [r["runtime_s"] for j, r in enumerate(alone)
                  if j != i and r["scale_out"] == run["scale_out"]
                  and r.get("job") == run.get("job")]
        if others:
            out.append(abs(float(np.mean(others)) / run["runtime_s"] - 1.0) * 100.0)
    return np.asarray(out)


def _kind(run: Mapping[str, Any]) -> str:
    names = sorted(k for k, v in run["overlaps"].items() if v > 0)
    return "+".join(str(n) for n in names) or "alone"


def report(sets: Mapping[str, tuple[Path, Runs, Mapping[str, np.ndarray]]], elapsed_s: float,
           command: str) -> str:
    lines = [
        "# Real co-location runs: leave-one-run-out accuracy",
        "",
        f"Command: `{command}` ({elapsed_s:.0f} s). Every run through `cobell submit` on the "
        "local Spark standalone cluster (history/record-colocation.py, "
        "history/record-profiles.py). Each model is fitted on the other runs of the same job "
        "(every choice cobell makes by CV included: nested CV of the whole procedure) and "
        "predicts the left-out run at its scale-out and measured overlap ratios. Goals: "
        f"cobell <= {GOAL_RATIO:g} x the paper's joint fit on every set (issue 34); cobell "
        f"<= {GOAL_MAPE:g} % mean (issue 13).",
        "",
        f"| set | history | runs | {COBELL} | {JOINT} | cobell / joint | "
        f"cobell <= {GOAL_RATIO:g} x joint | cobell - joint (SE) | {ALTERNATING} | {BELL} | "
        f"{ERNEST} | repetition noise |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for name, (path, runs, errors) in sets.items():
        cob, joint = errors[COBELL].mean(), errors[JOINT].mean()
        floor = repetition_floor(runs)
        noise = f"{floor.mean():.2f}" if floor.size else "-"
        lines.append(f"| {name} | `{_rel(path)}` | {len(runs)} | {cob:.2f} | {joint:.2f} | "
                     f"{cob / joint:.3f} | {'yes' if cob <= GOAL_RATIO * joint else 'no'} | "
                     f"{_paired(errors)} | {errors[ALTERNATING].mean():.2f} | "
                     f"{errors[BELL].mean():.2f} | {errors[ERNEST].mean():.2f} | {noise} |")
    lines += ["", "Mean APE %. Repetition noise: the runs without co-runners, each predicted by "
              "the mean of the other repetitions of its job at its scale-out (what no model of "
              "scale-out and overlap can predict). cobell - joint: the paired mean difference "
              "of the two APEs over the set's runs (standard error in brackets).", "",
              "Fitted on: every constant and every default choice of cobell was made looking "
              "at the tuning set and the profiles dev set as first recorded (under load, "
              "median 30.6; replaced on 29 Nov 2026 by a quiet re-recording of the same 36 "
              "cells, on which no constant was fitted and issue 34's ablation, "
              "bench/results/real_ablation.md, kept every default component) (and at "
              "bench.selection's simulated "
              "worlds and Bell histories; the interference fit's default, issue 34, on "
              "bench/results/selection.md); the test sets were recorded after a freeze and "
              "are used for nothing but this table and that ablation (which changed no "
              "default). The paper's fits, Bell and Ernest have no "
              "constants tuned on any set.", "",
              "Profiles test is no longer held out for the three-scale-out interpolation "
              "(the broken line through the levels, Nov 2026): that fix was motivated by "
              "diagnosing profiles test's runs (its scale-out 4 is slower than 2 on the 2-core "
              "machine, which no monotone curve follows); its rule and constants were checked "
              "on profiles dev, but profiles test now counts only as development evidence "
              "for it.", "",
              "Profiles check (history/record-profiles.py --set check: seed 2030, every kind "
              "alone at 1 executor, every pair twice, other sizes) was recorded quietly on 29 "
              "Nov 2026 for the interference fit of a job never run alone (issue 34) and read "
              "only after that candidate was committed; no default was chosen on it.", "",
              "Profiles fresh (history/record-profiles.py --set fresh: seed 2031, every kind "
              "alone at 1, 2 and 4 executors, every pair twice, other sizes) was recorded "
              "quietly on 1 Dec 2026 to settle two default components the sets recorded after "
              "them disagreed on, by a rule fixed before it was recorded "
              "(bench/results/real_ablation.md: the level line and the repetition outliers "
              "both stay); no default was chosen on it otherwise."]
    for name, (path, runs, errors) in sets.items():
        lines += ["", f"## {name}: `{_rel(path)}`", "", *_set_tables(path, runs, errors)]
    return "\n".join(lines) + "\n"


def _paired(errors: Mapping[str, np.ndarray]) -> str:
    """Mean of cobell's APE minus the paper's joint fit's, run by run, and its standard
    error."""
    diff = errors[COBELL] - errors[JOINT]
    se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
    return f"{diff.mean():+.2f} ({se:.2f})"


def at_most_one_co_runner(runs: Runs) -> list[Mapping[str, Any]]:
    """The runs alone or with a single co-runner (the test set's and the held-out set's design)."""
    return [r for r in runs if sum(1 for v in r["overlaps"].values() if v > 0) <= 1]


def _recording_load(path: Path) -> str:
    """The machine's 1-minute load average while the history was recorded (the recorder's
    side file next to it, one line per cell), or '' without one."""
    side = path.with_suffix(".meta.jsonl")
    if not side.is_file():
        return ""
    loads = [json.loads(line)["load_before"] for line in side.read_text().splitlines() if line]
    if not loads:
        return ""
    return (f"Machine load while recording (1-minute load average before each of the "
            f"{len(loads)} cells, 2 cores): median {np.median(loads):.1f}, range "
            f"{min(loads):.1f}-{max(loads):.1f}.")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _set_tables(path: Path, runs: Runs, errors: Mapping[str, np.ndarray]) -> list[str]:
    kinds = [_kind(r) for r in runs]
    lines = [f"{len(runs)} runs at scale-outs {sorted({int(r['scale_out']) for r in runs})}.",
             "", "| model | mean APE % | median APE % | p90 APE % | max APE % |",
             "|---|---:|---:|---:|---:|"]
    for name, e in errors.items():
        lines.append(f"| {name} | {e.mean():.2f} | {np.median(e):.2f} | "
                     f"{np.percentile(e, 90):.2f} | {e.max():.2f} |")
    lines += ["", "By co-runners (mean APE %):", "",
              "| co-runners | runs | " + " | ".join(errors) + " |",
              "|---|---:|" + "---:|" * len(errors)]
    for kind in sorted(set(kinds), key=lambda k: (k != "alone", k)):
        mask = np.array([k == kind for k in kinds])
        cells = " | ".join(f"{e[mask].mean():.2f}" for e in errors.values())
        lines.append(f"| {kind} | {int(mask.sum())} | {cells} |")
    load = _recording_load(path)
    if load:
        lines += ["", load]
    floor = repetition_floor(runs)
    if floor.size:
        lines += ["", f"Run-to-run noise: the {floor.size} runs without co-runners, each "
                  "predicted by the mean of the other repetitions at its scale-out: mean APE "
                  f"{floor.mean():.2f} %, median {np.median(floor):.2f} %, max "
                  f"{floor.max():.2f} % (the models' errors on the same runs: row 'alone')."]
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.real_colocation",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=Path, action="append", default=None,
                        help="a recorded history (repeatable; default: the tuning and test "
                        "sets and the profile sets)")
    parser.add_argument("--quick", action="store_true",
                        help="12 runs a job and set, writes nothing")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    known = {path: name for name, path in SETS.items()}
    paths = ({known.get(p.resolve(), p.stem): p for p in args.history} if args.history
             else {k: p for k, p in SETS.items() if p.is_file()})
    missing = [p for p in paths.values() if not p.is_file()]
    if missing or not paths:
        raise SystemExit(f"no history at {missing[0] if missing else HISTORY}: run "
                         "history/record-colocation.py")
    started = time.perf_counter()
    sets = {}
    for name, path in paths.items():
        groups = [load_runs(path, job)[:12] if args.quick else load_runs(path, job)
                  for job in job_names(path)]
        sets[name] = (path, [r for g in groups for r in g], set_errors(groups))
        single = [at_most_one_co_runner(g) for g in groups]
        if name == "tuning" and sum(map(len, single)) < sum(map(len, groups)):
            sets[f"{name}, <= 1 co-runner"] = (path, [r for g in single for r in g],
                                               set_errors(single))
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.real_colocation", *given])
    text = report(sets, time.perf_counter() - started, command)
    publish(text, None if args.quick else args.output)


if __name__ == "__main__":
    main()
