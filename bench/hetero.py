"""Node types: a simulated heterogeneous cluster, leave-one-type-out error and the choice of
(node label, scale-out) against peers and an oracle.

    python -m bench.hetero [--quick] [--seeds 2018 7 11] [--output FILE]

The world: four node types whose speed differs per resource (TYPES: a general type, the
cluster's default partition, and compute-, storage- and network-optimised ones, each with a
price per executor-second). A job's runtime on type t at scale-out x is its measured Bell
runtime (a repetition of ../shared/data/bell, bench.simulator.Curve) times Σ_r f_jr / v_tr,
f_j its time split over (cpu, memory bandwidth, disk, network) (bench.simulator.PROFILES,
normalised), v_t the type's speeds: a job gains on the type that is fast at its bottleneck.
What cobell sees of a job's resources is what its event log would say (bench.simulator.
run_resources, with noise), not f_j.

History: every job ran ten times on the default type (scale-outs 8-48) and three times on each
of two other types, drawn per job and seed, so that each type has jobs that ran on it.

Leave-one-type-out: for every job and every type it ran on, its runs there are taken out and
predicted at their scale-outs: one type for all (today: the job's model ignores where runs
ran), per-type model with no shared structure (a model per type, so a held-out type has none:
it falls back to one for all), and shared structure (core/nodetype: one curve, a factor per
type, the profile prior learned from the other jobs for the held-out type). Goal: median
error <= 15 %.

Allocation: for each job, three targets (1.25 x its median runtime on the default type at
scale-outs 12, 20, 32: with less, the flat, noisy curves of PageRank and TPC-H leave targets
within the runs' own noise) and REPS fresh runs each; each strategy picks (type, scale-out)
in 8-60 (the history's smallest scale-out up) with cobell's planner (`core.plan.plan`, what
`cobell predict` runs, at its default confidence) and pays price x executors x the true runtime of
that run:

* one type for all: the default type's runs, the default type (today);
* fastest type always: the type whose runs were fastest relative to the default over all
  jobs, for every job, planned with the shared structure;
* per-type model: a plan on each type's own runs (types with >= 3 of them), the cheapest;
* shared structure (core/nodetype/labels.py): every type planned on the runs brought to the
  base type against target / factor; a type the job never ran on by its profile prior,
  widened by the speeds' held-out error; the cheapest;
* oracle: the cheapest (type, scale-out) meeting the target in that very run.

`--known-only DRAWS` prints instead the planner that knows the world: per job and target the
cheapest fixed (type, scale-out) with P(meet) >= 0.9 (0.95) over DRAWS runs, against the same
oracle; the lowest cost / oracle's any planner can reach, since a plan knows no run's noise.

Goals: cost <= 1.1 x the oracle's while meeting >= 95 % of targets.

Seeds: 2018 is the one the method was developed on; 7 and 11 were run after it was frozen.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.colocation import DEFAULT_DATA
from bench.simulator import PROFILES, RESOURCES, Curve, load_curves, run_resources
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.nodetype import (
    DEFAULT_TYPE,
    LabelOption,
    NodeTypeModel,
    TypeSpeeds,
    cheapest_label,
    node_type,
    plan_labels,
)
from cobell_cli.core.plan import DEFAULT_CONFIDENCE, plan
from cobell_cli.core.profile_effects import job_profile, shares

# type -> (speed per RESOURCES: cpu, memory bandwidth, disk, network), price per executor-second
TYPES: dict[str, tuple[tuple[float, float, float, float], float]] = {
    DEFAULT_TYPE: ((1.0, 1.0, 1.0, 1.0), 1.0),
    "compute": ((1.8, 1.3, 0.7, 0.9), 1.3),
    "storage": ((0.85, 0.9, 2.4, 1.0), 1.2),
    "network": ((0.95, 1.1, 0.9, 2.2), 1.25),
}
HOME_SCALE_OUTS = (8, 12, 16, 24, 32, 40, 48, 8, 24, 48)
EXPLORE_SCALE_OUTS = (12, 24, 40)
TARGET_SCALE_OUTS = (12, 20, 32)
TARGET_SLACK = 1.25  # targets: the default type's median runtime at those scale-outs, x 1.25
REPS = 4
MIN_X, MAX_X = 8, 60  # the history covers 8-48: below, every model only bounds the runtime
CONFIDENCE = DEFAULT_CONFIDENCE  # what `cobell predict` plans at without --confidence
RUN_NOISE = 0.04  # log-normal noise of a run beyond its Bell repetition
STRATEGIES = ("one-for-all", "fastest", "per-type", "shared", "oracle")
GOAL_ERROR, GOAL_COST, GOAL_MEET = 15.0, 1.1, 95.0
MIN_TYPE_RUNS = 3
KNOWN_P = (0.9, 0.95)  # what the planner that knows the world must reach per target


def slowness(job: str, t: str) -> float:
    """Σ_r f_jr / v_tr: the job's runtime on t relative to a type of all-one speeds."""
    f = np.array(PROFILES[job], float)
    f = f / f.sum()
    return float(f @ (1.0 / np.array(TYPES[t][0])))


def true_runtime(curve: Curve, job: str, t: str, x: int, rep: Sequence[int], noise: float,
                 ) -> float:
    return curve.isolated_s(x, rep) * slowness(job, t) * noise


@dataclass
class History:
    runs: dict[str, list[dict[str, Any]]]
    profiles: dict[str, dict[str, float]]
    explored: dict[str, list[str]]


def history(curves: Mapping[str, Curve], seed: int) -> History:
    rng = np.random.default_rng([seed, 281])
    others = [t for t in TYPES if t != DEFAULT_TYPE]
    runs: dict[str, list[dict[str, Any]]] = {}
    explored = {}
    n = 0
    for job in sorted(curves):
        explored[job] = sorted(str(t) for t in rng.choice(others, 2, replace=False))
        plan = [(DEFAULT_TYPE, x) for x in HOME_SCALE_OUTS]
        plan += [(t, x) for t in explored[job] for x in EXPLORE_SCALE_OUTS]
        for t, x in plan:
            n += 1
            rep = [int(i) for i in rng.integers(0, curves[job].reps, len(curves[job].scale_outs))]
            y = true_runtime(curves[job], job, t, x, rep, float(rng.lognormal(0, RUN_NOISE)))
            runs.setdefault(job, []).append({
                "id": n, "job": job, "status": "succeeded", "scale_out": x, "runtime_s": y,
                "overlaps": {}, "node_label": t or None,
                "resources": run_resources(job, f"h{n}", seed)})
    profiles = {job: job_profile(shares(r["resources"]) for r in rs) for job, rs in runs.items()}
    return History(runs, profiles, explored)


def fit_shared(h: History, job: str, runs: Sequence[Mapping[str, Any]]) -> NodeTypeModel:
    """The job's shared-structure model, the types' speeds learned from the other jobs' runs
    (their own per-type factors) and the job's own."""
    factors = []
    for other, rs in h.runs.items():
        use = runs if other == job else rs
        factors += NodeTypeModel().fit(use).type_factors(other)
    speeds = TypeSpeeds().fit(factors, h.profiles)
    return NodeTypeModel().fit(runs, h.profiles[job], speeds)


# --- leave one type out -----------------------------------------------------------------------


def loto(h: History) -> list[dict[str, Any]]:
    """Each job's runs on one type predicted from its runs on the others. A type no other job
    ran on as well as elsewhere gives the shared structure nothing to go on (the planner then
    leaves that label out, api/node_types.py): its runs are marked `left_out` and count in
    neither method's error, so the two are compared on the same runs."""
    rows = []
    for job, runs in h.runs.items():
        for t in sorted({node_type(r) for r in runs}):
            held = [r for r in runs if node_type(r) == t]
            rest = [r for r in runs if node_type(r) != t]
            one = fit_runtime_model(rest)
            shared = fit_shared(h, job, rest)
            for r in held:
                x, y = [r["scale_out"]], r["runtime_s"]
                try:
                    by_type = float(shared.predict(x, None, t)[0])
                except ValueError:  # no runs on t and no prior for it
                    rows.append({"job": job, "type": t or "default", "left_out": True})
                    continue
                rows.append({"job": job, "type": t or "default",
                             "one-for-all": abs(float(one.predict(x)[0]) / y - 1),
                             "shared": abs(by_type / y - 1)})
    return rows


# --- allocation -------------------------------------------------------------------------------


def _planner(job: str, fits: dict[Any, Any]) -> Any:
    """cobell's planner for the job at the default confidence, over [MIN_X, MAX_X], with a
    memoised fit (the same history is planned for several labels and targets)."""
    def fit(runs: Sequence[Mapping[str, Any]], **_: Any) -> Any:
        key = tuple((r["id"], round(float(r["runtime_s"]), 9)) for r in runs)
        if key not in fits:
            fits[key] = fit_runtime_model(runs)
        return fits[key]

    def plan_fn(*, history: Sequence[Mapping[str, Any]], target_s: float,
                co_runners: Sequence[Any] = ()) -> Any:
        return plan(job=job, history=history, now=0.0, target_s=target_s, min_scale_out=MIN_X,
                    max_scale_out=MAX_X, co_runners=co_runners, confidence=CONFIDENCE,
                    fit=fit)
    return plan_fn


def choose(h: History, job: str, target: float, fast: str, fits: dict[Any, Any],
           ) -> dict[str, tuple[str, int]]:
    """(label, scale-out) per strategy, every one planned by cobell's planner."""
    runs = h.runs[job]
    plan_fn = _planner(job, fits)
    prices = {t: price for t, (_, price) in TYPES.items()}
    out: dict[str, tuple[str, int]] = {}
    default_runs = [r for r in runs if node_type(r) == DEFAULT_TYPE]
    out["one-for-all"] = (DEFAULT_TYPE, plan_fn(history=default_runs or runs,
                                                target_s=target).scale_out)
    shared = fit_shared(h, job, runs)
    options, _ = plan_labels(plan_fn, runs=runs, labels=list(TYPES), prices=prices,
                             target_s=target, model=shared, confidence=CONFIDENCE)
    best = cheapest_label(options, target)
    out["shared"] = (best.node_label, best.scale_out)
    fastest = next(o for o in options if o.node_label == fast) if any(
        o.node_label == fast for o in options) else best
    out["fastest"] = (fastest.node_label, fastest.scale_out)
    per_type = []
    for t, n in shared.runs_per_type_.items():
        if n >= MIN_TYPE_RUNS:
            own = [r for r in runs if node_type(r) == t]
            p = plan_fn(history=own, target_s=target)
            per_type.append(LabelOption(t, prices[t], 1.0, "runs", p))
    chosen = cheapest_label(per_type, target)
    out["per-type"] = (chosen.node_label, chosen.scale_out)
    return out


def _fastest_type(h: History) -> str:
    """The type whose runs were fastest relative to the default type, over all jobs."""
    factors = [f for job, rs in h.runs.items() for f in NodeTypeModel().fit(rs).type_factors(job)]
    by: dict[str, list[float]] = {}
    for f in factors:
        by.setdefault(f.node_type, []).append(math.log(f.factor))
    return min(by, key=lambda t: float(np.mean(by[t])))


def allocate(h: History, curves: Mapping[str, Curve], seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng([seed, 282])
    fast = _fastest_type(h)
    rows = []
    for job in sorted(h.runs):
        curve = curves[job]
        fits: dict[Any, Any] = {}
        for x_t in TARGET_SCALE_OUTS:
            target = TARGET_SLACK * curve.median_s(x_t)
            chosen = choose(h, job, target, fast, fits)
            for _ in range(REPS):
                rep = [int(i) for i in rng.integers(0, curve.reps, len(curve.scale_outs))]
                noise = float(rng.lognormal(0, RUN_NOISE))

                def run(t: str, x: int, rep: list[int] = rep, noise: float = noise,
                        curve: Curve = curve, job: str = job) -> float:
                    return true_runtime(curve, job, t, x, rep, noise)

                row: dict[str, Any] = {"job": job, "target_s": target}
                for name, (t, x) in chosen.items():
                    y = run(t, x)
                    row[name] = {"type": t or "default", "x": x, "miss": y > target,
                                 "cost": TYPES[t][1] * x * y}
                row["oracle"] = _oracle(run, target)
                rows.append(row)
    return rows


def _oracle(run: Any, target: float) -> dict[str, Any]:
    """The cheapest (type, scale-out) meeting the target in this very run (cost is not
    monotone in the scale-out: a run's noise differs between scale-outs)."""
    best = None
    for t, (_, price) in TYPES.items():
        for x in range(MIN_X, MAX_X + 1):
            y = run(t, x)
            cost = price * x * y
            if y <= target and (best is None or cost < best["cost"]):
                best = {"type": t or "default", "x": x, "miss": False, "cost": cost}
    if best is None:
        y = run(DEFAULT_TYPE, MAX_X)
        best = {"type": "default", "x": MAX_X, "miss": True, "cost": MAX_X * y}
    return best


# --- a planner that knows the world -----------------------------------------------------------


def known_distribution(curves: Mapping[str, Curve], seed: int, draws: int = 1000,
                       ) -> list[dict[str, Any]]:
    """Per (job, target): the cheapest fixed (type, scale-out) that a planner knowing the
    world's run distribution exactly would choose (mean cost over `draws` runs drawn as
    `allocate` draws them, P(meet) >= p for p in KNOWN_P), its P(meet) and mean cost /
    the oracle's. What no planner can beat: the oracle knows each run, a plan only its
    distribution."""
    rng = np.random.default_rng([seed, 283])
    cells = [(t, x) for t in TYPES for x in range(MIN_X, MAX_X + 1)]
    price = np.array([TYPES[t][1] * x for t, x in cells])
    rows = []
    for job in sorted(curves):
        curve = curves[job]
        y = np.array([[true_runtime(curve, job, t, x, rep, noise) for t, x in cells]
                      for rep, noise in _draws(curve, rng, draws)])
        for x_t in TARGET_SCALE_OUTS:
            target = TARGET_SLACK * curve.median_s(x_t)
            ok = y <= target
            oracle = np.where(ok, y * price, np.inf).min(axis=1)  # every draw has one (8-60)
            p_meet, ratio = ok.mean(axis=0), (y * price / oracle[:, None]).mean(axis=0)
            row: dict[str, Any] = {"job": job, "x_t": x_t, "target_s": target}
            for p in KNOWN_P:
                good = np.flatnonzero(p_meet >= p)
                i = int(good[np.argmin(ratio[good])]) if len(good) else int(np.argmax(p_meet))
                row[p] = {"type": cells[i][0] or "default", "x": cells[i][1],
                          "meet": float(p_meet[i]), "cost": float(ratio[i])}
            rows.append(row)
    return rows


def _draws(curve: Curve, rng: np.random.Generator, n: int) -> list[tuple[list[int], float]]:
    return [([int(i) for i in rng.integers(0, curve.reps, len(curve.scale_outs))],
             float(rng.lognormal(0, RUN_NOISE))) for _ in range(n)]


def known_table(seed: int, rows: Sequence[Mapping[str, Any]]) -> str:
    lines = ["| seed | job | target at | " + " | ".join(
        f"P(meet) >= {p:g}: choice, P(meet), cost / oracle's" for p in KNOWN_P) + " |",
        "|---|---|---|" + "---|" * len(KNOWN_P)]
    for r in rows:
        cells = [f"{r[p]['type']} {r[p]['x']}, {100 * r[p]['meet']:.1f} %, {r[p]['cost']:.3f}"
                 for p in KNOWN_P]
        lines.append(f"| {seed} | {r['job']} | {r['x_t']} | " + " | ".join(cells) + " |")
    means = [f"**{100 * np.mean([r[p]['meet'] for r in rows]):.1f} %, "
             f"{np.mean([r[p]['cost'] for r in rows]):.3f}**" for p in KNOWN_P]
    lines.append(f"| {seed} | mean | | " + " | ".join(means) + " |")
    return "\n".join(lines)


# --- report -----------------------------------------------------------------------------------


def summarize(seed: int, errors: Sequence[Mapping[str, Any]],
              alloc: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    left_out = sum(bool(e.get("left_out")) for e in errors)
    errors = [e for e in errors if not e.get("left_out")]
    out: dict[str, Any] = {"seed": seed, "held_out_runs": len(errors), "left_out_runs": left_out}
    for m in ("one-for-all", "shared"):
        v = np.array([e[m] for e in errors]) * 100
        out[f"loto_{m}"] = (float(np.median(v)), float(np.mean(v)))
    for s in STRATEGIES:
        out[s] = {"meet": 100 * float(np.mean([not a[s]["miss"] for a in alloc])),
                  "cost": float(np.mean([a[s]["cost"] / a["oracle"]["cost"] for a in alloc])),
                  "total": float(sum(a[s]["cost"] for a in alloc)
                                 / sum(a["oracle"]["cost"] for a in alloc)),
                  "types": _counts(a[s]["type"] for a in alloc)}
    out["n_alloc"] = len(alloc)
    return out


def _counts(values: Any) -> str:
    c: dict[str, int] = {}
    for v in values:
        c[v] = c.get(v, 0) + 1
    return ", ".join(f"{k} {n}" for k, n in sorted(c.items()))


def table(summaries: Sequence[Mapping[str, Any]]) -> str:
    lines = ["| seed | held-out runs | LOTO median (mean) error one type for all | LOTO median "
             "(mean) error shared structure (goal <= 15 %) |", "|---|---|---|---|"]
    for s in summaries:
        a, b = s["loto_one-for-all"], s["loto_shared"]
        runs = str(s["held_out_runs"]) + (
            f" ({s['left_out_runs']} left out: a type no other job ran on)"
            if s.get("left_out_runs") else "")
        lines.append(f"| {s['seed']} | {runs} | {a[0]:.1f} % ({a[1]:.1f} %) | "
                     f"{b[0]:.1f} % ({b[1]:.1f} %) |")
    lines += ["", "| seed | strategy | targets met (goal >= 95 %) | mean cost / oracle's "
              "(goal <= 1.1) | total cost / oracle's | types chosen |", "|---|---|---|---|---|---|"]
    for s in summaries:
        for name in STRATEGIES:
            r = s[name]
            lines.append(f"| {s['seed']} | {name} | {r['meet']:.1f} % | {r['cost']:.3f} | "
                         f"{r['total']:.3f} | {r['types']} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[2018, 7, 11])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--known-only", type=int, default=None, metavar="DRAWS",
                        help="only the planner that knows the world (DRAWS runs per target)")
    args = parser.parse_args(argv)
    t0 = time.time()
    curves = load_curves(args.data)
    if args.known_only:
        text = "\n\n".join(known_table(seed, known_distribution(curves, seed, args.known_only))
                            for seed in args.seeds)
        return _emit(text, t0, args.output)
    summaries = []
    for seed in args.seeds[:1] if args.quick else args.seeds:
        h = history(curves, seed)
        summaries.append(summarize(seed, loto(h), allocate(h, curves, seed)))
    return _emit(table(summaries), t0, args.output)


def _emit(text: str, t0: float, output: Path | None) -> int:
    print(text)
    print(f"\n{time.time() - t0:.0f} s")
    if output:
        output.write_text(text + "\n")
    return 0


assert RESOURCES == ("cpu", "memory_bandwidth", "disk", "network")

if __name__ == "__main__":
    raise SystemExit(main())
