"""Candidate changes to cobell's memory sizing, end to end: bench.memory_e2e's runs, cobell's
sizing varied, judged on held-out seeds against the default.

    python -m bench.studies.memory_demand_candidates --played FILE [--seed N ...]
                                                     [--output FILE]

The played runs come from bench.memory_e2e (`--played FILE --cells ...`: the runs do not
depend on memory); each candidate replays every cell with the same inputs, noise and garbage,
cobell's core swapped for the candidate's while it runs. Seed 2018 is the development seed,
the others held out. A candidate wins where, over the held-out cells, its MB-s / the oracle's
or its runs with an OOM are lower than the default's by more than the mean difference's
standard error, and the other no higher.

Candidates (issue 36's diagnosis, bench/results/memory_e2e.md: the misses are the demand
estimate's, not the bound's, the rounding's or the retries'):

* gc-room-1.10, gc-room-1.15: demand.DEMAND's GC room (1.06, fitted on real runs) raised
  toward the worlds' own 1.15 (bench/simulator.py MEMORY_HEADROOM);
* failure-floor: a succeeded run's demand at least the heap a failed run of the same input and
  scale-out had, plus a step (its own failed attempt proves the need above it);
* prior: the bound borrowed across jobs (bound.DEFAULT_PRIOR, fitted on tune-quiet);
* no-proofs, cap-only, floor-only: the default's demands as they were before demand.consistent
  (each run's demand within what the job's reservations prove, issue 36), and each half of it
  alone: the cap by heaps that succeeded at no less input per executor, the floor by heaps
  that failed for memory at no more;
* peak-cap: besides, each demand at most 1.06 (demand.DEMAND's GC room) times the smallest heap
  peak a run with no less input per executor showed (a peak is live heap plus garbage, so it
  bounds the live heap there and, memory never falling with the input, here): a diagnosis of
  the garbage loop, not a method (it leaves no cushion for the GC room's bias);
* failure-ratios: each memory failure joins the bound's held-out ratios at the ratio it proves
  at least, its heap and a step over the model's prediction there (model.py
  `learn_failures`): the GC room's bias, which only a failure shows, kept in the bound however
  many larger runs follow; peak-cap+failure-ratios: both;
* success-cap: the bound at most what the job's successes prove if its need grows no faster
  than its input (model.py `success_bound`, `cap_by_successes`);
* deep-folds: the bound's held-out ratios without the folds trained on only two sizes where
  deeper ones exist (select.nested_ratios `deep_only`, bench/results/memory_fold_depth.md);
* asked-0.95, asked-0.99: not a method but the option `--memory-confidence P`, which holds out
  as many runs as P needs to act (core/memory/plan.py `bound_folds`): what a level buys.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import math
import pickle
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from bench import ROOT, publish
from bench import colocation as co
from bench import memory_e2e as me

RESULTS = ROOT / "bench" / "results" / "memory_demand_candidates.md"
DEVELOPMENT_SEED = 2018
REAL_SET = "test-quiet"  # held out: recorded after demand.DEMAND and the prior were frozen
CANDIDATES = ("default", "gc-room-1.10", "gc-room-1.15", "failure-floor", "prior", "no-proofs",
              "cap-only", "floor-only", "peak-cap", "failure-ratios", "peak-cap+failure-ratios",
              "success-cap", "deep-folds", "asked-0.95", "asked-0.99",
              "reserved-scale")


def _failure_floor(observations: Callable[..., list[Any]], runs: Sequence[Any],
                   *args: Any) -> list[Any]:
    from cobell_cli.core.memory.records import MemoryObservation
    from cobell_cli.core.memory.sizing import STEP_MB

    obs = observations(runs, *args)
    failed: dict[tuple[int, int], float] = {}
    for o in obs:
        if o.failed and o.input_bytes and o.reserved_mb:
            key = (o.input_bytes, o.scale_out)
            failed[key] = max(failed.get(key, 0.0), o.reserved_mb)
    out = []
    for o in obs:
        floor = failed.get((o.input_bytes, o.scale_out))
        if not o.failed and o.demand_mb is not None and floor is not None:
            demand = max(o.demand_mb, min(floor + STEP_MB, o.reserved_mb or math.inf))
            o = MemoryObservation(o.input_bytes, o.scale_out, demand, o.reserved_mb)
        out.append(o)
    return out


def _peak_cap(observations: Callable[..., list[Any]], runs: Sequence[Any],
              *args: Any) -> list[Any]:
    from cobell_cli.core.memory.demand import DEMAND
    from cobell_cli.core.memory.records import MB, SAME_INPUT, MemoryObservation

    peaks = [(r["input_bytes"] / MB / r["scale_out"], DEMAND.headroom * r["peak_memory_mb"])
             for r in runs if r.get("status") == "succeeded" and r.get("peak_memory_mb")
             and r.get("input_bytes") and r.get("scale_out")]
    out = []
    for o in observations(runs, *args):
        caps = [c for z, c in peaks if z >= (1 - SAME_INPUT) * o.per_executor_mb]
        if o.demand_mb is not None and o.input_bytes and caps and min(caps) < o.demand_mb:
            o = MemoryObservation(o.input_bytes, o.scale_out, min(caps), o.reserved_mb)
        out.append(o)
    return out


@contextlib.contextmanager
def candidate(name: str) -> Iterator[None]:
    """cobell's memory core as the candidate has it, restored afterwards (plan_memory imports
    `observations` and `MemoryModel` from their modules at each call)."""
    from cobell_cli.core.memory import bound, demand, model, plan

    saved = demand.observations, model.MemoryModel
    saved_plan = plan.plan_memory
    proofs = demand._suffix_min, demand._prefix_max
    try:
        if name.startswith("gc-room-"):
            rule = demand.DemandRule(demand.DEMAND.garbage_share, float(name.split("-")[-1]),
                                     demand.DEMAND.live_floor)
            demand.observations = functools.partial(saved[0], rule=rule)  # type: ignore[assignment]
        elif name == "failure-floor":
            demand.observations = functools.partial(_failure_floor, saved[0])  # type: ignore[assignment]
        elif name in ("no-proofs", "cap-only", "floor-only"):
            if name != "cap-only":  # no heap that succeeded caps a demand
                demand._suffix_min = lambda done: proofs[0]([])  # type: ignore[assignment]
            if name != "floor-only":  # no heap that failed lifts one
                demand._prefix_max = lambda failed: proofs[1]([])  # type: ignore[assignment]
        elif name == "peak-cap":
            demand.observations = functools.partial(_peak_cap, saved[0])  # type: ignore[assignment]
        elif name == "failure-ratios":
            model.MemoryModel = functools.partial(saved[1], learn_failures=True)  # type: ignore[misc]
        elif name == "peak-cap+failure-ratios":
            demand.observations = functools.partial(_peak_cap, saved[0])  # type: ignore[assignment]
            model.MemoryModel = functools.partial(saved[1], learn_failures=True)  # type: ignore[misc]
        elif name == "deep-folds":
            model.MemoryModel = functools.partial(saved[1], deep_folds=True)  # type: ignore[misc]
        elif name.startswith("asked-"):  # as `--memory-confidence P` plans
            asked = functools.partial(dataclasses.replace, confidence=float(name[6:]),
                                      confidence_asked=True)
            plan.plan_memory = lambda runs, xs, request, *more: saved_plan(  # type: ignore[assignment]
                runs, xs, asked(request), *more)
        elif name == "reserved-scale":
            model.MemoryModel = functools.partial(saved[1], reserved_scale=True)  # type: ignore[misc]
        elif name == "success-cap":
            model.MemoryModel = functools.partial(saved[1], cap_by_successes=True)  # type: ignore[misc]
        elif name == "prior":
            model.MemoryModel = functools.partial(saved[1], prior=bound.DEFAULT_PRIOR)  # type: ignore[misc]
        elif name != "default":
            raise ValueError(f"unknown candidate {name!r}")
        yield
    finally:
        demand.observations, model.MemoryModel = saved  # type: ignore[misc]
        plan.plan_memory = saved_plan  # type: ignore[assignment]
        demand._suffix_min, demand._prefix_max = proofs  # type: ignore[assignment]


Cell = tuple[int, str, str]  # seed, world, target
Score = tuple[float, float]  # MB-s / the oracle's, runs with an OOM (%)


def replay(played: dict[tuple[int, str, str, int], Any], cells: Sequence[Cell], runs: int,
           names: Sequence[str] = CANDIDATES,
           oom_runs: dict[str, dict[Cell, list[int]]] | None = None,
           ) -> dict[str, dict[Cell, Score]]:
    """Each candidate's score per cell (cobell's post-bootstrap runs against the oracle's);
    `oom_runs`, when given, gets the runs (0-based, of the cell's) that hit an OOM."""
    out: dict[str, dict[Cell, Score]] = {}
    for name in names:
        with candidate(name):
            out[name] = {}
            for seed, world, target in cells:
                cfg = co.Config(runs_per_interferer=runs, seed=seed)
                res = me.run_cell(world, target, cfg, played[(seed, world, target, runs)],
                                  ("cobell", "oracle"))
                out[name][(seed, world, target)] = me.pooled(res["cobell"], res["oracle"])
                if oom_runs is not None:
                    oom_runs.setdefault(name, {})[(seed, world, target)] = [
                        i for i, r in enumerate(res["cobell"]) if r.ooms]
    return out


def oom_lines(oom_runs: dict[str, dict[Cell, list[int]]]) -> list[str]:
    """The held-out cells where a candidate's OOM runs differ from the default's."""
    base = oom_runs["default"]
    lines = ["", "Held-out cells where a candidate's runs with an OOM differ from the default's "
             "(0-based, of the cell's runs, bootstrap included):", "",
             "| candidate | seed | world | target | default | candidate |",
             "|---|---|---|---|---|---|"]
    for name, per in oom_runs.items():
        for cell, mine in per.items():
            if name != "default" and cell[0] != DEVELOPMENT_SEED and mine != base[cell]:
                lines.append(f"| {name} | {cell[0]} | {cell[1]} | {cell[2]} | "
                             f"{base[cell] or '-'} | {mine or '-'} |")
    return lines


def real_scores(set_name: str = REAL_SET, names: Sequence[str] = CANDIDATES,
                ) -> dict[str, dict[str, Any]]:
    """Each candidate on real Spark runs (bench.memory_accuracy's cases of `set_name`, at the
    default memory confidence): cases, certainly succeeding %, median container / need."""
    from bench import memory_accuracy as ma
    from cobell_cli.core.memory.plan import DEFAULT_MEMORY_CONFIDENCE

    runs, cases = ma.load(set_name)
    out = {}
    for name in names:
        with candidate(name):
            out[name] = ma.summary(ma.score(runs, cases, DEFAULT_MEMORY_CONFIDENCE), "cobell")
    return out


def difference(mine: Sequence[float], base: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the per-cell differences."""
    d = [a - b for a, b in zip(mine, base, strict=True)]
    se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else math.nan
    return statistics.fmean(d), se


def render(scores: dict[str, dict[Cell, Score]], real: dict[str, dict[str, Any]],
           command: str, elapsed_s: float) -> str:
    base = scores["default"]
    held = [c for c in base if c[0] != DEVELOPMENT_SEED]
    lines = [
        "# Memory sizing candidates end to end (bench.memory_e2e's runs)", "",
        f"Command: `{command}` ({elapsed_s:.0f} s). " + (__doc__ or "").split("\n\n")[2]
        .replace("\n", " "), "",
        "MB-s / the oracle's and runs with an OOM, per world: on the development seed "
        f"{DEVELOPMENT_SEED}, and on the held-out seeds "
        f"({', '.join(str(s) for s in sorted({c[0] for c in held}))}) with each one's mean "
        "per-cell difference from the default (+- its standard error):", "",
        "| candidate | world | seed 2018 MB-s | OOM | held out MB-s | OOM | vs default MB-s | "
        "OOM (pp) | wins |", "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, per in scores.items():
        for world in co.WORLDS:
            dev = [c for c in per if c[1] == world and c[0] == DEVELOPMENT_SEED]
            out = [c for c in held if c[1] == world]
            mb, pp = (difference([per[c][i] for c in out], [base[c][i] for c in out])
                      for i in (0, 1))
            wins = name != "default" and wins_over(mb, pp)
            lines.append(
                f"| {name} | {world} | {_mean(per, dev, 0):.3f} | {_mean(per, dev, 1):.1f} % | "
                f"{_mean(per, out, 0):.3f} | {_mean(per, out, 1):.1f} % | "
                f"{mb[0]:+.3f} +- {mb[1]:.3f} | {pp[0]:+.1f} +- {pp[1]:.1f} | "
                f"{'yes' if wins else 'no'} |")
    lines += ["", f"On real Spark runs (bench.memory_accuracy's set {REAL_SET}, held out; goal: "
              ">= 95 % certainly succeed at a median <= 1.25x the need):", "",
              "| candidate | cases | certainly succeeds | median container / need |",
              "|---|---|---|---|"]
    for name, s in real.items():
        lines.append(f"| {name} | {s['cases']} | {s['ok']}/{s['sized']} "
                     f"({s['success_pct']:.1f} %) | {s['median_ratio']:.2f}x |")
    return "\n".join(lines)


def wins_over(mb_s: tuple[float, float], oom: tuple[float, float]) -> bool:
    """Out of sample by a standard error on one score, no worse on the other: (mean, se) of
    the per-cell differences in MB-s / the oracle's and in OOM runs (points)."""
    return ((mb_s[0] + mb_s[1] < 0 and oom[0] <= 0)
            or (oom[0] + oom[1] < 0 and mb_s[0] <= 0))


def _mean(per: dict[Cell, Score], cells: Sequence[Cell], i: int) -> float:
    return statistics.fmean(per[c][i] for c in cells) if cells else math.nan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--played", type=Path, required=True,
                        help="bench.memory_e2e's played runs (--played FILE)")
    parser.add_argument("--seed", type=int, nargs="+", default=[2018, 2019, 2020, 2021])
    parser.add_argument("--runs-per-interferer", type=int, default=12)
    parser.add_argument("--candidates", nargs="+", choices=CANDIDATES, default=list(CANDIDATES),
                        help="these only (the default is always scored: the others' reference)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    played = pickle.loads(args.played.read_bytes())
    cells = [(s, w, t) for s in args.seed for w in co.WORLDS for t in co.TARGETS_S]
    missing = [c for c in cells if (*c, args.runs_per_interferer) not in played]
    if missing:
        parser.exit(2, f"{args.played}: no played runs for {missing[0]}; play them with "
                    "python -m bench.memory_e2e --seed N --played FILE --cells ...\n")
    names = ["default", *[n for n in args.candidates if n != "default"]]
    oom_runs: dict[str, dict[Cell, list[int]]] = {}
    scores = replay(played, cells, args.runs_per_interferer, names, oom_runs)
    real = real_scores(names=names)
    command = ("python -m bench.studies.memory_demand_candidates --played PLAYED --seed "
               + " ".join(map(str, args.seed)))
    if args.candidates != list(CANDIDATES):
        command += " --candidates " + " ".join(args.candidates)
    text = render(scores, real, command, time.perf_counter() - started)
    publish("\n".join([text, *oom_lines(oom_runs)]) + "\n", args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
