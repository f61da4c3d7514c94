"""How late may an app end whose job has no error record? `UNKNOWN_END_LOG_SD`, measured.

    python -m bench.studies.unknown_end [--draws 20] [--output FILE]

core/schedule/risk.py takes the end of an app whose job has fewer than four runs (no
runtime / predicted ratios yet: risk.error_ratios) as log-normal around its predicted end with
sd UNKNOWN_END_LOG_SD. The question that sd answers: how far is a run from the prediction of
a model fitted on 1-3 runs of its job? Here: the Bell authors' runs (../shared/data/bell),
histories of 1, 2 and 3 runs drawn at random (`--draws` per job and size), every other run of
the job predicted by `fit_runtime_model` at its scale-out; the error is log(runtime /
predicted). The sd is fitted on the three Spark jobs as the one whose stretch (the predicted
end times exp(z_0.9 sd), what risk.end_at_level reads at level 0.9) 90 % of their runs ended
by: the errors' 90th percentile / z_0.9 (their root mean square, heavy-tailed, is shown too).
It is checked on the three Flink jobs, which it was not fitted on: the share of their runs
that ended by that stretch, at the fitted sd and at the constant.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import NormalDist

import numpy as np

from bench import publish
from bench.colocation import DEFAULT_DATA
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.schedule.risk import UNKNOWN_END_LOG_SD

SIZES = (1, 2, 3)
LEVEL = 0.9


def runs_of(path: Path) -> list[dict[str, float]]:
    with path.open(newline="") as fh:
        return [{"scale_out": float(r["Nodes"]), "runtime_s": float(r["Runtime"]) / 1000.0}
                for r in csv.DictReader(fh)]


def log_errors(runs: Sequence[Mapping[str, float]], size: int, draws: int, job: str,
               ) -> np.ndarray:
    """log(runtime / predicted) of every run outside each drawn history of `size` runs."""
    out = []
    for seed in range(draws):
        rng = np.random.default_rng([seed, size, len(job)])
        pick = set(int(i) for i in rng.choice(len(runs), size, replace=False))
        model = fit_runtime_model([runs[i] for i in sorted(pick)])
        rest = [r for i, r in enumerate(runs) if i not in pick]
        pred = model.predict([r["scale_out"] for r in rest])
        out.append(np.log(np.array([r["runtime_s"] for r in rest]) / pred))
    return np.concatenate(out)


def ended_share(errors: np.ndarray, sd: float, level: float = LEVEL) -> float:
    """Share of runs that ended by the predicted end stretched to the log-normal's `level`
    quantile (risk.end_at_level, never earlier than the predicted end)."""
    stretch = max(NormalDist().inv_cdf(level) * sd, 0.0)
    return float(np.mean(errors <= stretch))


def sd_for(errors: np.ndarray, level: float = LEVEL) -> float:
    """The sd whose `level` stretch exactly `level` of the runs ended by."""
    return max(float(np.quantile(errors, level)), 0.0) / NormalDist().inv_cdf(level)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.unknown_end",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    errors: dict[tuple[str, int], np.ndarray] = {}
    for path in sorted(args.data.glob("*.csv")):
        job = path.stem
        runs = runs_of(path)
        for size in SIZES:
            errors[job, size] = log_errors(runs, size, args.draws, job)
    fit_on = [k for k in errors if k[0].endswith(".spark")]
    check = [k for k in errors if not k[0].endswith(".spark")]
    fitted = sd_for(np.concatenate([errors[k] for k in fit_on]))
    lines = ["# UNKNOWN_END_LOG_SD: how far a run is from a prediction made on 1-3 runs", "",
             f"Command: `python -m bench.studies.unknown_end --draws {args.draws}` "
             f"({time.perf_counter() - t0:.0f} s).", "",
             (__doc__ or "").split("\n\n", 2)[2].strip(), "",
             f"| job | runs in the history | predictions | rms log error | median log error "
             f"| ended by the {LEVEL:g} stretch at sd {UNKNOWN_END_LOG_SD:g} (now) "
             f"| at sd {fitted:.3f} (fitted) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for (job, size), e in errors.items():
        role = "fit" if (job, size) in fit_on else "check"
        lines.append(f"| {job} ({role}) | {size} | {e.size} | {math.sqrt(np.mean(e**2)):.3f} "
                     f"| {np.median(e):+.3f} | {100 * ended_share(e, UNKNOWN_END_LOG_SD):.1f} % "
                     f"| {100 * ended_share(e, fitted):.1f} % |")
    for name, keys in (("fit (Spark jobs)", fit_on), ("check (Flink jobs)", check)):
        e = np.concatenate([errors[k] for k in keys])
        lines.append(f"| **{name}** | 1-3 | {e.size} | {math.sqrt(np.mean(e**2)):.3f} | "
                     f"{np.median(e):+.3f} | {100 * ended_share(e, UNKNOWN_END_LOG_SD):.1f} % "
                     f"| {100 * ended_share(e, fitted):.1f} % |")
    lines += ["", f"Fitted sd (the Spark jobs' 90th percentile log error / z_0.9): {fitted:.3f}; "
              f"the constant: {UNKNOWN_END_LOG_SD:g}. Goal of the stretch: {LEVEL:.0%} of the "
              "runs ended by it."]
    publish("\n".join(lines) + "\n", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
