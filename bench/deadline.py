"""Deadlines on two simulated shared clusters: start now or wait, and bursts that stagger.

    python -m bench.deadline [--quick] [--seeds 7 4242 5309] [--rounds N] [--warmup N]
        [--worlds simulator nodesim] [--patterns ...] [--rows ...] [--save F] [--output FILE]
    python -m bench.deadline --load F [F ...] [--note TEXT] [--output FILE]

Issue 27's table. Both of bench.colocation's ground truths (`bench/simulator.py`,
`bench/nodesim.py`; neither is cobell's formula), the six Bell jobs, and four arrival
patterns (bench/deadline_world.py): one job submitted while a straggler runs, bursts of 5
and 10 jobs submitted in the same second, and 6 jobs spread over ten minutes; deadlines
1.5-3x each job's alone runtime at scale-out 16. Before the rounds are scored, every job
has six solo runs and the warm-up's bursts (played by "start now") give it co-located runs,
so every decision is post-bootstrap (the table says how many were not). The scored rounds
do not add to the history: every row plans with the same warmed history and models, so the
rows differ only in their decisions (and the benchmark stays within minutes).

Rows (bench/deadline_peers.py for the peers): start now at the runtime-target decision
(cobell today), start now with a careful user's margin, FCFS, EDF, the paper's waiting-time
scheduler, cobell --deadline at default flags (this module: the CLI's protocol: a joint
decision at every submit, each waiting submit re-planning when its start comes or an app it
planned around ends, at most run/wait.MAX_REPLANS times), a physics-aware, noise-blind
planner (bench.oracle_bound's planner: the world's physics and the round's submits known,
its noise redrawn; every job sized for its deadline in 95 % of the draws and started when a
burst's gathering ends, never later), and an oracle knowing every runtime. Every strategy
plans with `cobell_cli.core.plan.plan`, and cobell --deadline decides with `core/schedule`
as the CLI does (`build.pending_job`, `build.busy_apps`, `decision.decide`).

Goals (issue 27): >= 95 % of deadlines met at default flags; in the burst cells total
executor-seconds <= 0.9x start now's at equal or better attainment, and <= 1.1x the
oracle's; a decision's CPU time within 2x one plan's (the in-process part of a predict),
also inside a burst of 10.
"""

from __future__ import annotations

import argparse
import heapq
import math
import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT, publish
from bench.colocation import DEFAULT_DATA, WORLDS, World, truth
from bench.deadline_peers import (
    Decisions,
    Event,
    PaperWaits,
    PhysicsAware,
    Serial,
    StartNow,
    Strategy,
    UserMargin,
    oracle,
)
from bench.deadline_world import (
    PATTERNS,
    Cluster,
    JobResult,
    Round,
    draw_round,
    met_share,
    record,
    seeded_memory,
    total_executor_s,
)
from bench.simulator import load_curves
from cobell_cli.core.schedule import PendingJob
from cobell_cli.core.schedule.build import busy_apps, pending_job
from cobell_cli.core.schedule.decision import StartDecision, decide
from cobell_cli.core.schedule.risk import DEADLINE_CONFIDENCE
from cobell_cli.run.wait import MAX_REPLANS, POLL_S

RESULTS = ROOT / "bench" / "results" / "deadline.md"
ROWS = ("start_now", "margin", "fcfs", "edf", "paper", "deadline", "physics", "oracle")
LABELS = {"start_now": "start now (cobell today)",
          "margin": "start now, a careful user's margin", "fcfs": "FCFS", "edf": "EDF",
          "paper": "paper's waiting-time scheduler", "deadline": "cobell --deadline",
          "physics": "physics-aware, noise-blind planner", "oracle": "oracle"}
ROUNDS = {"isolated": 24, "burst5": 8, "burst10": 5, "spread": 8}
WARMUP_ROUNDS = 10
# Seeds: the method and its constants were settled on TUNING_SEED, and the last change (the
# deadline's default confidence, core/schedule/risk.DEADLINE_CONFIDENCE) was diagnosed on it
# alone; TEST_SEED had been run once with the method before that change (its results were
# seen, none of its rounds was looked into); FRESH_SEED was first run with the frozen method.
# LATE_FRESH_SEED was first started a shift later (unfinished there: no cell of it published),
# with the same method on main (whose core had
# changed meanwhile, calibration.stranger_factors among it, which every row plans with: its rows
# are comparable with each other, not row for row with the other seeds'). FIRST_TEST_SEED
# (2027) shaped the gathering rule (core/schedule/decision.GATHER_S) and is no longer reported.
TUNING_SEED, FIRST_TEST_SEED, TEST_SEED, FRESH_SEED, LATE_FRESH_SEED = 7, 2027, 4242, 5309, 8821
SEEDS = [TUNING_SEED, TEST_SEED, FRESH_SEED]  # LATE_FRESH_SEED's run did not finish (yet)
SEED_ROLES = {TUNING_SEED: "tuning",
              TEST_SEED: "test, run once before the last change and once after",
              FRESH_SEED: "fresh test, first run with the frozen method",
              LATE_FRESH_SEED: "fresh test, first run a shift later on main",
              FIRST_TEST_SEED: "contaminated: first test, its failure shaped the gathering"}
GOAL_MET, GOAL_VS_NOW, GOAL_VS_ORACLE = 0.95, 0.9, 1.1  # the CPU goal: deadline_cpu.py
BURSTS = ("burst5", "burst10")
# the rows whose starts and scale-outs the oracle improves on (the margin and physics rows,
# added later, are not among them, so the oracle is the same with or without them)
ORACLE_FROM = ("start_now", "fcfs", "edf", "paper", "deadline")


class CobellDeadline(Strategy):
    """`cobell submit --deadline` as the CLI does it (module doc)."""

    name = "cobell --deadline"

    def __init__(self, memory: World, cluster: Cluster) -> None:
        super().__init__(memory, cluster)
        self.pending: dict[str, PendingJob] = {}
        self.committed: dict[str, PendingJob] = {}  # started: its `started` row
        self.version: dict[str, int] = {}
        self.replans: dict[str, int] = {}
        self.around: dict[str, set[str]] = {}

    def on(self, kind: str, t: float, key: str, version: int) -> list[Event]:
        if kind == "arrive":
            self.replans[key] = 0
            return self._decide(t, key, arrival=True)
        if key not in self.pending or version != self.version[key]:
            return []
        if kind == "check":  # the poll: re-plan only if an app it planned around has ended
            running = {a.app_id for a in self.cluster.running_at(t)}
            if self.around[key] <= running:
                return []
        return self._decide(t, key, arrival=False)

    def _decide(self, t: float, key: str, arrival: bool) -> list[Event]:
        a = self.arrivals[key]
        force = not arrival and self.replans[key] >= MAX_REPLANS
        captured: dict[str, Any] = {}
        p = self.timed_plan(key, t, lambda m, _: captured.update(model=m), deadline=True)
        started = time.process_time()
        runs = self.memory.histories.get(a.job, [])
        new = pending_job(p, captured.get("model"), runs, deadline_at=a.deadline_at,
                          submitted_at=a.at, now=t, start_now=force, key=key)
        running = {view.app_id for view in p.co_runners}
        self.committed = {k: j for k, j in self.committed.items() if k in running}
        others = [replace(j, earliest_at=t) for k, j in self.pending.items() if k != key]
        others += list(self.committed.values())  # as deadlines.decide reads started rows
        events: list[Event] = []
        if new is None:
            decision = None
        else:
            busy = [b for b in busy_apps(p, self.memory.histories, self.memory.fit)
                    if b.key not in self.committed]
            decision, found = decide(new, others, busy, t)
            events = self._move_others(found.placements, key, t)
        self.decisions.extra_cpu_s.append(time.process_time() - started)
        self.decisions.waiting.append(len(others))
        if decision is None or decision.start_now or force:
            self.pending.pop(key, None)
            scale_out = decision.scale_out if decision else p.scale_out
            if new is not None:
                self.committed[key] = replace(new, started_at=t, started_scale_out=scale_out)
            self.start(key, t, scale_out, p)
            return events
        return [*events, *self._wait(key, new, decision, t, arrival)]

    def _move_others(self, placements: Sequence[Any], key: str, t: float) -> list[Event]:
        """Another submit's decision rewrote these rows: their waits end at the new starts."""
        events = []
        for pl in placements:
            if pl.key == key or pl.key not in self.pending:
                continue
            job = self.pending[pl.key]
            if job.planned_start_at != pl.start_at:
                self.pending[pl.key] = replace(job, planned_start_at=pl.start_at)
                self.version[pl.key] += 1
                events.append((max(pl.start_at, t), "wake", pl.key, self.version[pl.key]))
        return events

    def _wait(self, key: str, new: PendingJob, decision: StartDecision, t: float,
              arrival: bool) -> list[Event]:
        if not arrival:
            self.replans[key] += 1
        self.pending[key] = replace(new, planned_start_at=decision.start_at)
        self.version[key] = self.version.get(key, 0) + 1
        v = self.version[key]
        running = self.cluster.running_at(t)
        self.around[key] = {app.app_id for app in running}
        ends = self.cluster.ends_if_nothing_starts()
        events: list[Event] = [(decision.start_at, "wake", key, v)]
        for app in running:  # the poll notices an app that ended within POLL_S
            end = ends.get(app.app_id)
            if end is not None and end + POLL_S < decision.start_at:
                events.append((end + POLL_S, "check", key, v))
        return events


STRATEGIES: dict[str, Callable[[World, Cluster], Strategy]] = {
    "start_now": StartNow,
    "margin": UserMargin,
    "fcfs": lambda m, c: Serial(m, c, by_deadline=False),
    "edf": lambda m, c: Serial(m, c, by_deadline=True),
    "paper": PaperWaits,
    "deadline": CobellDeadline,
    "physics": PhysicsAware,
}


def play(make: Callable[[World, Cluster], Strategy], memory: World, rnd: Round,
         curves: Mapping[str, Any], world: Any, learn: bool = True,
         ) -> tuple[list[JobResult], Decisions, Cluster]:
    """One round, online: submits and wake-ups in time order; then the runs are recorded
    (`learn`: into `memory`, as `cobell submit` records them)."""
    cluster = Cluster(world, curves, rnd)
    strategy = make(memory, cluster)
    queue: list[tuple[float, int, str, str, int]] = []
    for n, a in enumerate(rnd.arrivals):
        heapq.heappush(queue, (a.at, n, "arrive", a.key, 0))
    seq = len(queue)
    while queue:
        t, _, kind, key, version = heapq.heappop(queue)
        for when, k, kk, v in strategy.on(kind, t, key, version):
            seq += 1
            heapq.heappush(queue, (max(when, t), seq, k, kk, v))
    missing = [a.key for a in rnd.arrivals if a.key not in cluster.started]
    assert not missing, f"{strategy.name} never started {missing}"
    return record(memory if learn else None, cluster), strategy.decisions, cluster


def warmed(curves: Mapping[str, Any], world: Any, seed: int, rounds: int) -> World:
    """Six solo runs per job, then `rounds` bursts of five played by start now."""
    memory = seeded_memory(curves, world, seed)
    for i in range(rounds):
        play(StartNow, memory, draw_round("burst5", 1000 + i, seed, curves, world), curves,
             world)
    return memory


@dataclass
class CellResult:
    """(world, pattern): per row, the results of every round, and the decisions' CPU."""

    world: str
    pattern: str
    rounds: list[dict[str, list[JobResult]]] = field(default_factory=list)
    cpu: dict[str, Decisions] = field(default_factory=dict)
    phases: dict[str, int] = field(default_factory=dict)

    def results(self, row: str) -> list[JobResult]:
        return [r for rnd in self.rounds for r in rnd[row]]

    @property
    def rows(self) -> list[str]:
        """The rows played in every round of the cell, in the report's order."""
        return [row for row in ROWS if all(row in rnd for rnd in self.rounds)]


def run_cell(world_name: str, pattern: str, seed: int, rounds: int, base: World,
             curves: Mapping[str, Any], progress: Callable[[str], None],
             rows: Sequence[str] = ROWS) -> CellResult:
    """The cell's rounds played by `rows` (the oracle only with every row it starts from)."""
    world = truth(world_name)
    cell = CellResult(world_name, pattern)
    drawn = [draw_round(pattern, i, seed, curves, world) for i in range(rounds)]
    playing = {row: make for row, make in STRATEGIES.items() if row in rows}
    cell.cpu = {row: Decisions() for row in playing}
    for rnd in drawn:
        outcome: dict[str, list[JobResult]] = {}
        patterns: list[tuple[dict[str, float], dict[str, int]]] = []
        for row, make in playing.items():
            results, decisions, cluster = play(make, base, rnd, curves, world, learn=False)
            outcome[row] = results
            for field_name in ("plan_cpu_s", "extra_cpu_s", "waiting"):
                getattr(cell.cpu[row], field_name).extend(getattr(decisions, field_name))
            for s in cluster.started.values():
                if s.phase is not None:
                    cell.phases[s.phase] = cell.phases.get(s.phase, 0) + (row == "deadline")
            if row in ORACLE_FROM:
                patterns.append(({a.key: cluster.started[a.key].start_at for a in rnd.arrivals},
                                 {a.key: cluster.started[a.key].scale_out for a in rnd.arrivals}))
        if "oracle" in rows and set(ORACLE_FROM) <= set(playing):
            outcome["oracle"] = oracle(rnd, _exact(rnd, curves, world), patterns)
        cell.rounds.append(outcome)
        progress(f"{world_name} {pattern} round {rnd.index}: " + ", ".join(
            f"{row} {met_share(res):.2f}/{total_executor_s(res):.0f}"
            for row, res in outcome.items()))
    return cell


def _exact(rnd: Round, curves: Mapping[str, Any], world: Any) -> Callable[..., list[JobResult]]:
    """Play the round exactly with given starts and scale-outs (the oracle's tool)."""
    def play_exactly(starts: Mapping[str, float], scale: Mapping[str, int]) -> list[JobResult]:
        cluster = Cluster(world, curves, rnd)
        for a in rnd.arrivals:
            cluster.start(a.key, a.job, int(scale[a.key]), starts[a.key],
                          deadline_at=a.deadline_at, waited_s=starts[a.key] - a.at)
        return record(None, cluster)
    return play_exactly


# --- the report ------------------------------------------------------------------------------


def _row_stats(cell: CellResult, row: str) -> dict[str, float]:
    results = cell.results(row)
    now = total_executor_s(cell.results("start_now")) if "start_now" in cell.rows else math.nan
    best = total_executor_s(cell.results("oracle")) if "oracle" in cell.rows else math.nan
    judged = [r for r in results if r.deadline_at is not None]
    return {
        "jobs": len(judged),
        "met": met_share(results),
        "executor_s": total_executor_s(results),
        "vs_now": total_executor_s(results) / now,
        "vs_oracle": total_executor_s(results) / best,
        "waited_s": float(np.mean([r.waited_s for r in judged])) if judged else math.nan,
    }


def _excess_stats(cell: CellResult, row: str) -> dict[str, float]:
    """Where a row's executor-seconds above the oracle's go: the stragglers' share of the gap,
    each deadline job's scale-out over the oracle's (median), and the share of its window
    (deadline - start) it left unused (median: over-provisioning shows as much unused)."""
    x_over, unused = [], []
    mine = oracle_s = straggler = straggler_oracle = 0.0
    for rnd in cell.rounds:
        best = {r.key: r for r in rnd["oracle"]}
        for r in rnd[row]:
            mine += r.executor_s
            oracle_s += best[r.key].executor_s
            if r.deadline_at is None:
                straggler += r.executor_s
                straggler_oracle += best[r.key].executor_s
                continue
            x_over.append(r.scale_out / best[r.key].scale_out)
            window = r.deadline_at - r.start_at
            unused.append((window - r.runtime_s) / window if window > 0 else -math.inf)
    gap = mine - oracle_s
    return {"x_over": float(np.median(x_over)), "unused": float(np.median(unused)),
            "straggler_gap": (straggler - straggler_oracle) / gap if gap > 0 else math.nan}


def _or_dash(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}"


def _cpu_stats(d: Decisions) -> dict[str, float]:
    if not d.plan_cpu_s:
        return {"n": 0}
    ratio = [(p + e) / p for p, e in zip(d.plan_cpu_s, d.extra_cpu_s, strict=True) if p > 0]
    crowded = [r for r, w in zip(ratio, d.waiting, strict=True) if w >= 9]
    return {
        "n": len(ratio),
        "plan_ms": 1000 * float(np.mean(d.plan_cpu_s)),
        "extra_ms": 1000 * float(np.mean(d.extra_cpu_s)),
        "ratio_mean": float(np.mean(ratio)),
        "ratio_p95": float(np.percentile(ratio, 95)),
        "ratio_crowded": float(np.mean(crowded)) if crowded else math.nan,
        "crowded": len(crowded),
    }


def goal_row(cell: CellResult) -> tuple[str, list[str]]:
    """Whether cobell --deadline meets the issue's goals in the cell, and which failed. The
    attainment goal holds where a planner could reach it: a cell where the physics-aware,
    noise-blind planner meets fewer than 95 % is out of reach (said so, not failed; without
    that row, the oracle, who knows every runtime, decides). The CPU goal is judged on the
    CLI's CPU (bench/results/deadline_cpu.md): the columns below are the in-process part
    only."""
    mine, now = _row_stats(cell, "deadline"), _row_stats(cell, "start_now")
    judge = "physics" if "physics" in cell.rows else "oracle"
    ceiling = _row_stats(cell, judge)["met"]
    failed = []
    if mine["met"] < GOAL_MET:
        failed.append(f"met {100 * mine['met']:.1f} %" + (
            f" (out of reach: the {LABELS[judge]} meets {100 * ceiling:.1f} %)"
            if ceiling < GOAL_MET else ""))
    if cell.pattern in BURSTS:
        if mine["vs_now"] > GOAL_VS_NOW:
            failed.append(f"{mine['vs_now']:.2f}x start now")
        if mine["met"] < now["met"]:
            failed.append("less often on time than start now")
    if mine["vs_oracle"] > GOAL_VS_ORACLE:  # not waived: the issue sets no reach for it
        failed.append(f"{mine['vs_oracle']:.2f}x oracle" + (
            f" (the {LABELS['physics']}: {_row_stats(cell, 'physics')['vs_oracle']:.2f}x)"
            if "physics" in cell.rows else ""))
    hard = [f for f in failed if "out of reach" not in f]
    return ("yes" if not hard else "no"), failed


def pooled_rows(cells: Sequence[CellResult]) -> list[str]:
    """Per world and row: deadlines met and executor-seconds over every cell."""
    rows = []
    for world in dict.fromkeys(c.world for c in cells):
        mine = [c for c in cells if c.world == world]
        now = sum(total_executor_s(c.results("start_now")) for c in mine)
        best = sum(total_executor_s(c.results("oracle")) for c in mine)
        for row in [r for r in ROWS if all(r in c.rows for c in mine)]:
            results = [r for c in mine for r in c.results(row)]
            total = total_executor_s(results)
            rows.append(f"| {world} | {LABELS[row]} | {100 * met_share(results):.1f} |"
                        f" {total / now:.3f} | {total / best:.3f} |")
    return rows


def side_by_side(cells_by_seed: Mapping[int, Sequence[CellResult]]) -> list[str]:
    """Every seed's cells in one table: cobell --deadline next to its peers."""
    peers = ("start_now", "margin", "paper", "deadline", "physics", "oracle")
    lines = ["", "## All seeds side by side", "",
             "Met %: deadlines met by each row (physics: the physics-aware, noise-blind"
             " planner; '-': not played); executor-s: over start now's on the same rounds, and"
             " cobell --deadline's and the physics-aware planner's over the oracle's (the"
             " physics-aware planner knows all but the noise: what it spends above the oracle is"
             " the price of meeting 95 % without knowing the noise); 95 % reachable: whether the"
             " physics-aware"
             " planner meets >= 95 % in the cell (where it does, cobell --deadline must);"
             " goals: cobell --deadline's per cell (details in each seed's section).", "",
             "| seed | world | pattern | met %: now / margin / paper / cobell --deadline /"
             " physics / oracle | 95 % reachable | executor-s vs now: cobell --deadline /"
             " margin / physics | executor-s vs oracle: cobell --deadline / physics | goals met |",
             "|---" * 8 + "|"]
    for seed, cells in cells_by_seed.items():
        for c in cells:
            met = " / ".join(f"{100 * _row_stats(c, r)['met']:.1f}" if r in c.rows else "-"
                             for r in peers)
            vs_now = " / ".join(f"{_row_stats(c, r)['vs_now']:.3f}" if r in c.rows else "-"
                                for r in ("deadline", "margin", "physics"))
            reach = ("yes" if _row_stats(c, "physics")["met"] >= GOAL_MET else "no") \
                if "physics" in c.rows else "-"
            vs_best = " / ".join(f"{_row_stats(c, r)['vs_oracle']:.3f}" if r in c.rows else "-"
                                 for r in ("deadline", "physics"))
            role = SEED_ROLES.get(seed, "other").split(",")[0].split(":")[0]
            lines.append(f"| {seed} ({role}) | {c.world} | {c.pattern} | {met} | {reach} |"
                         f" {vs_now} | {vs_best} | {goal_row(c)[0]} |")
    return lines


def render(cells_by_seed: Mapping[int, Sequence[CellResult]], command: str, elapsed_s: float,
           cpu_s: float, note: str = "on the shared 2-core machine") -> str:
    lines = [
        "# Deadlines: start now or wait, and bursts that stagger themselves",
        "",
        f"Command: `{command}` (from the repository root; {elapsed_s:.0f} s, {cpu_s:.0f} s of"
        f" CPU, {note}).",
        "",
        "\n\n".join(part.replace("\n", " ") for part in (__doc__ or "").split("\n\n")[2:4]),
        "",
        "Executor-seconds: scale-out x runtime summed over every app of the round, the"
        " straggler's included (a start changes how long it runs too). vs now / vs oracle:"
        " over start now's / the oracle's on the same rounds. Waited: mean seconds from"
        " submit to start. Seeds: the method and its constants were settled on seed"
        f" {TUNING_SEED} (tuning), where the last change was diagnosed too: P(meet) was"
        " calibrated outside crowds larger than the history's, so at the runtime target's"
        " default confidence 0.9 up to one deadline in ten was missed by design, and a"
        " deadline without --confidence now plans at"
        f" {DEADLINE_CONFIDENCE:g} (core/schedule/risk.DEADLINE_CONFIDENCE, the goal's level,"
        f" not fitted). Seed {TEST_SEED} (test) was run once before that change and once"
        f" after; seed {FRESH_SEED} (fresh test) was first run with the frozen method"
        + (f", and seed {LATE_FRESH_SEED} (fresh test) a shift later, on a main whose core had"
           " changed meanwhile for every row (calibration.stranger_factors), not the method of"
           " cobell --deadline" if LATE_FRESH_SEED in cells_by_seed else "") + ". The"
        " physics-aware, noise-blind planner decides where >= 95 % is within reach (95 %"
        " reachable); in a cell it was not played in ('-'), the oracle decides.",
    ]
    lines += side_by_side(cells_by_seed)
    for seed, cells in cells_by_seed.items():
        kind = SEED_ROLES.get(seed, "other")
        met_cells = [goal_row(c)[0] == "yes" for c in cells]
        lines += ["", f"## Seed {seed} ({kind})", "",
                  f"**Goal check (cobell --deadline): met in {sum(met_cells)} of"
                  f" {len(met_cells)} cells.**", "",
                  "| world | pattern | row | jobs | met % | executor-s | vs now | vs oracle |"
                  " waited s |", "|---" * 9 + "|"]
        for c in cells:
            for row in c.rows:
                s = _row_stats(c, row)
                lines.append(f"| {c.world} | {c.pattern} | {LABELS[row]} | {s['jobs']} |"
                             f" {100 * s['met']:.1f} | {s['executor_s']:,.0f} |"
                             f" {s['vs_now']:.3f} | {s['vs_oracle']:.3f} |"
                             f" {s['waited_s']:.0f} |")
        lines += ["", "Pooled over the cells of each world:", "",
                  "| world | row | met % | vs now | vs oracle |", "|---|---|---|---|---|",
                  *pooled_rows(cells)]
        lines += ["", "Goals per cell (cobell --deadline):", "",
                  "| world | pattern | goals met | failed | decisions not post-bootstrap |",
                  "|---|---|---|---|---|"]
        for c in cells:
            ok, failed = goal_row(c)
            early = sum(v for k, v in c.phases.items() if k != "model")
            lines.append(f"| {c.world} | {c.pattern} | {ok} | {'; '.join(failed) or '-'} |"
                         f" {early} of {sum(c.phases.values())} |")
        lines += ["", "Where the executor-seconds above the oracle's go: the share of the gap"
                  " that is the stragglers' (a start changes how long they run), each deadline"
                  " job's scale-out over the oracle's (median), and the share of its window"
                  " (deadline - start) it left unused (median; the oracle leaves next to none).",
                  "", "| world | pattern | row | vs oracle | stragglers' share of the gap |"
                  " scale-out / oracle's | window unused |", "|---" * 7 + "|"]
        for c in cells:
            for row in (r for r in ("start_now", "deadline", "physics", "oracle")
                        if r in c.rows and "oracle" in c.rows):
                s, e = _row_stats(c, row), _excess_stats(c, row)
                lines.append(f"| {c.world} | {c.pattern} | {LABELS[row]} |"
                             f" {s['vs_oracle']:.3f} | {_or_dash(e['straggler_gap'])} |"
                             f" {e['x_over']:.2f} | {100 * e['unused']:.0f} % |")
        lines += ["", "Decision CPU in-process (cobell --deadline): the plan at once (the"
                  " planning part of a predict, without the process's start, imports and"
                  " history read) and what the deadline adds; ratio = (plan + added) / plan per"
                  " decision; crowded = decisions that weighed >= 9 other submits. The CPU"
                  " goal is measured on the CLI: bench/results/deadline_cpu.md.",
                  "", "| world | pattern | decisions | plan ms | added ms | ratio mean |"
                  " ratio p95 | crowded | ratio crowded |", "|---" * 9 + "|"]
        for c in cells:
            s = _cpu_stats(c.cpu["deadline"])
            if s["n"]:
                lines.append(f"| {c.world} | {c.pattern} | {s['n']} | {s['plan_ms']:.0f} |"
                             f" {s['extra_ms']:.0f} | {s['ratio_mean']:.2f} |"
                             f" {s['ratio_p95']:.2f} | {s['crowded']} |"
                             f" {s['ratio_crowded']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="simulator, isolated and burst5, 2 rounds, 3 warm-up bursts; "
                             "prints, writes nothing")
    parser.add_argument("--seeds", type=int, nargs="+",
                        default=SEEDS)
    parser.add_argument("--rounds", type=int, default=None, help="rounds per cell (default:"
                        f" {', '.join(f'{k} {v}' for k, v in ROUNDS.items())})")
    parser.add_argument("--warmup", type=int, default=WARMUP_ROUNDS)
    parser.add_argument("--worlds", nargs="+", choices=WORLDS, default=list(WORLDS))
    parser.add_argument("--patterns", nargs="+", choices=PATTERNS, default=list(PATTERNS))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--save", type=Path, help="also keep this run's cells (pickle), to "
                        "render several runs (one per seed, say) into one table with --load")
    parser.add_argument("--load", type=Path, nargs="+", help="render the cells of earlier "
                        "--save runs (their seeds) instead of running")
    parser.add_argument("--rows", nargs="+", choices=ROWS, default=list(ROWS),
                        help="play only these rows (the oracle needs all it starts from); "
                        "--load merges runs of the same seed row by row")
    parser.add_argument("--note", default="on the shared 2-core machine",
                        help="how and where the runs ran, for the report's first line")
    args = parser.parse_args(argv)
    if args.load:
        _render_saved(args.load, args.output, args.note)
        return
    if not (args.data / "sgd.spark.csv").is_file():
        raise SystemExit(f"bench.deadline: the Bell data is not at {args.data}; pass --data DIR")
    if args.quick:
        args.worlds, args.patterns, args.rounds, args.warmup = (
            ["simulator"], ["isolated", "burst5"], 2, 3)
        args.seeds = args.seeds[:1]
    curves = load_curves(args.data)
    started, cpu = time.perf_counter(), time.process_time()
    by_seed: dict[int, list[CellResult]] = {}
    for seed in args.seeds:
        for name in args.worlds:
            base = (warmed(curves, truth(name), seed, args.warmup) if set(args.rows) - {"physics"}
                    else World(""))  # the physics-aware planner reads no history
            for pattern in args.patterns:
                by_seed.setdefault(seed, []).append(run_cell(
                    name, pattern, seed, args.rounds or ROUNDS[pattern], base, curves,
                    lambda m: print(m, flush=True), args.rows))
    command = "python -m bench.deadline" + (" --quick" if args.quick else "") + "".join(
        f" {flag} {' '.join(map(str, value))}" for flag, value, default in (
            ("--seeds", args.seeds, SEEDS),
            ("--worlds", args.worlds,
            list(WORLDS)), ("--patterns", args.patterns, list(PATTERNS)),
            ("--rows", args.rows, list(ROWS)))
        if not args.quick and value != default)
    elapsed, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    if args.save:
        with args.save.open("wb") as fh:
            pickle.dump({"by_seed": by_seed, "command": command, "elapsed_s": elapsed,
                         "cpu_s": cpu_s}, fh)
    if not {"start_now", "deadline", "oracle"} <= set(args.rows):
        print("rendered with --load, merged with a run of the other rows")
        return
    publish(render(by_seed, command, elapsed, cpu_s), None if args.quick else args.output)


def merged(cells: Sequence[CellResult], more: Sequence[CellResult]) -> list[CellResult]:
    """Cells of one seed played in two runs (other rows of the same rounds, row by row; or
    other cells, added)."""
    extra = {(c.world, c.pattern): c for c in more}
    out = []
    for c in cells:
        other = extra.pop((c.world, c.pattern), None)
        if other is None:
            out.append(c)
            continue
        assert len(other.rounds) == len(c.rounds), f"{c.world} {c.pattern}: other rounds"
        out.append(replace(c, rounds=[{**a, **b} for a, b in zip(c.rounds, other.rounds,
                                                                  strict=True)],
                           cpu={**c.cpu, **other.cpu}))
    return out + list(extra.values())


def _render_saved(paths: Sequence[Path], output: Path, note: str) -> None:
    """One table from several saved runs: their seeds in order, their commands and times."""
    runs = []
    for path in paths:
        with path.open("rb") as fh:
            runs.append(pickle.load(fh))
    by_seed: dict[int, list[CellResult]] = {}
    for run in runs:
        for seed, cells in run["by_seed"].items():
            by_seed[seed] = merged(by_seed[seed], cells) if seed in by_seed else list(cells)
    command = "`; `".join(run["command"] + " --save ..." for run in runs) + \
        "`, then `python -m bench.deadline --load ..."
    publish(render(by_seed, command, sum(r["elapsed_s"] for r in runs),
                   sum(r["cpu_s"] for r in runs), note), output)


if __name__ == "__main__":
    main()
