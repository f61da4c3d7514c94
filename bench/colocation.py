"""Allocation quality on two simulated shared clusters: one table from one run.

    python -m bench.colocation [--quick] [--runs-per-interferer N] [--seed N]
                               [--worlds simulator nodesim] [--data DIR] [--output-dir DIR]

CoBell's Section IV-D experiment, replayed in two ground truths that are not cobell's formula
and not each other: `bench.simulator` (resource-profile pressure, saturating, shrinking with
the job's scale-out) and `bench.nodesim` (node-level max-min fair shares, the scarcest
resource decides). In each: 1, 2 and 3 co-runners, two target jobs, and the same runs for
every strategy (co-runners, their scale-outs, delays and noise are drawn before anyone
decides). The strategies:

* Bell: `plan(interference="none")`, the point prediction; co-runners ignored.
* Bell + conformal margin at p: the careful user's alternative without co-runner modelling:
  Bell's prediction times the conformal bound of Bell's own past runtime / predicted ratios
  (`calibration.outcome_calibration`, i.e. `ratio_bound`), planned as Bell against
  target / margin (the same decision: predicted · margin <= target).
* CoBell (paper): `plan(interference="paper")`, the point prediction.
* cobell default: what `cobell predict`/`submit` do without flags: `plan()` at the default of
  the `confidence` setting (`cli_default_confidence`; None, the point decision, is the same as
  no argument). Where that equals another row's level, the runs are that row's (same call).
* cobell default + live progress: the default, with each running co-runner's driver answering
  what its Spark REST API would (`simulator.driver_progress`: jobs and stages submitted so
  far) and its past runs' stage shares known (their event-log profiles), as `cobell
  predict` reads them on a cluster;
  beside "cobell default" (no driver answers) it gives the overlap-ratio error with and
  without live progress.
* cobell 0.9 / 0.97: `plan(confidence=...)`, as `--confidence`.
* oracle: the smallest scale-out that meets the target in the simulated run.

Every strategy plans with `cobell_cli.core.plan.plan` (what `cobell predict`/`submit` run) and
records what `cobell submit` records (`cobell_cli.api.measured_overlaps`).
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from bench import BELL_DATA, nodesim, publish
from bench import simulator as profile_sim
from bench.simulator import (
    Contention,
    Curve,
    SimJob,
    driver_progress,
    executed_stages,
    load_curves,
    stage_shares,
)
from cobell_cli.api import measured_overlaps
from cobell_cli.core.calibration import outcome_calibration
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.plan import MODEL_FROM_USABLE, plan
from cobell_cli.core.running import RunningApp

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = BELL_DATA
RESULTS = ROOT / "bench" / "results"

# Targets: the paper's 350 s for SGD; K-Means stands in for CC (not in the Bell data) with a
# target at its median isolated runtime near scale-out 24 (~684 s). Both need 20-25 nodes
# alone and more with interference, and stay feasible at 60 even with three co-runners.
TARGETS_S: dict[str, float] = {"sgd": 350.0, "kmeans": 700.0}
INTERFERERS = ("grep", "pagerank", "tpchq10", "wordcount")
INTERFERER_SCALE_OUTS = (12, 16, 20, 24, 28, 32)
SEED_SCALE_OUTS = (8, 16, 24, 32, 40, 48)  # co-runner jobs' earlier solo runs
MIN_SCALE_OUT, MAX_SCALE_OUT = 4, 60
STRATEGIES = ("bell", "bell90", "bell97", "paper", "default", "progress", "cobell90", "cobell97",
              "oracle")
# played only when a configuration names it: the gate's Bell + margin at the CLI's default level
ON_REQUEST = ("bell95",)
LABELS = {"bell": "Bell", "bell90": "Bell + conformal 0.9", "bell95": "Bell + conformal 0.95",
          "bell97": "Bell + conformal 0.97",
          "paper": "CoBell (paper)", "default": "cobell default",
          "progress": "cobell default + live progress",
          "cobell90": "cobell --confidence 0.9", "cobell97": "cobell --confidence 0.97",
          "oracle": "oracle"}
DEFAULT = object()  # plan() called without a confidence argument
POINT = None  # plan(confidence=None): the point prediction decides
# strategy -> (plan's interference, plan's confidence or DEFAULT); the oracle does not plan
PLANNERS: dict[str, tuple[str, Any]] = {
    "bell": ("none", POINT), "bell90": ("none", POINT), "bell95": ("none", POINT),
    "bell97": ("none", POINT),
    "paper": ("paper", POINT), "default": ("joint", DEFAULT), "progress": ("joint", DEFAULT),
    "cobell90": ("joint", 0.9), "cobell97": ("joint", 0.97)}
LIVE_PROGRESS = ("progress",)  # strategies whose co-runners' drivers answer
MARGINS = {"bell90": 0.9, "bell95": 0.95, "bell97": 0.97}  # Bell + split-conformal margin
PAIRS = (("bell90", "cobell90"), ("bell97", "cobell97"))  # equal confidence, compared
VARIANTS = {"single": 1, "pair": 2, "triple": 3}
WORLDS = ("simulator", "nodesim")
RUN_SPACING_S = 100_000.0  # runs never overlap each other
GOAL_MEET, GOAL_OVERSHOOT_PCT, GOAL_NODE_S = 95.0, 5.0, 1.05  # issue 13's goals, post-bootstrap


# --- the two ground truths ------------------------------------------------------------------


class Truth(Protocol):
    """A ground truth: draws a run's noise, then plays jobs through it."""

    name: str

    def draw(self, rng: np.random.Generator, curves: Mapping[str, Curve]) -> Any: ...

    def simulate(self, jobs: Sequence[SimJob], noise: Any,
                 until_s: float | None = None) -> list[SimJob]: ...


@dataclass(frozen=True)
class ProfileTruth:
    """bench/simulator.py: resource-profile pressure summed over co-runners, saturating."""

    contention: Contention = field(default_factory=Contention)
    name: str = "simulator"

    def draw(self, rng: np.random.Generator, curves: Mapping[str, Curve]) -> Any:
        return profile_sim.RunNoise.draw(rng, curves, self.contention)

    def simulate(self, jobs: Sequence[SimJob], noise: Any,
                 until_s: float | None = None) -> list[SimJob]:
        return profile_sim.simulate(jobs, noise, self.contention, until_s)


@dataclass(frozen=True)
class NodeTruth:
    """bench/nodesim.py: per-node max-min fair shares, the scarcest resource decides."""

    cluster: nodesim.Cluster = field(default_factory=nodesim.Cluster)
    name: str = "nodesim"

    def draw(self, rng: np.random.Generator, curves: Mapping[str, Curve]) -> Any:
        return nodesim.NodeNoise.draw(rng, curves, self.cluster)

    def simulate(self, jobs: Sequence[SimJob], noise: Any,
                 until_s: float | None = None) -> list[SimJob]:
        return nodesim.simulate(jobs, noise, self.cluster, until_s)


def truth(name: str) -> Truth:
    return {"simulator": ProfileTruth(), "nodesim": NodeTruth()}[name]


# --- one experiment -------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    worlds: tuple[str, ...] = WORLDS
    targets: tuple[str, ...] = tuple(TARGETS_S)
    variants: tuple[str, ...] = tuple(VARIANTS)
    runs_per_interferer: int = 12
    seed: int = 2018
    strategies: tuple[str, ...] | None = None  # a subset plays only those (the oracle always)


@dataclass(frozen=True)
class RunSetup:
    """One run as drawn before any strategy decides."""

    index: int
    co_jobs: tuple[str, ...]
    co_scale_outs: tuple[int, ...]
    co_starts_s: tuple[float, ...]
    submit_s: float
    noise: Any


@dataclass
class RunRecord:
    index: int  # 1-based run number of the target job
    strategy: str
    co_jobs: tuple[str, ...]
    scale_out: int
    runtime_s: float
    target_s: float
    phase: str
    predicted_s: float | None
    overlap_ratio: float  # measured, summed over co-runners
    overlap_errors: tuple[float, ...] = ()  # |predicted - measured| per co-runner it predicted

    @property
    def overshoot_pct(self) -> float:
        return max(0.0, 100.0 * (self.runtime_s / self.target_s - 1.0))

    @property
    def node_s(self) -> float:
        return self.scale_out * self.runtime_s

    @property
    def bootstrap(self) -> bool:
        return self.index <= MODEL_FROM_USABLE


@dataclass
class World:
    """What one strategy's cluster remembers: the histories, growing as runs finish."""

    target: str
    histories: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    next_id: int = 1
    fit_cache: dict[tuple, Any] = field(default_factory=dict)

    def add(self, job: str, **run: Any) -> None:
        """A finished run; like a run with an event-log profile it knows its stages."""
        self.histories.setdefault(job, []).append({
            "id": self.next_id, "job": job, "status": "succeeded", "input_bytes": None,
            "stages": executed_stages(job),
            "stage_shares": stage_shares(job, f"history-{self.next_id}"), **run})
        self.next_id += 1

    def fit(self, runs: Sequence[Mapping[str, Any]], whatif: Any = None) -> Any:
        """Memoised fit_runtime_model: co-runner histories repeat between plans. `whatif`:
        the job's what-if, as plan() passes it when it has profiles (bench/coldstart.py)."""
        key = tuple((r["id"], tuple(sorted((str(k), v) for k, v in r["overlaps"].items())))
                    for r in runs)
        if whatif is not None:
            key = ("whatif", whatif.cache_key(), *key)
        if key not in self.fit_cache:
            try:
                self.fit_cache[key] = (fit_runtime_model(runs) if whatif is None
                                       else fit_runtime_model(runs, whatif=whatif))
            except ValueError as exc:
                self.fit_cache[key] = exc
        out = self.fit_cache[key]
        if isinstance(out, ValueError):
            raise out
        return out


def schedule(variant: str, cfg: Config, rng: np.random.Generator) -> list[tuple[str, ...]]:
    """Co-runner jobs per run: the paper's blocks per interferer, or random 2/3-sets."""
    k = VARIANTS[variant]
    n = cfg.runs_per_interferer
    if k == 1:
        return [(job,) for job in INTERFERERS for _ in range(n)]
    combos = list(itertools.combinations(INTERFERERS, k))
    return [combos[int(i)] for i in rng.integers(0, len(combos), n * len(INTERFERERS))]


def draw_runs(variant: str, target: str, cfg: Config, curves: Mapping[str, Curve],
              world: Truth) -> list[RunSetup]:
    """Co-runners start first (the first at 0, others within 20 % of its runtime), then the
    target is submitted after a random delay of 0-90 % of the shortest co-runner's runtime."""
    rng = np.random.default_rng([cfg.seed, list(VARIANTS).index(variant), list(TARGETS_S)
                                 .index(target)])
    out = []
    for i, co_jobs in enumerate(schedule(variant, cfg, rng)):
        xs = tuple(int(v) for v in rng.choice(INTERFERER_SCALE_OUTS, len(co_jobs)))
        alone = [curves[j].median_s(x) for j, x in zip(co_jobs, xs, strict=True)]
        starts = (0.0, *(float(rng.uniform(0, 0.2 * alone[0])) for _ in co_jobs[1:]))
        shortest = min(s + a for s, a in zip(starts, alone, strict=True)) - max(starts)
        submit = max(starts) + float(rng.uniform(0, 0.9)) * max(shortest, 0.0)
        base = (i + 1) * RUN_SPACING_S
        out.append(RunSetup(i + 1, co_jobs, xs, tuple(base + s for s in starts), base + submit,
                            world.draw(rng, curves)))
    return out


def seed_world(target: str, curves: Mapping[str, Curve], world: Truth, seed: int) -> World:
    """The target starts empty; each co-runner job has six earlier solo runs."""
    return add_solo_runs(World(target), INTERFERERS, curves, world,
                         np.random.default_rng([seed, 99]), -1e7)


def add_solo_runs(memory: World, jobs: Sequence[str], curves: Mapping[str, Curve], world: Truth,
                  rng: np.random.Generator, first_start_s: float) -> World:
    """Each job's runs alone at SEED_SCALE_OUTS, RUN_SPACING_S apart from first_start_s, their
    repetitions drawn from `rng` in that order: the history a world starts from."""
    for job in jobs:
        for k, x in enumerate(SEED_SCALE_OUTS):
            noise = world.draw(rng, curves)
            runtime = curves[job].isolated_s(x, noise.rep_index[job])
            start = first_start_s + k * RUN_SPACING_S
            memory.add(job, scale_out=x, runtime_s=runtime, started_at=start,
                       finished_at=start + runtime, target_s=None, overlaps={})
    return memory


def _jobs(setup: RunSetup, curves: Mapping[str, Curve], target: str,
          scale_out: int | None) -> list[SimJob]:
    jobs = [SimJob(f"co{k}-{setup.index}", job, x, start,
                   curves[job].isolated_s(x, setup.noise.rep_index[job]))
            for k, (job, x, start) in enumerate(zip(setup.co_jobs, setup.co_scale_outs,
                                                    setup.co_starts_s, strict=True))]
    if scale_out is not None:
        jobs.append(SimJob(f"target-{setup.index}", target, scale_out, setup.submit_s,
                           curves[target].isolated_s(scale_out,
                                                     setup.noise.rep_index[target])))
    return jobs


def oracle_scale_out(setup: RunSetup, curves: Mapping[str, Curve], target: str,
                     target_s: float, world: Truth) -> int:
    """The smallest scale-out whose simulated runtime meets the target (else the maximum)."""
    for x in range(MIN_SCALE_OUT, MAX_SCALE_OUT + 1):
        done = world.simulate(_jobs(setup, curves, target, x), setup.noise)[-1]
        assert done.finish_s is not None
        if done.finish_s - setup.submit_s <= target_s:
            return x
    return MAX_SCALE_OUT


def at_submit(setup: RunSetup, curves: Mapping[str, Curve], target: str,
              world: Truth) -> tuple[list[SimJob], list[RunningApp]]:
    """The co-runners as they stand when the target is submitted: the simulated jobs, and
    those still running as the cluster reports them (their progress so far)."""
    before = world.simulate(_jobs(setup, curves, target, None), setup.noise,
                            until_s=setup.submit_s)
    return before, [_app(j, j.done_s / j.work_s, None) for j in before if j.finish_s is None]


def _app(job: SimJob, progress: float | None, finished_s: float | None) -> RunningApp:
    return RunningApp(app_id=job.key, name=job.job, job=job.job, user=None, queue="default",
                      state="RUNNING" if finished_s is None else "FINISHED",
                      started_at=job.start_s, finished_at=finished_s, scale_out=job.scale_out,
                      progress=progress, backend="simulator")


def with_drivers(apps: Sequence[RunningApp], jobs: Sequence[SimJob]) -> list[RunningApp]:
    """The apps as a cluster whose Spark drivers answer shows them: with their live progress."""
    by_key = {j.key: j for j in jobs}
    return [replace(a, driver=driver_progress(by_key[a.app_id])) for a in apps]


def _by_job(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Colocation rows -> {co_runner_job: summed ratio}, as History.training_runs builds it."""
    out: dict[str, float] = {}
    for r in rows:
        out[r["co_runner_job"]] = out.get(r["co_runner_job"], 0.0) + r["overlap_ratio"]
    return out


def _sizes_by_job(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Colocation rows -> {co_runner_job: overlap-weighted scale-out}, as History does."""
    acc: dict[str, list[float]] = {}
    for r in rows:
        a = acc.setdefault(r["co_runner_job"], [0.0, 0.0])
        a[0] += r["overlap_ratio"] * r["co_runner_scale_out"]
        a[1] += r["overlap_ratio"]
    return {job: num / den for job, (num, den) in acc.items() if den > 0}


def cli_default_confidence() -> float | None:
    """The confidence the CLI plans at without --confidence: the setting's default."""
    from cobell_cli.config import SETTINGS

    return next(s.default for s in SETTINGS if s.name == "confidence")


def planner_key(strategy: str) -> tuple[str, Any, float | None]:
    """(interference, confidence, margin level) of a planning strategy, defaults resolved."""
    interference, confidence = PLANNERS[strategy]
    if confidence is DEFAULT:
        confidence = cli_default_confidence()
    return interference, confidence, MARGINS.get(strategy)


def decide(strategy: str, memory: World, setup: RunSetup, target_s: float,
           apps: Sequence[RunningApp]) -> Any:
    """The strategy's plan through the core planner (see the module doc for each)."""
    history = memory.histories.get(memory.target, [])
    interference, confidence, _ = planner_key(strategy)
    plan_target_s = target_s
    if strategy in MARGINS:
        calibration = outcome_calibration(history, MARGINS[strategy])
        if calibration is not None:
            plan_target_s = target_s / calibration["ratio_quantile"]
    return plan(job=memory.target, history=history, now=setup.submit_s, target_s=plan_target_s,
                min_scale_out=MIN_SCALE_OUT, max_scale_out=MAX_SCALE_OUT, co_runners=apps,
                co_runner_histories={a.job: memory.histories.get(a.job, [])
                                     for a in apps if a.job},
                interference=interference, confidence=confidence,  # type: ignore[arg-type]
                fit=memory.fit)


def play(strategy: str, memory: World, setup: RunSetup, curves: Mapping[str, Curve],
         target_s: float, world: Truth) -> RunRecord:
    """One run: plan (or ask the oracle), simulate, record like `cobell submit` does."""
    target = memory.target
    phase, predicted, chosen = "oracle", None, None
    if strategy == "oracle":
        x = oracle_scale_out(setup, curves, target, target_s, world)
    else:
        before, apps = at_submit(setup, curves, target, world)
        if strategy in LIVE_PROGRESS:
            apps = with_drivers(apps, before)
        chosen = decide(strategy, memory, setup, target_s, apps)
        x, phase, predicted = chosen.scale_out, chosen.phase, chosen.predicted_s
    done = world.simulate(_jobs(setup, curves, target, x), setup.noise)
    finished = {j.key: j.finish_s for j in done}
    as_apps = [_app(j, 1.0, finished[j.key]) for j in done]
    measured: dict[str, float] = {}
    for job, app in zip(done, as_apps, strict=True):
        assert job.finish_s is not None
        others = [a for a in as_apps if a.app_id != app.app_id]
        rows = measured_overlaps(job.start_s, job.finish_s, others)
        mine_now = job.job == target  # what `cobell submit` records for the planned job
        if mine_now:
            measured = {r["co_runner_app_id"]: r["overlap_ratio"] for r in rows}
        memory.add(job.job, scale_out=job.scale_out, runtime_s=job.finish_s - job.start_s,
                   started_at=job.start_s, finished_at=job.finish_s,
                   target_s=target_s if mine_now else None, overlaps=_by_job(rows),
                   co_runner_scale_outs=_sizes_by_job(rows),
                   predicted_s=predicted if mine_now else None,
                   model=phase if mine_now else None)
    errors = () if chosen is None else tuple(
        abs(v.overlap_ratio - measured.get(v.app_id, 0.0)) for v in chosen.co_runners
        if v.overlap_ratio is not None)
    mine = memory.histories[target][-1]
    return RunRecord(setup.index, strategy, setup.co_jobs, x, mine["runtime_s"], target_s,
                     phase, predicted, sum(mine["overlaps"].values()), errors)


Cell = tuple[str, str, str]  # (world, variant, target)
Results = Mapping[Cell, Mapping[str, Sequence[RunRecord]]]


def _playing(cfg: Config) -> list[str]:
    """The configuration's strategies (None: STRATEGIES) in STRATEGIES' order, those it names
    from ON_REQUEST before the oracle, the oracle always."""
    if cfg.strategies is None:
        return list(STRATEGIES)
    known = (*STRATEGIES[:-1], *ON_REQUEST, STRATEGIES[-1])
    return [s for s in known if s in cfg.strategies or s == "oracle"]


def run_experiment(cfg: Config, data_dir: Path = DEFAULT_DATA,
                   progress: Callable[[str], None] | None = None,
                   ) -> dict[Cell, dict[str, list[RunRecord]]]:
    """(world, variant, target) -> strategy -> one record per run, in run order."""
    curves = load_curves(data_dir)
    out: dict[Cell, dict[str, list[RunRecord]]] = {}
    for name in cfg.worlds:
        world = truth(name)
        for variant in cfg.variants:
            for target in cfg.targets:
                setups = draw_runs(variant, target, cfg, curves, world)
                per: dict[str, list[RunRecord]] = {}
                done: dict[Any, str] = {}  # planner key -> the strategy that ran it
                for strategy in _playing(cfg):
                    key = ((planner_key(strategy), strategy in LIVE_PROGRESS)
                           if strategy != "oracle" else strategy)
                    if key in done:  # the very same plan() calls: the same runs
                        per[strategy] = [replace(r, strategy=strategy) for r in per[done[key]]]
                        continue
                    done[key] = strategy
                    started = time.perf_counter()
                    memory = seed_world(target, curves, world, cfg.seed)
                    per[strategy] = [play(strategy, memory, s, curves, TARGETS_S[target], world)
                                     for s in setups]
                    if progress:
                        progress(f"{name} {variant} {target} {strategy}: {len(setups)} runs in"
                                 f" {time.perf_counter() - started:.1f} s")
                out[(name, variant, target)] = per
    return out


# --- report ---------------------------------------------------------------------------------


def summarise(records: Sequence[RunRecord], oracle: Sequence[RunRecord],
              bootstrap: bool = False) -> dict[str, float]:
    """Post-bootstrap (or bootstrap) runs against the oracle's same runs."""
    mine = [r for r in records if r.bootstrap == bootstrap]
    if not mine:
        return {"runs": 0}
    ref = {r.index: r for r in oracle}
    return _stats(mine, [ref[r.index] for r in mine])


def _stats(mine: Sequence[RunRecord], ref: Sequence[RunRecord]) -> dict[str, float]:
    over = np.array([r.overshoot_pct for r in mine])
    errors = [e for r in mine for e in r.overlap_errors]
    return {
        "runs": len(mine),
        "over_share_pct": 100.0 * float(np.mean(over > 0)),
        "p95_overshoot_pct": float(np.percentile(over, 95)),
        "max_overshoot_pct": float(over.max()),
        "node_s_vs_oracle": float(sum(r.node_s for r in mine) / sum(r.node_s for r in ref)),
        "overlap_mae": float(np.mean(errors)) if errors else float("nan"),
    }


def pooled(results: Results, strategy: str, world: str, variants: Sequence[str] | None = None,
           bootstrap: bool = False) -> dict[str, float]:
    """Statistics over every (variant, target) cell of a world (or the given variants)."""
    mine: list[RunRecord] = []
    ref: list[RunRecord] = []
    for (w, variant, _), per in results.items():
        if w != world or (variants is not None and variant not in variants):
            continue
        by_index = {r.index: r for r in per["oracle"]}
        picked = [r for r in per[strategy] if r.bootstrap == bootstrap]
        mine += picked
        ref += [by_index[r.index] for r in picked]
    return _stats(mine, ref) if mine else {"runs": 0}


def goal_check(s: Mapping[str, float]) -> str:
    ok = [100 - s["over_share_pct"] >= GOAL_MEET, s["max_overshoot_pct"] <= GOAL_OVERSHOOT_PCT,
          s["node_s_vs_oracle"] <= GOAL_NODE_S]
    return "yes" if all(ok) else "no"


def _mae(v: float) -> str:
    return "-" if v != v else f"{v:.3f}"


def _cols(s: Mapping[str, float]) -> str:
    return (f" {s['runs']} | {s['over_share_pct']:.1f} | {s['p95_overshoot_pct']:.1f} |"
            f" {s['max_overshoot_pct']:.1f} | {s['node_s_vs_oracle']:.3f} |"
            f" {_mae(s['overlap_mae'])} |")


COLS = "runs | over % | p95 overshoot % | max overshoot % | node-s / oracle | overlap MAE |"


def cell_rows(results: Results) -> list[str]:
    rows = []
    for (world, variant, target), per in results.items():
        for strategy in STRATEGIES:
            s = summarise(per[strategy], per["oracle"])
            if s["runs"]:
                goal = goal_check(s) if strategy != "oracle" else "-"
                rows.append(f"| {world} | {variant} | {target} | {LABELS[strategy]} |"
                            + _cols(s) + f" {goal} |")
    return rows


def pooled_rows(results: Results, bootstrap: bool) -> list[str]:
    rows = []
    for world in dict.fromkeys(w for w, _, _ in results):
        for strategy in STRATEGIES:
            s = pooled(results, strategy, world, bootstrap=bootstrap)
            if s["runs"]:
                rows.append(f"| {world} | {LABELS[strategy]} |" + _cols(s))
    return rows


def keep_rows(results: Results) -> list[str]:
    """cobell vs Bell + conformal at equal confidence: pooled, pair, triple, per world."""
    rows = []
    scopes = {"pooled": None, "pair": ("pair",), "triple": ("triple",)}
    for world in dict.fromkeys(w for w, _, _ in results):
        for scope, variants in scopes.items():
            for bell, cobell in PAIRS:
                b = pooled(results, bell, world, variants)
                c = pooled(results, cobell, world, variants)
                if not b["runs"] or not c["runs"]:
                    continue
                earns = (c["node_s_vs_oracle"] < b["node_s_vs_oracle"]
                         and c["over_share_pct"] <= b["over_share_pct"])
                rows.append(f"| {world} | {scope} | {MARGINS[bell]} |"
                            f" {b['over_share_pct']:.1f} / {b['node_s_vs_oracle']:.3f} |"
                            f" {c['over_share_pct']:.1f} / {c['node_s_vs_oracle']:.3f} |"
                            f" {'yes' if earns else 'no'} |")
    return rows


def worst_rows(results: Results, strategy: str = "default") -> list[str]:
    rows = []
    for (world, variant, target), per in results.items():
        ref = {r.index: r for r in per["oracle"]}
        post = [r for r in per[strategy] if not r.bootstrap]
        if not post:
            continue
        w = max(post, key=lambda r: r.overshoot_pct)
        pred = f"{w.predicted_s:.0f}" if w.predicted_s is not None else "-"
        rows.append(f"| {world} | {variant} | {target} | {w.index} | {'+'.join(w.co_jobs)} |"
                    f" {w.scale_out} ({ref[w.index].scale_out}) | {pred} | {w.runtime_s:.0f} |"
                    f" {w.overshoot_pct:.1f} |")
    return rows


def _default_label() -> str:
    level = cli_default_confidence()
    same = [s for s in STRATEGIES[:-1] if s != "default" and s not in LIVE_PROGRESS
            and planner_key(s) == planner_key("default")]
    what = "the point prediction" if level is None else f"P(meet the target) >= {level}"
    return what + (f" (the same plan() calls as {LABELS[same[0]]}: the same runs)"
                   if same else "")


def render(results: Results, cfg: Config, command: str, elapsed_s: float,
           plots: Sequence[str] = (), cpu_s: float | None = None) -> str:
    n_runs = cfg.runs_per_interferer * len(INTERFERERS)
    default_cells = [summarise(per["default"], per["oracle"]) for per in results.values()]
    met = sum(goal_check(s) == "yes" for s in default_cells if s["runs"])
    lines = [
        "# Allocation quality on two simulated shared clusters",
        "",
        f"Command: `{command}` (from the repository root; {elapsed_s:.0f} s"
        + (f", {cpu_s:.0f} s of CPU," if cpu_s is not None else "")
        + " on this shared, loaded 2-core machine).",
        "",
        "Ground truths: `bench/simulator.py` (\"simulator\": real Bell repetitions,"
        " resource-profile pressure summed over co-runners and saturating) and"
        " `bench/nodesim.py` (\"nodesim\": executors on 64 nodes, per node and resource"
        " max-min fair shares, the scarcest resource decides an executor's rate). Neither is"
        " cobell's formula. Targets: "
        + ", ".join(f"{j} {t:.0f} s" for j, t in TARGETS_S.items() if j in cfg.targets)
        + f". Co-runners: {', '.join(INTERFERERS)} at a scale-out drawn from"
        f" {INTERFERER_SCALE_OUTS}, started first; the target follows after a random delay."
        f" {cfg.runs_per_interferer} runs per co-runner job, {n_runs} per world, variant and"
        f" target, from an empty target history; seed {cfg.seed}. Scale-outs"
        f" {MIN_SCALE_OUT}-{MAX_SCALE_OUT}. Every strategy plans with"
        " `cobell_cli.core.plan.plan`; \"cobell default\" at the `confidence` setting's"
        f" default, what `cobell predict`/`submit` use without flags: {_default_label()}.",
        "",
        f"Post-bootstrap: runs > {MODEL_FROM_USABLE}; bootstrap: the first {MODEL_FROM_USABLE}"
        " (search and Bell-only model, co-runners not yet considered), reported separately."
        " Over: share of runs over the target. Overshoot: max(0, runtime/target - 1)."
        " Node-s / oracle: the strategy's node-seconds over the oracle's on the same runs."
        " Overlap MAE: mean |predicted - measured| overlap ratio per co-runner the plan"
        " predicted (Bell predicts none); \"+ live progress\": the co-runners' Spark drivers"
        " answer (jobs and stages so far, `simulator.driver_progress`) and their past runs'"
        " event-log profiles give their stages' shares (bench/results/progress.md)."
        " Goal (issue 13, default flags): >="
        f" {GOAL_MEET:.0f} % within the target, max overshoot <= {GOAL_OVERSHOOT_PCT:.0f} %,"
        f" node-s <= {GOAL_NODE_S:.2f}x oracle, in every cell.",
        "",
        f"**Goal check (cobell default, post-bootstrap): met in {met} of {len(default_cells)}"
        " cells.**",
        "",
        "## Post-bootstrap, per cell",
        "",
        f"| world | variant | job | strategy | {COLS} goal met |",
        "|---" * 11 + "|",
        *cell_rows(results),
        "",
        "## Post-bootstrap, pooled over variants and jobs",
        "",
        f"| world | strategy | {COLS}",
        "|---" * 8 + "|",
        *pooled_rows(results, bootstrap=False),
        "",
        "## Does the interference model earn its keep? cobell vs Bell + conformal margin",
        "",
        "At equal confidence; each entry is over % / node-s vs oracle, post-bootstrap. Earns:"
        " cobell needs fewer node-seconds at an equal or lower miss rate.",
        "",
        "| world | runs | confidence | Bell + conformal | cobell | earns |",
        "|---|---|---|---|---|---|",
        *keep_rows(results),
        "",
        f"## Bootstrap runs (1-{MODEL_FROM_USABLE}), pooled over variants and jobs",
        "",
        f"| world | strategy | {COLS}",
        "|---" * 8 + "|",
        *pooled_rows(results, bootstrap=True),
        "",
        "## Worst post-bootstrap run of cobell default per cell",
        "",
        "| world | variant | job | run | co-runners | scale-out (oracle) | predicted s |"
        " runtime s | overshoot % |",
        "|---" * 9 + "|",
        *worst_rows(results),
    ]
    if plots:
        lines += ["", "Plots:", ""] + [f"- [{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


MARKERS = {"bell": "x", "bell90": "+", "bell95": "2", "bell97": "1", "paper": "^", "default": "o",
           "progress": "*",
           "cobell90": "s", "cobell97": "D", "oracle": "."}


def plot(results: Results, out_dir: Path) -> list[str]:
    """Runtime vs target per run (cf. the paper's Fig. 3), one figure per world and variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    for world, variant in dict.fromkeys((w, v) for w, v, _ in results):
        targets = [t for w, v, t in results if (w, v) == (world, variant)]
        fig, axes = plt.subplots(len(targets), 1, figsize=(10, 3.2 * len(targets)),
                                 squeeze=False)
        for ax, target in zip(axes[:, 0], targets, strict=True):
            per = results[(world, variant, target)]
            for strategy in STRATEGIES:
                recs = per[strategy]
                ax.plot([r.index for r in recs], [r.runtime_s for r in recs],
                        marker=MARKERS[strategy],
                        linestyle="-" if strategy == "default" else "", linewidth=0.6,
                        markersize=4, label=LABELS[strategy])
            ax.axhline(TARGETS_S[target], color="k", linestyle="--", linewidth=1,
                       label="target")
            ax.axvline(MODEL_FROM_USABLE + 0.5, color="grey", linewidth=0.8)
            ax.set_ylabel(f"{target} runtime (s)")
            ax.set_yscale("log")
        axes[-1, 0].set_xlabel("run")
        axes[0, 0].set_title(f"Runtime per run: {world}, {variant} co-runner variant"
                             " (cf. paper Fig. 3)")
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, ncol=5, loc="lower center")
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        name = f"colocation_{world}_{variant}.png"
        fig.savefig(out_dir / name, dpi=100)
        plt.close(fig)
        names.append(name)
    return names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="sgd only, one and three co-runners, 3 runs per co-runner job, "
                             "both worlds; prints, writes nothing")
    parser.add_argument("--runs-per-interferer", type=int, default=Config.runs_per_interferer,
                        metavar="N", help="runs per co-runner job (x4 per world, variant, job)")
    parser.add_argument("--seed", type=int, default=Config.seed,
                        help="draws of runs, co-runners, delays and noise")
    parser.add_argument("--worlds", nargs="+", choices=WORLDS, default=list(WORLDS))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not (args.data / "sgd.spark.csv").is_file():
        raise SystemExit(f"bench.colocation: the Bell data is not at {args.data} "
                         "(../shared/data/bell); pass --data DIR")
    cfg = Config(worlds=tuple(args.worlds), seed=args.seed,
                 runs_per_interferer=args.runs_per_interferer)
    if args.quick:
        cfg = Config(worlds=tuple(args.worlds), targets=("sgd",), variants=("single", "triple"),
                     runs_per_interferer=3, seed=args.seed)
    started, cpu_started = time.perf_counter(), time.process_time()
    results = run_experiment(cfg, args.data, progress=lambda m: print(m, flush=True))
    elapsed = time.perf_counter() - started
    command = " ".join(["python -m bench.colocation", *(["--quick"] if args.quick else []),
                        *([f"--runs-per-interferer {args.runs_per_interferer}"]
                          if args.runs_per_interferer != Config.runs_per_interferer
                          and not args.quick else []),
                        *([f"--seed {args.seed}"] if args.seed != Config.seed else []),
                        *(["--worlds", *args.worlds] if tuple(args.worlds) != WORLDS else [])])
    plots: list[str] = []
    if not args.quick:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        plots = plot(results, args.output_dir)
    text = render(results, cfg, command, elapsed, plots, time.process_time() - cpu_started)
    publish(text, None if args.quick else args.output_dir / "colocation.md")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
