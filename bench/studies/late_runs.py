"""Why cobell's late runs are late: every late run of the gate's allocation, taken apart.

    python -m bench.studies.late_runs run --seed S [--worlds nodesim] [--cache DIR]
    python -m bench.studies.late_runs report [--cache DIR] [--output FILE]

`run` plays the gate's allocation configuration (bench/gate/units.py: bench.colocation's cells,
RUNS_PER_INTERFERER runs per co-runner job) at one seed with cobell at default flags (`plan()`
as `cobell predict` runs it) and the oracle, and keeps, for every run after the bootstrap,
what the plan saw and decided (scale-out, prediction, upper bound, P(meet), each co-runner's
predicted overlap and end, the pairs the model slowed the job by) next to what happened in
the world. Each run's log error log(runtime / prediction) splits exactly into

* curve: the model's curve against the world's median isolated runtime at the chosen
  scale-out, log(median(x) / f(x));
* repetition: the Bell repetition the run drew, log(isolated(x) / median(x)) (noise);
* interference: the world's slow-down against the model's at the measured overlaps,
  log(runtime / isolated(x)) - log(1 + S(measured)); for late runs split further into the
  pairs' error, against the world's mean slow-down over REDRAWS redraws of the job's own noise
  (nodes, demands, repetition), and that run's draw (noise);
* overlap: the model's slow-down at the measured overlaps against that at the predicted ones,
  log(1 + S(measured)) - log(1 + S(predicted)).

For late runs also: the share of REDRAWS redraws of the job's own noise that meet the target
at cobell's scale-out (what the physics gives that reservation), and the physics-aware,
noise-blind planner's scale-out at 0.95 and 0.99 on that very run (bench.oracle_bound
--unknown all, NOISE_BLIND_DRAWS redraws of every job's noise) and whether it is late there
too. Attribution: where that planner at 0.95 is late too, noise (a planner that knew the
world's physics misses there as well); else the model part that is the larger and positive:
the overlap prediction, or the model's slow-down at the measured overlaps (curve + pairs;
named "curve" or "pairs" where that part alone exceeds their sum, "curve and pairs" else:
a job whose runs all had co-runners cannot tell its curve from its pairs); neither positive:
noise the bound should have covered.

Records go to --cache as JSON (the study's data, not the repository's); `report` renders
bench/results/late_runs.md from them.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import math
import multiprocessing
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT, publish
from bench import colocation as co
from bench import oracle_bound as ob
from bench.gate import units as gate
from cobell_cli.core.plan import model_phase

RESULTS = ROOT / "bench" / "results" / "late_runs.md"
CACHE = Path("/tmp/cobell-late-runs-study")
REDRAWS = 20  # redraws of the job's own noise per late run
NOISE_BLIND_DRAWS = gate.NOISE_BLIND_DRAWS
LEVEL = 0.95  # the CLI's default confidence: the noise-blind planner's level here
VARIANTS = ("default", "sized")
HIGH_LEVEL = 0.99  # and the level above it where it stops moving (30 draws)
PARTS = ("curve", "repetition", "pairs", "placement", "overlap")

Record = dict[str, Any]


# --- what the plan saw --------------------------------------------------------------------------


@contextlib.contextmanager
def watched(seen: dict[str, Any]) -> Iterator[None]:
    """bench.colocation with every plan's model and predictive distribution kept in `seen`."""
    plan, bounds = co.plan, model_phase._runtime_bounds

    def plan_watched(**kw: Any) -> Any:
        seen.clear()
        return plan(**kw, on_model=lambda m, phase: seen.update(model=m))

    def bounds_watched(*args: Any, **kw: Any) -> Any:
        out = bounds(*args, **kw)
        seen["bounds"] = out
        return out

    co.plan, model_phase._runtime_bounds = plan_watched, bounds_watched
    try:
        yield
    finally:
        co.plan, model_phase._runtime_bounds = plan, bounds


def _weight(model: Any, job: str, scale_out: float | None) -> float:
    weigh = getattr(model, "size_weight", None)
    return 1.0 if weigh is None else float(weigh(job, scale_out))


def _row(model: Any, ratios: Mapping[str, float], sizes: Mapping[str, float]) -> dict[str, float]:
    """{co-runner job: ratio x the model's size weight}, as the planner feeds its model."""
    return {j: r * _weight(model, j, sizes.get(j)) for j, r in ratios.items()}


def _factor(model: Any, x: int, row: Mapping[str, float]) -> float:
    alone = float(model.predict([x], None)[0])
    return float(model.predict([x], [dict(row)])[0]) / alone


def _co_runners(chosen: Any, memory: co.World, setup: co.RunSetup) -> list[Record]:
    """Each co-runner of the run: what the plan predicted of it and what it did."""
    mine = memory.histories[memory.target][-1]
    out = []
    views = {v.job: v for v in chosen.co_runners}
    for job, x in zip(setup.co_jobs, setup.co_scale_outs, strict=True):
        v = views.get(job)
        ended = memory.histories[job][-1]["finished_at"]
        out.append({
            "job": job, "scale_out": x, "running_at_submit": v is not None,
            "progress": v.progress if v else None, "source": v.source if v else None,
            "predicted_end_s": (v.predicted_end_at - setup.submit_s
                                if v and v.predicted_end_at is not None else None),
            "end_s": ended - setup.submit_s,
            "predicted_ratio": v.overlap_ratio if v else 0.0,
            "ratio": mine["overlaps"].get(job, 0.0)})
    return out


def _pairs(model: Any, jobs: Sequence[str]) -> dict[str, Record]:
    """The pairs the model slows the job by for these co-runner jobs (or the pooled one)."""
    pairs = (model.describe() or {}).get("interference") or {}
    out = {}
    for job in jobs:
        key = job if job in pairs else "*"
        p = pairs.get(key)
        if p is not None:
            out[job] = {"key": key, "a": p["a"], "b": p["b"], "runs": p["runs"],
                        "own_weight": p["own_weight"], "unpooled": p["unpooled"],
                        "thin": p["thin"]}
    return out


def diagnose(rec: co.RunRecord, seen: Mapping[str, Any], chosen: Any, memory: co.World,
             setup: co.RunSetup, curves: Mapping[str, Any], world: co.Truth) -> Record:
    """One run after the bootstrap: the plan, the world, and the log error's parts."""
    model, bounds = seen["model"], seen["bounds"]
    target, x = memory.target, rec.scale_out
    j = [c.scale_out for c in chosen.candidates].index(x)
    cand = bounds.predictive.candidates[j]
    mine = memory.histories[target][-1]
    sizes = mine.get("co_runner_scale_outs") or {}
    co_runners = _co_runners(chosen, memory, setup)
    predicted_sizes = {c["job"]: c["scale_out"] for c in co_runners}
    measured = _row(model, mine["overlaps"], sizes)
    predicted = _row(model, {c["job"]: c["predicted_ratio"] for c in co_runners},
                     predicted_sizes)
    alone = float(model.predict([x], None)[0])
    isolated = curves[target].isolated_s(x, setup.noise.rep_index[target])
    median = curves[target].median_s(x)
    f_meas, f_pred = _factor(model, x, measured), _factor(model, x, predicted)
    return {
        "index": rec.index, "co_jobs": list(setup.co_jobs), "scale_out": x,
        "runtime_s": rec.runtime_s, "target_s": rec.target_s, "late": rec.runtime_s > rec.target_s,
        "overshoot_pct": rec.overshoot_pct, "predicted_s": chosen.predicted_s,
        "check_predicted_s": alone * f_pred, "upper_s": chosen.upper_s,
        "meet_probability": chosen.meet_probability, "center_s": cand.center_s,
        "location": cand.location, "scale": cand.scale, "n_runs": len(memory.histories[target]) - 1,
        "curve": math.log(median / alone), "repetition": math.log(isolated / median),
        "interference": math.log(rec.runtime_s / isolated) - math.log(f_meas),
        "overlap": math.log(f_meas / f_pred), "world_factor": rec.runtime_s / isolated,
        "model_factor_measured": f_meas, "model_factor_predicted": f_pred,
        "feasible": chosen.feasible, "co_runners": co_runners,
        "pair_estimates": _pairs(model, setup.co_jobs),
        "combination": getattr(model, "combination_", None),
    }


def physics(d: Record, setup: co.RunSetup, curves: Mapping[str, Any], target: str,
            world: co.Truth, seed: int) -> Record:
    """A late run against the world's physics: the pairs' error and the draw's (placement,
    demands), the share of the job's own redraws meeting the target at cobell's scale-out,
    and the noise-blind planner's scale-out at LEVEL."""
    x, target_s = d["scale_out"], d["target_s"]
    rng = np.random.default_rng([seed, 11, setup.index, sum(map(ord, target + world.name))])
    own = [ob.target_redraw(setup.noise, world.draw(rng, curves), target)
           for _ in range(REDRAWS)]
    runtimes = [ob.runtime_at(setup, curves, target, world, x, n) for n in own]
    factors = [r / curves[target].isolated_s(x, n.rep_index[target])
               for r, n in zip(runtimes, own, strict=True)]
    mean_factor = float(np.mean(factors))
    blind = ob.Draws(lambda s, n: ob.runtime_at(setup, curves, target, world, s, n),
                     ob.blind_redraws(setup, curves, world, rng, NOISE_BLIND_DRAWS))
    log_f = math.log(d["world_factor"])
    pairs = math.log(mean_factor) - math.log(d["model_factor_measured"])
    out = {"pairs": pairs, "placement": log_f - math.log(mean_factor),
           "own_noise_meet": float(np.mean([r <= target_s for r in runtimes])),
           "blind_meet": blind.share_meeting(x, target_s)}
    for level, key in ((LEVEL, "blind"), (HIGH_LEVEL, "blind_high")):
        bx = ob.plan_at(blind, level, target_s)
        out[f"{key}_scale_out"] = bx
        out[f"{key}_late"] = ob.runtime_at(setup, curves, target, world, bx, setup.noise) > target_s
    return out


def attribute(d: Record) -> str:
    """Which part made the late run late (the module doc's rule)."""
    if d["blind_late"]:
        return "noise: the physics-aware planner is late too"
    model = d["curve"] + d["pairs"]
    if max(model, d["overlap"]) <= 0:
        return "noise the bound should have covered"
    if d["overlap"] > model:
        return "overlap"
    if d["curve"] >= model:
        return "curve"
    return "pairs" if d["pairs"] >= model else "curve and pairs"


# --- run ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def fitted(variant: str) -> Iterator[None]:
    """bench.colocation's fits as `variant` makes them while inside: "default" (today's) or
    "sized" (each overlap weighed by its co-runner's scale-out over its job's usual one,
    RuntimeModel(sized=True): a candidate, core/model's, measured here, not adopted)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}")
    fit = co.fit_runtime_model
    if variant == "sized":
        co.fit_runtime_model = functools.partial(fit, sized=True)
    try:
        yield
    finally:
        co.fit_runtime_model = fit


def _cell(args: tuple[co.Config, str]) -> tuple[str, list[Record]]:
    cfg, variant = args
    (world_name,), (target,) = cfg.worlds, cfg.targets
    world = co.truth(world_name)
    curves = co.load_curves(co.DEFAULT_DATA)
    seen: dict[str, Any] = {}
    out: list[Record] = []
    play = co.play

    def play_watched(strategy: str, memory: co.World, setup: co.RunSetup, curves_: Any,
                     target_s: float, world_: co.Truth) -> co.RunRecord:
        rec = play(strategy, memory, setup, curves_, target_s, world_)
        if strategy == "default" and not rec.bootstrap and "bounds" in seen:
            d = diagnose(rec, seen, seen["plan"], memory, setup, curves, world)
            if d["late"] and variant == "default":
                d.update(physics(d, setup, curves, target, world, cfg.seed))
                d["attribution"] = attribute(d)
            out.append(d)
        return rec

    decide = co.decide

    def decide_watched(*a: Any, **kw: Any) -> Any:
        chosen = decide(*a, **kw)
        seen["plan"] = chosen
        return chosen

    co.play, co.decide = play_watched, decide_watched
    try:
        with watched(seen), fitted(variant):
            (cell, per), = co.run_experiment(cfg).items()
    finally:
        co.play, co.decide = play, decide
    oracle = {r.index: r for r in per["oracle"]}
    for d in out:
        d["oracle_scale_out"] = oracle[d["index"]].scale_out
        d["oracle_node_s"] = oracle[d["index"]].node_s
    return "/".join(cell), out


def run(seed: int, worlds: Sequence[str], processes: int = 2, variant: str = "default",
        ) -> dict[str, list[Record]]:
    """Every gate allocation cell of `worlds` at `seed`: cell -> its post-bootstrap runs."""
    base = dataclasses.replace(gate.allocation_config("simulator", "single", "sgd"), seed=seed,
                               strategies=("default",))
    parts = [(dataclasses.replace(base, worlds=(w,), variants=(v,), targets=(t,)), variant)
             for w, v, t in gate.allocation_cells() if w in worlds]
    if processes > 1:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            return dict(pool.map(_cell, parts, chunksize=1))
    return dict(_cell(p) for p in parts)


# --- report -------------------------------------------------------------------------------------


def _pct(v: float) -> str:
    return f"{100 * v:+.1f}"


def _co_text(c: Record) -> str:
    if not c["running_at_submit"]:
        return f"{c['job']}@{c['scale_out']} (done before submit)"
    end = (f"{c['predicted_end_s']:.0f}" if c["predicted_end_s"] is not None else "-")
    return (f"{c['job']}@{c['scale_out']} ov {c['predicted_ratio']:.2f}/{c['ratio']:.2f},"
            f" end {end}/{c['end_s']:.0f} s")


def _pair_text(job: str, p: Record) -> str:
    key = "" if p["key"] == job else " (pooled)"
    return (f"{job}{key}: {p['a']:.3f}+{p['b']:.2f}/x, {p['runs']} runs, own weight"
            f" {p['own_weight']:.2f} (alone {p['unpooled']['a']:.3f}+{p['unpooled']['b']:.2f}/x)")


def _pairs_text(d: Record) -> str:
    """Each co-runner's pair, or that the job never met it (the stranger factor charged)."""
    pairs = d["pair_estimates"]
    return "; ".join(_pair_text(j, pairs[j]) if j in pairs
                     else f"{j}: none (never met: the stranger factor)" for j in d["co_jobs"])


def _blind(d: Record) -> str:
    return " / ".join(f"{d[k + '_scale_out']}{' late' if d[k + '_late'] else ''}"
                      for k in ("blind", "blind_high"))


def late_rows(cell: str, runs: Sequence[Record]) -> list[str]:
    rows = []
    for d in sorted((d for d in runs if d["late"]), key=lambda d: -d["overshoot_pct"]):
        pm = d["meet_probability"]
        pm_text = "-" if pm is None else f"{pm:.2f}" + ("" if d["feasible"] else " (none met)")
        parts = [d["curve"], d["pairs"], d["curve"] + d["pairs"], d["overlap"],
                 d["repetition"], d["placement"]]
        rows.append(
            f"| {cell} | {d['index']} | {d['overshoot_pct']:.1f} | {d['scale_out']} |"
            f" {d['oracle_scale_out']} | {_blind(d)} |"
            f" {d['predicted_s']:.0f} / {d['upper_s']:.0f} / {d['runtime_s']:.0f} |"
            f" {pm_text} | {d['own_noise_meet']:.2f} / {d['blind_meet']:.2f} |"
            f" {'; '.join(_co_text(c) for c in d['co_runners'])} |"
            f" {_pairs_text(d)} |"
            f" {' / '.join(_pct(v) for v in parts)} | {d['attribution']} |")
    return rows


MEAN_PARTS = {
    "curve": lambda d: d["curve"], "interference": lambda d: d["interference"],
    "curve + interference": lambda d: d["curve"] + d["interference"],
    "overlap": lambda d: d["overlap"], "repetition": lambda d: d["repetition"],
    "bound": lambda d: math.log(d["upper_s"] / d["predicted_s"]),
}


def mean_rows(cells: Mapping[str, Sequence[Record]]) -> list[str]:
    """Per cell, the parts' mean over all post-bootstrap runs (systematic, not one draw)."""
    rows = []
    for cell, runs in sorted(cells.items()):
        cols = []
        for part in MEAN_PARTS.values():
            v = np.array([part(d) for d in runs])
            se = 100 * float(v.std(ddof=1)) / math.sqrt(len(v))
            cols.append(f"{_pct(float(v.mean()))} +- {se:.1f}")
        total = np.array([math.log(d["runtime_s"] / d["predicted_s"]) for d in runs])
        rows.append(f"| {cell} | {len(runs)} | {sum(d['late'] for d in runs)} | "
                    + " | ".join(cols) + f" | {100 * float(total.std(ddof=1)):.1f} |")
    return rows


def summary_rows(cells: Mapping[str, Sequence[Record]]) -> list[str]:
    """Per world: runs, late runs, late %, max overshoot, and how the model's error at the
    measured overlaps follows the co-runners' size in the cells with 2 and 3 co-runners."""
    rows = []
    for world in ("nodesim", "simulator"):
        runs = [d for cell, rs in cells.items() if cell.startswith(world + "/") for d in rs]
        if not runs:
            continue
        late = sum(d["late"] for d in runs)
        corr = [f"{_size_correlation(cells, world, v):.2f}" for v in ("pair", "triple")]
        rows.append(f"| {world} | {len(runs)} | {late} | {100 * late / len(runs):.1f} |"
                    f" {max(d['overshoot_pct'] for d in runs):.1f} | {' / '.join(corr)} |")
    return rows


SIZE_REFERENCE = 22.0  # the co-runners' mean scale-out (bench.colocation: 12-32)


def _size_correlation(cells: Mapping[str, Sequence[Record]], world: str, variant: str) -> float:
    """Correlation over a world's runs with `variant`'s co-runners between the model's error at
    the measured overlaps (curve + interference) and the co-runners' overlap-weighted
    scale-out."""
    sizes, errors = [], []
    for cell, runs in cells.items():
        if not cell.startswith(f"{world}/{variant}/"):
            continue
        for d in runs:
            met = [c for c in d["co_runners"] if c["ratio"] > 0]
            if met:
                sizes.append(sum(c["ratio"] * c["scale_out"] for c in met)
                             / sum(c["ratio"] for c in met) / SIZE_REFERENCE)
                errors.append(d["curve"] + d["interference"])
    return float(np.corrcoef(sizes, errors)[0, 1]) if len(sizes) > 2 else math.nan


def attribution_rows(cells: Mapping[str, Sequence[Record]]) -> list[str]:
    """Per world, how many late runs each attribution holds."""
    counts: dict[tuple[str, str], int] = {}
    for cell, runs in cells.items():
        for d in runs:
            if d["late"]:
                key = (cell.split("/")[0], d["attribution"])
                counts[key] = counts.get(key, 0) + 1
    return [f"| {w} | {a} | {n} |" for (w, a), n in sorted(counts.items())]


def render(data: Mapping[int, Mapping[str, Sequence[Record]]], command: str) -> str:
    lines = [
        "# Why cobell's late runs are late",
        "",
        f"Commands: {command}; the data: `python -m bench.studies.late_runs run --seed S` per"
        " seed (the module's doc says how each figure is made).",
        "",
        "Runs: the gate's allocation configuration (8 runs per co-runner job, 26 after the"
        " bootstrap per cell), cobell at default flags (P(meet) >= 0.95).",
    ]
    for seed, cells in sorted(data.items()):
        lines += [
            "", f"## Seed {seed}: every late run", "",
            "Scale-out: cobell's; the oracle's (it knows the run's draw); the physics-aware,"
            f" noise-blind planner's at {LEVEL} / {HIGH_LEVEL} (late: it misses this run too)."
            " Seconds: predicted / upper bound / runtime. P(meet): cobell's at its scale-out"
            " (none met: no candidate reached 0.95, the choice by P(meet) and cost). Physics"
            " meet: the share of redraws meeting the target at cobell's scale-out (the job's"
            " own noise / every job's). Co-runners: overlap ratio predicted / measured, end"
            " predicted / real, seconds after the submit. Pairs: the model's a + b/x per"
            " co-runner, the runs it rests on, its own weight against the pool (0: the pooled"
            " pair) and its fit alone. Parts of log(runtime / predicted), percent: curve /"
            " pairs / curve + pairs / overlap / repetition / placement (the last two: noise).",
            "",
            "| cell | run | overshoot % | scale-out | oracle | noise-blind | seconds | P(meet) |"
            " physics meet | co-runners | pairs | parts % | attribution |",
            "|---" * 13 + "|",
            *[r for cell, runs in sorted(cells.items()) for r in late_rows(cell, runs)],
            "", f"## Seed {seed}: late runs and the co-runners' size", "",
            "Late: runs over the target after the bootstrap. Size correlation: over the runs"
            " of the pair / triple cells, between the model's error at the measured overlaps"
            " (curve + interference) and the co-runners' overlap-weighted scale-out.",
            "", "| world | runs | late | late % | max overshoot % | size correlation |",
            "|---|---|---|---|---|---|",
            *summary_rows(cells),
            "", f"## Seed {seed}: late runs by attribution", "",
            "| world | attribution | late runs |", "|---|---|---|",
            *attribution_rows(cells),
            "", f"## Seed {seed}: the parts over every run after the bootstrap", "",
            "Mean +- SE over the cell's runs of each part of log(runtime / predicted), percent"
            " (interference: pairs and placement together; curve + interference: the model's"
            " error at the measured overlaps, less the repetition's noise); bound: log(upper"
            " bound / predicted), the margin cobell reserved; sd: of log(runtime / predicted).",
            "",
            "| cell | runs | late | " + " | ".join(MEAN_PARTS) + " | sd |",
            "|---" * (len(MEAN_PARTS) + 4) + "|",
            *mean_rows(cells),
        ]
    return "\n".join(lines) + "\n"


def _per_run(cells: Mapping[str, Sequence[Record]], world: str) -> dict[tuple, Record]:
    return {(cell, d["index"]): d for cell, runs in cells.items() if cell.startswith(world + "/")
            for d in runs}


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    v = np.array(values, dtype=float)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v)))


def paired_rows(base: Mapping[tuple, Record], other: Mapping[tuple, Record]) -> list[str]:
    """Today's and the variant's late %, max overshoot, cost; the variant less today's, run by
    run: executor-s over the oracle's and late (points), mean +- SE."""
    keys = sorted(base)
    rows = []
    for name, runs in (("default", base), ("sized", other)):
        late = 100 * np.mean([runs[k]["late"] for k in keys])
        over = max(runs[k]["overshoot_pct"] for k in keys)
        cost = (sum(runs[k]["scale_out"] * runs[k]["runtime_s"] for k in keys)
                / sum(runs[k]["oracle_node_s"] for k in keys))
        rows.append(f"{name} | {late:.1f} / {over:.1f} / {cost:.3f}")
    ratio = [(other[k]["scale_out"] * other[k]["runtime_s"] - base[k]["scale_out"]
              * base[k]["runtime_s"]) / base[k]["oracle_node_s"] for k in keys]
    late = [100.0 * (other[k]["late"] - base[k]["late"]) for k in keys]
    (c, cse), (lt, lse) = _mean_se(ratio), _mean_se(late)
    return [rows[0] + " | |", rows[1] + f" | {c:+.4f} +- {cse:.4f} | {lt:+.2f} +- {lse:.2f}"]


def paired_section(data: Mapping[int, Any], sized: Mapping[int, Any]) -> str:
    seeds = sorted(set(data) & set(sized))
    if not seeds:
        return ""
    lines = [
        "", "## A candidate: overlaps weighed by the co-runner's size", "",
        "The model's error at the measured overlaps grows with the co-runners' scale-out"
        " (above). `--variant sized` fits every model with RuntimeModel(sized=True) (core/model:"
        " each overlap times its co-runner's scale-out over its job's usual one), on the same"
        " runs. Entries: late % / max overshoot % / executor-s over the oracle's; paired: sized"
        " less default run by run, mean +- SE (executor-s over the oracle's; late, points).",
        "", "| seed | world | variant | late / max overshoot / cost | paired cost | paired late |",
        "|---|---|---|---|---|---|",
    ]
    for seed in seeds:
        for world in ("nodesim", "simulator"):
            base, other = _per_run(data[seed], world), _per_run(sized[seed], world)
            if base and set(base) == set(other):
                lines += [f"| {seed} | {world} | {r} |" for r in paired_rows(base, other)]
    return "\n".join(lines) + "\n"


def save(cells: Mapping[str, Any], seed: int, cache: Path, variant: str = "default") -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{'late' if variant == 'default' else variant}-{seed}.json"
    path.write_text(json.dumps(cells))
    return path


def load(cache: Path, prefix: str = "late") -> dict[int, dict[str, list[Record]]]:
    return {int(p.stem.rsplit("-", 1)[1]): json.loads(p.read_text())
            for p in sorted(cache.glob(f"{prefix}-*.json"))}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.studies.late_runs",
                                description=(__doc__ or "").splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="one seed, to --cache")
    r.add_argument("--seed", type=int, default=gate.SEED)
    r.add_argument("--worlds", nargs="+", choices=co.WORLDS, default=["nodesim"])
    r.add_argument("--processes", type=int, default=2)
    r.add_argument("--variant", choices=VARIANTS, default="default")
    r.add_argument("--cache", type=Path, default=CACHE)
    rep = sub.add_parser("report", help="the tables from --cache")
    rep.add_argument("--cache", type=Path, default=CACHE)
    rep.add_argument("--output", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.command == "run":
        cells = run(args.seed, args.worlds, args.processes, args.variant)
        print(f"wrote {save(cells, args.seed, args.cache, args.variant)}")
        return
    data = load(args.cache)
    if not data:
        sys.exit(f"no runs in {args.cache}: run `python -m bench.studies.late_runs run` first")
    text = render(data, "`python -m bench.studies.late_runs report`")
    publish(text + paired_section(data, load(args.cache, "sized")), args.output)


if __name__ == "__main__":
    main()
