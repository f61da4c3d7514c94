"""Cold start: a new job's first six submits, with one imported run and its event log.

    python -m bench.coldstart [--quick] [--seed N] [--worlds simulator nodesim]
                              [--imported-at 8 16 32] [--data DIR] [--output FILE]

The worlds, co-runners, targets and runs are bench.colocation's (`draw_runs`, both ground
truths, the co-runner jobs' six solo runs): only the target job's start differs. Before its
first submit the job has one imported run: an isolated run at scale-out x0 (a real Bell
repetition, `Curve.isolated_s`), with, for the what-if, that run's event-log profile. Then
six submits, each planned by `cobell_cli.core.plan.plan` and recorded like `cobell submit`
records them, at the CLI's default confidence and at the point decision (`--confidence
point`, the paper's):

* search (today): the imported run is one more observation of the bootstrap's binary search;
  runs 4-6 the model without interference.
* what-if: the same history plus the imported run's profile (`plan(profiles=...)`): submits
  with fewer than three similar runs are planned from the what-if curve corrected by the
  runs the job has, later ones by the runtime model with the what-if as one more candidate.
* oracle: the smallest scale-out meeting the target in the simulated run.

Goal (issue 14): the what-if meets the target in >= 5 of the first 6 submits.

The simulated worlds have no event logs, so the imported run's profile is synthetic, built by
`synthetic_profile` from that one run only (its scale-out x0 and runtime R0) and a stage
structure fixed per job before looking at any outcome:

* The run starts its executors at STARTUP_S (all x0 registered by then), and the driver
  spends DRIVER_GAP_S between consecutive Spark jobs (submitting, collecting results).
* Stages: a load stage, then ITERATIONS[job] iterations, one Spark job with one stage each
  (SGD's 100 iterations and PageRank's 5 from the data's README; K-Means 10 and one pass for
  the others: not stated there, typical values). Every stage has TASKS_PER_STAGE tasks: 4
  per executor at the largest scale-out the experiments ran (60), as Spark's tuning guide
  advises 2-3 per core. The load stage's tasks are LOAD_FACTOR times an iteration's.
* Task durations: one base duration scaled so that the replay at x0 takes exactly R0, times
  a fixed log-normal jitter per task (TASK_JITTER, seeded by the job's name): what a log
  at x0 shows, and nothing about other scale-outs.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench import publish
from bench.colocation import (
    DEFAULT_DATA,
    MAX_SCALE_OUT,
    MIN_SCALE_OUT,
    TARGETS_S,
    VARIANTS,
    WORLDS,
    Config,
    RunSetup,
    Truth,
    _app,
    _by_job,
    _jobs,
    cli_default_confidence,
    draw_runs,
    oracle_scale_out,
    seed_world,
    truth,
)
from bench.simulator import Curve, load_curves
from cobell_cli.api import measured_overlaps
from cobell_cli.core.plan import plan
from cobell_cli.core.profile import AppProfile, ExecutorSpan, JobProfile, StageProfile

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "coldstart.md"
SUBMITS = 6
GOAL_MET = 5
IMPORTED_AT = (8, 16, 32)
STRATEGIES = ("search", "bounded", "whatif", "oracle")
PLANNED = ("search", "bounded", "whatif")
LABELS = {"search": "binary search (the paper's)", "bounded": "search with Amdahl's bounds",
          "whatif": "what-if bootstrap", "oracle": "oracle"}
GOAL_JOBS_SHARE = 0.9  # jobs with an event log missing at most 1 of 6: at least this share

# The synthetic profile's fixed structure (see the module doc).
STARTUP_S = 10.0
DRIVER_GAP_S = 0.2
TASKS_PER_STAGE = 240
LOAD_FACTOR = 2.0
TASK_JITTER = 0.10
ITERATIONS = {"sgd": 100, "kmeans": 10, "pagerank": 5, "grep": 1, "tpchq10": 1, "wordcount": 1}


# --- the synthetic profile ----------------------------------------------------------------


def _structure(job: str, base_s: float, x0: int) -> AppProfile:
    """The job's stages with tasks of `base_s` seconds (jittered), run at x0 executors."""
    rng = np.random.default_rng([sum(job.encode()), 14])
    iterations = ITERATIONS[job]
    stages, jobs = [], []
    t = STARTUP_S
    for k in range(iterations + 1):
        scale = LOAD_FACTOR if k == 0 else 1.0
        tasks = [float(base_s * scale * rng.lognormal(0.0, TASK_JITTER))
                 for _ in range(TASKS_PER_STAGE)]
        stages.append(StageProfile(stage_id=k, job_id=k, parent_ids=[], submit_s=t,
                                   task_s=tasks, launch_s=[t] * len(tasks),
                                   task_executor=[str(i % x0) for i in range(len(tasks))]))
        jobs.append(JobProfile(job_id=k, submit_s=t, end_s=t, stage_ids=[k]))
        t += DRIVER_GAP_S
    return AppProfile(app_id=f"imported-{job}-x{x0}", app_name=job, start_ms=0, end_ms=1,
                      last_event_s=0.0, executors=[ExecutorSpan(str(i), 1, STARTUP_S)
                                                   for i in range(x0)],
                      jobs=jobs, stages=stages)


def synthetic_profile(job: str, x0: int, runtime_s: float) -> AppProfile:
    """A profile whose replay at x0 takes `runtime_s`, with the job's fixed structure.

    The jobs' time spans are made consistent by replaying the structure at x0 once: each
    job ends when its stage ends, the next starts DRIVER_GAP_S later, the app ends then.
    """
    probe = _replayed(_structure(job, 1.0, x0), x0)
    fixed = STARTUP_S + DRIVER_GAP_S * (ITERATIONS[job] + 1)
    base = max(1e-3, (runtime_s - fixed) / max(1e-9, probe - fixed))
    return _replayed(_structure(job, base, x0), x0, runtime_s)


def _replayed(p: AppProfile, x0: int, runtime_s: float | None = None) -> Any:
    """Lay the stages out as the replay at x0 runs them; returns the replayed seconds when
    `runtime_s` is None, else the profile with consistent times ending at `runtime_s`."""
    t = STARTUP_S
    for st, jb in zip(p.stages, p.jobs, strict=True):
        slots = [t] * x0
        launch = []
        for d in st.task_s:
            i = min(range(x0), key=slots.__getitem__)
            launch.append(slots[i])
            slots[i] += d
        st.submit_s, st.launch_s, st.end_s = t, launch, max(slots)
        jb.submit_s, jb.end_s = t, max(slots)
        t = max(slots) + DRIVER_GAP_S
    if runtime_s is None:
        return t
    p.end_ms = round(max(runtime_s, t) * 1000)
    p.last_event_s = p.end_ms / 1000.0
    return p


# --- six submits ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Submit:
    index: int
    strategy: str
    scale_out: int
    runtime_s: float
    target_s: float
    phase: str

    @property
    def met(self) -> bool:
        return self.runtime_s <= self.target_s

    @property
    def node_s(self) -> float:
        return self.scale_out * self.runtime_s


def imported_run(target: str, x0: int, curves: Mapping[str, Curve], seed: int) -> float:
    """The imported run's runtime: a real Bell repetition at x0, drawn once per seed."""
    rng = np.random.default_rng([seed, 14, x0, sum(target.encode())])
    reps = tuple(int(i) for i in rng.integers(0, curves[target].reps,
                                              len(curves[target].scale_outs)))
    return curves[target].isolated_s(x0, reps)


def play_submits(strategy: str, target: str, x0: int, setups: Sequence[RunSetup],
                 curves: Mapping[str, Curve], world: Truth, seed: int,
                 confidence: float | None = None) -> list[Submit]:
    target_s = TARGETS_S[target]
    memory = seed_world(target, curves, world, seed)
    runtime0 = imported_run(target, x0, curves, seed)
    memory.add(target, scale_out=x0, runtime_s=runtime0, started_at=-2e7,
               finished_at=-2e7 + runtime0, target_s=None, overlaps={})
    profiles = [synthetic_profile(target, x0, runtime0)] if strategy == "whatif" else []
    out = []
    for setup in setups[:SUBMITS]:
        if strategy == "oracle":
            x, phase = oracle_scale_out(setup, curves, target, target_s, world), "oracle"
        else:
            before = world.simulate(_jobs(setup, curves, target, None), setup.noise,
                                    until_s=setup.submit_s)
            apps = [_app(j, j.done_s / j.work_s, None) for j in before if j.finish_s is None]
            chosen = plan(job=target, history=memory.histories[target], now=setup.submit_s,
                          target_s=target_s, min_scale_out=MIN_SCALE_OUT,
                          max_scale_out=MAX_SCALE_OUT, co_runners=apps,
                          co_runner_histories={a.job: memory.histories.get(a.job, [])
                                               for a in apps if a.job},
                          confidence=confidence, fit=memory.fit, profiles=profiles,
                          search_policy="bounded" if strategy == "bounded" else "binary")
            x, phase = chosen.scale_out, chosen.phase
        done = world.simulate(_jobs(setup, curves, target, x), setup.noise)
        finished = {j.key: j.finish_s for j in done}
        as_apps = [_app(j, 1.0, finished[j.key]) for j in done]
        for job, app in zip(done, as_apps, strict=True):
            assert job.finish_s is not None
            rows = measured_overlaps(job.start_s, job.finish_s,
                                     [a for a in as_apps if a.app_id != app.app_id])
            memory.add(job.job, scale_out=job.scale_out, runtime_s=job.finish_s - job.start_s,
                       started_at=job.start_s, finished_at=job.finish_s,
                       target_s=target_s if job.job == target else None,
                       overlaps=_by_job(rows))
        mine = memory.histories[target][-1]
        out.append(Submit(setup.index, strategy, x, mine["runtime_s"], target_s, phase))
    return out


Cell = tuple[str, str, str, int, str]  # (world, variant, target, x0, policy)
POLICIES = ("default", "point")


def policy_confidence(policy: str) -> float | None:
    return cli_default_confidence() if policy == "default" else None


def run_experiment(cfg: Config, imported_at: Sequence[int], data_dir: Path = DEFAULT_DATA,
                   progress: Any = None) -> dict[Cell, dict[str, list[Submit]]]:
    curves = load_curves(data_dir)
    out: dict[Cell, dict[str, list[Submit]]] = {}
    for name in cfg.worlds:
        world = truth(name)
        for variant in cfg.variants:
            for target in cfg.targets:
                setups = draw_runs(variant, target, cfg, curves, world)[:SUBMITS]
                for x0 in imported_at:
                    started = time.perf_counter()
                    oracle = play_submits("oracle", target, x0, setups, curves, world, cfg.seed)
                    for policy in POLICIES:
                        level = policy_confidence(policy)
                        out[(name, variant, target, x0, policy)] = {
                            "oracle": oracle,
                            **{s: play_submits(s, target, x0, setups, curves, world, cfg.seed,
                                               level)
                               for s in PLANNED}}
                    if progress:
                        progress(f"{name} {variant} {target} x0={x0}: "
                                 f"{time.perf_counter() - started:.1f} s")
    return out


# --- report --------------------------------------------------------------------------------


def _policy(policy: str) -> str:
    level = policy_confidence(policy)
    return f"default (P(meet) >= {level})" if level is not None else "point decision"


def misses(submits: Sequence[Submit]) -> int:
    return sum(not s.met for s in submits)


def node_ratio(submits: Sequence[Submit], oracle: Sequence[Submit]) -> float:
    return sum(s.node_s for s in submits) / sum(s.node_s for s in oracle)


def cell_rows(results: Mapping[Cell, Mapping[str, Sequence[Submit]]],
              policy: str) -> list[str]:
    rows = []
    for (world, variant, target, x0, pol), per in results.items():
        if pol != policy:
            continue
        cells = []
        for strategy in PLANNED:
            subs = per[strategy]
            cells.append(f"{misses(subs)} | {node_ratio(subs, per['oracle']):.2f} |"
                         f" {' '.join(str(s.scale_out) for s in subs)}")
        oracle = " ".join(str(s.scale_out) for s in per["oracle"])
        rows.append(f"| {world} | {variant} | {target} | {x0} | {' | '.join(cells)} |"
                    f" {oracle} |")
    return rows


def total_rows(results: Mapping[Cell, Mapping[str, Sequence[Submit]]]) -> list[str]:
    """Per world and decision: misses, the share of cells (jobs) missing at most 1 of 6,
    misses by submit, node-seconds over the oracle's."""
    rows = []
    for world, policy in dict.fromkeys((c[0], c[4]) for c in results):
        cells = [per for c, per in results.items() if (c[0], c[4]) == (world, policy)]
        for strategy in PLANNED:
            m = [misses(per[strategy]) for per in cells]
            node = sum(s.node_s for per in cells for s in per[strategy])
            ref = sum(s.node_s for per in cells for s in per["oracle"])
            at_most_one = sum(k <= SUBMITS - GOAL_MET for k in m)
            by_submit = " ".join(str(sum(not per[strategy][i].met for per in cells))
                                 for i in range(SUBMITS))
            rows.append(f"| {world} | {_policy(policy)} | {LABELS[strategy]} | {len(cells)} |"
                        f" {sum(m)} of {SUBMITS * len(cells)}"
                        f" ({100 * sum(m) / (SUBMITS * len(cells)):.1f} %) | {by_submit} |"
                        f" {max(m)} | {at_most_one} of {len(cells)} | {node / ref:.3f} |")
    return rows


def goal_rows(results: Mapping[Cell, Mapping[str, Sequence[Submit]]]) -> list[str]:
    """Issue 23's bootstrap goals at the default decision, per world: with an event log, at
    most 1 miss in 6 in >= 90 % of jobs; without, the share of runs over the target at most
    half the binary search's."""
    rows = []
    for world in dict.fromkeys(c[0] for c in results):
        cells = [per for c, per in results.items() if c[0] == world and c[4] == "default"]
        if not cells:
            continue
        ok = sum(misses(per["whatif"]) <= SUBMITS - GOAL_MET for per in cells) / len(cells)
        share = {s: sum(misses(per[s]) for per in cells) / (SUBMITS * len(cells))
                 for s in ("search", "bounded")}
        rows.append(f"| {world} | {100 * ok:.0f} % of jobs"
                    f" ({'yes' if ok >= GOAL_JOBS_SHARE else 'no'}) |"
                    f" {100 * share['bounded']:.1f} % vs {100 * share['search']:.1f} %"
                    f" ({'yes' if share['bounded'] <= share['search'] / 2 else 'no'}) |")
    return rows


def render(results: Mapping[Cell, Mapping[str, Sequence[Submit]]], cfg: Config,
           imported_at: Sequence[int], command: str, elapsed_s: float) -> str:
    level = cli_default_confidence()
    lines = [
        "# Cold start: the first six submits of a new job with one imported run",
        "",
        f"Command: `{command}` (from the repository root; {elapsed_s:.0f} s on this shared"
        " 2-core machine). Worlds, co-runners and runs: bench.colocation's (seed"
        f" {cfg.seed}); targets "
        + ", ".join(f"{j} {t:.0f} s" for j, t in TARGETS_S.items() if j in cfg.targets)
        + f"; scale-outs {MIN_SCALE_OUT}-{MAX_SCALE_OUT}; planned at the CLI's default"
        f" (confidence {level}) and at the point decision. The job's history starts with one"
        " imported isolated run at"
        f" x0 = {', '.join(str(x) for x in imported_at)} (a real Bell repetition); the what-if"
        " also has that run's synthetic event-log profile (bench/coldstart.py's docstring"
        " says how it is built from that one run). Without a profile, runs 1-3 search:"
        " by the paper's binary search, or with Amdahl's bounds from the runtimes"
        " (core/plan/bootstrap.py `_amdahl_bounds`; no constant). Misses: submits over the"
        f" target, of {SUBMITS}. Node-s / oracle: node-seconds of the six submits over the"
        " oracle's.",
        "",
        "## Goals (issue 23), default decision",
        "",
        "| world | with an event log: jobs missing at most 1 of 6 (goal >= 90 %) |"
        " without: share of bootstrap runs over the target, Amdahl-bounded vs binary search"
        " (goal: at most half) |",
        "|---|---|---|",
        *goal_rows(results),
        "",
        "## Totals per world",
        "",
        "| world | decision | bootstrap | cells | misses | misses at submit 1 2 3 4 5 6 |"
        " worst cell | cells missing <= 1 of 6 | node-s / oracle |",
        "|---|---|---|---|---|---|---|---|---|",
        *total_rows(results),
    ]
    for policy in dict.fromkeys(c[4] for c in results):
        lines += [
            "",
            f"## Per cell, {_policy(policy)}",
            "",
            "Misses, node-s / oracle and scale-outs of the six submits in order.",
            "",
            "| world | co-runners | job | x0 |"
            + "".join(f" {LABELS[s]}: misses | node-s / oracle | scale-outs |" for s in PLANNED)
            + " oracle scale-outs |",
            "|---" * (5 + 3 * len(PLANNED)) + "|",
            *cell_rows(results, policy),
        ]
    return "\n".join([*lines, "", *NOTES]) + "\n"


# What a rerun found, kept with the table it explains (dated: a later rerun may outdate it).
NOTES = (
    "## Rerun on 30 Nov 2026: the what-if bootstrap misses more since a4c1f64",
    "",
    "Measured 26 Nov (main at 390f145, the CLI's default then 0.9): with an event log 100 % of "
    "jobs missed at most 1 of 6 in both worlds; the what-if bootstrap missed 6 of 108 "
    "(simulator) and 2 of 108 (nodesim). This rerun misses the goal in the simulator. Not the "
    "default's move to 0.95: `git bisect` over one cell (simulator, pair, sgd, x0 8, the "
    "what-if bootstrap at confidence 0.95; good: at most 1 miss) finds a4c1f64, the per-candidate "
    "predictive distribution and the unreachable-target rule by P(meet) and cost (issue 34 "
    "item 1): 390f145 takes 25 44 59 59 59 42 there (1 miss), a4c1f64 and main 22 36 45 23 31 "
    "60 (3). At submit 4 (four runs, three held-out errors) no scale-out reaches P(meet) 0.95, "
    "the lowest upper bound is 611 s, and the rule takes the cheapest scale-out whose P(within "
    "it) is within one standard error of the best: with three errors that standard error is "
    "about 0.1, so 23 qualifies although its own upper bound is 1049 s (prediction 335 s, "
    "target 350 s); it ran 384 s. The rule that preceded it took the fastest, 59. The "
    "rejected candidate in bench/results/late_runs.md shows why a one-standard-error test "
    "cannot separate candidates on few errors; this is that case at a job's first runs.",
    "",
    "A candidate measured and not adopted (30 Nov 2026, core/plan/infeasible.py on a branch): "
    "while the held-out errors are too few for the conformal rank at the confidence "
    "((n + 1)(1 - p) < 1: 19 at 0.95), reserve the candidate with the lowest upper bound "
    "instead of the cheapest within one standard error. Here it gives back 26 Nov's figures: "
    "the what-if bootstrap misses 6 and 1 of 108, 100 % of jobs with an event log miss at most "
    "1 of 6 in both worlds, at 1.064x and 1.093x the oracle's node-seconds. But `python -m "
    "bench gate` failed on it (19 figures worse, 21 better): nodesim's pooled late runs 5.8 -> "
    "7.1 % (pair sgd 7.7 -> 11.5 %, pair kmeans 0 -> 3.8 %), though its largest overshoot "
    "27.2 -> 9.8 %; issue 34 measures late runs first, so it stays out.",
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="sgd, one co-runner, x0 = 16, both worlds; prints, writes nothing")
    parser.add_argument("--seed", type=int, default=Config.seed)
    parser.add_argument("--worlds", nargs="+", choices=WORLDS, default=list(WORLDS))
    parser.add_argument("--imported-at", type=int, nargs="+", default=list(IMPORTED_AT))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if not (args.data / "sgd.spark.csv").is_file():
        raise SystemExit(f"bench.coldstart: the Bell data is not at {args.data} "
                         "(../shared/data/bell); pass --data DIR")
    cfg = Config(worlds=tuple(args.worlds), variants=tuple(VARIANTS), seed=args.seed)
    imported_at = tuple(args.imported_at)
    if args.quick:
        cfg = Config(worlds=tuple(args.worlds), targets=("sgd",), variants=("single",),
                     seed=args.seed)
        imported_at = (16,)
    started = time.perf_counter()
    results = run_experiment(cfg, imported_at, args.data, progress=lambda m: print(m, flush=True))
    command = " ".join(["python -m bench.coldstart", *(["--quick"] if args.quick else []),
                        *([f"--seed {args.seed}"] if args.seed != Config.seed else [])])
    text = render(results, cfg, imported_at, command, time.perf_counter() - started)
    publish(text, None if args.quick else args.output)


if __name__ == "__main__":
    main()

__all__ = ["GOAL_MET", "SUBMITS", "Submit", "imported_run", "misses", "play_submits",
           "run_experiment", "synthetic_profile"]
