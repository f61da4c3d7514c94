"""The gate's work, in units two processes share: each calls a canonical benchmark's own
functions (never a second implementation) on a fixed configuration and returns its results.

The configurations are the smallest that still move when the core moves (bench/README.md
says what each covers); every seed is fixed and every input is committed, or the Bell data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SEED = 2018  # the benchmarks' own default seed (bench.colocation, bench.hetero --quick)
# Allocation: bench.colocation's 12 cells (2 worlds x 1-3 co-runners x sgd, kmeans), 8 runs
# per co-runner job (32 runs a cell, 26 after the 6 bootstrap runs), cobell's default and
# Bell + conformal margin at 0.9 (the level issue 34 measured it at) and 0.95 (the CLI's
# default confidence), and bench.oracle_bound's physics-aware, noise-blind planner on
# the very same runs (every job's noise redrawn NOISE_BLIND_DRAWS times).
RUNS_PER_INTERFERER = 8
# gate name -> bench's
ALLOCATION_STRATEGIES = {"cobell": "default", "bell_margin": "bell90", "bell_margin95": "bell95"}
NOISE_BLIND_LEVELS = (0.9, 0.95)
NOISE_BLIND_DRAWS = 30
MEMORY_E2E_RUNS_PER_INTERFERER = 4  # bench.memory_e2e --quick
# bench/data/memory sets scored (tune-v2: 6 bounded cases); the quiet ones, recorded alone, first
MEMORY_SETS = ("tune-quiet", "test-quiet", "check-quiet", "tune", "test", "fresh")
# bench.deadline --quick's cells in both worlds, seed 7, 3 warm-up bursts: a submit beside a
# straggler (8 rounds: --quick's 2 decide 2 deadlines) and bursts of five (2 rounds)
DEADLINE_SEED, DEADLINE_WARMUP = 7, 3
DEADLINE_ROUNDS = {"isolated": 8, "burst5": 2}
HETERO_SEED = 2018  # bench.hetero --quick
# bench.coverage --seeds 5's cells (both worlds, 50/200/1000 runs, 1/20/60 co-runner jobs,
# 150 fresh runs a seed), cobell's default only: the same figures as its results file's
COVERAGE_SEEDS = 5


def allocation_config(world: str, variant: str, target: str, seed: int = SEED) -> Any:
    from bench import colocation as co

    return co.Config(worlds=(world,), variants=(variant,), targets=(target,),
                     runs_per_interferer=RUNS_PER_INTERFERER, seed=seed,
                     strategies=tuple(ALLOCATION_STRATEGIES.values()))


def allocation_cells() -> list[tuple[str, str, str]]:
    from bench import colocation as co

    return [(w, v, t) for w in co.WORLDS for v in co.VARIANTS for t in co.TARGETS_S]


# --- the runners: (key...) -> results, each in a worker process ---------------------------------


def run_allocation(world: str, variant: str, target: str,
                   seed: int = SEED) -> dict[str, list[Any]]:
    """bench.colocation's cell: strategy -> its runs (the oracle's included)."""
    from bench import BELL_DATA
    from bench import colocation as co

    cfg = allocation_config(world, variant, target, seed)
    return co.run_experiment(cfg, BELL_DATA)[(world, variant, target)]


def run_noise_blind(world: str, variant: str, target: str, seed: int = SEED) -> list[Any]:
    """bench.oracle_bound --unknown all on the same cell's post-bootstrap runs."""
    from bench import BELL_DATA
    from bench import oracle_bound as ob

    cfg = allocation_config(world, variant, target, seed)
    out = ob.run(cfg, NOISE_BLIND_LEVELS, NOISE_BLIND_DRAWS, BELL_DATA, unknown="all")
    return out[(world, variant, target)]


def run_real_colocation(set_name: str) -> dict[str, Any]:
    """bench.real_colocation's leave-one-run-out APEs, cobell and the paper's joint fit."""
    from bench import real_colocation as rc

    path = rc.SETS[set_name]
    groups = [rc.load_runs(path, job) for job in rc.job_names(path)]  # the profile sets: each job
    names = (rc.COBELL, rc.JOINT)  # the peer: the paper's joint fit (bench/joint_fit.py)
    return rc.set_errors(groups, {n: rc.PREDICTORS[n] for n in names})


def run_whatif(set_name: str) -> list[Any]:
    """bench.whatif's predictions on one set, the empty-history and other-jobs what-if."""
    from bench import whatif as wi

    return wi.predict_all(wi.load_runs(wi.SETS[set_name]), methods=("whatif", "history"))


def run_accuracy() -> dict[str, Any]:
    """bench.accuracy --quick's pooled splits: protocol -> method -> per-split errors."""
    from bench import BELL_DATA
    from bench import accuracy as acc

    return acc.run(BELL_DATA, acc.PROTOCOLS, {"sparse3": [0]})


def run_memory_accuracy(set_name: str) -> list[Any]:
    """bench.memory_accuracy's scores on one set at cobell's default memory confidence."""
    from bench import memory_accuracy as ma
    from cobell_cli.core.memory.plan import DEFAULT_MEMORY_CONFIDENCE

    runs, cases = ma.load(set_name)
    return ma.score(runs, cases, DEFAULT_MEMORY_CONFIDENCE)


def run_memory_e2e(world: str, target: str) -> dict[str, list[Any]]:
    """bench.memory_e2e --quick's cell: strategy -> its runs."""
    from bench import BELL_DATA
    from bench import colocation as co
    from bench import memory_e2e as me
    from bench.simulator import load_curves

    cfg = co.Config(runs_per_interferer=MEMORY_E2E_RUNS_PER_INTERFERER, seed=SEED)
    played = me.play_runs(world, target, cfg, load_curves(BELL_DATA))
    return me.run_cell(world, target, cfg, played)


def run_deadline(world: str) -> list[Any]:
    """bench.deadline's cells in one world (every row)."""
    from bench import BELL_DATA
    from bench import deadline as dl
    from bench.colocation import truth
    from bench.simulator import load_curves

    curves = load_curves(BELL_DATA)
    base = dl.warmed(curves, truth(world), DEADLINE_SEED, DEADLINE_WARMUP)
    return [dl.run_cell(world, pattern, DEADLINE_SEED, rounds, base, curves, lambda _m: None)
            for pattern, rounds in DEADLINE_ROUNDS.items()]


def run_hetero(part: str) -> list[dict[str, Any]]:
    """bench.hetero --quick: its leave-one-type-out rows ('loto') or its submits ('allocate')."""
    from bench import BELL_DATA
    from bench import hetero as ht
    from bench.simulator import load_curves

    curves = load_curves(BELL_DATA)
    history = ht.history(curves, HETERO_SEED)
    if part == "loto":
        return ht.loto(history)
    return ht.allocate(history, curves, HETERO_SEED)


def run_coverage(world: str, n_runs: str) -> dict[int, list[dict[str, Any]]]:
    """bench.coverage's cells of one world and history size: co-runner jobs -> per seed,
    the default's fresh runs inside its 90 % interval and the interval's width."""
    from bench import BELL_DATA
    from bench import colocation as co
    from bench import coverage as cv
    from bench.simulator import load_curves

    curves, truth = load_curves(BELL_DATA), co.truth(world)
    return {pool: [cv.cell(int(n_runs), pool, seed, curves, truth, cv.FRESH_RUNS,
                           variants={"after": {}}, b_check=False)["after"]
                   for seed in range(COVERAGE_SEEDS)]
            for pool in cv.POOL_SIZES}


RUNNERS: dict[str, Callable[..., Any]] = {
    "allocation": run_allocation, "noise_blind": run_noise_blind,
    "real_colocation": run_real_colocation, "whatif": run_whatif, "accuracy": run_accuracy,
    "memory_accuracy": run_memory_accuracy, "memory_e2e": run_memory_e2e,
    "deadline": run_deadline, "hetero": run_hetero, "coverage": run_coverage,
}  # fmt: skip
NEEDS_BELL_DATA = frozenset({"allocation", "noise_blind", "accuracy", "memory_e2e", "deadline",
                             "hetero", "coverage"})


@dataclass(frozen=True)
class Unit:
    """One piece of work: a runner and its key; `cost_s` (CPU seconds on the 2-core machine
    the gate was sized on) only orders the work, longest first, so two processes end together."""

    runner: str
    key: tuple[str, ...] = ()
    cost_s: float = 1.0

    def run(self) -> Any:
        return RUNNERS[self.runner](*self.key)

    @property
    def label(self) -> str:
        return " ".join((self.runner, *self.key))


def units() -> list[Unit]:
    """Every unit of the gate, longest first."""
    from bench import real_colocation as rc
    from bench import whatif as wi

    work = [Unit("allocation", c, 26.0) for c in allocation_cells()]
    work += [Unit("noise_blind", c, _noise_blind_cost(c)) for c in allocation_cells()]
    work += [Unit("real_colocation", (s,), 3.0 if s in ("tuning", "profiles dev") else 0.5)
             for s in rc.SETS]  # every real co-location set: the goal holds on each
    work += [Unit("whatif", (s,), 0.5) for s in wi.SETS]
    work += [Unit("accuracy", (), 6.0)]
    work += [Unit("memory_accuracy", (s,), 0.2) for s in MEMORY_SETS]
    work += [Unit("memory_e2e", (w, t), 5.0) for w in ("simulator", "nodesim")
             for t in ("sgd", "kmeans")]
    work += [Unit("deadline", (w,), 31.0 if w == "nodesim" else 11.0)
             for w in ("simulator", "nodesim")]
    work += [Unit("hetero", (p,), 20.0 if p == "allocate" else 14.0) for p in ("loto", "allocate")]
    work += [Unit("coverage", (w, str(n)), {50: 6.0, 200: 3.5, 1000: 8.0}[n])
             for w in ("simulator", "nodesim") for n in (50, 200, 1000)]
    return sorted(work, key=lambda u: -u.cost_s)


def _noise_blind_cost(cell: tuple[str, str, str]) -> float:
    world, variant, _ = cell
    return {"single": 2.0, "pair": 5.0, "triple": 8.0}[variant] if world == "nodesim" else 1.5


def only(work: list[Unit], sections: set[str]) -> list[Unit]:
    """The units of the named sections (see SECTION_RUNNERS)."""
    runners = {r for s in sections for r in SECTION_RUNNERS[s]}
    return [u for u in work if u.runner in runners]


# section (a table, a group of figures) -> the runners its figures come from
SECTION_RUNNERS: dict[str, tuple[str, ...]] = {
    "allocation": ("allocation", "noise_blind"), "real_colocation": ("real_colocation",),
    "whatif": ("whatif",), "accuracy": ("accuracy",), "memory_accuracy": ("memory_accuracy",),
    "memory_e2e": ("memory_e2e",), "deadline": ("deadline",), "hetero": ("hetero",),
    "coverage": ("coverage",),
}  # fmt: skip
