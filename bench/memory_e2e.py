"""Executor memory end to end, in both simulated worlds: memory-MB-seconds, OOMs, targets.

    python -m bench.memory_e2e [--quick] [--seed N ...] [--jobs N] [--output FILE]

The co-location benchmark's runs (bench/colocation.py: the `single` variant, targets SGD and
K-Means, their co-runners, delays and noise drawn before anyone decides) with a memory model
per job in each world (bench/simulator.py `MEMORY`, bench/nodesim.py `MEMORY`: other shapes,
skewed executors, sampled peaks): each run of the target has an input (a recurring job's
input, growing over the runs by up to 2x, with run-to-run noise) and so a heap **need** per
executor; a run given less heap fails for memory part-way (`failure_reason` memory: a lower
bound for the next plan) and is retried (`--retry-on-oom 3`), its lost time counted. A run
that succeeds reports its heap peak as an event log would (garbage included; the world's
rule). The scale-out is cobell's default plan (`plan()`, the same for every memory strategy,
so the memory strategies are compared on the same runs); memory strategies:

* user's default: USER_HEAP_MB for every run (what a careful user reserves);
* 1.2 x largest peak: the practitioners' rule on the peaks seen so far (the default until a
  peak is seen; after a memory failure, 1.5x the memory that failed);
* cobell: `plan_memory` (core/memory/plan.py, what `cobell predict`/`submit` size) at the
  default memory confidence, retries as `cobell submit --retry-on-oom` runs them;
* knows the law: a planner that knows the world's memory law (its functions of the input and
  the executors, bench/simulator.py and bench/nodesim.py `memory_need_mb`) and the spread of
  its run-to-run noise, but not the run's draw: the LAW_P-quantile of the need (the bound no
  planner that must learn the law from runs can beat at that OOM rate, as bench.oracle_bound
  is for scale-outs); after a memory failure 1.5x the memory that failed;
* oracle: the smallest container that covers the run's need, knowing it.

Containers follow YARN's rules (ContainerRules: Spark's overhead, rounded up to a 512 MB
allocation step, at most 16 GB); memory-MB-seconds = container x executors x seconds held,
failed attempts included. Post-bootstrap = after the runtime model's bootstrap runs
(colocation.MODEL_FROM_USABLE), as bench.colocation reports. With several seeds, a table per
seed (each draws other runs, inputs, noise and garbage).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import math
import pickle
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from bench import colocation as co
from bench import nodesim, publish
from bench import simulator as sim

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
MB = 1024 * 1024
USER_HEAP_MB = 8192
RULES = {"backend": "yarn", "allocation_mb": 512, "maximum_mb": 16384}
RETRIES = 3
STRATEGIES = ("default", "peak12", "cobell", "law", "oracle")
LABELS = {"default": "user's default (8 GB heap)", "peak12": "1.2 x largest peak",
          "cobell": "cobell", "law": "knows the law, not the noise (P 0.99)",
          "oracle": "oracle (knows each run's need)"}
LAW_P = 0.99  # the law planner's quantile of the noise: OOMs in about 1 % of the runs
LAW_PS = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999)  # its frontier
LAW_SLACK = 1.05  # where the law planner misses the goal, cobell within 5 % of its MB-s
GOAL_MB_S, GOAL_OOM_PCT = 1.15, 1.0


def memory_truth(world: str) -> Any:
    return sim if world == "simulator" else nodesim


@dataclass(frozen=True)
class PlayedRun:
    index: int
    scale_out: int
    runtime_s: float
    target_s: float


@dataclass
class Attempt:
    heap_mb: int
    container_mb: int
    seconds: float
    failed: bool


@dataclass
class MemRecord:
    index: int
    strategy: str
    scale_out: int
    runtime_s: float
    target_s: float
    need_mb: float
    attempts: list[Attempt] = field(default_factory=list)
    sized: tuple[float, float] | None = None  # cobell's first attempt: (point, upper) MB

    @property
    def mb_s(self) -> float:
        return sum(a.container_mb * self.scale_out * a.seconds for a in self.attempts)

    @property
    def ooms(self) -> int:
        return sum(a.failed for a in self.attempts)

    @property
    def total_s(self) -> float:
        return sum(a.seconds for a in self.attempts)

    @property
    def met(self) -> bool:
        return not self.attempts[-1].failed and self.total_s <= self.target_s

    @property
    def bootstrap(self) -> bool:
        return self.index <= co.MODEL_FROM_USABLE


def rules() -> Any:
    from cobell_cli.core.memory.sizing import ContainerRules

    return ContainerRules(**RULES)


def grant(heap_mb: float) -> tuple[int, int]:
    """(heap, container) YARN grants for a heap need (the same rules for every strategy)."""
    from cobell_cli.core.memory.sizing import reserve

    r = reserve(heap_mb, rules())
    return r.executor_memory_mb, r.container_mb


def law_need_mb(truth: Any, target: str, input_mb: float, x: int, p: float = LAW_P) -> float:
    """The p-quantile of a run's need: the world's law at its input and scale-out, times the
    noise's quantile (log-normal, sigma MEMORY_SIGMA in both worlds)."""
    return truth.memory_need_mb(target, input_mb, x, math.exp(NormalDist().inv_cdf(p)
                                                              * sim.MEMORY_SIGMA))


def oom_chance(heap_mb: float, median_need_mb: float) -> float:
    """The chance that a run whose need is the law's median times the log-normal noise needs
    more than `heap_mb`: what a planner that knows the law expects of a grant."""
    return 1.0 - NormalDist().cdf(math.log(heap_mb / median_need_mb) / sim.MEMORY_SIGMA)


def choose(strategy: str, history: Sequence[Mapping[str, Any]], input_mb: float, x: int,
           need_mb: float, sized: list[tuple[float, float]] | None = None,
           law_mb: float | None = None) -> int:
    """The heap a strategy gives the next attempt (history: its own memory runs); cobell's
    point prediction and upper bound are appended to `sized` (the decomposition's input);
    `law_mb`: the law planner's quantile of the need."""
    failed = [r["executor_memory_mb"] for r in history if r["status"] == "failed"
              and r.get("pending")]
    if strategy == "oracle":
        return grant(need_mb)[0]
    if strategy == "law":
        heap = grant(law_mb or need_mb)[0]
        return max(heap, grant(1.5 * max(failed))[0]) if failed else heap
    if strategy == "default":
        return USER_HEAP_MB if not failed else int(1.5 * max(failed))
    if strategy == "peak12":
        peaks = [r["peak_memory_mb"] for r in history if r["status"] == "succeeded"]
        heap = grant(1.2 * max(peaks))[0] if peaks else USER_HEAP_MB
        return max(heap, grant(1.5 * max(failed))[0]) if failed else heap
    from cobell_cli.core.memory.plan import MemoryRequest, plan_memory

    plan = plan_memory(history, [x], MemoryRequest(rules(), input_bytes=int(input_mb * MB)))
    chosen = plan.at(x)
    if chosen is None or chosen.executor_memory_mb is None or plan.source == "none":
        return USER_HEAP_MB
    if sized is not None and chosen.predicted_peak_mb and chosen.upper_peak_mb:
        sized.append((chosen.predicted_peak_mb, chosen.upper_peak_mb))
    return chosen.executor_memory_mb


Played = tuple[int, int, float, float]  # a target run: index, scale-out, runtime, target


def play_runs(world_name: str, target: str, cfg: co.Config, curves: Mapping[str, Any],
              ) -> list[Played]:
    """The target's runs as bench.colocation plays them (cobell's default plan): the same for
    every memory strategy, and most of this benchmark's time."""
    world = co.truth(world_name)
    setups = co.draw_runs("single", target, cfg, curves, world)
    memory = co.seed_world(target, curves, world, cfg.seed)
    played = []
    for setup in setups:
        r = co.play("default", memory, setup, curves, co.TARGETS_S[target], world)
        played.append((r.index, r.scale_out, r.runtime_s, r.target_s))
    return played


def run_cell(world_name: str, target: str, cfg: co.Config, played: Sequence[Played],
             strategies: Sequence[str] = STRATEGIES, law_p: float = LAW_P,
             ) -> dict[str, list[MemRecord]]:
    """One (world, target): the played runs, each sized by every memory strategy (the same
    inputs, noise and garbage whichever strategies and law quantile are asked for)."""
    truth = memory_truth(world_name)
    rng = np.random.default_rng([cfg.seed, 26, co.WORLDS.index(world_name),
                                 list(co.TARGETS_S).index(target)])
    n = len(played)
    inputs = [sim.INPUT_MB[target] * (0.6 + 0.8 * i / max(n - 1, 1))
              * float(rng.lognormal(0.0, 0.10)) for i in range(n)]
    noise = [float(rng.lognormal(0.0, sim.MEMORY_SIGMA)) for _ in range(n)]
    fills = [float(rng.uniform(*sim.GARBAGE_FILL)) for _ in range(n)]
    lost_at = [float(rng.uniform(0.1, 0.9)) for _ in range(n)]
    histories: dict[str, list[dict[str, Any]]] = {s: [] for s in strategies}
    out: dict[str, list[MemRecord]] = {s: [] for s in strategies}
    for i, (index, x, runtime_s, target_s) in enumerate(played):
        record = PlayedRun(index, x, runtime_s, target_s)
        need = truth.memory_need_mb(target, inputs[i], x, noise[i])
        law = law_need_mb(truth, target, inputs[i], x, law_p)
        for strategy in strategies:
            rec = attempt_run(strategy, histories[strategy], record, inputs[i], need,
                              fills[i], lost_at[i], truth, law)
            if strategy == "law":  # its point: the law's median; its bound: the quantile
                rec.sized = (truth.memory_need_mb(target, inputs[i], x, 1.0), law)
            out[strategy].append(rec)
    return out


def law_frontier(world_name: str, target: str, cfg: co.Config, played: Sequence[Played],
                 ps: Sequence[float] = LAW_PS) -> dict[float, list[MemRecord]]:
    """The law planner at each quantile p of the noise, on the cell's runs."""
    return {p: run_cell(world_name, target, cfg, played, ("law",), p)["law"] for p in ps}


def attempt_run(strategy: str, history: list[dict[str, Any]], record: Any, input_mb: float,
                need: float, fill: float, lost_at: float, truth: Any,
                law_mb: float | None = None) -> MemRecord:
    """One run under a memory strategy: attempts until one has enough heap (or retries end)."""
    x = record.scale_out
    rec = MemRecord(record.index, strategy, x, record.runtime_s, record.target_s, need)
    for attempt in range(RETRIES + 1):
        sized: list[tuple[float, float]] = []
        heap = choose(strategy, history, input_mb, x, need, sized, law_mb)
        if attempt == 0 and sized:
            rec.sized = sized[0]
        heap, container = grant(heap)
        row = {"input_bytes": int(input_mb * MB), "scale_out": x, "executor_memory_mb": heap}
        if heap < need:
            rec.attempts.append(Attempt(heap, container, lost_at * record.runtime_s, True))
            history.append({**row, "status": "failed", "failure_reason": "memory",
                            "pending": True})
            continue
        rec.attempts.append(Attempt(heap, container, record.runtime_s, False))
        history.append({**row, "status": "succeeded",
                        "peak_memory_mb": truth.heap_peak_mb(need, heap, fill)})
        break
    for row in history:
        row.pop("pending", None)  # a failure's own retry rule ends with the run
    return rec


def stats(records: Sequence[MemRecord], oracle: Sequence[MemRecord]) -> dict[str, float]:
    mine = [r for r in records if not r.bootstrap]
    ref = {r.index: r for r in oracle}
    return {
        "runs": len(mine),
        "mb_s_vs_oracle": sum(r.mb_s for r in mine) / sum(ref[r.index].mb_s for r in mine),
        "oom_pct": 100.0 * sum(r.ooms > 0 for r in mine) / len(mine),
        "met_pct": 100.0 * statistics.fmean(r.met for r in mine),
        "met_without_memory_pct": 100.0 * statistics.fmean(
            r.runtime_s <= r.target_s for r in mine),
        "bootstrap_ooms": sum(r.ooms for r in records if r.bootstrap),
    }


Cell = Mapping[str, Sequence[MemRecord]]  # strategy -> its runs in one (world, target)


def with_pools(results: Mapping[tuple[str, str], Cell]) -> dict[tuple[str, str], Cell]:
    """The cells and, per world, their runs pooled over the targets: (world, "pooled")."""
    out: dict[tuple[str, str], Cell] = dict(results)
    for world in dict.fromkeys(w for w, _ in results):
        per = [c for (w, _), c in results.items() if w == world]
        out[(world, "pooled")] = {s: [r for c in per for r in c[s]] for s in per[0]}
    return out


def pooled(records: Sequence[MemRecord], oracle: Sequence[MemRecord]) -> tuple[float, float]:
    """Post-bootstrap MB-s over the oracle's (the same runs), and the share of runs with an
    OOM (%)."""
    post = [r for r in records if not r.bootstrap]
    ref = sum(r.mb_s for r in oracle if not r.bootstrap)
    return (sum(r.mb_s for r in post) / ref,
            100.0 * sum(r.ooms > 0 for r in post) / max(len(post), 1))


def goal_verdict(mb_s: float, oom_pct: float, law_mb_s: float, law_oom_pct: float) -> str:
    """Issue 36's goal for one cell: cobell at <= GOAL_MB_S x the oracle's MB-s with <=
    GOAL_OOM_PCT runs with an OOM; or, where the planner that knows the law cannot reach
    that, within 5 % of its MB-s at no more OOMs (than it, or the goal's)."""
    if mb_s <= GOAL_MB_S + 1e-12 and oom_pct <= GOAL_OOM_PCT:
        return "met"
    law_reaches = law_mb_s <= GOAL_MB_S + 1e-12 and law_oom_pct <= GOAL_OOM_PCT
    if (not law_reaches and mb_s <= LAW_SLACK * law_mb_s
            and oom_pct <= max(law_oom_pct, GOAL_OOM_PCT)):
        return "within 5 % of the law planner"
    return "missed" + (" (the law planner meets it)" if law_reaches else "")


@dataclass(frozen=True)
class Decomposition:
    """Where a planner's MB-s over the oracle's comes from, over its post-bootstrap runs, each
    weighted by executors x seconds (so the factors multiply): point / need x bound = upper /
    need (heap); x rounding (Spark's overhead and YARN's step, against the oracle's own) =
    first containers / the oracle's; x retries (failed attempts and the larger retried
    containers, over the first containers' MB-s) = MB-s / the oracle's."""

    runs: int
    point: float
    bound: float
    rounding: float
    retries: float
    oom_pct: float

    @property
    def upper(self) -> float:
        return self.point * self.bound

    @property
    def container(self) -> float:
        return self.upper * self.rounding

    @property
    def mb_s(self) -> float:
        return self.container * self.retries


def decomposition(mine: Sequence[MemRecord], oracle: Mapping[int, MemRecord],
                  ) -> Decomposition | None:
    """The planner's post-bootstrap runs that it sized (`sized`: point, upper), against the
    oracle's same runs; None where it sized none."""
    rows = [(r, oracle[r.index]) for r in mine
            if not r.bootstrap and r.sized and r.index in oracle]
    if not rows:
        return None
    w = [r.scale_out * r.runtime_s for r, _ in rows]
    need = sum(wi * r.need_mb for wi, (r, _) in zip(w, rows, strict=True))
    point = sum(wi * r.sized[0] for wi, (r, _) in zip(w, rows, strict=True))  # type: ignore[index]
    upper = sum(wi * r.sized[1] for wi, (r, _) in zip(w, rows, strict=True))  # type: ignore[index]
    first = sum(wi * r.attempts[0].container_mb for wi, (r, _) in zip(w, rows, strict=True))
    ref = sum(o.mb_s for _, o in rows)
    return Decomposition(
        runs=len(rows), point=point / need, bound=upper / point,
        rounding=(first / ref) / (upper / need), retries=sum(r.mb_s for r, _ in rows) / first,
        oom_pct=100.0 * sum(r.ooms > 0 for r, _ in rows) / len(rows))


def expected_oom_pct(law: Sequence[MemRecord]) -> float:
    """The share of runs the law planner itself expects to hit an OOM at its first grant (it
    knows the law's median and the noise's spread): what it can choose its quantile by."""
    post = [r for r in law if not r.bootstrap and r.sized]
    return 100.0 * statistics.fmean(oom_chance(r.attempts[0].heap_mb, r.sized[0])  # type: ignore[index]
                                    for r in post)


Results = Mapping[int, Mapping[tuple[str, str], Cell]]  # seed -> cell -> strategy -> runs
Frontiers = Mapping[int, Mapping[tuple[str, str], Mapping[float, Sequence[MemRecord]]]]


def render(results: Results, frontiers: Frontiers, command: str, elapsed_s: float) -> str:
    from cobell_cli.core.memory.plan import DEFAULT_MEMORY_CONFIDENCE

    lines = [
        "# Executor memory end to end (simulated worlds)",
        "",
        f"Command: `{command}` ({elapsed_s:.0f} s, the played runs of cobell's default "
        "plan included unless a --played cache already held them). "
        "bench/colocation.py's `single` runs, each "
        "target run with an input growing over the runs and a heap need from the world's "
        "memory model; YARN containers (512 MB step, Spark's overhead). Post-bootstrap runs. "
        f"cobell at memory confidence {DEFAULT_MEMORY_CONFIDENCE:g}. Goal (issue 36): MB-s <= "
        f"{GOAL_MB_S:g}x the oracle's with <= {GOAL_OOM_PCT:g} % of runs hitting an OOM, per "
        "cell and pooled per world; where the planner that knows the law (its functions of "
        "the input and the scale-out, and the noise's spread, not a run's draw) cannot reach "
        f"that, within 5 % of its MB-s. Targets met as without memory sizing (`met, no "
        "sizing`: the same runs, never short of memory).",
        "",
        "No constant of core/memory was chosen on these seeds except demand.DEMAND's GC room "
        "(1.06, the lower end of the range real pairs allow, chosen on seed 2020 at the time: "
        "seed 2020 is not held out for that constant). Seed 2018 is the development seed.",
        "", *summary_table(results),
    ]
    for seed, per_seed in results.items():
        lines += ["", f"## Seed {seed}", "", *verdict_table(per_seed), "",
                  *strategy_table(per_seed), "", *decomposition_table(per_seed), "",
                  *frontier_table(frontiers[seed], per_seed)]
    return "\n".join(lines)


def summary_table(results: Results) -> list[str]:
    """The goal's verdict per cell and seed: cobell's MB-s / the oracle's and OOM runs, the
    law planner's beside them."""
    seeds = list(results)
    lines = ["Goal per cell and seed: cobell's MB-s / the oracle's, runs with an OOM (the law "
             f"planner's, P {LAW_P:g}), verdict:", "",
             "| world | job | " + " | ".join(f"seed {s}" for s in seeds) + " |",
             "|---|---|" + "---|" * len(seeds)]
    pooled_cells = {seed: with_pools(per) for seed, per in results.items()}
    for world, target in pooled_cells[seeds[0]]:
        cols = []
        for seed in seeds:
            per = pooled_cells[seed][(world, target)]
            mine, law = (pooled(per[s], per["oracle"]) for s in ("cobell", "law"))
            cols.append(f"{mine[0]:.3f}, {mine[1]:.1f} % ({law[0]:.3f}, {law[1]:.1f} %): "
                        f"{goal_verdict(*mine, *law).split(' (')[0]}")
        lines.append(f"| {world} | {target} | " + " | ".join(cols) + " |")
    return lines


def verdict_table(results: Mapping[tuple[str, str], Cell]) -> list[str]:
    """Per cell and pooled per world: cobell next to the law planner, the 1.2 x peak peer and
    the oracle (MB-s / the oracle's, runs with an OOM), and the goal's verdict."""
    lines = [f"| world | job | runs | cobell | knows the law (P {LAW_P:g}) | 1.2 x largest "
             "peak | oracle | goal |", "|---|---|---|---|---|---|---|---|"]
    for (world, target), per in with_pools(results).items():
        fig = {s: pooled(per[s], per["oracle"]) for s in ("cobell", "law", "peak12")}
        runs = sum(not r.bootstrap for r in per["oracle"])
        cols = " | ".join(f"{mb:.3f}, {oom:.1f} %" for mb, oom in fig.values())
        lines.append(f"| {world} | {target} | {runs} | {cols} | 1.000, 0.0 % | "
                     f"{goal_verdict(*fig['cobell'], *fig['law'])} |")
    return ["Goal per cell (MB-s / the oracle's, runs with an OOM):", "", *lines]


def strategy_table(results: Mapping[tuple[str, str], Cell]) -> list[str]:
    lines = [
        "| world | target | memory strategy | runs | MB-s / oracle | runs with an OOM | "
        "targets met | met, no sizing |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (world, target), per in results.items():
        for strategy in STRATEGIES:
            s = stats(per[strategy], per["oracle"])
            lines.append(f"| {world} | {target} | {LABELS[strategy]} | {s['runs']} | "
                         f"{s['mb_s_vs_oracle']:.3f} | {s['oom_pct']:.1f} % | "
                         f"{s['met_pct']:.1f} % | {s['met_without_memory_pct']:.1f} % |")
    return lines


def decomposition_table(results: Mapping[tuple[str, str], Cell]) -> list[str]:
    lines = [
        "Where the MB-s come from (post-bootstrap runs, each weighted by executors x seconds, "
        "so the factors multiply): point / need (cobell's demand from the peaks; the law's "
        "median) x bound (upper / point) = upper / need; x rounding (Spark's overhead and "
        "YARN's 512 MB step, over the oracle's own) = first container / the oracle's; x "
        "retries (failed attempts and larger retried containers) = MB-s / the oracle's:",
        "",
        "| world | job | planner | point / need | bound | upper / need | rounding | "
        "container / oracle's | retries | MB-s / oracle | OOM runs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (world, target), per in results.items():
        oracle = {r.index: r for r in per["oracle"]}
        for strategy in ("cobell", "law"):
            d = decomposition(per[strategy], oracle)
            if d is None:
                continue
            lines.append(f"| {world} | {target} | {LABELS[strategy].split(' (')[0]} | "
                         f"{d.point:.3f} | {d.bound:.3f} | {d.upper:.3f} | {d.rounding:.3f} | "
                         f"{d.container:.3f} | {d.retries:.3f} | {d.mb_s:.3f} | "
                         f"{d.oom_pct:.1f} % |")
    return lines


def frontier_table(frontier: Mapping[tuple[str, str], Mapping[float, Sequence[MemRecord]]],
                   results: Mapping[tuple[str, str], Cell]) -> list[str]:
    """The law planner at each quantile, pooled per world: the OOM share it expects (which it
    can compute, knowing the law), the share it got, and its MB-s / the oracle's."""
    lines = ["The law planner's frontier (pooled per world): the quantile of the noise it "
             "sizes for, the share of runs it expects to hit an OOM (it knows the spread; the "
             "grant's rounding makes it less than 1 - P), the share that did, MB-s / the "
             "oracle's:", "",
             "| world | P | expected OOM runs | OOM runs | MB-s / oracle |",
             "|---|---|---|---|---|"]
    notes: list[str] = []
    for world in dict.fromkeys(w for w, _ in frontier):
        cells = [c for c in frontier if c[0] == world]
        oracle = [r for c in cells for r in results[c]["oracle"]]
        rows = []
        for p in LAW_PS:
            law = [r for c in cells for r in frontier[c][p]]
            rows.append((p, expected_oom_pct(law), *pooled(law, oracle)))
            lines.append(f"| {world} | {p:g} | {rows[-1][1]:.2f} % | {rows[-1][3]:.1f} % | "
                         f"{rows[-1][2]:.3f} |")
        notes.append(best_quantile(world, rows))
    return [*lines, "", *notes]


def best_quantile(world: str, rows: Sequence[tuple[float, float, float, float]]) -> str:
    """The smallest quantile whose expected OOM share is within the goal's: the law planner's
    best choice at <= GOAL_OOM_PCT, next to LAW_P's. rows: (p, expected %, MB-s, OOM %)."""
    ok = [r for r in rows if r[1] <= GOAL_OOM_PCT]
    chosen = next((r for r in rows if r[0] == LAW_P), None)
    if not ok or chosen is None:
        return f"- {world}: no quantile expects <= {GOAL_OOM_PCT:g} % OOM runs"
    best = min(ok, key=lambda r: r[0])
    return (f"- {world}: the smallest P it expects <= {GOAL_OOM_PCT:g} % OOM runs at is "
            f"{best[0]:g} (expected {best[1]:.2f} %, got {best[3]:.1f} %, MB-s {best[2]:.3f}); "
            f"at P {LAW_P:g} {chosen[2]:.3f} with {chosen[3]:.1f} %")


def _play(args: tuple[str, str, co.Config, Path]) -> list[Played]:
    world, target, cfg, data = args
    return play_runs(world, target, cfg, sim.load_curves(data))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 runs per interferer")
    parser.add_argument("--seed", type=int, nargs="+", default=[2018],
                        help="seeds, a table each")
    parser.add_argument("--jobs", type=int, default=1, help="cells played in parallel")
    parser.add_argument("--played", type=Path, default=None,
                        help="keep the played runs in this file and reuse them (they do not "
                             "depend on memory: rerunning the memory side takes seconds)")
    parser.add_argument("--cells", nargs="+", default=None, metavar="WORLD:TARGET",
                        help="play only these cells into --played and stop (a full run split "
                        "into short commands; the last one, without --cells, publishes)")
    parser.add_argument("--data", type=Path, default=co.DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=RESULTS / "memory_e2e.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    per_interferer = 4 if args.quick else 12
    cells = [(seed, world, target) for seed in args.seed for world in co.WORLDS
             for target in co.TARGETS_S]
    played = _load_played(args.played)
    wanted = [tuple(c.split(":")) for c in args.cells or []]
    todo = [c for c in cells if (*c, per_interferer) not in played
            and (not wanted or (c[1], c[2]) in wanted)]
    work = [(world, target, co.Config(runs_per_interferer=per_interferer, seed=seed), args.data)
            for seed, world, target in todo]
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for cell, runs in zip(todo, pool.map(_play, work), strict=True):
            played[(*cell, per_interferer)] = runs
            print(f"played seed {cell[0]} {cell[1]} {cell[2]}: "
                  f"{time.perf_counter() - started:.0f} s", file=sys.stderr)
    if args.played is not None and todo:
        args.played.write_bytes(pickle.dumps(played))
    if wanted:
        return 0
    results: dict[int, dict[tuple[str, str], dict[str, list[MemRecord]]]] = {
        seed: {} for seed in args.seed}
    frontiers: dict[int, dict[tuple[str, str], dict[float, list[MemRecord]]]] = {
        seed: {} for seed in args.seed}
    for seed, world, target in cells:
        cfg = co.Config(runs_per_interferer=per_interferer, seed=seed)
        runs = played[(seed, world, target, per_interferer)]
        results[seed][(world, target)] = run_cell(world, target, cfg, runs)
        frontiers[seed][(world, target)] = law_frontier(world, target, cfg, runs)
    command = "python -m bench.memory_e2e " + " ".join(
        _without_cache(argv if argv is not None else sys.argv[1:]))
    publish(render(results, frontiers, command.strip(), time.perf_counter() - started) + "\n",
            None if args.quick else args.output)
    return 0


def _without_cache(argv: Sequence[str]) -> list[str]:
    """The arguments the results depend on: --played is a cache of runs the same code would
    play again (a stale one, after a planner change, must not be what `python -m bench`
    reruns)."""
    out, skip = [], False
    for arg in argv:
        if skip or arg == "--played":
            skip = arg == "--played"
            continue
        if not arg.startswith("--played="):
            out.append(arg)
    return out


def _load_played(path: Path | None) -> dict[tuple[int, str, str, int], list[Played]]:
    if path is None or not path.exists():
        return {}
    return pickle.loads(path.read_bytes())


if __name__ == "__main__":
    raise SystemExit(main())
