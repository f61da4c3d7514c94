"""Why cobell loses to the paper's joint fit on the profile sets (issue 34): where the gap sits.

    python -m bench.studies.profiles_gap [--output FILE]

Every number is bench.real_colocation's leave-one-run-out (each run of a job predicted by a
model fitted on the job's other runs, at its scale-out and measured overlaps), with the same
core the CLI fits (`fit_runtime_model`, `fit_interference`) and the paper's joint fit
(bench/joint_fit.py). Four parts:

1. the gap cobell - joint, run by run, split by the left-out run: alone or with a co-runner,
   and its scale-out;
2. parts swapped between the two fits on the same training runs: the joint fit's pairs (a, b)
   under cobell's curve selection; the joint fit's f times cobell's slow-down; cobell's own
   interference-fit f times its slow-down (the curve stage left out);
3. the folds where the left-out run is the job's only run alone (profiles test and check:
   the job was never run alone in the training runs): cobell's interference fit from its
   start (f through every run, a = 0) and from a start deflated by a = 1 (curve_fit's
   default, which the joint fit also tries), each run to convergence: both optima, their
   training objectives and f at the left-out run against its runtime;
4. RuntimeModel(full_terms=None), the candidate of branch profiles-gap (Ernest's four terms
   offered to the interference CV below five scale-outs), against the default, on every set.

Writes bench/results/profiles_gap.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import publish
from bench import real_colocation as rc
from bench.joint_fit import fit_joint
from cobell_cli.core.model import fit_runtime_model, select
from cobell_cli.core.model import interference as inter
from cobell_cli.core.model.co_runner_runs import pool_rare
from cobell_cli.core.model.data import prepare_runs
from cobell_cli.core.model.parametric import AMDAHL, FEATURES, basis

RESULTS = rc.ROOT / "bench" / "results" / "profiles_gap.md"
PROFILE_SETS = ("profiles dev", "profiles test", "profiles check")
ALL_SETS = ("tuning", "test", *PROFILE_SETS)
DEFLATED = 1.0  # a at the second start (curve_fit's default start, as the joint fit's)
ROUNDS = 200  # alternations to convergence (the default's 12 changed nothing: part 3)

Runs = Sequence[Mapping[str, Any]]


def _ape(pred: float, run: Mapping[str, Any]) -> float:
    return abs(pred / run["runtime_s"] - 1.0) * 100.0


def _folds(runs: Runs) -> list[tuple[list[Mapping[str, Any]], Mapping[str, Any]]]:
    return [([r for j, r in enumerate(runs) if j != i], run) for i, run in enumerate(runs)]


def _alone(run: Mapping[str, Any]) -> bool:
    return not any(v > 0 for v in run["overlaps"].values())


class _JointPairs(select.RuntimeModel):
    """cobell with the joint fit's pairs: its curve selection on runtimes normalised by them."""

    def __init__(self, joint: Any, **params: Any) -> None:
        super().__init__(**params)
        self._joint = joint

    def _fit_interference(self, plain: Any, base: Sequence[str]) -> Any:
        w, data = super()._fit_interference(plain, base)
        n, k = len(FEATURES), len(self.co_runners_)
        assert tuple(self._joint.co_runners_) == tuple(self.co_runners_)
        self.a_, self.b_ = self._joint.params_[n:n + k], self._joint.params_[n + k:]
        return w, data


def swap_errors(runs: Runs) -> dict[str, list[float]]:
    """APE per left-out run of cobell, the joint fit and the swapped fits (part 2)."""
    out: dict[str, list[float]] = {k: [] for k in SWAPS}
    captured: list[Any] = []
    original = select.fit_interference

    def capture(*args: Any, **kwargs: Any) -> Any:
        fit = original(*args, **kwargs)
        captured.append(fit[0])
        return fit

    select.fit_interference = capture
    try:
        for train, run in _folds(runs):
            x = np.array([float(run["scale_out"])])
            model = fit_runtime_model(train)
            f_interference = captured[-1]
            joint = fit_joint(train)
            factor = model._factor_sd(x, run["overlaps"])[0][0]
            f_joint = float((basis(x) @ joint.params_[:len(FEATURES)])[0])
            swapped = _JointPairs(joint).fit(train)
            preds = {COBELL: model.predict(x, run["overlaps"])[0],
                     JOINT: joint.predict(x, run["overlaps"])[0],
                     SWAPS[2]: swapped.predict(x, run["overlaps"])[0],
                     SWAPS[3]: f_joint * factor,
                     SWAPS[4]: float(f_interference(x)[0]) * factor}
            for name, pred in preds.items():
                out[name].append(_ape(float(pred), run))
    finally:
        select.fit_interference = original
    return out


COBELL, JOINT = "cobell", "CoBell (paper's joint fit)"
SWAPS = (COBELL, JOINT, "the joint fit's pairs, cobell's curve selection",
         "the joint fit's f x cobell's slow-down",
         "cobell's interference-fit f x its slow-down (no curve selection)")


def two_optima(train: Runs, run: Mapping[str, Any], terms: Sequence[str],
               ) -> list[tuple[float, float, float]]:
    """(a, f at the left-out scale-out, training objective) from the default start and the
    deflated one, each alternated to convergence (part 3)."""
    data = pool_rare(prepare_runs(train))
    x, y, ov = data.scale_out, data.runtime_s, data.overlap
    w = np.ones_like(y)
    at = np.array([float(run["scale_out"])])
    first = inter.fit_interference(x, y, ov, terms, scaled=False, rounds=ROUNDS)[:3]
    pair = np.full(ov.shape[1], DEFLATED)
    start = inter._fit_curve(x, y, terms, w, inter.slowdown(x, ov, pair, 0 * pair), None)
    second = inter._alternate(x, y, ov, terms, w, start, ROUNDS, "additive", False)
    out = []
    for curve, a, b in (first, second):
        objective = float(np.sum(((y - curve(x) * inter.slowdown(x, ov, a, b)) / y) ** 2))
        out.append((float(a[0]), float(curve(at)[0]), objective))
    return out


def _paired(d: np.ndarray) -> str:
    se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")
    return f"{d.mean():+.2f} ± {se:.2f}"


def gap_rows(name: str, errors: Mapping[str, np.ndarray], runs: Runs) -> list[str]:
    """Part 1: the gap's share per kind of left-out run, in points of the set's mean."""
    d = errors[COBELL] - errors[JOINT]
    kinds = ["alone" if _alone(r) else f"with a co-runner, at {int(r['scale_out'])}"
             for r in runs]
    cells = []
    for kind in sorted(set(kinds)):
        mask = np.array([k == kind for k in kinds])
        cells.append(f"{kind}: {d[mask].sum() / d.size:+.2f} ({int(mask.sum())} runs)")
    return [f"| {name} | {d.size} | {_paired(d)} | " + "; ".join(cells) + " |"]


def candidate_errors(runs: Runs, params: Mapping[str, Any]) -> np.ndarray:
    return np.array([_ape(float(fit_runtime_model(t, **params).predict(
        [r["scale_out"]], r["overlaps"])[0]), r) for t, r in _folds(runs)])


def _by_set(names: Sequence[str], fn: Callable[[Runs], Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for name in names:
        path = rc.SETS[name]
        out[name] = [fn(rc.load_runs(path, job)) for job in rc.job_names(path)]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.profiles_gap",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    lines = _report_swaps() + _report_optima() + _report_candidate()
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.studies.profiles_gap", *given])
    head = ["# Why cobell loses to the paper's joint fit on the profile sets", "",
            f"Command: `{command}` ({time.perf_counter() - started:.0f} s). "
            + __doc__.split("\n\n")[2].replace("\n", " "), ""]
    publish("\n".join(head + lines) + "\n", args.output)


def _report_swaps() -> list[str]:
    parts = _by_set(PROFILE_SETS, lambda runs: (runs, swap_errors(runs)))
    lines = ["## 1. Where the gap is (cobell - joint fit, APE points, run by run)", "",
             "| set | runs | cobell - joint (SE) | share of the set's mean gap, by left-out "
             "run |", "|---|---:|---:|---|"]
    swaps = ["", "## 2. Parts swapped between the fits (mean APE %; paired differences ± SE)",
             "", "| set | variant | mean APE | - cobell | - joint |", "|---|---|---:|---:|---:|"]
    for name, jobs in parts.items():
        runs = [r for job_runs, _ in jobs for r in job_runs]
        errors = {k: np.concatenate([np.asarray(e[k]) for _, e in jobs]) for k in SWAPS}
        lines += gap_rows(name, errors, runs)
        for k in SWAPS:
            e = errors[k]
            swaps.append(f"| {name} | {k} | {e.mean():.2f} | {_paired(e - errors[COBELL])} | "
                         f"{_paired(e - errors[JOINT])} |")
    return lines + swaps


def _report_optima() -> list[str]:
    lines = ["", "## 3. A job never run alone: two optima of cobell's own objective", "",
             "Folds whose left-out run is the job's only run alone. a: the pooled co-runner "
             "pair's a (b dropped, as the CV chose in these folds); f: the curve at the "
             "left-out run's scale-out; SSE: the training objective, the sum of squared "
             "relative errors.", "",
             "| set | job | runtime alone | terms of f | start a = 0: a / f / SSE | "
             f"start a = {DEFLATED:g}: a / f / SSE |", "|---|---|---:|---|---|---|"]
    for name in PROFILE_SETS[1:]:
        path = rc.SETS[name]
        for job in rc.job_names(path):
            for train, run in _folds(rc.load_runs(path, job)):
                if not _alone(run) or any(_alone(r) for r in train):
                    continue
                for terms in (AMDAHL, FEATURES):
                    cells = [f"{a:.2f} / {f:.1f} / {sse:.4f}"
                             for a, f, sse in two_optima(train, run, terms)]
                    lines.append(f"| {name} | {job} | {run['runtime_s']:.1f} | "
                                 f"{len(terms)} | {cells[0]} | {cells[1]} |")
    return lines


def _report_candidate() -> list[str]:
    lines = ["", "## 4. The candidate: Ernest's four terms offered to the interference CV "
             "below five scale-outs (RuntimeModel(full_terms=None))", "",
             "| set | runs | default | candidate | candidate - default | joint fit | "
             "candidate / joint | candidate - joint |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, jobs in _by_set(ALL_SETS, lambda runs: runs).items():
        runs = [r for job_runs in jobs for r in job_runs]
        default = np.concatenate([candidate_errors(j, {}) for j in jobs])
        cand = np.concatenate([candidate_errors(j, {"full_terms": None}) for j in jobs])
        joint = np.concatenate([np.array([_ape(float(fit_joint(t).predict(
            [r["scale_out"]], r["overlaps"])[0]), r) for t, r in _folds(j)]) for j in jobs])
        lines.append(f"| {name} | {len(runs)} | {default.mean():.2f} | {cand.mean():.2f} | "
                     f"{_paired(cand - default)} | {joint.mean():.2f} | "
                     f"{cand.mean() / joint.mean():.3f} | {_paired(cand - joint)} |")
    return lines


if __name__ == "__main__":
    main()
