"""Where cobell's runtime error comes from: what it learned wrong, or the run's own noise.

    python -m bench.studies.error_split [--draws M] [--worlds simulator nodesim] [--quick]

At each post-bootstrap run of bench.colocation (same seed, runs and planner), cobell's default
plans a scale-out x and predicts a runtime there. The physics-aware oracle's draws
(bench.oracle_bound, `--unknown all`: every job's noise redrawn, the co-runners still running
at the submit kept) give the runtime that anyone who knew the world's physics exactly, but not
this run's noise, would expect at x: the geometric mean over M draws. Then

* model error = log(predicted / expected): what cobell got wrong about the world, learned
  from the runs so far;
* run noise = log(runtime / expected): what nobody could have known before the run.

A decision bound has to cover both; the oracle bounds (bench/results/oracle_bound*.md) show
what covering the noise alone costs. Where the model error's spread is as large as the
noise's or larger, a better-learned model, not calibration, is what would narrow the bound.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import multiprocessing
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench import ROOT, publish
from bench import colocation as co
from bench import oracle_bound as ob
from bench.simulator import load_curves

RESULTS = ROOT / "bench" / "results" / "error_split.md"
DRAWS = 30


@dataclasses.dataclass(frozen=True)
class Split:
    """One cell: per post-bootstrap run, log(predicted / expected), log(runtime / expected)."""

    model: tuple[float, ...]
    noise: tuple[float, ...]


def split_cell(cell: co.Cell, n_draws: int, seed: int, data_dir: Path = co.DEFAULT_DATA,
               runs_per_interferer: int = co.Config.runs_per_interferer) -> Split:
    world_name, variant, target = cell
    cfg = co.Config(worlds=(world_name,), targets=(target,), variants=(variant,), seed=seed,
                    runs_per_interferer=runs_per_interferer)
    curves = load_curves(data_dir)
    world = co.truth(world_name)
    memory = co.seed_world(target, curves, world, seed)
    model: list[float] = []
    noise: list[float] = []
    for setup in co.draw_runs(variant, target, cfg, curves, world):
        record = co.play("default", memory, setup, curves, co.TARGETS_S[target], world)
        if record.bootstrap or not record.predicted_s:
            continue
        rng = np.random.default_rng([seed, 11, setup.index])
        expected = float(np.mean([
            math.log(ob.runtime_at(setup, curves, target, world, record.scale_out, draw))
            for draw in ob.blind_redraws(setup, curves, world, rng, n_draws)]))
        model.append(math.log(record.predicted_s) - expected)
        noise.append(math.log(record.runtime_s) - expected)
    return Split(tuple(model), tuple(noise))


def _task(args: tuple[co.Cell, int, int]) -> Split:
    return split_cell(*args)


def render(cells: Sequence[co.Cell], splits: Sequence[Split], n_draws: int, command: str,
           elapsed_s: float) -> str:
    lines = [
        "# Where cobell's runtime error comes from: model error and run noise", "",
        f"Command: `{command}` (from the repository root; {elapsed_s:.0f} s).", "",
        "Post-bootstrap runs of bench.colocation (cobell default, seed"
        f" {co.Config.seed}). Expected: the geometric mean runtime at cobell's scale-out over"
        f" {n_draws} draws of every job's noise (the physics-aware oracle's draws). Model error:"
        " log(predicted / expected); run noise: log(runtime / expected). sd: standard deviation"
        " (x 100, roughly %); model share: model sd^2 / (model sd^2 + noise sd^2).", "",
        "| world | variant | job | runs | model error mean | model error sd | run noise sd |"
        " model share |", "|---|---|---|---|---|---|---|---|",
    ]
    for (world, variant, target), s in zip(cells, splits, strict=True):
        m, n = np.array(s.model), np.array(s.noise)
        share = m.var() / (m.var() + n.var())
        lines.append(f"| {world} | {variant} | {target} | {len(m)} | {100 * m.mean():+.1f} |"
                     f" {100 * m.std():.1f} | {100 * n.std():.1f} | {share:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.error_split",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=DRAWS)
    parser.add_argument("--worlds", nargs="+", choices=co.WORLDS, default=list(co.WORLDS))
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--quick", action="store_true",
                        help="nodesim single sgd, 5 draws; writes nothing")
    args = parser.parse_args(argv)
    cells = [(w, v, t) for w in args.worlds for v in co.VARIANTS for t in co.TARGETS_S]
    draws = args.draws
    if args.quick:
        cells, draws = [("nodesim", "single", "sgd")], 5
    started = time.perf_counter()
    tasks = [(cell, draws, co.Config.seed) for cell in cells]
    if args.processes > 1:
        with multiprocessing.get_context("fork").Pool(args.processes) as pool:
            splits = pool.map(_task, tasks, chunksize=1)
    else:
        splits = [_task(t) for t in tasks]
    given = sys.argv[1:] if argv is None else argv
    text = render(cells, splits, draws, " ".join(["python -m bench.studies.error_split", *given]),
                  time.perf_counter() - started)
    publish(text, None if args.quick else RESULTS)


if __name__ == "__main__":
    main()
