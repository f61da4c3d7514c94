"""Co-runners' overlap with and without live progress, and how much weight the progress gets.

    python -m bench.studies.progress [--runs-per-interferer N] [--seed N] [--worlds ...]
                             [--targets ...] [--variants ...] [--output FILE]

At every post-bootstrap decision of bench.colocation's experiment (the same worlds, runs,
co-runners and histories; the history grows along cobell default's own decisions without
progress), cobell default plans once per configuration below, through
`cobell_cli.core.plan.plan`, and the run is simulated at the scale-out each configuration
chose. The error is what bench.colocation reports: |predicted - measured| overlap ratio per
co-runner, measured as `cobell submit` records it. Configurations:

* no progress: no driver answers (Algorithm 1 / the joint fix-point as today);
* w_max W, power P: each co-runner's driver answers (`bench.simulator.driver_progress`) and
  its past runs' event-log profiles give their stage shares (`bench.simulator.stage_shares`);
  `cobell_cli.core.remaining` with W_MAX = W and WEIGHT_POWER = P (the cap on the
  inverse-variance share its measured errors give, when they are measured);
* stage counts only: the same with the past runs' stage counts but no shares, every stage
  weighing the same (what the shares are worth);
* ceiling: a driver that knows the exact fraction done (no real driver does): what progress
  could give at best, the rest of the error being the models' (the new job's runtime, the
  slow-down the new job causes the co-runner).

The constants are set on `cobell_cli.core.remaining` for the duration of one plan() call, so
every configuration runs the very code `cobell predict` runs. Also reported: the co-runners'
predicted end error (|predicted - simulated end| in % of the target runtime), for the
co-runners that end during the new job.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench import colocation as co
from bench import publish
from bench.simulator import load_curves
from cobell_cli.api import measured_overlaps
from cobell_cli.core import remaining
from cobell_cli.core.plan import MODEL_FROM_USABLE, plan


@dataclass(frozen=True)
class Variant:
    """One way of planning at a decision: what the drivers and past runs say, and the knobs."""

    name: str
    live: bool = False
    w_max: float = remaining.W_MAX
    power: float = remaining.WEIGHT_POWER
    stages: str = "shares"  # what past runs know: "shares", "counts", "none"; "exact": ceiling


def variants(weights: Sequence[float], powers: Sequence[float]) -> list[Variant]:
    """No progress; the grid of weights and powers; counts only; the ceiling."""
    out = [Variant("no progress")]
    out += [Variant(f"w_max {w:g}, power {p:g}", True, w, p) for w in weights for p in powers]
    out.append(Variant("stage counts only, no shares (defaults)", True, stages="counts"))
    out.append(Variant("ceiling: exact fraction done, w_max 0.999, power 0", True, 0.999, 0.0,
                       stages="exact"))
    return out


@contextlib.contextmanager
def knobs(v: Variant) -> Iterator[None]:
    saved = remaining.W_MAX, remaining.WEIGHT_POWER
    remaining.W_MAX, remaining.WEIGHT_POWER = v.w_max, v.power
    try:
        yield
    finally:
        remaining.W_MAX, remaining.WEIGHT_POWER = saved


EXACT_STAGES = 10_000


def exact_drivers(apps: Sequence[Any], jobs: Sequence[Any]) -> list[Any]:
    """Drivers that know the exact fraction done: every one of EXACT_STAGES equal stages known
    from the start, no start-up. What no real driver says; it shows what progress could give."""
    from dataclasses import replace

    from cobell_cli.core.remaining import DriverProgress

    by_key = {j.key: j for j in jobs}
    out = []
    for a in apps:
        n = EXACT_STAGES * by_key[a.app_id].done_s / by_key[a.app_id].work_s
        d = DriverProgress(jobs_known=1, jobs_done=0, stages_known=EXACT_STAGES,
                           stages_complete=int(n), active_fractions=(n - int(n),),
                           tasks_known=0, tasks_done=0, first_job_at=a.started_at)
        out.append(replace(a, driver=d))
    return out


@dataclass
class Tally:
    overlap_errors: list[float] = field(default_factory=list)
    end_errors_pct: list[float] = field(default_factory=list)
    sources: dict[str, int] = field(default_factory=dict)


def _plan(memory: co.World, setup: co.RunSetup, target_s: float, apps: Sequence[Any],
          v: Variant) -> Any:
    """cobell default's plan, as bench.colocation.decide makes it."""
    history = memory.histories.get(memory.target, [])
    interference, confidence, _ = co.planner_key("default")
    co_histories = {a.job: memory.histories.get(a.job, []) for a in apps if a.job}
    if v.stages != "shares":
        drop = ("stage_shares",) if v.stages == "counts" else ("stages", "stage_shares")
        extra = {"stages": EXACT_STAGES} if v.stages == "exact" else {}
        co_histories = {j: [{**{k: x for k, x in r.items() if k not in drop}, **extra}
                            for r in runs]
                        for j, runs in co_histories.items()}
    return plan(job=memory.target, history=history, now=setup.submit_s, target_s=target_s,
                min_scale_out=co.MIN_SCALE_OUT, max_scale_out=co.MAX_SCALE_OUT,
                co_runners=apps, co_runner_histories=co_histories,
                interference=interference, confidence=confidence,  # type: ignore[arg-type]
                fit=memory.fit)


def score(chosen: Any, setup: co.RunSetup, curves: Mapping[str, Any], world: co.Truth,
          target: str, target_s: float, tally: Tally) -> None:
    """Simulate the run at the chosen scale-out; add its co-runners' errors to the tally."""
    done = world.simulate(co._jobs(setup, curves, target, chosen.scale_out), setup.noise)
    new = done[-1]
    assert new.finish_s is not None
    others = [co._app(j, 1.0, j.finish_s) for j in done[:-1]]
    measured = {r["co_runner_app_id"]: r["overlap_ratio"]
                for r in measured_overlaps(new.start_s, new.finish_s, others)}
    ends = {j.key: j.finish_s for j in done[:-1]}
    for v in chosen.co_runners:
        if v.overlap_ratio is None:
            continue
        tally.overlap_errors.append(abs(v.overlap_ratio - measured.get(v.app_id, 0.0)))
        tally.sources[v.source] = tally.sources.get(v.source, 0) + 1
        end = ends[v.app_id]
        if v.predicted_end_at is not None and end is not None and end < new.finish_s:
            tally.end_errors_pct.append(100.0 * abs(v.predicted_end_at - end) / target_s)


Cell = tuple[str, str, str]


def run(cfg: co.Config, data_dir: Path, vs: Sequence[Variant],
        progress: Any = None) -> dict[Cell, dict[str, Tally]]:
    curves = load_curves(data_dir)
    out: dict[Cell, dict[str, Tally]] = {}
    for name in cfg.worlds:
        world = co.truth(name)
        for variant in cfg.variants:
            for target in cfg.targets:
                started = time.perf_counter()
                target_s = co.TARGETS_S[target]
                memory = co.seed_world(target, curves, world, cfg.seed)
                tallies = {v.name: Tally() for v in vs}
                for setup in co.draw_runs(variant, target, cfg, curves, world):
                    if setup.index > MODEL_FROM_USABLE:
                        before, apps = co.at_submit(setup, curves, target, world)
                        live = co.with_drivers(apps, before)
                        exact = exact_drivers(apps, before)
                        for v in vs:
                            shown = (exact if v.stages == "exact" else live) if v.live else apps
                            with knobs(v):
                                chosen = _plan(memory, setup, target_s, shown, v)
                            score(chosen, setup, curves, world, target, target_s,
                                  tallies[v.name])
                    co.play("default", memory, setup, curves, target_s, world)
                out[(name, variant, target)] = tallies
                if progress:
                    progress(f"{name} {variant} {target}: "
                             f"{time.perf_counter() - started:.1f} s")
    return out


def _mean(values: Sequence[float]) -> str:
    return f"{np.mean(values):.3f}" if values else "-"


def _pooled(results: Mapping[Cell, Mapping[str, Tally]], world: str, name: str) -> Tally:
    t = Tally()
    for (w, _, _), per in results.items():
        if w == world:
            t.overlap_errors += per[name].overlap_errors
            t.end_errors_pct += per[name].end_errors_pct
            for k, n in per[name].sources.items():
                t.sources[k] = t.sources.get(k, 0) + n
    return t


def render(results: Mapping[Cell, Mapping[str, Tally]], vs: Sequence[Variant],
           cfg: co.Config, command: str, elapsed_s: float, load: str) -> str:
    lines = [
        "# Co-runners' overlap with and without live progress",
        "",
        f"Command: `{command}` (from the repository root; {elapsed_s:.0f} s; load average"
        f" {load} on the shared 2-core machine).",
        "",
        "bench.colocation's worlds and runs; at every post-bootstrap decision cobell default"
        " plans once per configuration and the run is simulated at the scale-out it chose."
        " Overlap MAE: mean |predicted - measured| overlap ratio per co-runner (what"
        " bench/results/colocation.md reports). End error: |predicted - simulated end| of the"
        " co-runners that end during the new job, in % of the target runtime. Sources: how"
        " many co-runner predictions came from live progress / the model alone. Spark"
        " structures and the drivers' reports: `bench/simulator.py` (SHAPES,"
        f" driver_progress). {cfg.runs_per_interferer} runs per co-runner job; seed {cfg.seed}.",
        "",
        "## Pooled per world",
        "",
        "| world | configuration | co-runner predictions | overlap MAE | end error % (mean) |"
        " progress / model |",
        "|---|---|---|---|---|---|",
    ]
    for world in dict.fromkeys(w for w, _, _ in results):
        for v in vs:
            t = _pooled(results, world, v.name)
            lines.append(f"| {world} | {v.name} | {len(t.overlap_errors)} |"
                         f" {_mean(t.overlap_errors)} | {_mean(t.end_errors_pct)} |"
                         f" {t.sources.get('progress', 0)} / {t.sources.get('model', 0)} |")
    lines += ["", "## Per cell: overlap MAE", "",
              "| world | variant | job | " + " | ".join(v.name for v in vs) + " |",
              "|---" * (3 + len(vs)) + "|"]
    for (world, variant, target), per in results.items():
        lines.append(f"| {world} | {variant} | {target} | "
                     + " | ".join(_mean(per[v.name].overlap_errors) for v in vs) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    import os

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-per-interferer", type=int, default=10, metavar="N")
    parser.add_argument("--seed", type=int, default=co.Config.seed)
    parser.add_argument("--worlds", nargs="+", choices=co.WORLDS, default=list(co.WORLDS))
    parser.add_argument("--targets", nargs="+", choices=list(co.TARGETS_S),
                        default=list(co.TARGETS_S))
    parser.add_argument("--variants", nargs="+", choices=list(co.VARIANTS),
                        default=list(co.VARIANTS))
    parser.add_argument("--weights", nargs="+", type=float, default=[0.5, 0.8, 0.95],
                        help="W_MAX values to compare")
    parser.add_argument("--powers", nargs="+", type=float, default=[0.0, 1.0],
                        help="WEIGHT_POWER values to compare")
    parser.add_argument("--data", type=Path, default=co.DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=None,
                        help="write the report here (default: print only)")
    args = parser.parse_args(argv)
    if not (args.data / "sgd.spark.csv").is_file():
        raise SystemExit(f"bench.progress: the Bell data is not at {args.data}; pass --data DIR")
    cfg = co.Config(worlds=tuple(args.worlds), targets=tuple(args.targets),
                    variants=tuple(args.variants), runs_per_interferer=args.runs_per_interferer,
                    seed=args.seed)
    vs = variants(args.weights, args.powers)
    started = time.perf_counter()
    results = run(cfg, args.data, vs, progress=lambda m: print(m, flush=True))
    given = list(argv if argv is not None else sys.argv[1:])
    if "--output" in given:  # where the report went is not part of how it was made
        at = given.index("--output")
        del given[at:at + 2]
    command = " ".join(["python -m bench.studies.progress", *given])
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    text = render(results, vs, cfg, command, time.perf_counter() - started, load)
    publish(text, args.output)


if __name__ == "__main__":
    main()
