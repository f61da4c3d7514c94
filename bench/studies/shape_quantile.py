"""Is the cost gap of cobell's allocation the predictive distribution's tail? Candidate
distributions, each against today's on the very same runs (issue 34, goal 1).

    python -m bench.studies.shape_quantile run --seed S --variant V [--cache DIR]
    python -m bench.studies.shape_quantile report [--cache DIR] [--output FILE]

`run` plays the gate's allocation configuration (bench/gate/units.py: every bench.colocation
cell, RUNS_PER_INTERFERER runs per co-runner job) at one seed with cobell at default flags
(`plan()` as `cobell predict` runs it) and the oracle, under one variant of the planner's
predictive distribution (core/predictive.py), patched in for the run only:

* conformal: today's. The pooled errors' standardised shape read by its conformal ranks
  (calibration.RatioDistribution): with n < p / (1 - p) errors (19 at 0.95) the rank at level
  p is the largest error seen, beyond it the Student t bound, never below the largest.
* t: the shape is Student t, n - 1 degrees of freedom, widened by sqrt(1 + 1/n): the
  normal-theory prediction bound of the next error, a smoother and lower bound there.
* lower: the lower of the conformal and the t bound at each level (P(meet): the higher).
* no_pair_sd: today's shape, without the running co-runners' pair uncertainty added to each
  candidate's scale (model_phase._pair_log_sd).
* robust: today's ranks, but the pooled and each candidate's local location and scale robust
  (weighted median, MAD x 1.4826; the pooled ones as PRIOR_ERRORS pseudo-errors): one huge
  error moves neither (tests/test_implausible.py's one run 5x the curve at 41 executors).
* robust_ratio: today's pooled shape (log sd and ranks, the tails kept); each candidate's
  spread the pooled sd times the ratio of the kernel-weighted MAD near it to the pooled MAD,
  its location today's pooled mean moved by the weighted median's shift from the pooled one.

Issue 34's one-step goal (tests/test_decision_robustness.py counts the moves with them):

* local: locally weighted conformal. Each error standardised as a candidate at its own
  scale-out reads it (less that candidate's location, over its scale; the error itself among
  the kernel's), every candidate's bound its location + scale x these scores' conformal
  quantile (Student t tail beyond).
* interior: the held-out errors of a run alone at an edge of the runs' scale-outs left out
  (held out, such a run is an extrapolation's error, and it moves with every refit's curve).
* local_interior: both.
* dp: the Dirichlet-process predictive of the next standardised error, base measure the
  Student t of `t`, concentration PRIOR_ERRORS: G(z) = (#{z_i <= z} + a T(z)) / (n + a).

Each run's records go to --cache as JSON (the study's data, not the repository's). `report`
pairs every variant with `conformal` run by run: late %, max overshoot, executor-seconds over
the oracle's, and the paired differences with their standard errors over runs, on the
development seed 2018 and the held-out seeds.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import multiprocessing
import sys
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import ROOT, publish
from bench import colocation as co
from bench.gate import units as gate
from cobell_cli.core import predictive as pr
from cobell_cli.core.calibration import scale_out_of, student_t_cdf, student_t_quantile
from cobell_cli.core.plan import model_phase

RESULTS = ROOT / "bench" / "results" / "shape_quantile.md"
CACHE = Path("/tmp/cobell-shape-quantile-study")
BASE = "conformal"
VARIANTS = (BASE, "t", "lower", "no_pair_sd", "robust", "robust_ratio", "local", "interior",
            "local_interior", "dp")
DEV_SEED = gate.SEED

Record = dict[str, Any]


# --- the variants ---------------------------------------------------------------------------


def _t_inflate(shape: pr.Shape) -> float:
    return math.sqrt(1.0 + 1.0 / shape.n)


def _t_usable(shape: pr.Shape) -> bool:
    """A t needs a spread and two degrees of freedom; else every variant is today's."""
    return not shape.degenerate and shape.n >= 3


MAD_TO_SD = 1.4826  # a normal's sd over its median absolute deviation


def weighted_median(pairs: Sequence[tuple[float, float]]) -> float:
    """The smallest value with at least half the total weight at or below it."""
    ordered = sorted(pairs)
    half, acc = sum(w for _, w in ordered) / 2, 0.0
    for value, weight in ordered:
        acc += weight
        if acc >= half:
            return value
    return ordered[-1][0]


def _robust_shape(shape: pr.Shape) -> None:
    """The shape standardised by the median and MAD of its log errors (kept when the MAD is 0)."""
    logs = [math.log(r) for r in shape.distribution.ordered]
    median = weighted_median([(v, 1.0) for v in logs])
    mad = weighted_median([(abs(v - median), 1.0) for v in logs]) * MAD_TO_SD
    if mad > 0:
        shape.log_mean, shape.log_sd = median, mad


def _near(errors: pr.NearErrors, kernel_at: Mapping[float, float]) -> list[tuple[float, float]]:
    """(log error, kernel weight) pairs, as predictive._local weighs them."""
    return [(e, kernel_at[s]) for s, e in zip(errors.at_s, errors.log_errors, strict=True)]


def _robust_local(errors: pr.NearErrors, shape: pr.Shape, prior_errors: float,
                  kernel_at: Mapping[float, float],
                  ) -> tuple[float, float, float]:
    """predictive._local with the kernel-weighted median and MAD for the mean and sd."""
    pooled_sd = max(shape.log_sd, pr.MIN_LOG_SD)
    near = _near(errors, kernel_at)
    total = sum(w for _, w in near) + prior_errors
    location = weighted_median([*near, (shape.log_mean, prior_errors)])
    deviations = [(abs(e - location), w) for e, w in near]
    prior = (pooled_sd / MAD_TO_SD + abs(shape.log_mean - location), prior_errors)
    spread = weighted_median([*deviations, prior]) * MAD_TO_SD
    return location, max(spread, pr.MIN_LOG_SD), total


def _ratio_local(errors: pr.NearErrors, shape: pr.Shape, prior_errors: float,
                 kernel_at: Mapping[float, float],
                 ) -> tuple[float, float, float]:
    """predictive._local scaled from the pooled sd by robust local / pooled ratios."""
    pooled_sd = max(shape.log_sd, pr.MIN_LOG_SD)
    logs = list(errors.log_errors)
    if not logs:
        return shape.log_mean, pooled_sd, prior_errors
    median = weighted_median([(e, 1.0) for e in logs])
    mad = weighted_median([(abs(e - median), 1.0) for e in logs]) * MAD_TO_SD
    near = _near(errors, kernel_at)
    total = sum(w for _, w in near) + prior_errors
    if mad <= 0:
        return shape.log_mean, pooled_sd, total
    location = weighted_median([*near, (median, prior_errors)])
    deviations = [(abs(e - location), w) for e, w in near]
    prior = (mad / MAD_TO_SD + abs(median - location), prior_errors)
    local_mad = weighted_median([*deviations, prior]) * MAD_TO_SD
    return (shape.log_mean + location - median, max(pooled_sd * local_mad / mad, pr.MIN_LOG_SD),
            total)


def _scored(predictive: Any) -> Any:
    """predictive.predictive whose shape is the locally standardised scores (`local`)."""

    def scored(scale_outs: Sequence[float], centers_s: Sequence[float],
               model_log_sd: Sequence[float], run_scale_outs: Sequence[float],
               errors: Sequence[pr.Error], observed: tuple[float, float],
               bandwidth: float = pr.LOCAL_BANDWIDTH, prior_errors: float = pr.PRIOR_ERRORS,
               pair_log_sd: Sequence[float] | None = None) -> pr.Predictive:
        base = predictive(scale_outs, centers_s, model_log_sd, run_scale_outs, errors,
                          observed, bandwidth, prior_errors, pair_log_sd)
        if base.shape is None or base.shape.degenerate:
            return base
        scores = local_scores([e for e in errors if e.ratio > 0], base.shape, run_scale_outs,
                              bandwidth, prior_errors)
        shape = pr.Shape([math.exp(z) for z in scores])
        shape.log_mean, shape.log_sd = 0.0, 1.0  # Z: the scores as they are
        return pr.Predictive(base.candidates, shape)

    return scored


def local_scores(errors: Sequence[pr.Error], shape: pr.Shape, run_scale_outs: Sequence[float],
                 bandwidth: float, prior_errors: float) -> list[float]:
    """Each error less the location, over the scale (extrapolation aside), that a candidate at
    its run's scale-out gets; an error without a scale-out by the pooled ones."""
    placed = [(math.log(e.scale_out), math.log(e.ratio)) for e in errors
              if e.scale_out is not None and e.scale_out > 0]
    near = pr.NearErrors.of([t for t, _ in placed], [v for _, v in placed])
    runs = [math.log(x) for x in run_scale_outs if x > 0]
    points = {*runs, *near.at_s}
    out = []
    for e in errors:
        if e.scale_out is None or e.scale_out <= 0:
            out.append((math.log(e.ratio) - shape.log_mean) / max(shape.log_sd, pr.MIN_LOG_SD))
            continue
        at = {p: pr._kernel(math.log(e.scale_out) - p, bandwidth) for p in points}
        location, spread, _ = pr._local(near, shape, prior_errors, at)
        scale = spread * math.sqrt(1.0 + 1.0 / (sum(map(at.__getitem__, runs)) + 1.0))
        out.append((math.log(e.ratio) - location) / max(scale, pr.MIN_LOG_SD))
    return out


def _interior(held_out_errors: Any) -> Any:
    """calibration.held_out_errors less the errors of a run alone at an edge (`interior`)."""

    def interior(runs: Sequence[Mapping[str, Any]], *args: Any, **kwargs: Any) -> Any:
        found = held_out_errors(runs, *args, **kwargs)
        if found is None or not found[0].startswith("held-out"):
            return found
        xs = [scale_out_of(r) for r in runs]
        lone = {x for x in (min(filter(None, xs), default=None),
                            max(filter(None, xs), default=None))
                if x is not None and xs.count(x) == 1}
        # the model's own errors come first, run by run; the recorded outcomes after them
        kept = [e for i, e in enumerate(found[1])
                if not (i < len(xs) and e.scale_out == xs[i] and e.scale_out in lone)]
        return found[0], kept if len(kept) >= 4 else found[1]

    return interior


def _dp_cdf(shape: pr.Shape, z: float) -> float:
    """The Dirichlet-process predictive at z (`dp`; today's below three errors)."""
    logs = [(math.log(r) - shape.log_mean) / shape.log_sd for r in shape.distribution.ordered]
    t = student_t_cdf(z / _t_inflate(shape), shape.n - 1)
    return (bisect_right(logs, z) + pr.PRIOR_ERRORS * t) / (shape.n + pr.PRIOR_ERRORS)


def _dp_quantile(shape: pr.Shape, p: float) -> float:
    lo, hi = -50.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if _dp_cdf(shape, mid) >= p else (mid, hi)
    return hi


@contextlib.contextmanager
def variant(name: str) -> Iterator[None]:
    """The planner with `name`'s predictive distribution while inside (module doc)."""
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}: one of {', '.join(VARIANTS)}")
    cdf, quantile, pair_sd = pr.Shape.cdf, pr.Shape.quantile, model_phase._pair_log_sd
    init, local = pr.Shape.__init__, pr._local
    predictive, held_out = pr.predictive, pr.held_out_errors

    def robust_init(shape: pr.Shape, ratios: Sequence[float]) -> None:
        init(shape, ratios)
        _robust_shape(shape)

    def t_cdf(shape: pr.Shape, z: float) -> float:
        if not _t_usable(shape):
            return cdf(shape, z)
        t = student_t_cdf(z / _t_inflate(shape), shape.n - 1)
        return max(t, cdf(shape, z)) if name == "lower" else t

    def t_quantile(shape: pr.Shape, p: float) -> float:
        if not _t_usable(shape):
            return quantile(shape, p)
        t = student_t_quantile(p, shape.n - 1) * _t_inflate(shape)
        return min(t, quantile(shape, p)) if name == "lower" else t

    def dp_cdf(shape: pr.Shape, z: float) -> float:
        return _dp_cdf(shape, z) if _t_usable(shape) else cdf(shape, z)

    def dp_quantile(shape: pr.Shape, p: float) -> float:
        return _dp_quantile(shape, p) if _t_usable(shape) else quantile(shape, p)

    try:
        if name in ("t", "lower"):
            pr.Shape.cdf, pr.Shape.quantile = t_cdf, t_quantile  # type: ignore[method-assign]
        if name == "no_pair_sd":
            model_phase._pair_log_sd = lambda model, xs, overlaps: None
        if name == "robust":
            pr.Shape.__init__, pr._local = robust_init, _robust_local  # type: ignore[method-assign]
        if name == "robust_ratio":
            pr._local = _ratio_local
        if name in ("local", "local_interior"):
            pr.predictive = _scored(predictive)
        if name in ("interior", "local_interior"):
            pr.held_out_errors = _interior(held_out)
        if name == "dp":
            pr.Shape.cdf, pr.Shape.quantile = dp_cdf, dp_quantile  # type: ignore[method-assign]
        yield
    finally:
        pr.Shape.cdf, pr.Shape.quantile = cdf, quantile  # type: ignore[method-assign]
        pr.Shape.__init__, pr._local = init, local  # type: ignore[method-assign]
        pr.predictive, pr.held_out_errors = predictive, held_out
        model_phase._pair_log_sd = pair_sd


# --- run --------------------------------------------------------------------------------------


def _records(per: Mapping[str, Sequence[co.RunRecord]]) -> dict[str, list[Record]]:
    return {s: [dict(i=r.index, x=r.scale_out, runtime_s=r.runtime_s, target_s=r.target_s,
                     node_s=r.node_s, overshoot_pct=r.overshoot_pct, bootstrap=r.bootstrap)
                for r in rs] for s, rs in per.items()}


def _cell(args: tuple[co.Config, str]) -> tuple[str, dict[str, list[Record]]]:
    cfg, name = args
    with variant(name):
        (cell, per), = co.run_experiment(cfg).items()
    return "/".join(cell), _records(per)


def run(seed: int, name: str, processes: int = 2) -> dict[str, dict[str, list[Record]]]:
    """Every gate allocation cell at `seed` under `name`: cell -> strategy -> run records."""
    base = dataclasses.replace(gate.allocation_config("simulator", "single", "sgd"), seed=seed,
                               strategies=("default",))
    parts = [(dataclasses.replace(base, worlds=(w,), variants=(v,), targets=(t,)), name)
             for w, v, t in gate.allocation_cells()]
    if processes > 1:
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            return dict(pool.map(_cell, parts, chunksize=1))
    return dict(_cell(p) for p in parts)


def save(cells: Mapping[str, Any], seed: int, name: str, cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{name}-{seed}.json"
    path.write_text(json.dumps(cells))
    return path


def load(cache: Path) -> dict[tuple[str, int], dict[str, dict[str, list[Record]]]]:
    """(variant, seed) -> cell -> strategy -> records."""
    out = {}
    for path in sorted(cache.glob("*.json")):
        name, seed = path.stem.rsplit("-", 1)
        out[(name, int(seed))] = json.loads(path.read_text())
    return out


# --- statistics -------------------------------------------------------------------------------


def per_run(cells: Mapping[str, Mapping[str, Sequence[Record]]], world: str | None = None,
            ) -> dict[tuple[str, int], tuple[float, bool, float, float, float]]:
    """(cell, run) -> (executor-s / oracle's, late, executor-s, oracle's, overshoot %), after
    the bootstrap; `world` keeps that world's cells only."""
    out = {}
    for cell, per in cells.items():
        if world is not None and not cell.startswith(world + "/"):
            continue
        oracle = {r["i"]: r for r in per["oracle"]}
        for r in per["default"]:
            if not r["bootstrap"]:
                ref = oracle[r["i"]]["node_s"]
                out[(cell, r["i"])] = (r["node_s"] / ref, r["runtime_s"] > r["target_s"],
                                       r["node_s"], ref, r["overshoot_pct"])
    return out


def summary(runs: Mapping[Any, tuple[float, bool, float, float, float]]) -> dict[str, float]:
    """Late %, max overshoot % and executor-s over the oracle's (summed) of the runs."""
    values = list(runs.values())
    return {"late_pct": 100.0 * sum(v[1] for v in values) / len(values),
            "max_overshoot_pct": max(v[4] for v in values),
            "node_s_ratio": sum(v[2] for v in values) / sum(v[3] for v in values)}


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    m = sum(values) / len(values)
    if len(values) < 2:
        return m, math.nan
    return m, math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values))


def paired(base: Mapping[Any, tuple], other: Mapping[Any, tuple]) -> dict[str, float]:
    """The variant less today's, run by run: executor-s / oracle's, late (percentage points)."""
    keys = sorted(base)
    cost = mean_se([other[k][0] - base[k][0] for k in keys])
    late = mean_se([100.0 * (other[k][1] - base[k][1]) for k in keys])
    return {"cost": cost[0], "cost_se": cost[1], "late_pp": late[0], "late_se": late[1],
            "runs": len(keys)}


# --- report -----------------------------------------------------------------------------------


def _pooled(data: Mapping[tuple[str, int], Any], name: str, seeds: Sequence[int],
            world: str | None) -> dict[Any, tuple]:
    return {(seed, *k): v for seed in seeds for k, v in per_run(data[(name, seed)], world).items()}


def render(data: Mapping[tuple[str, int], Any], command: str) -> str:
    seeds = sorted({s for _, s in data})
    groups = [(f"dev {DEV_SEED}", [DEV_SEED]),
              ("held-out " + "+".join(str(s) for s in seeds if s != DEV_SEED),
               [s for s in seeds if s != DEV_SEED])]
    names = [n for n in VARIANTS if all((n, s) in data for s in seeds)]
    lines = [
        "# The predictive distribution's tail and the cost of allocation",
        "",
        f"Commands: {command}; the data: `python -m bench.studies.shape_quantile run --seed S"
        " --variant V` per seed and variant (the module's doc).",
        "",
        "Runs: the gate's allocation configuration (8 runs per co-runner job, 26 post-bootstrap"
        " runs a cell, 6 cells a world), cobell at default flags (P(meet) >= 0.95), post-"
        "bootstrap. Entries: late % / max overshoot % / executor-s over the oracle's (summed);"
        " paired: the variant less `conformal` (today's) run by run, mean +- SE over runs,"
        " executor-s over the oracle's and late in percentage points.",
        "",
        "| seeds | world | variant | late / max overshoot / cost | paired cost | paired late |",
        "|---|---|---|---|---|---|",
    ]
    for label, group in groups:
        if not group:
            continue
        for world in ("simulator", "nodesim", None):
            base = _pooled(data, BASE, group, world)
            for name in names:
                mine = _pooled(data, name, group, world)
                s = summary(mine)
                cells = (f"| {label} | {world or 'both'} | {name} | {s['late_pct']:.1f} /"
                         f" {s['max_overshoot_pct']:.1f} / {s['node_s_ratio']:.3f} |")
                if name == BASE:
                    lines.append(cells + " | |")
                    continue
                d = paired(base, mine)
                lines.append(cells + f" {d['cost']:+.4f} +- {d['cost_se']:.4f} |"
                             f" {d['late_pp']:+.2f} +- {d['late_se']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.studies.shape_quantile",
                                description=(__doc__ or "").splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="one seed under one variant, to --cache")
    r.add_argument("--seed", type=int, default=DEV_SEED)
    r.add_argument("--variant", choices=VARIANTS, default=BASE)
    r.add_argument("--processes", type=int, default=2)
    r.add_argument("--cache", type=Path, default=CACHE)
    rep = sub.add_parser("report", help="the tables from --cache")
    rep.add_argument("--cache", type=Path, default=CACHE)
    rep.add_argument("--output", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    if args.command == "run":
        path = save(run(args.seed, args.variant, args.processes), args.seed, args.variant,
                    args.cache)
        print(f"wrote {path}")
        return
    data = load(args.cache)
    if not data:
        sys.exit(f"no runs in {args.cache}: run `python -m bench.studies.shape_quantile run` first")
    text = render(data, "`python -m bench.studies.shape_quantile report`")
    publish(text, args.output)


if __name__ == "__main__":
    main()
