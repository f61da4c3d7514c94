"""Do the one-fit held-out errors see the partial pooling? The planner's calibration beyond
REFIT_MAX_RUNS runs against the refits it stands for, on bench.coverage's cells.

    python -m bench.studies.loo_pooling [--seeds 0-4 5-9] [--output FILE]

Every cell of bench.coverage with many co-runner jobs and more than REFIT_MAX_RUNS runs (both
worlds, 200 and 1000 runs, 20 and 60 co-runner jobs; 150 fresh runs a seed, as its `cell`
draws them), three ways of getting the held-out ratios the 90 % interval is calibrated on, all
through `RuntimeModel` as `cobell predict` fits it:

* unpooled leverage: model/loo.py's leave-one-out with every pair free (its `own_weight`
  None), as it was until 30 Nov 2026;
* default: the same with each pair's pooling weight in the hat matrix (today's);
* K refits: calibration's K-fold CV+ refits (K = calibration.JACKKNIFE_MAX_FITS: ten until
  2 Dec 2026, five since), which the one-fit estimate replaces beyond REFIT_MAX_RUNS runs
  (select.REFIT_MAX_RUNS raised for the study only).

Seeds 0-4 are bench.coverage's own (the cell where the gap was found, nodesim with 200 runs
and 60 co-runner jobs, is among them: the fix was written on its seeds 0 and 1); 5-9 were run
only after the fix was frozen. Coverage of the fresh runs and the interval's median width.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from bench import BELL_DATA, ROOT, colocation, publish
from bench import coverage as cv
from bench.simulator import load_curves
from cobell_cli.core.calibration import JACKKNIFE_MAX_FITS
from cobell_cli.core.model import select

RESULTS = ROOT / "bench" / "results" / "loo_pooling.md"
SIZES = (200, 1000)
POOLS = (20, 60)
REFITS = f"{JACKKNIFE_MAX_FITS} refits"
VARIANTS = ("unpooled leverage", "default", REFITS)


@contextmanager
def variant(name: str) -> Iterator[None]:
    """The held-out ratios as `name` computes them, for the fits inside the block."""
    loo, refit_max = select.loo_ratios, select.REFIT_MAX_RUNS
    if name == "unpooled leverage":
        select.loo_ratios = _unpooled(loo)  # type: ignore[assignment]
    elif name == REFITS:
        select.REFIT_MAX_RUNS = 10**9
    try:
        yield
    finally:
        select.loo_ratios, select.REFIT_MAX_RUNS = loo, refit_max


def _unpooled(loo: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def free_pairs(*args: Any) -> np.ndarray:
        return loo(*args[:8], None)
    return free_pairs


def seeds_cell(world: str, n_runs: int, pool: int, seeds: Sequence[int],
               curves: Any) -> dict[str, list[dict[str, Any]]]:
    """Per variant, bench.coverage's cell for each seed (its own draws, the default's fit)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name in VARIANTS:
        with variant(name):
            out[name] = [cv.cell(n_runs, pool, s, curves, colocation.truth(world),
                                 cv.FRESH_RUNS, variants={"after": {}},
                                 b_check=False)["after"] for s in seeds]
    return out


def render(rows: Sequence[tuple[str, int, int, str, dict[str, list[dict[str, Any]]]]],
           command: str, elapsed_s: float) -> str:
    lines = ["# The one-fit held-out errors and the partial pooling", "",
             f"Command: `{command}` ({elapsed_s:.0f} s). bench/studies/loo_pooling.py says"
             " what each row is; seeds 0-4 are bench.coverage's (the fix was written on two of"
             " them), 5-9 were first run after it was frozen.", "",
             "Coverage % of the fresh runs by the nominal 90 % interval (goal 85-95 %) / its"
             " median width, log(upper / lower):", "",
             "| world | history runs | co-runner jobs | seeds | "
             + " | ".join(VARIANTS) + " |",
             "|---|---|---|---|" + "---|" * len(VARIANTS)]
    for world, n_runs, pool, seeds, by_variant in rows:
        cells = []
        for name in VARIANTS:
            got = by_variant[name]
            pct = 100.0 * sum(c["covered"] for c in got) / sum(c["n"] for c in got)
            cells.append(f"{pct:.1f} / {float(np.median([c['log_width'] for c in got])):.3f}")
        lines.append(f"| {world} | {n_runs} | {pool} | {seeds} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _seed_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.studies.loo_pooling",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", nargs="+", default=["0-4", "5-9"],
                        help="seed ranges, each reported on its own rows (default 0-4 5-9)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    curves = load_curves(BELL_DATA)
    rows = []
    for world in cv.WORLDS:
        for n_runs in SIZES:
            for pool in POOLS:
                for spec in args.seeds:
                    rows.append((world, n_runs, pool, spec,
                                 seeds_cell(world, n_runs, pool, _seed_range(spec), curves)))
                    print(f"{world} {n_runs} runs x {pool} co-runner jobs, seeds {spec}:"
                          f" {time.perf_counter() - started:.0f} s", flush=True)
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.studies.loo_pooling", *given])
    publish(render(rows, command, time.perf_counter() - started), args.output)


if __name__ == "__main__":
    main()
