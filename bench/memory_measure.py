"""Which measure of one run predicts its memory need? Chosen on a tune set's real runs.

    python -m bench.memory_measure [--set tune-quiet] [--output FILE]

Every succeeded size of every application bench/memory_record.py ran (the profile
applications at the user's default heap, and the search applications at smaller heaps) is a
run at a reservation R with its executor metrics; its case's **need** (the smallest heap that
succeeds, found by bisection) is known to 64 MB, or, at Spark's smallest executor, to be at
most 512 MB. Each candidate turns one run's metrics into a need, with constants fitted here:

* the heap peak as it is, times a factor (`heap`: core/memory/demand.py's rule with no garbage
  discounted);
* the heap peak less the garbage that fills a share of the slack R - peak, times the GC's
  room (`heap less slack`: the same rule, its share and room fitted), and with its floor on the
  live share fitted too (`heap less slack, floored`);
* the heap Spark's unified memory would need for its peak (300 MB reserved + the unified peak
  / spark.memory.fraction 0.6), times a factor (`unified`);
* the process's resident memory (ProcessTreeJVMRSSMemory), times a factor (`JVM RSS`);
* `heap less slack, tight`: the floored rule, and a run that needed a major (full) GC counted
  as near its limit: its need at least a fitted share of R.

A candidate's error on a run is the log of its estimate over the need (over 512 MB at the
floor, where only an estimate above it is wrong); its constants are fitted to minimise the
squared errors, and it is judged by leave-one-job-out cross-validation (constants fitted on
the other jobs, errors on the job left out: a new job is what the constants must serve).
Chosen: the simplest candidate (fewest constants; the rule already in the code before new
forms) within one standard error of the best (CONVENTIONS.md "Models"). The Python workers'
RSS (ProcessTreePythonRSSMemory) is reported but is no candidate: the recorded jobs are
DataFrame jobs (their Python workers hold nothing), and a standalone worker does not limit it,
so the heap's bisection cannot judge it.

The bench then fits the bound's prior (core/memory/bound.py `fit_prior`) on every job's held-out
ratios under the chosen rule, and writes both sets of constants, to be copied into demand.py and
bound.py: the method is frozen on this set before the test set is recorded.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from bench import publish

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "memory"
RESULTS = ROOT / "bench" / "results"
FLOOR_MB = 512
STEP_MB = 64
SPARK_RESERVED_MB, MEMORY_FRACTION = 300.0, 0.6  # Spark's unified memory region


@dataclass(frozen=True)
class Sample:
    """One succeeded run of a case whose need is known: its metrics and the need's bounds."""

    job: str
    scale_out: int
    rows: int
    reserved_mb: float
    purpose: str
    heap_mb: float
    measures: Mapping[str, float]
    need_mb: float  # the smallest heap that succeeded (512: at most that)

    @property
    def floor(self) -> bool:
        return self.need_mb <= FLOOR_MB


def samples(set_name: str) -> list[Sample]:
    """Every succeeded run with metrics whose case's need was settled by the search."""
    base = DATA / set_name
    needs = {(n["job"], n["rows"], n["scale_out"]): n["need_mb"]
             for n in json.loads((base / "needs.json").read_text()).values()
             if n.get("need_mb")}
    out = []
    for line in (base / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        need = needs.get((r["job"], r["rows"], r["scale_out"]))
        if need is None or r["outcome"] != "succeeded" or not r.get("measures") \
                or r.get("ignored") or not r.get("heap_mb"):
            continue
        out.append(Sample(r["job"], r["scale_out"], r["rows"], float(r["executor_memory_mb"]),
                          r["purpose"], float(r["heap_mb"]), r["measures"], float(need)))
    return out


# --- the candidates ---------------------------------------------------------------------------

Estimate = Callable[[Sample, tuple[float, ...]], float]


def _rule(s: Sample, g: float, h: float, f: float) -> float:
    from cobell_cli.core.memory.demand import DemandRule, demand_mb

    return demand_mb(s.heap_mb, s.reserved_mb, DemandRule(g, h, f))


@dataclass(frozen=True)
class Candidate:
    """A measure: its estimate from a run and a grid for each of its constants."""

    name: str
    estimate: Estimate
    grid: tuple[tuple[float, ...], ...]
    order: int  # among equals in constants: the rule already in the code first

    @property
    def constants(self) -> int:
        return len(self.grid)


SHARES = tuple(i / 50 for i in range(0, 46))  # g: 0 .. 0.9
ROOMS = tuple(0.8 + i / 100 for i in range(0, 141))  # h, or a factor: 0.8 .. 2.2
FLOORS = tuple(0.3 + i / 20 for i in range(0, 15))  # f: 0.3 .. 1.0
TIGHT = tuple(0.5 + i / 20 for i in range(0, 11))  # a share of R: 0.5 .. 1.0

CANDIDATES = (
    Candidate("heap", lambda s, c: _rule(s, 0.0, c[0], 1.0), (ROOMS,), 0),
    Candidate("unified", lambda s, c: c[0] * (SPARK_RESERVED_MB + s.measures.get(
        "unified_mb", 0.0) / MEMORY_FRACTION), (ROOMS,), 2),
    Candidate("JVM RSS", lambda s, c: c[0] * s.measures.get("jvm_rss_mb", 0.0), (ROOMS,), 3),
    Candidate("heap less slack", lambda s, c: _rule(s, c[0], c[1], 0.0), (SHARES, ROOMS), 1),
    Candidate("heap less slack, floored", lambda s, c: _rule(s, *c), (SHARES, ROOMS, FLOORS), 0),
    Candidate("heap less slack, tight",
              lambda s, c: max(_rule(s, *c[:3]), c[3] * s.reserved_mb
                               if s.measures.get("major_gc", 0) > 0 else 0.0),
              (SHARES, ROOMS, FLOORS, TIGHT), 0),
)


def error(s: Sample, estimate: float) -> float:
    """log(estimate / need); at the floor only an estimate above 512 MB is wrong."""
    value = math.log(max(estimate, 1.0) / s.need_mb)
    return max(value, 0.0) if s.floor else value


def loss(cand: Candidate, consts: tuple[float, ...], data: Sequence[Sample]) -> float:
    return statistics.fmean(error(s, cand.estimate(s, consts)) ** 2 for s in data)


def fit(cand: Candidate, data: Sequence[Sample]) -> tuple[float, ...]:
    """The constants minimising the squared log errors: coordinate descent over the grids
    from the middle of each, rounds until nothing moves (a full grid of four constants is
    300 000 points)."""
    consts = [grid[len(grid) // 2] for grid in cand.grid]
    best = loss(cand, tuple(consts), data)
    for _ in range(20):
        moved = False
        for i, grid in enumerate(cand.grid):
            for value in grid:
                trial = (*consts[:i], value, *consts[i + 1:])
                got = loss(cand, trial, data)
                if got < best - 1e-12:
                    best, consts, moved = got, list(trial), True
        if not moved:
            break
    return tuple(consts)


@dataclass(frozen=True)
class Judged:
    cand: Candidate
    consts: tuple[float, ...]  # fitted on every job
    fold_errors: dict[str, float]  # job left out -> its mean squared log error
    rms: float  # over every run, each predicted with the constants of the other jobs
    under_pct: float  # runs whose held-out estimate is below the need

    @property
    def mean(self) -> float:
        return statistics.fmean(self.fold_errors.values())

    @property
    def se(self) -> float:
        values = list(self.fold_errors.values())
        return statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0


def judge(cand: Candidate, data: Sequence[Sample]) -> Judged:
    """Leave one job out: constants fitted on the others, errors on it."""
    folds, errors = {}, []
    for job in sorted({s.job for s in data}):
        train = [s for s in data if s.job != job]
        test = [s for s in data if s.job == job]
        consts = fit(cand, train)
        mine = [error(s, cand.estimate(s, consts)) for s in test]
        folds[job] = statistics.fmean(e * e for e in mine)
        errors += mine
    under = 100.0 * sum(e < 0 for e in errors) / len(errors)
    return Judged(cand, fit(cand, data), folds, math.sqrt(statistics.fmean(
        e * e for e in errors)), under)


def choose(judged: Sequence[Judged]) -> Judged:
    """The simplest within one standard error of the best (fewest constants, then `order`)."""
    best = min(judged, key=lambda j: j.mean)
    within = [j for j in judged if j.mean <= best.mean + best.se]
    return min(within, key=lambda j: (j.cand.constants, j.cand.order))


# --- the bound's prior --------------------------------------------------------------------------


def prior_groups(set_name: str, rule: Any) -> dict[str, list[float]]:
    """Each job's held-out ratios under `rule` on its profile runs, both executor counts (what
    a job's history holds), on the reserved scale a prior is fitted on
    (core/memory/history_prior.job_ratios; the default model's own ratios are not)."""
    from bench.memory_accuracy import history_rows, load
    from cobell_cli.core.memory.demand import observations
    from cobell_cli.core.memory.history_prior import job_ratios

    runs, _ = load(set_name)
    out = {}
    for job in sorted({r.job for r in runs}):
        mine = [r for r in runs if r.job == job and r.outcome == "succeeded"]
        ratios = job_ratios(observations(history_rows(mine), rule))
        if ratios:
            out[job] = ratios
    return out


# --- the report -------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Two priors equal up to rounding (DEFAULT_PRIOR's spread is written as an expression)."""
    return a is not None and all(math.isclose(x, y, rel_tol=1e-9)
                                 for x, y in zip(astuple(a), astuple(b), strict=True))


def render(set_name: str, data: Sequence[Sample], judged: Sequence[Judged], chosen: Judged,
           groups: Mapping[str, list[float]], prior: Any, command: str,
           elapsed_s: float) -> str:
    from cobell_cli.core.memory.bound import DEFAULT_PRIOR
    from cobell_cli.core.memory.demand import DemandRule

    jobs = sorted({s.job for s in data})
    floor = sum(s.floor for s in data)
    lines = [
        "# Memory: which measure of a run predicts its need (real Spark runs)", "",
        f"Command: `{command}` ({elapsed_s:.0f} s). Set `{set_name}` "
        f"(bench/data/memory/{set_name}, bench/memory_record.py): {len(data)} succeeded runs "
        f"of {len({(s.job, s.rows, s.scale_out) for s in data})} cases with a settled need, "
        f"{len(jobs)} jobs ({', '.join(jobs)}); {floor} runs of cases at Spark's smallest "
        "executor (need at most 512 MB: only an estimate above it is wrong). Error: log("
        "estimate / need); leave one job out (constants fitted on the other jobs); chosen: "
        "the simplest within one standard error of the best. This set is the tune set: the "
        "constants below are fitted on it and nothing else.", "",
        "| measure | constants | held-out RMS log error | per job (mean sq.) mean ± SE | "
        "runs under the need | constants on every job |",
        "|---|---|---|---|---|---|",
    ]
    for j in judged:
        mark = " (chosen)" if j is chosen else ""
        lines.append(f"| {j.cand.name}{mark} | {j.cand.constants} | {j.rms:.3f} | "
                     f"{j.mean:.4f} ± {j.se:.4f} | {j.under_pct:.0f} % | "
                     f"{', '.join(f'{c:g}' for c in j.consts)} |")
    lines += ["", "Per job, held-out mean squared log error:", "",
              "| measure | " + " | ".join(jobs) + " |", "|---|" + "---|" * len(jobs)]
    for j in judged:
        lines.append(f"| {j.cand.name} | " + " | ".join(f"{j.fold_errors[k]:.4f}"
                                                        for k in jobs) + " |")
    rule = rule_of(chosen)
    lines += ["", f"Chosen rule for core/memory/demand.py: {rule}.", ""]
    if isinstance(rule, DemandRule):
        lines += ["Held-out ratios per job under it (core/memory/history_prior.job_ratios: "
                  "select.nested_ratios on the reserved scale, profile runs of both executor "
                  "counts): " + "; ".join(
                      f"{k} {', '.join(f'{v:.2f}' for v in g)}" for k, g in groups.items()),
                  "", f"Prior of the bound fitted on them (core/memory/bound.py fit_prior): "
                  f"{prior}; bound.DEFAULT_PRIOR (the candidate peak-nix's): {DEFAULT_PRIOR}"
                  f" ({'this fit' if _same(prior, DEFAULT_PRIOR) else 'NOT this fit'}).", ""]
    python = [s.measures.get("python_rss_mb", 0.0) for s in data]
    lines.append(f"Python workers' RSS over these runs: at most {max(python):.0f} MB.")
    return "\n".join(lines)


def rule_of(judged: Judged) -> Any:
    """The chosen candidate as core/memory/demand.py's rule, where it is one."""
    from cobell_cli.core.memory.demand import DemandRule

    c = judged.consts
    return {"heap": lambda: DemandRule(0.0, c[0], 1.0),
            "heap less slack": lambda: DemandRule(c[0], c[1], 0.0),
            "heap less slack, floored": lambda: DemandRule(*c)}.get(
        judged.cand.name, lambda: f"{judged.cand.name} {c} (not a DemandRule: port it)")()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="tune-quiet")
    parser.add_argument("--output", type=Path, default=RESULTS / "memory_measure.md")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from cobell_cli.core.memory.bound import fit_prior
    from cobell_cli.core.memory.demand import DemandRule

    started = time.perf_counter()
    data = samples(args.set)
    judged = [judge(c, data) for c in CANDIDATES]
    chosen = choose(judged)
    rule = rule_of(chosen)
    groups = prior_groups(args.set, rule) if isinstance(rule, DemandRule) else {}
    prior = fit_prior(list(groups.values())) if groups else None
    command = "python -m bench.memory_measure " + " ".join(argv or sys.argv[1:])
    publish(render(args.set, data, judged, chosen, groups, prior, command.strip(),
                   time.perf_counter() - started) + "\n", args.output)
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
