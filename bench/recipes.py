"""How each stamped results file is made again (`python -m bench rerun`, bench/rerun.py).

Each recipe is the commands its file's `Command:` line and its module's doc describe, run
from the repository root: `python` is the interpreter that runs the rerun, `$RERUN_TMP` a
fresh directory for what one command hands the next, and leading `NAME=value` words set the
environment. `minutes`: about how long on the 2-core machine (for the order; from the file,
its module or its commit); `quiet`: it times wall or CPU time, or edits the checkout while it
runs (mutations), so it runs alone, after the others; `by_hand`: the file is assembled by a
person from the commands' output, so the rerun lists it, it does not run it. A results file
added with a stamp needs a recipe here (tests/test_bench_rerun.py). Text written by hand
inside a generated file survives a rerun in a `<!-- kept:NAME -->` block (bench/gate/blocks.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Recipe:
    commands: tuple[str, ...]
    minutes: float
    quiet: bool = False
    by_hand: str = ""


def _deadline() -> tuple[str, ...]:
    """bench.deadline's protocol: each seed and world saved, the physics row apart, then one
    --load of them all (bench/deadline.py)."""
    rows = "start_now margin fcfs edf paper deadline oracle"
    saved, steps = [], []
    for seed in (7, 4242, 5309):
        for world in ("simulator", "nodesim"):
            part = f"$RERUN_TMP/deadline_{seed}_{world}"
            steps.append(f"python -m bench.deadline --seeds {seed} --worlds {world} --rows {rows}"
                         f" --save {part}.pickle --output {part}.md")
            saved.append(f"{part}.pickle")
        for world in ("simulator", "nodesim"):
            part = f"$RERUN_TMP/deadline_{seed}_{world}_physics"
            steps.append(f"python -m bench.deadline --seeds {seed} --worlds {world} --rows physics"
                         f" --save {part}.pickle")
            saved.append(f"{part}.pickle")
    return (*steps, f"python -m bench.deadline --load {' '.join(saved)}")


def _confidence() -> tuple[str, ...]:
    cache = "--cache $RERUN_TMP/confidence"
    return (*(f"python -m bench.studies.confidence run --world {world} --seed {seed} {cache}"
              for seed in (2018, 2019, 2020) for world in ("simulator", "nodesim")),
            f"python -m bench.studies.confidence report {cache}")


def _memory_candidates(seeds: str, candidates: str, output: str) -> tuple[str, ...]:
    """bench.memory_e2e plays the runs once (they do not depend on memory), the study replays
    them with each candidate's sizing."""
    played = "--played $RERUN_TMP/memory_played.pickle"
    cells = "simulator:sgd simulator:kmeans nodesim:sgd nodesim:kmeans"
    return (f"python -m bench.memory_e2e {played} --seed {seeds} --cells {cells}",
            f"python -m bench.studies.memory_demand_candidates {played} --seed {seeds}"
            + (f" --candidates {candidates}" if candidates else "")
            + (f" --output bench/results/{output}" if output else ""))


def _plausibility_decisions() -> tuple[str, ...]:
    sets = ("bell/grep bell/kmeans", "bell/pagerank bell/tpchq10",
            "bell/wordcount colocation-local.csv/", "example.csv/ profiles-local.csv/")
    rows = [f"$RERUN_TMP/pd_moves{i}.json" for i in range(1, len(sets) + 1)]
    return ("python -m bench.plausibility_decisions case --rows $RERUN_TMP/pd_case.json",
            *(f"python -m bench.plausibility_decisions moves --sets {s} --seeds 1 --rows {r}"
              for s, r in zip(sets, rows, strict=True)),
            "python -m bench.plausibility_decisions table $RERUN_TMP/pd_case.json "
            + " ".join(rows))


def _real_ablation() -> tuple[str, ...]:
    cache = "--cache $RERUN_TMP/real_ablation"
    sets = ("tuning", "test", "profiles dev", "profiles test", "profiles check", "profiles fresh")
    return (*(f"python -m bench.studies.real_ablation --set '{s}' {cache}" for s in sets),
            f"python -m bench.studies.real_ablation {cache}")


_SEEDS_8 = "2018 2019 2020 2021 2022 2023 2024 2025"
RECIPES: dict[str, Recipe] = {
    "accuracy.md": Recipe(("python -m bench.accuracy",), 1, quiet=True),
    "allocation_seeds.md": Recipe(("python -m bench.studies.allocation_seeds",), 6),
    "coldstart.md": Recipe(("python -m bench.coldstart",), 3),
    "colocation.md": Recipe(("python -m bench.colocation",), 16),
    "confidence.md": Recipe(_confidence(), 30),
    "confidence_levels.md": Recipe(
        ("python -m bench.studies.confidence_levels --levels 0.9 0.93 0.95 0.97",), 8),
    "coverage.md": Recipe(("OPENBLAS_NUM_THREADS=1 python -m bench.coverage --seeds 5",), 1,
                          quiet=True),
    "deadline.md": Recipe(_deadline(), 25, quiet=True),
    "deadline_cpu.md": Recipe(("python -m bench.deadline_cpu",), 1, quiet=True),
    "error_split.md": Recipe(("python -m bench.studies.error_split",), 2),
    "hetero.md": Recipe(
        ("python -m bench.hetero --seeds 2018 7 11 --output $RERUN_TMP/hetero_now.md",
         "python -m bench.hetero --seeds 3 5 13 17 23 --output $RERUN_TMP/hetero_five_more.md",
         "python -m bench.hetero --known-only 1000 --seeds 2018 7 11 3 5 13 17 23"
         " --output $RERUN_TMP/hetero_known.md"), 4,
        by_hand="its sections are assembled from these tables (bench/README.md)"),
    "import_speed.md": Recipe(
        ("python -m bench.import_speed --apps 10000 --event-log-mb 1024",), 3, quiet=True),
    "keep_frontier.md": Recipe(
        ("python -m bench.studies.keep_frontier --processes 1"
         " --cobell-levels point 0.7 0.8 0.85 0.9 0.97",), 17),
    "latency.md": Recipe(("python -m bench.latency",), 4, quiet=True),
    "loo_pooling.md": Recipe(("python -m bench.studies.loo_pooling",), 4),
    "memory_accuracy.md": Recipe(("python -m bench.memory_accuracy",), 1),
    "memory_candidates_seeds_2018_2025.md": Recipe(
        _memory_candidates(_SEEDS_8, "default success-cap deep-folds",
                           "memory_candidates_seeds_2018_2025.md"), 5),
    "memory_confidence_asked.md": Recipe(
        _memory_candidates(f"{_SEEDS_8} 2026 2027 2028 2029", "default asked-0.95 asked-0.99",
                           "memory_confidence_asked.md"), 7),
    "memory_demand_candidates.md": Recipe(
        _memory_candidates("2018 2019 2020 2021", "", ""), 4),
    "memory_e2e.md": Recipe(("python -m bench.memory_e2e --seed 2018 2019 2020 2021 --jobs 1",),
                            2),
    "memory_fold_depth.md": Recipe(
        ("python -m bench.studies.memory_fold_depth --sets tune-quiet tune test-quiet"
         " --case-sets tune-quiet test-quiet check-quiet",), 0.1),
    "memory_measure.md": Recipe(("python -m bench.memory_measure --set tune-quiet",), 0.2),
    "memory_sensitivity.md": Recipe(("python -m bench.memory_sensitivity",), 0.2),
    "mutations.md": Recipe(
        ("python -m bench.studies.mutations --output bench/results/mutations.md",), 4,
        quiet=True),  # it edits cobell_cli in place while it runs: nothing else may run
    "oracle_bound.md": Recipe(("python -m bench.oracle_bound --draws 100",), 2),
    "oracle_bound_blind.md": Recipe(
        ("python -m bench.oracle_bound --draws 100 --unknown all",), 2),
    "plausibility.md": Recipe(("python -m bench.plausibility --seeds 3",), 0.6),
    "plausibility_decisions.md": Recipe(_plausibility_decisions(), 5),
    "prior_width.md": Recipe(("python -m bench.studies.prior_width --seeds 10 19",), 0.2),
    "profiles_gap.md": Recipe(("python -m bench.studies.profiles_gap",), 1),
    "real_ablation.md": Recipe(_real_ablation(), 5),
    "real_colocation.md": Recipe(("python -m bench.real_colocation",), 0.4),
    "selection.md": Recipe(("python -m bench.selection --processes 1",), 2),
    "sparse_limits.md": Recipe(("python -m bench.studies.sparse_limits",), 1),
    "unknown_end.md": Recipe(
        ("python -m bench.studies.unknown_end --draws 20 --output bench/results/unknown_end.md",),
        0.1),
    "unreachable_aim.md": Recipe(("python -m bench.studies.unreachable_aim",), 12),
    "whatif.md": Recipe(("python -m bench.whatif",), 0.1),
}
