"""Coverage of the nominal 90 % interval on fresh runs with co-runners (issue 13, item 2c).

    python -m bench.coverage [--quick] [--seeds N] [--worlds simulator nodesim] [--data DIR]
                             [--output FILE]

Worlds: bench.simulator (its interference is not cobell's formula: a power law in the
victim's scale-out, saturating across co-runners, event-driven cascades) and bench.nodesim
(executors on nodes sharing cpu, disk and network max-min fairly, the scarcest resource
deciding an executor's rate), through bench.colocation's `truth`. The target job
(SGD) runs at scale-outs 4..60; each run meets 0-3 co-runner apps drawn from a pool of
1, 20 or 60 co-runner jobs; a co-runner job is one of the five other Bell jobs at a scale-out
of its own (8..48), so the pool's pairs differ by kind and pressure. Overlaps are measured as
`cobell submit` records them (`cobell_cli.api.measured_overlaps`). The model is the CLI's
(`fit_runtime_model`, the same core), fitted on a history of 50, 200 or 1000 runs; each
cell is scored on fresh runs with co-runners, at their measured overlaps: the share inside
`predict_interval(..., confidence=0.9)`.

"before" is the model as it was: the paper's additive a + b/x, no pooling, an interval from
the scale-out curve alone, uncalibrated (`RuntimeModel(combination="additive",
scaled=True, pooling=False, propagate=False, alone_curve="ernest", calibrate=False, sized=False)`).
"after" is the default.

Also, in bench.simulator (whose pair law has a closed form): the error of b for co-runner jobs
met in 3-8 runs, pooled vs unpooled, against the simulator's own pair law projected on a + b/x
(least squares over the scale-outs run), next to a constant guess (the mean of those true b).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import BELL_DATA, colocation, publish
from bench.simulator import PROFILES, Contention, Curve, SimJob, load_curves
from cobell_cli.api import measured_overlaps
from cobell_cli.core.calibration import JACKKNIFE_MAX_FITS
from cobell_cli.core.model.select import RuntimeModel
from cobell_cli.core.running import RunningApp

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = BELL_DATA
RESULTS = ROOT / "bench" / "results" / "coverage.md"

TARGET = "sgd"
KINDS = ("grep", "kmeans", "pagerank", "tpchq10", "wordcount")
SCALE_OUTS = tuple(range(4, 61, 4))
CO_SCALE_OUTS = (8, 48)  # a co-runner job's own scale-out, drawn once per job
CO_COUNT_P = (0.25, 0.35, 0.25, 0.15)  # P(0, 1, 2, 3 co-runner apps) per run
HISTORY_SIZES = (50, 200, 1000)
POOL_SIZES = (1, 20, 60)
FRESH_RUNS = 150
CONFIDENCE = 0.9
THIN_RUNS = (3, 8)
WORLDS = ("simulator", "nodesim")
GOAL = (85.0, 95.0)  # issue 13: the nominal 90 % interval covers 85-95 % in every cell
RUN_SPACING_S = 100_000.0
VARIANTS = {
    "before": {"combination": "additive", "scaled": True, "pooling": False,
               "propagate": False, "alone_curve": "ernest", "calibrate": False,
               "sized": False},
    "after": {},
}


@dataclass(frozen=True)
class CoJob:
    name: str
    kind: str
    scale_out: int


def draw_pool(n: int, rng: np.random.Generator) -> list[CoJob]:
    return [CoJob(f"co{i:02d}", str(rng.choice(KINDS)),
                  int(rng.integers(CO_SCALE_OUTS[0], CO_SCALE_OUTS[1] + 1))) for i in range(n)]


def one_run(index: int, pool: Sequence[CoJob], curves: dict[str, Curve], world: colocation.Truth,
            rng: np.random.Generator, target: str = TARGET, vary_sizes: bool = False,
            ) -> dict[str, Any]:
    """One run of `target`: co-runners start first, the target at a random offset (from
    before the first starts to 90 % into the shortest), simulated, overlaps measured.
    vary_sizes: each co-runner app at a scale-out of its own (CO_SCALE_OUTS), not its job's."""
    x = int(rng.choice(SCALE_OUTS))
    k = min(int(rng.choice(len(CO_COUNT_P), p=CO_COUNT_P)), len(pool))
    picks = [pool[int(i)] for i in rng.choice(len(pool), size=k, replace=False)]
    noise = world.draw(rng, curves)
    base = index * RUN_SPACING_S
    jobs = []
    for j, co in enumerate(picks):
        size = (int(rng.integers(CO_SCALE_OUTS[0], CO_SCALE_OUTS[1] + 1)) if vary_sizes
                else co.scale_out)
        work = curves[co.kind].isolated_s(size, noise.rep_index[co.kind])
        start = base + (0.0 if j == 0 else float(rng.uniform(0, 0.2 * work)))
        jobs.append(SimJob(f"{co.name}-{index}-{j}", co.kind, size, start, work))
    shortest = min((j.start_s + j.work_s for j in jobs), default=base) - base
    submit = base + float(rng.uniform(-0.3, 0.9)) * max(shortest, 0.0)
    work = curves[target].isolated_s(x, noise.rep_index[target])
    jobs.append(SimJob(f"target-{index}", target, x, submit, work))
    done = world.simulate(jobs, noise)
    me = done[-1]
    names = {f"{co.name}-{index}-{j}": co.name for j, co in enumerate(picks)}
    apps = [RunningApp(app_id=j.key, name=names[j.key], job=names[j.key], user=None,
                       queue="default", state="FINISHED", started_at=j.start_s,
                       finished_at=j.finish_s, scale_out=j.scale_out, progress=1.0,
                       backend="simulator") for j in done[:-1]]
    rows = measured_overlaps(me.start_s, me.finish_s, apps)
    return {"scale_out": x, "runtime_s": me.finish_s - me.start_s,
            "overlaps": colocation._by_job(rows),
            "co_runner_scale_outs": colocation._sizes_by_job(rows), "status": "succeeded"}


def true_b(co: CoJob, contention: Contention) -> float:
    """The simulator's pair law for the target, κ·(p·q)·pressure·(16/x)^γ, projected on
    a + b/x (a, b >= 0) over the target's scale-outs: the b a perfect fit would find."""
    from scipy.optimize import nnls

    x = np.array(SCALE_OUTS, float)
    dot = float(np.dot(PROFILES[TARGET], PROFILES[co.kind]))
    pressure = co.scale_out / (co.scale_out + contention.pressure_half_scale_out)
    law = contention.kappa * dot * pressure * (contention.victim_ref_scale_out / x) ** (
        contention.gamma)
    coef, _ = nnls(np.column_stack([np.ones_like(x), 1.0 / x]), law)
    return float(coef[1])


def draw_history(n_runs: int, pool_size: int, seed: int, curves: dict[str, Curve],
                 world: colocation.Truth,
                 ) -> tuple[np.random.Generator, list[CoJob], list[dict[str, Any]]]:
    """A cell's co-runner pool and history, and the generator its fresh runs continue."""
    rng = np.random.default_rng([seed, n_runs, pool_size])
    pool = draw_pool(pool_size, rng)
    return rng, pool, [one_run(i, pool, curves, world, rng) for i in range(n_runs)]


def cell(n_runs: int, pool_size: int, seed: int, curves: dict[str, Curve], world: colocation.Truth,
         fresh: int, variants: Mapping[str, Mapping[str, Any]] = VARIANTS,
         b_check: bool = True) -> dict[str, Any]:
    """One history and its fresh runs, scored under each of `variants` (name -> RuntimeModel
    arguments); `b_check`: also the thin co-runner jobs' b (bench.simulator's worlds)."""
    rng, pool, history = draw_history(n_runs, pool_size, seed, curves, world)
    tests: list[dict[str, Any]] = []
    i = n_runs
    while len(tests) < fresh:
        run = one_run(i, pool, curves, world, rng)
        i += 1
        if run["overlaps"]:
            tests.append(run)
    xs = [r["scale_out"] for r in tests]
    ovs = [r["overlaps"] for r in tests]
    y = np.array([r["runtime_s"] for r in tests])
    out: dict[str, Any] = {}
    for name, params in variants.items():
        started = time.perf_counter()
        model = RuntimeModel(**params).fit(history)
        lower, upper = model.predict_interval(xs, ovs, confidence=CONFIDENCE)
        inside = (y >= lower) & (y <= upper)
        out[name] = {"covered": int(inside.sum()), "n": len(tests),
                     "log_width": float(np.median(np.log(upper / lower))),
                     "fit_s": time.perf_counter() - started}
        if name == "after":
            out["rule"] = f"{model.combination_}, {'a+b/x' if model.scaled_ else 'a'}"
    if b_check and isinstance(world, colocation.ProfileTruth):
        out.update(b_errors(history, pool, world.contention))
    return out


def b_errors(history: list[dict[str, Any]], pool: Sequence[CoJob], contention: Contention,
             ) -> dict[str, list[float]]:
    """b of thin co-runner jobs from one a + b/x fit, before and after pooling."""
    if len(pool) < 3:
        return {}
    model = RuntimeModel(scaled=True).fit(history)
    truth = {co.name: true_b(co, contention) for co in pool}
    thin = [(k, j) for k, j in enumerate(model.co_runners_) if j in truth
            and THIN_RUNS[0] <= model.interference_runs_[j] <= THIN_RUNS[1]]
    return {"b_truth": [truth[j] for _, j in thin],
            "b_pooled": [float(model.b_[k]) for k, _ in thin],
            "b_unpooled": [float(model.b_unpooled_[k]) for k, _ in thin]}


Key = tuple[str, int, int]  # (world, history runs, co-runner jobs)


def run(seeds: int, sizes: Sequence[int], pools: Sequence[int], fresh: int,
        data_dir: Path, worlds: Sequence[str] = WORLDS,
        ) -> dict[Key, list[dict[str, Any]]]:
    curves = load_curves(data_dir)
    results: dict[Key, list[dict[str, Any]]] = {}
    for name in worlds:
        world = colocation.truth(name)
        for n in sizes:
            for p in pools:
                started = time.perf_counter()
                results[(name, n, p)] = [cell(n, p, s, curves, world, fresh)
                                         for s in range(seeds)]
                print(f"{name}: {n} runs x {p} co-runner jobs:"
                      f" {time.perf_counter() - started:.1f} s", flush=True)
    return results


def coverage_pct(cells: Sequence[dict[str, Any]], variant: str) -> float:
    return 100.0 * sum(c[variant]["covered"] for c in cells) / sum(c[variant]["n"] for c in cells)


def render(results: dict[Key, list[dict[str, Any]]], command: str, elapsed_s: float,
           seeds: int, fresh: int, notes: Sequence[str] = ()) -> str:
    lines = [f"# Interval coverage with co-runners\n\nCommand: `{command}` ({elapsed_s:.0f} s)\n",
             f"Worlds: {', '.join(dict.fromkeys(w for w, _, _ in results))}; target {TARGET};"
             f" {seeds} seeds x {fresh} fresh runs with co-runners per cell; nominal 90 %"
             f" interval; the goal is {GOAL[0]:.0f}-{GOAL[1]:.0f} % in every cell. Width:"
             " median log(upper / lower).\n",
             "before: the paper's additive a + b/x separated from Ernest's curve, unpooled, the "
             "interval of the scale-out curve only (`RuntimeModel(combination='additive', "
             "scaled=True, pooling=False, propagate=False, alone_curve='ernest', "
             "calibrate=False, sized=False)`). after: the default (rule and b/x by CV, "
             "separated from Ernest's curve, partial pooling, the pairs' uncertainty held to a, "
             "b >= 0, the interval calibrated on held-out errors per number of co-runners; "
             f"{JACKKNIFE_MAX_FITS}-fold refits up to 100 runs, hence the fit time at 50). Same "
             "histories, same fresh runs.\n"]
    after = [coverage_pct(cells, "after") for cells in results.values()]
    met = sum(GOAL[0] <= v <= GOAL[1] for v in after)
    lines += [f"**Goal check (after): {met} of {len(after)} cells within"
              f" {GOAL[0]:.0f}-{GOAL[1]:.0f} %** (after: {min(after):.1f}-{max(after):.1f} %).\n",
              "| world | history runs | co-runner jobs | before: coverage | after: coverage | "
              "before: width | after: width | rule chosen (per seed) | fit s (before / after) |",
              "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    b_rows = []
    for (world, n, p), cells in results.items():
        cov = {v: coverage_pct(cells, v) for v in VARIANTS}
        width = {v: float(np.median([c[v]["log_width"] for c in cells])) for v in VARIANTS}
        fit = {v: float(np.mean([c[v]["fit_s"] for c in cells])) for v in VARIANTS}
        rules = "; ".join(c["rule"] for c in cells)
        lines.append(f"| {world} | {n} | {p} | {cov['before']:.1f} % | {cov['after']:.1f} % | "
                     f"{width['before']:.3f} | {width['after']:.3f} | {rules} | "
                     f"{fit['before']:.2f} / {fit['after']:.2f} |")
        truth = np.concatenate([c.get("b_truth", []) for c in cells])
        if truth.size:
            pooled = np.concatenate([c["b_pooled"] for c in cells])
            unpooled = np.concatenate([c["b_unpooled"] for c in cells])
            const = np.full_like(truth, truth.mean())
            b_rows.append(f"| {n} | {p} | {truth.size} | {np.mean(np.abs(unpooled - truth)):.2f}"
                          f" | {np.mean(np.abs(pooled - truth)):.2f} | "
                          f"{np.mean(np.abs(const - truth)):.2f} | {unpooled.max():.2f} | "
                          f"{pooled.max():.2f} | {truth.max():.2f} |")
    if b_rows:
        lines += ["", "## b of co-runner jobs met in 3-8 runs (bench.simulator, a + b/x)", "",
                  "Mean absolute error against the simulator's pair law projected on a + b/x; "
                  "'constant' guesses the mean of the true b for all (it knows that mean: an "
                  "oracle).", "",
                  "| history runs | co-runner jobs | pairs | unpooled | pooled | constant | "
                  "max b unpooled | max b pooled | max true b |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|", *b_rows]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


NOTES = (
    "## The over-wide cells at 200 runs (30 Nov 2026)",
    "",
    "At 200 runs with 60 co-runner jobs the interval covered 98.5 % (simulator) and 99.1 % "
    "(nodesim): twice as wide as it needed to be. `git bisect` on nodesim's cell (seed 0, the "
    "width below 0.4 as good) found 933ab94 (issue 34: the interference fit's default became "
    "the plain one; the broken line and the bisquare reweighting became candidates): the "
    "width there went from 0.23 to 0.57, and offering the broken line to the CV "
    "(`RuntimeModel(alone_curve=\"auto\")`) gave 0.30 again. The cause was not the curve: "
    "beyond 100 runs the held-out errors come from one fit (model/loo.py), whose hat matrix "
    "counted every co-runner's pair as free, while the partial pooling holds a pair met a "
    "few times close to the pooled one; ten refits, which it stands for, see the pooling. "
    "With the pooling's shrinkage in the hat matrix (the fix) the one-fit errors track the "
    "refits, on these seeds and on seeds 5-9, run after the fix was frozen "
    "(bench/results/loo_pooling.md): this cell 0.59 -> 0.36 wide, 99.1 -> 89.5 % covered. "
    "The gate holds every cell of this table from both sides (bench/README.md, section "
    "coverage).",
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.coverage",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small cell, writes nothing")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--fresh", type=int, default=FRESH_RUNS)
    parser.add_argument("--worlds", nargs="+", choices=WORLDS, default=list(WORLDS))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.quick:
        results = run(1, (50,), (20,), 40, args.data, args.worlds)
    else:
        results = run(args.seeds, HISTORY_SIZES, POOL_SIZES, args.fresh, args.data, args.worlds)
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["OPENBLAS_NUM_THREADS=1 python -m bench.coverage", *given])
    text = render(results, command, time.perf_counter() - started,
                  1 if args.quick else args.seeds, 40 if args.quick else args.fresh, NOTES)
    publish(text, None if args.quick else args.output)


if __name__ == "__main__":
    main()
