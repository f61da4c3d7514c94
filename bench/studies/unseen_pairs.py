"""Co-runner pairs never seen together: their effect from the jobs' resource profiles.

    python -m bench.studies.unseen_pairs [--quick] [--seeds 2018 7 11]
                                         [--worlds simulator nodesim real]
                                         [--real history/profiles-local.csv]
                                         [--real-test history/profiles-local-test.csv]
                                         [--output FILE]

Leave one pair out: for every pair of jobs {j, k} that ran together, every run in which they
overlapped is taken out of the history; then j's runs with k (and k's with j) are predicted
by the runtime model fitted on what is left, which has never seen the pair:

* pooled (today): the model's pooled pair for the stranger;
* profile: the pair from the two jobs' resource profiles (core/profile_effects: the form chosen
  by leave-one-pair-out CV over the remaining pairs, one-standard-error rule; so the form is
  chosen inside every outer fold: nested);
* known: the pair's own runs in the history but the predicted run (leave one run out): what
  the model does once it has seen the pair.

Runtime MAPE per method over the held-out runs, and the issue's goals: profile MAPE <= 1.5 x
known, and at least 30 % of the pooled-to-known gap closed.

Allocation (simulated worlds): for each held-out pair and direction, three submits of j with k
running at a random scale-out, each with a target (j's median isolated runtime at a random
scale-out in 16-40, times 1.3), planned by `cobell_cli.core.plan.plan` (what `cobell
predict`/`submit` run, at the default confidence) with and without the profile priors, then
played in the world: miss rate (goal <= 5 %) and executor-seconds against the oracle's.
On the real recordings no run can be replayed at another scale-out: the bound's miss rate
there is the share of held-out runs above the model's calibrated upper bound at their own
scale-out (at the default confidence).

Worlds: bench/simulator.py and bench/nodesim.py (their jobs' resource profiles as their
event logs would say, `run_resources`, with noise), and the real recordings
(history/record-profiles.py). Seeds: 2018 is the one the method was developed on; 7 and 11
were run only after it was frozen. The real recordings: history/profiles-local.csv was
developed on (leave one pair out within it); history/profiles-local-test.csv was recorded
after the freeze and is predicted from the development recording: each of its pairs by
models that never saw the pair (pooled, profile) and by models that did (known).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT, nodesim
from bench import simulator as profile_sim
from bench.colocation import (
    DEFAULT_DATA,
    _app,
    _by_job,
    _sizes_by_job,
    cli_default_confidence,
    truth,
)
from bench.simulator import Curve, SimJob, load_curves
from cobell_cli.api import measured_overlaps
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.plan import plan
from cobell_cli.core.predictive import calibrated_distribution
from cobell_cli.core.profile_effects import (
    choose,
    job_profile,
    pair_effects,
    priors_for,
    profile_vectors,
    shares,
)

RESULTS = ROOT / "bench" / "results"
SCALE_OUTS = (8, 16, 24, 32, 48)
PAIR_REPS = 6
ALLOC_SUBMITS = 3
MIN_SCALE_OUT, MAX_SCALE_OUT = 4, 60
METHODS = ("known", "pooled", "profile")
GOAL_RATIO, GOAL_GAP, GOAL_MISS = 1.5, 0.30, 5.0
RESOURCES = {"simulator": profile_sim.run_resources, "nodesim": nodesim.run_resources}


# --- the histories ----------------------------------------------------------------------------


@dataclass
class Runs:
    """A world's runs: per job, run dicts as the history gives them (+ `cell`, `resources`)."""

    by_job: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    next_id: int = 1

    def add(self, job: str, cell: int, resources: Mapping[str, float], **run: Any) -> None:
        self.by_job.setdefault(job, []).append({
            "id": self.next_id, "job": job, "status": "succeeded", "input_bytes": None,
            "cell": cell, "resources": dict(resources), **run})
        self.next_id += 1

    def pairs(self) -> list[tuple[str, str]]:
        """Every unordered pair of jobs that overlapped in some run."""
        seen = set()
        for job, runs in self.by_job.items():
            for r in runs:
                for k in r["overlaps"]:
                    if k != job and k in self.by_job:
                        seen.add(tuple(sorted((job, k))))
        return sorted(seen)


def simulated_runs(world_name: str, seed: int, curves: Mapping[str, Curve]) -> Runs:
    """Every job alone at each scale-out, and every pair PAIR_REPS times, at random
    scale-outs, the second job starting within 30 % of the first's runtime before or after
    it; both jobs of a pair recorded as `cobell submit` records them."""
    world = truth(world_name)
    resources = RESOURCES[world_name]
    rng = np.random.default_rng([seed, 28])
    runs = Runs()
    jobs = sorted(curves)
    cells: list[tuple[str, ...]] = [(j,) for j in jobs for _ in SCALE_OUTS]
    cells += [(j, k) for i, j in enumerate(jobs) for k in jobs[i + 1:] for _ in range(PAIR_REPS)]
    alone_x = {j: list(SCALE_OUTS) for j in jobs}
    for n, cell in enumerate(cells):
        noise = world.draw(rng, curves)
        base = (n + 1) * 1e6
        if len(cell) == 1:
            xs = (alone_x[cell[0]].pop(),)
            starts = (base,)
        else:
            xs = tuple(int(v) for v in rng.choice(SCALE_OUTS, 2))
            first = curves[cell[0]].median_s(xs[0])
            starts = (base, base + float(rng.uniform(-0.3, 0.3)) * first)
        sims = [SimJob(f"c{n}-{i}", job, x, s, curves[job].isolated_s(x, noise.rep_index[job]))
                for i, (job, x, s) in enumerate(zip(cell, xs, starts, strict=True))]
        done = world.simulate(sims, noise)
        apps = [_app(j, 1.0, j.finish_s) for j in done]
        for j, app in zip(done, apps, strict=True):
            rows = measured_overlaps(j.start_s, j.finish_s, [a for a in apps if a is not app])
            runs.add(j.job, n, resources(j.job, j.key, seed), scale_out=j.scale_out,
                     runtime_s=j.finish_s - j.start_s, started_at=j.start_s,
                     finished_at=j.finish_s, overlaps=_by_job(rows),
                     co_runner_scale_outs=_sizes_by_job(rows))
    return runs


def real_runs(csv_path: Path) -> Runs:
    """The recordings: runs and co-locations from the exported history, each run's summed
    task metrics from the side file `<name>.resources.jsonl` (app_id -> resources)."""
    import csv

    side = csv_path.with_suffix(".resources.jsonl")
    resources = {}
    for line in side.read_text().splitlines():
        row = json.loads(line)
        resources[row["app_id"]] = row["resources"]
    runs = Runs()
    with csv_path.open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["status"] == "succeeded"]
    for r in rows:
        colo = [c for c in (json.loads(r["colocations"]) if r["colocations"] else [])
                if c.get("co_runner_job")]
        overlaps = _by_job(colo)
        runs.add(r["job"], -1, resources.get(r["app_id"], {}), scale_out=int(r["scale_out"]),
                 runtime_s=float(r["runtime_s"]), started_at=float(r["started_at"]),
                 finished_at=float(r["finished_at"]), overlaps=overlaps,
                 co_runner_scale_outs=_sizes_by_job(
                     [c for c in colo if c.get("co_runner_scale_out")]))
    return runs


# --- leave one pair out -----------------------------------------------------------------------


def _fit(runs: Sequence[Mapping[str, Any]]) -> Any:
    return fit_runtime_model(runs)


def _without(runs: Sequence[dict[str, Any]], pair: tuple[str, str], job: str,
             ) -> list[dict[str, Any]]:
    other = pair[1] if job == pair[0] else pair[0] if job in pair else None
    return [r for r in runs if other is None or other not in r["overlaps"]]


@dataclass
class Fold:
    """What the history says once a pair is taken out: each job's model, the structure."""

    models: dict[str, Any]
    structure: Any
    train: dict[str, list[dict[str, Any]]]


def fold(runs: Runs, pair: tuple[str, str], full_models: Mapping[str, Any]) -> Fold:
    train = {job: _without(rs, pair, job) for job, rs in runs.by_job.items()}
    models = dict(full_models)
    for job in pair:
        models[job] = _fit(train[job])
    effects = [e for job, m in models.items() for e in pair_effects(job, m.describe())]
    profiles = {job: job_profile(shares(r["resources"]) for r in rs)
                for job, rs in train.items()}
    return Fold(models, choose(effects, profile_vectors(profiles)), train)


def fresh_errors(dev: Runs, test: Runs, confidence: float | None,
                 progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Recordings no constant was fitted on: every pair of the test recording, its runs
    predicted by the models of the development recording, without the pair (pooled,
    profile) and with it (known)."""
    full = {job: _fit(rs) for job, rs in dev.by_job.items()}
    rows, forms = [], []
    for pair in test.pairs():
        f = fold(dev, pair, full)
        forms.append(f.structure.form)
        for victim in pair:
            co = pair[1] if victim == pair[0] else pair[0]
            model = f.models[victim]
            priors = priors_for(victim, [co], f.structure, model.describe())
            for r in (q for q in test.by_job.get(victim, []) if co in q["overlaps"]):
                known = abs(_predict(full[victim], r) / r["runtime_s"] - 1)
                rows.append(_row(f, victim, co, r, known, priors, confidence))
        if progress:
            progress(f"fresh pair {pair}: form {f.structure.form}")
    return {"world": "real, test recording", "seed": 0, "errors": rows, "allocations": [],
            "forms": forms}


def _predict(model: Any, run: Mapping[str, Any]) -> float:
    return float(model.predict([run["scale_out"]], run["overlaps"])[0])


def held_out_errors(runs: Runs, f: Fold, pair: tuple[str, str],
                    confidence: float | None) -> list[dict[str, Any]]:
    """One row per held-out run of the pair: its APE under each method, and whether it ran
    above the calibrated upper bound without and with the priors."""
    out = []
    for victim in pair:
        co = pair[1] if victim == pair[0] else pair[0]
        model = f.models[victim]
        priors = priors_for(victim, [co], f.structure, model.describe())
        held = [r for r in runs.by_job[victim] if co in r["overlaps"]]
        for r in held:
            rest = [q for q in runs.by_job[victim] if q["id"] != r["id"]]
            known = abs(_predict(_fit(rest), r) / r["runtime_s"] - 1)
            out.append(_row(f, victim, co, r, known, priors, confidence))
    return out


def _row(f: Fold, victim: str, co: str, run: Mapping[str, Any], known: float, priors: Any,
         confidence: float | None) -> dict[str, Any]:
    """One held-out run: its APE without the pair (pooled, profile) and whether it ran above
    the calibrated upper bound; `known`: its APE with the pair."""
    model, y = f.models[victim], run["runtime_s"]
    row = {"victim": victim, "co_runner": co, "form": f.structure.form, "known": known}
    for method, prior in (("pooled", None), ("profile", priors if priors.pairs else None)):
        model.pair_prior = prior
        row[method] = abs(_predict(model, run) / y - 1)
        row[f"{method}_miss"] = _above_bound(model, f.train[victim], run, confidence)
    model.pair_prior = None
    return row


def _above_bound(model: Any, train: Sequence[Mapping[str, Any]], run: Mapping[str, Any],
                 confidence: float | None) -> bool:
    level = confidence if confidence is not None else 0.9
    x = [run["scale_out"]]
    pred = [float(v) for v in model.predict(x, [run["overlaps"]])]
    _, upper = model.predict_interval(x, [run["overlaps"]], confidence=level)
    found = calibrated_distribution(runs=train, scale_outs=x, predicted_s=pred,
                                    upper_s=[float(upper[0])], interval_confidence=level,
                                    overlaps=[run["overlaps"]], model=model, fit=_fit,
                                    confidence=level, refit=True)
    return run["runtime_s"] > found.predictive.quantile_s(0, level)


# --- allocation in a simulated world ----------------------------------------------------------


def allocations(world_name: str, seed: int, curves: Mapping[str, Curve], f: Fold,
                pair: tuple[str, str], confidence: float | None) -> list[dict[str, Any]]:
    """Each direction of the held-out pair: ALLOC_SUBMITS submits planned without and with
    the profile priors, played in the world, and the oracle's cheapest scale-out."""
    world = truth(world_name)
    rng = np.random.default_rng([seed, 29, *(sorted(curves).index(j) for j in pair)])
    out = []
    for victim in pair:
        co = pair[1] if victim == pair[0] else pair[0]
        for _ in range(ALLOC_SUBMITS):
            noise = world.draw(rng, curves)
            x_co = int(rng.choice(SCALE_OUTS))
            target = 1.3 * curves[victim].median_s(float(rng.uniform(16, 40)))
            submit = float(rng.uniform(0.0, 0.5)) * curves[co].median_s(x_co)
            co_job = SimJob("co", co, x_co, 0.0, curves[co].isolated_s(x_co, noise.rep_index[co]))

            def play(x: int, co_job: SimJob = co_job, noise: Any = noise,
                     submit: float = submit, victim: str = victim) -> float:
                me = SimJob("me", victim, x, submit,
                            curves[victim].isolated_s(x, noise.rep_index[victim]))
                done = world.simulate([co_job, me], noise)
                return float(done[-1].finish_s - submit)

            before = world.simulate([co_job], noise, until_s=submit)[0]
            apps = [_app(before, before.done_s / before.work_s, None)]
            row = {"victim": victim, "co_runner": co, "target_s": target}
            for method in ("pooled", "profile"):
                fit = _fit_with(f, victim, method)
                chosen = plan(job=victim, history=f.train[victim], now=submit, target_s=target,
                              min_scale_out=MIN_SCALE_OUT, max_scale_out=MAX_SCALE_OUT,
                              co_runners=apps, co_runner_histories={co: f.train[co]},
                              confidence=confidence, fit=fit)
                runtime = play(chosen.scale_out)
                row[method] = {"scale_out": chosen.scale_out, "runtime_s": runtime,
                               "miss": runtime > target,
                               "executor_s": chosen.scale_out * runtime}
            row["oracle"] = _oracle(play, target)
            out.append(row)
    return out


def _fit_with(f: Fold, victim: str, method: str) -> Callable[..., Any]:
    """plan()'s `fit`: the fold's models (fitted on the same runs), the victim's with its
    priors attached for the profile method."""
    def fit(runs: Sequence[Mapping[str, Any]], **_: Any) -> Any:
        job = runs[0]["job"] if runs else None
        model = f.models.get(job) if job is not None else None
        if model is None or len(runs) != len(f.train.get(job, ())):
            model = _fit(runs)
        model.pair_prior = None
        if method == "profile" and job == victim:
            co = [k for k in f.structure.profiles if k != victim]
            priors = priors_for(victim, co, f.structure, model.describe())
            model.pair_prior = priors if priors.pairs else None
        return model
    return fit


def _oracle(play: Callable[[int], float], target: float) -> dict[str, Any]:
    """The cheapest scale-out meeting the target in this very run (else the maximum)."""
    met = [(x * y, x, y) for x in range(MIN_SCALE_OUT, MAX_SCALE_OUT + 1)
           if (y := play(x)) <= target]
    cost, x, y = min(met) if met else (MAX_SCALE_OUT * play(MAX_SCALE_OUT), MAX_SCALE_OUT,
                                       play(MAX_SCALE_OUT))
    return {"scale_out": x, "runtime_s": y, "executor_s": cost}


# --- one world, one seed ----------------------------------------------------------------------


def evaluate(world_name: str, seed: int, runs: Runs, curves: Mapping[str, Curve] | None,
             confidence: float | None, pairs: Sequence[tuple[str, str]] | None = None,
             progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    full = {job: _fit(rs) for job, rs in runs.by_job.items()}
    rows, alloc, forms = [], [], []
    for pair in pairs or runs.pairs():
        f = fold(runs, pair, full)
        forms.append(f.structure.form)
        rows += held_out_errors(runs, f, pair, confidence)
        if curves is not None:
            alloc += allocations(world_name, seed, curves, f, pair, confidence)
        if progress:
            progress(f"{world_name} seed {seed} pair {pair}: form {f.structure.form}")
    return {"world": world_name, "seed": seed, "errors": rows, "allocations": alloc,
            "forms": forms}


def summary(result: Mapping[str, Any]) -> dict[str, Any]:
    rows = result["errors"]
    mape = {m: 100 * float(np.mean([r[m] for r in rows])) for m in METHODS}
    gap = mape["pooled"] - mape["known"]
    closed = (mape["pooled"] - mape["profile"]) / gap if gap > 0 else math.nan
    out = {"world": result["world"], "seed": result["seed"], "runs": len(rows),
           "mape": mape, "ratio": mape["profile"] / mape["known"], "gap_closed": closed,
           "bound_miss": {m: 100 * float(np.mean([r[f"{m}_miss"] for r in rows]))
                          for m in ("pooled", "profile")},
           "forms": {f: result["forms"].count(f) for f in sorted(set(result["forms"]))}}
    alloc = result["allocations"]
    if alloc:
        out["alloc"] = {m: {"miss": 100 * float(np.mean([a[m]["miss"] for a in alloc])),
                            "cost": float(np.mean([a[m]["executor_s"] / a["oracle"]["executor_s"]
                                                   for a in alloc]))}
                        for m in ("pooled", "profile")}
        out["alloc_n"] = len(alloc)
    return out


def table(summaries: Sequence[Mapping[str, Any]]) -> str:
    head = ("| world | seed | held-out runs | MAPE known | MAPE pooled (today) | MAPE profile "
            "| profile / known (goal <= 1.5) | gap closed (goal >= 30 %) | bound miss pooled "
            "| bound miss profile | alloc miss pooled | alloc miss profile (goal <= 5 %) "
            "| cost / oracle pooled | cost / oracle profile | forms chosen |")
    lines = [head, "|" + "---|" * 15]
    for s in summaries:
        m, a = s["mape"], s.get("alloc")
        alloc_cells = (f"{a['pooled']['miss']:.1f} % | {a['profile']['miss']:.1f} % | "
                       f"{a['pooled']['cost']:.3f} | {a['profile']['cost']:.3f}"
                       if a else "– | – | – | –")
        forms = ", ".join(f"{k} {v}" for k, v in s["forms"].items())
        lines.append(
            f"| {s['world']} | {s['seed']} | {s['runs']} | {m['known']:.1f} % | "
            f"{m['pooled']:.1f} % | {m['profile']:.1f} % | {s['ratio']:.2f} | "
            f"{_gap(s['gap_closed'])} | {s['bound_miss']['pooled']:.1f} % | "
            f"{s['bound_miss']['profile']:.1f} % | {alloc_cells} | {forms} |")
    return "\n".join(lines)


def _gap(closed: float) -> str:
    return "n/a (known no better)" if math.isnan(closed) else f"{100 * closed:.0f} %"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three pairs per world, one seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[2018, 7, 11])
    parser.add_argument("--worlds", nargs="+", default=["simulator", "nodesim", "real"])
    parser.add_argument("--real", type=Path, default=ROOT / "history" / "profiles-local.csv",
                        help="the development recording (leave one pair out within it)")
    parser.add_argument("--real-test", type=Path, default=None,
                        help="a recording made after the freeze, predicted from --real")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    t0 = time.time()
    confidence = cli_default_confidence()
    summaries = []
    curves = load_curves(args.data)

    def say(msg: str) -> None:
        print(f"[{time.time() - t0:6.0f} s] {msg}", flush=True)

    for world in args.worlds:
        if world == "real":
            runs = real_runs(args.real)
            pairs = runs.pairs()[:3] if args.quick else None
            result = evaluate(f"real ({args.real.name})", 0, runs, None, confidence, pairs, say)
            summaries.append(summary(result))
            if args.real_test is not None:
                summaries.append(summary(fresh_errors(runs, real_runs(args.real_test),
                                                      confidence, say)))
            continue
        for seed in args.seeds[:1] if args.quick else args.seeds:
            runs = simulated_runs(world, seed, curves)
            pairs = runs.pairs()[:3] if args.quick else None
            summaries.append(summary(evaluate(world, seed, runs, curves, confidence, pairs, say)))
    text = table(summaries)
    print(text)
    print(f"\n{time.time() - t0:.0f} s")
    if args.output:
        args.output.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
