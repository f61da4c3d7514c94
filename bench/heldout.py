"""The held-out seeds, paired with a base commit: is a change to the core decision worse
where it was not tuned?

    python -m bench.heldout --base main [--quick] [--jobs 2] [--json]

The gate runs the development seeds only (bench/README.md), so that no seed it runs every day
becomes one the rules are tuned on. Before a change to how the planner decides merges, this
plays the held-out seeds twice: with BASE's core and with this checkout's, both through this
checkout's bench code (BASE's `cobell_cli` from a temporary git worktree). The draws are the
same, so the runs pair one to one:

- allocation: the gate's configuration (bench/gate/units.py: bench.colocation's 12 cells,
  8 runs per co-runner job), cobell's default, seeds 2019-2021 (bench/studies/allocation_seeds);
- deadlines: bench.deadline's four patterns in both worlds, `cobell --deadline`, seed 4242
  (bench.deadline's TEST_SEED), after its warm-up bursts;
- memory: bench.memory_e2e's cells (12 runs per co-runner job), cobell's memory sizing,
  seeds 2019-2021 (2018 is its development seed; 2020 chose demand.DEMAND's GC room);
- node types: bench.hetero's submits, cobell's choice of type and scale-out (`shared`), seeds
  7 and 11 (2018 is its development seed).

Deadlines are compared on one history: bench.deadline warms its cluster with bursts that
cobell plans, and a core that decides any one of them otherwise leaves another history, after
which every round differs. When each core warmed its own, a change of the confidence from 0.95
to 0.951 moved about 190 of the 207 runs of each world at seed 4242, and they were late 7.4
points more often in both. So the base's play warms it and the head's play reads that history
(WARM_ENV): the rounds, which do not learn, then compare the two cores' decisions on the same
history.

Runs are not independent: a cell's runs share the history its own decisions grew (allocation,
memory), a round's jobs share its cluster (deadlines), a submit's repetitions share its
decision (node types). Each outcome names its cluster, and the standard errors are
cluster-robust (the paired differences summed per cluster).

Per world it reports the share of runs late (allocation: over the target; deadlines: past the
deadline; memory: a run with an OOM) and the cost (executor-seconds; memory: MB-seconds;
node types: price x executor-seconds), head against base, with the paired difference and its
standard error, and a verdict: `worse` where head is late more often or costs more, by more
than two standard errors, and is not better in the other; `trade-off` where one is worse and
the other better by that much; `better`, `no worse` or `unchanged` (no run moved) otherwise.
Beside it, the project's rule for what stays in the default (README: a component stays only
if it wins out of sample by a standard error): per world who wins by one standard error
(`base`, `head`, `split` when each wins one of the two, `neither`), and a line that names
them. A head "no worse" at two standard errors may still lose by one: then a component it
adds does not earn its place, and one it removes (a simpler head) was earning it.
A head whose core is BASE's (docstrings and comments aside) plays nothing.

Exit 0: nothing worse and no trade-off; 1: a world is worse or trades one for the other (a
person decides, and says why in the merge); 2: it cannot run (no Bell data, no git, a bad
revision). `--quick` plays one or two small cells of each (a minute; for trying it).

The base's outcomes are kept in ~/.cache/cobell/heldout (XDG_CACHE_HOME), named by a hash of
the sources they depend on, so a change tried again against the same main plays only itself
(`--no-cache`: play both).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import BELL_DATA, ROOT, git
from bench.gate.cli import SINGLE_THREAD

ALLOCATION_SEEDS = (2019, 2020, 2021)  # bench/studies/allocation_seeds.SEEDS
DEADLINE_SEEDS = (4242,)  # bench.deadline's TEST_SEED
MEMORY_SEEDS = (2019, 2020, 2021)  # bench.memory_e2e's held-out seeds
MEMORY_RUNS_PER_INTERFERER = 12  # bench.memory_e2e without --quick
NODETYPE_SEEDS = (7, 11)  # bench.hetero's held-out seeds
NODETYPE_STRATEGY = "shared"  # cobell's default: one model over the types, the cheapest label
ALLOCATION_STRATEGY = "default"  # cobell at default flags
MARGIN_SE = 2.0  # a paired difference counts beyond this many standard errors
RULE_SE = 1.0  # the rule that keeps a component in the default: a win by one standard error
KEEP = 16  # kept base outcomes (and warmed histories), newest first
OK, WORSE, CANNOT_RUN = 0, 1, 2

Outcome = dict[str, Any]  # one paired unit: key, cluster, late (bool), cost
WARM_ENV = "COBELL_HELDOUT_WARM"  # a directory of warmed deadline histories, shared by plays
# how each section names its "late" and its cost
WORDS = {"allocation": ("late", "executor-s"), "deadline": ("late", "executor-s"),
         "memory": ("OOM", "MB-s"), "nodetype": ("late", "cost")}


# --- playing: one core's runs ---------------------------------------------------------------------


def work(quick: bool) -> list[tuple[str, tuple[Any, ...]]]:
    """The units to play: ("allocation", (seed, world, variant, target)), ("deadline", (seed,
    world, pattern, rounds, warm-up rounds)) and ("memory", (seed, world, target, runs per
    co-runner job)) and ("nodetype", (seed, "hetero"))."""
    from bench import colocation as co
    from bench import deadline as dl
    from bench.gate import units as u

    if quick:
        seed = ALLOCATION_SEEDS[0]  # two cells a section: two clusters, a standard error
        return [*[("allocation", (seed, "simulator", "single", t)) for t in co.TARGETS_S],
                ("deadline", (DEADLINE_SEEDS[0], "simulator", "isolated", 2, 3)),
                *[("memory", (MEMORY_SEEDS[0], "simulator", t, 4)) for t in co.TARGETS_S],
                ("nodetype", (NODETYPE_SEEDS[0], "hetero"))]
    units = [("allocation", (s, *cell)) for s in ALLOCATION_SEEDS for cell in u.allocation_cells()]
    units += [("deadline", (s, w, p, dl.ROUNDS[p], dl.WARMUP_ROUNDS))
              for s in DEADLINE_SEEDS for w in co.WORLDS for p in dl.ROUNDS]
    units += [("memory", (s, w, t, MEMORY_RUNS_PER_INTERFERER))
              for s in MEMORY_SEEDS for w in co.WORLDS for t in co.TARGETS_S]
    units += [("nodetype", (s, "hetero")) for s in NODETYPE_SEEDS]
    return units


def play_allocation(seed: int, world: str, variant: str, target: str) -> list[Outcome]:
    """cobell's post-bootstrap runs of one bench.colocation cell, with the oracle's cost."""
    from bench import colocation as co
    from bench.gate import units as u

    cfg = co.Config(worlds=(world,), variants=(variant,), targets=(target,),
                    runs_per_interferer=u.RUNS_PER_INTERFERER, seed=seed,
                    strategies=(ALLOCATION_STRATEGY,))
    per = co.run_experiment(cfg, BELL_DATA)[(world, variant, target)]
    return [{"key": f"{seed}/{variant}/{target}/{r.index}", "cluster": f"{seed}/{variant}/{target}",
             "late": r.overshoot_pct > 0, "cost": r.node_s}
            for r in per[ALLOCATION_STRATEGY] if not r.bootstrap]


def warmed_history(seed: int, world: str, warmup: int, warm: Any) -> Any:
    """bench.deadline's warmed cluster history: read from WARM_ENV's directory when a play
    (the base's) left it there, else `warm()` and leave it there (its histories, not its
    fitted models: those are this core's)."""
    import pickle

    from cobell_cli.store.model_cache import write_bytes

    directory = os.environ.get(WARM_ENV)
    path = Path(directory) / f"warm-{seed}-{world}-{warmup}.pkl" if directory else None
    if path is not None and path.is_file():
        return pickle.loads(path.read_bytes())
    memory = warm()
    memory.fit_cache.clear()
    if path is not None:
        write_bytes(path, pickle.dumps(memory), pattern="warm-*.pkl", keep=KEEP)
    return memory


def play_deadline(seed: int, world: str, pattern: str, rounds: int,
                  warmup: int) -> list[Outcome]:
    """`cobell --deadline`'s jobs in one bench.deadline cell (stragglers count for cost)."""
    from bench import deadline as dl
    from bench.colocation import truth
    from bench.simulator import load_curves

    curves = load_curves(BELL_DATA)
    base = warmed_history(seed, world, warmup, lambda: dl.warmed(curves, truth(world), seed,
                                                                 warmup))
    cell = dl.run_cell(world, pattern, seed, rounds, base, curves, lambda _m: None,
                       rows=("deadline",))
    return [{"key": f"{seed}/{pattern}/{i}/{r.key}", "cluster": f"{seed}/{pattern}/{i}",
             "late": not r.met,
             "judged": r.deadline_at is not None, "cost": r.executor_s}
            for i, rnd in enumerate(cell.rounds) for r in rnd["deadline"]]


def play_memory(seed: int, world: str, target: str, per_interferer: int) -> list[Outcome]:
    """cobell's memory sizing of one bench.memory_e2e cell's post-bootstrap runs."""
    from bench import colocation as co
    from bench import memory_e2e as me
    from bench.simulator import load_curves

    cfg = co.Config(runs_per_interferer=per_interferer, seed=seed)
    played = me.play_runs(world, target, cfg, load_curves(BELL_DATA))
    records = me.run_cell(world, target, cfg, played, strategies=("cobell",))["cobell"]
    return [{"key": f"{seed}/{target}/{r.index}", "cluster": f"{seed}/{target}",
             "late": r.ooms > 0, "cost": r.mb_s}
            for r in records if not r.bootstrap]


def play_nodetype(seed: int, world: str) -> list[Outcome]:
    """cobell's type and scale-out for each of bench.hetero's submits (`world`: "hetero")."""
    from bench import hetero as ht
    from bench.simulator import load_curves

    curves = load_curves(BELL_DATA)
    rows = ht.allocate(ht.history(curves, seed), curves, seed)
    return [{"key": f"{seed}/{i}/{row['job']}", "cluster": f"{seed}/{row['job']}/{row['target_s']}",
             "late": row[NODETYPE_STRATEGY]["miss"], "cost": row[NODETYPE_STRATEGY]["cost"]}
            for i, row in enumerate(rows)]


PLAYERS = {"allocation": play_allocation, "deadline": play_deadline, "memory": play_memory,
           "nodetype": play_nodetype}


def _play_unit(unit: tuple[str, tuple[Any, ...]]) -> tuple[str, str, list[Outcome]]:
    section, key = unit
    return section, key[1], PLAYERS[section](*key)


def play(quick: bool, jobs: int) -> dict[str, Any]:
    """This interpreter's core on every unit: {"core": digest, "outcomes": {section: {world:
    [outcome, ...]}}}, in a deterministic order."""
    import cobell_cli
    from bench.staleness import core_digest

    units = work(quick)
    outcomes: dict[str, dict[str, list[Outcome]]] = {}
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        for section, world, found in pool.imap(_play_unit, units):
            outcomes.setdefault(section, {}).setdefault(world, []).extend(found)
    core = Path(cobell_cli.__file__).resolve().parent / "core"
    return {"core": core_digest(core), "core_path": str(core), "outcomes": outcomes}


def play_tree(package_parent: Path, quick: bool, jobs: int,
              warm: Path | None = None) -> dict[str, Any]:
    """`play` in a child whose `cobell_cli` is the one in `package_parent` (this checkout's
    bench code): the child starts in a directory holding only a link to that package. `warm`:
    the directory of shared deadline histories (WARM_ENV); None: the child warms its own."""
    with tempfile.TemporaryDirectory(prefix="cobell-heldout-") as tmp:
        shim, out = Path(tmp) / "shim", Path(tmp) / "outcomes.json"
        shim.mkdir()
        (shim / "cobell_cli").symlink_to(package_parent.resolve() / "cobell_cli")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            **dict.fromkeys(SINGLE_THREAD, "1")}
        env.pop(WARM_ENV, None)
        if warm is not None:
            warm.mkdir(parents=True, exist_ok=True)
            env[WARM_ENV] = str(warm)
        argv = [sys.executable, "-m", "bench.heldout", "play", "--output", str(out),
                "--jobs", str(jobs), *(["--quick"] if quick else [])]
        subprocess.run(argv, cwd=shim, env=env, check=True)
        return json.loads(out.read_text())


# --- comparing two cores' runs ------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """One section and world, head against base on the same runs."""

    section: str
    world: str
    runs: int
    changed: int  # runs whose outcome or cost differs
    late_base_pct: float
    late_head_pct: float
    late_diff_pct: float  # paired mean of head - base, in points
    late_se_pct: float
    cost_ratio: float  # head's cost / base's, summed
    cost_diff_pct: float  # paired mean of head / base - 1 per run, in %
    cost_se_pct: float
    verdict: str
    wins: str  # who wins by RULE_SE: base, head, split, neither (or unchanged)

    def line(self) -> str:
        late, cost = WORDS[self.section]
        return (f"{self.section:10s} {self.world:9s} {self.runs:4d} runs, {self.changed:3d} "
                f"changed: {late} {self.late_base_pct:5.1f} -> {self.late_head_pct:5.1f} % "
                f"({self.late_diff_pct:+.2f} +- {self.late_se_pct:.2f} points); {cost} "
                f"x{self.cost_ratio:.4f} ({self.cost_diff_pct:+.2f} +- {self.cost_se_pct:.2f} % "
                f"a run): {self.verdict}; by one SE: {self.wins}")


def mean_se(values: Sequence[float], clusters: Sequence[str] | None = None,
            ) -> tuple[float, float]:
    """The mean and its cluster-robust standard error: the deviations summed per cluster, with
    the small-sample factor k / (k - 1) over k clusters (each value its own cluster: the usual
    standard error). One cluster with any spread: infinite (nothing can be told)."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    mean = sum(values) / n
    sums: dict[str, float] = {}
    for i, v in enumerate(values):
        c = clusters[i] if clusters is not None else str(i)
        sums[c] = sums.get(c, 0.0) + (v - mean)
    k = len(sums)
    spread = sum(d * d for d in sums.values())
    if k < 2:
        return mean, math.inf if any(v != mean for v in values) else 0.0
    return mean, math.sqrt(k / (k - 1) * spread) / n


def _sign(diff: float, se: float, margin_se: float) -> int:
    """+1 where head - base is above zero by more than `margin_se` standard errors, -1 below."""
    beyond = abs(diff) > margin_se * se and diff != 0.0
    return (1 if diff > 0 else -1) if beyond else 0


def wins(late: tuple[float, float], cost: tuple[float, float], changed: int) -> str:
    """Who is ahead by RULE_SE on lateness or cost and behind on neither: base, head; split
    when each is ahead on one; neither."""
    if changed == 0:
        return "unchanged"
    signs = {_sign(*late, RULE_SE), _sign(*cost, RULE_SE)} - {0}
    return {frozenset(): "neither", frozenset({1}): "base", frozenset({-1}): "head"}.get(
        frozenset(signs), "split")


def verdict(late: tuple[float, float], cost: tuple[float, float], changed: int) -> str:
    """From the paired (difference, standard error) of lateness and of cost, head - base."""
    if changed == 0:
        return "unchanged"
    late_sign, cost_sign = _sign(*late, MARGIN_SE), _sign(*cost, MARGIN_SE)
    if late_sign * cost_sign < 0:
        return "trade-off"
    if late_sign > 0 or cost_sign > 0:
        return "worse"
    return "better" if late_sign < 0 or cost_sign < 0 else "no worse"


def compare_world(section: str, world: str, base: Sequence[Outcome],
                  head: Sequence[Outcome]) -> Comparison:
    """Pair the two cores' outcomes by key (the same draws) and judge head against base."""
    by_key = {o["key"]: o for o in base}
    pairs = [(by_key[o["key"]], o) for o in head if o["key"] in by_key]
    if len(pairs) != len(base) or len(pairs) != len(head):
        raise ValueError(f"{section} {world}: the two plays drew different runs")
    judged = [(b, h) for b, h in pairs if b.get("judged", True)]
    late = mean_se([float(h["late"]) - float(b["late"]) for b, h in judged],
                   [b.get("cluster", b["key"]) for b, _ in judged])
    cost = mean_se([h["cost"] / b["cost"] - 1.0 for b, h in pairs],
                   [b.get("cluster", b["key"]) for b, _ in pairs])
    changed = sum(b["late"] != h["late"] or b["cost"] != h["cost"] for b, h in pairs)
    n = max(len(judged), 1)
    late_base, late_head = (100.0 * sum(pair[i]["late"] for pair in judged) / n for i in (0, 1))
    return Comparison(
        section, world, len(pairs), changed, late_base, late_head,
        100.0 * late[0], 100.0 * late[1],
        sum(h["cost"] for _, h in pairs) / sum(b["cost"] for b, _ in pairs),
        100.0 * cost[0], 100.0 * cost[1], verdict(late, cost, changed),
        wins(late, cost, changed))


def compare(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[Comparison]:
    """Every section and world both plays hold."""
    return [compare_world(section, world, base["outcomes"][section][world], outcomes)
            for section, worlds in head["outcomes"].items()
            for world, outcomes in worlds.items()]


# --- the command ----------------------------------------------------------------------------------


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """A detached git worktree of `rev`, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="cobell-heldout-base-") as tmp:
        path = Path(tmp) / "tree"
        if git("worktree", "add", "--detach", str(path), rev) is None:
            raise SystemExit(f"bench.heldout: cannot check out {rev!r} (git worktree add); "
                             "pass a commit, branch or tag of this repository")
        try:
            yield path
        finally:
            git("worktree", "remove", "--force", str(path))


def rule_line(rows: Sequence[Comparison]) -> str:
    """Who wins by one standard error, world by world (the rule that keeps a component)."""
    named = {who: [f"{r.section} {r.world}" for r in rows if r.wins == who]
             for who in ("base", "head", "split")}
    said = [f"{who} wins in {', '.join(w)}" if who != "split" else f"split in {', '.join(w)}"
            for who, w in named.items() if w]
    return ("by one standard error (what keeps a component in the default): "
            + ("; ".join(said) if said else "no world won by either"))


def report(base_label: str, base: Mapping[str, Any], head: Mapping[str, Any],
           rows: Sequence[Comparison], elapsed_s: float, quick: bool) -> str:
    seeds = ("--quick: a small cell or two of each, at the first seed" if quick else
             f"allocation seeds {', '.join(map(str, ALLOCATION_SEEDS))}, deadline seeds "
             f"{', '.join(map(str, DEADLINE_SEEDS))}, memory seeds "
             f"{', '.join(map(str, MEMORY_SEEDS))}, node-type seeds "
             f"{', '.join(map(str, NODETYPE_SEEDS))}")
    lines = [f"held-out seeds: this checkout (core {head['core']}) against {base_label} "
             f"(core {base['core']}), {seeds}, {elapsed_s:.0f} s"]
    lines += [r.line() for r in rows]
    bad = [f"{r.section} {r.world}" for r in rows if r.verdict in ("worse", "trade-off")]
    margin = f"{MARGIN_SE:g} standard errors of the paired difference"
    lines.append(rule_line(rows))
    lines.append(f"verdict: worse or a trade-off in {', '.join(bad)} (beyond {margin})" if bad
                 else f"verdict: no worse (no world worse or traded beyond {margin})")
    return "\n".join(lines)


def source_key(package_parent: Path, quick: bool) -> str:
    """What a play's outcomes depend on: that tree's cobell_cli and this checkout's bench code
    (every .py file, bytes as they are), and --quick."""
    from cobell_cli.core.digest import blake2b

    digest = blake2b(repr(quick).encode(), digest_size=10)
    for root in (package_parent / "cobell_cli", ROOT / "bench"):
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root.parent).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()


def cache_dir() -> Path:
    """Where the base's outcomes are kept between runs (the base is usually main, unchanged
    while a change is tried again and again)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "cobell" / "heldout"


def play_base(tree: Path, quick: bool, jobs: int, use_cache: bool) -> tuple[dict[str, Any], Path]:
    """The base tree's outcomes and the deadline histories it warmed (for the head's play),
    from the cache when the same sources played them before."""
    import shutil

    from cobell_cli.store.model_cache import write_bytes

    key = source_key(tree, quick)
    path, warm = cache_dir() / f"{key}.json", cache_dir() / f"{key}.warm"
    if use_cache and path.is_file() and warm.is_dir():
        try:
            return json.loads(path.read_text()), warm
        except ValueError:
            pass  # a damaged entry: play again
    shutil.rmtree(warm, ignore_errors=True)
    outcomes = play_tree(tree, quick, jobs, warm)
    if not any(warm.glob("warm-*.pkl")):  # write_bytes is best effort; this must not be
        raise SystemExit(f"bench.heldout: the base's warmed histories were not kept in {warm}")
    write_bytes(path, json.dumps(outcomes).encode(), pattern="*.json", keep=KEEP)
    return outcomes, warm


def run(base_rev: str, quick: bool, jobs: int, use_cache: bool = True,
        ) -> tuple[dict[str, Any], dict[str, Any], float] | None:
    """Both plays (base first): (base, head, seconds); None when the cores are the same."""
    from bench.staleness import core_digest

    started = time.perf_counter()
    with worktree(base_rev) as tree:
        if core_digest(tree / "cobell_cli" / "core") == core_digest():
            return None
        print(f"bench.heldout: playing {base_rev} (or reading its kept outcomes) ...",
              file=sys.stderr, flush=True)
        base, warm = play_base(tree, quick, jobs, use_cache)
    print("bench.heldout: playing this checkout ...", file=sys.stderr, flush=True)
    head = play_tree(ROOT, quick, jobs, warm)
    return base, head, time.perf_counter() - started


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.heldout",
                                description=(__doc__ or "").splitlines()[0])
    p.add_argument("mode", nargs="?", choices=("compare", "play"), default="compare",
                   help="play: one core's runs into --output (what compare runs twice)")
    p.add_argument("--base", default="main", help="the commit to pair with (default: main)")
    p.add_argument("--quick", action="store_true", help="a small cell or two of each (a minute)")
    p.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    p.add_argument("--output", type=Path, help="play: where its outcomes go (JSON)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--no-cache", dest="use_cache", action="store_false",
                   help="play the base even when its outcomes are kept (~/.cache/cobell/heldout)")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if not (BELL_DATA / "sgd.spark.csv").is_file():
        print(f"bench.heldout: no Bell data at {BELL_DATA} (COBELL_BELL_DATA)", file=sys.stderr)
        return CANNOT_RUN
    if args.mode == "play":
        if args.output is None:
            print("bench.heldout: play needs --output FILE", file=sys.stderr)
            return CANNOT_RUN
        args.output.write_text(json.dumps(play(args.quick, args.jobs)))
        return OK
    played = run(args.base, args.quick, args.jobs, args.use_cache)
    if played is None:
        print(f"held-out seeds: the core is {args.base}'s (docstrings and comments aside): "
              "the same runs, nothing to compare")
        return OK
    base, head, elapsed = played
    rows = compare(base, head)
    if args.json:
        print(json.dumps({"base": args.base, "base_core": base["core"], "core": head["core"],
                          "worlds": [asdict(r) for r in rows]}, indent=2))
    else:
        print(report(args.base, base, head, rows, elapsed, args.quick))
    return WORSE if any(r.verdict in ("worse", "trade-off") for r in rows) else OK


if __name__ == "__main__":
    raise SystemExit(main())
