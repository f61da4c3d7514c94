"""The order and starts of every waiting submit, decided together: the waiting-time scheduler
of ../shared/papers/interference-aware-spark-scheduling.txt (Section 3.4, Algorithms 2-5),
with deadlines and cobell's sizing.

The paper, at every arrival, re-computes the waiting time of each queued job: it predicts
every job's execution under the jobs around it (its interference model) for a grid of
waiting times per job, and keeps the combination with the shortest total time; jobs do not
start first-come-first-served. Here the objective is the one `--minimize` names (total
executor-seconds by default) subject to every deadline at its confidence, and each job's
scale-out is chosen too, so the grid becomes a list schedule:

1. an order of the waiting jobs (earliest deadline first, arrival, the previous plan's, then
   swaps of neighbours while they help, within MAX_ORDERS);
2. in that order, each job takes its cheapest start among now and the ends of the apps
   running and of the jobs placed before it (options.py), sized against all of them;
3. a start that would push a job placed earlier past its deadline is refused (the next
   cheapest is tried); the whole timeline is then solved jointly (timeline.py) and priced.

The schedule that meets the most deadlines wins, then the cheapest. Pure: `now` and what
runs are passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from cobell_cli.core.cost import DEFAULT_MINIMIZE, Minimize, reservation_cost
from cobell_cli.core.schedule.options import (
    Moment,
    Sizer,
    WaitFor,
    cheapest,
    moments,
    start_option,
)
from cobell_cli.core.schedule.records import (
    Busy,
    PendingJob,
    Placement,
    Schedule,
    StartOption,
    better,
)
from cobell_cli.core.schedule.risk import Risk, end_at_level
from cobell_cli.core.schedule.timeline import Interval, Slot, busy_intervals, joint_runtimes

MAX_ORDERS = 6  # orders tried per decision: three seeds and their best neighbours
TRIES_PER_JOB = 3  # starts tried for a job whose cheapest would make an earlier one late
REPAIR_ROUNDS = 2  # passes that size late jobs again among the others
# Candidate evaluations (a runtime fix-point and a bound each) after which no further order
# is tried: keeps a decision's CPU near one plan's, even with ten submits waiting.
EVALUATION_BUDGET = 600


@dataclass
class _Search:
    jobs: dict[str, PendingJob]
    busy: Sequence[Busy]
    now: float
    minimize: Minimize
    focus: str | None
    risks: dict[str, Risk] = field(default_factory=dict)
    tried: int = 0
    prefixes: dict[tuple[str, ...], tuple[list[Placement], tuple[StartOption, ...]]] = field(
        default_factory=dict)

    def __post_init__(self) -> None:
        self.risks = {k: Risk(j.ratios, j.confidence) for k, j in self.jobs.items()}
        self.fixed = busy_intervals(self.busy)
        self.sizers = {k: Sizer(j, self.risks[k], self.minimize) for k, j in self.jobs.items()}

    solved: int = 0  # jobs' runtimes solved jointly, counted like evaluations

    @property
    def spent(self) -> bool:
        """Whether the evaluation budget is used up (no further order is tried)."""
        used = sum(s.evaluations for s in self.sizers.values()) + self.solved
        return used >= EVALUATION_BUDGET


def priced(pending: Sequence[PendingJob], minimize: Minimize,
           focus: str | None) -> list[PendingJob]:
    """The jobs with a container size wherever `minimize` needs one: a waiting submit
    recorded without one (it priced executor-seconds) is priced at the deciding submit's
    container size, so the schedule's total compares like with like."""
    if minimize == "executor-seconds":
        return list(pending)
    sizes = [j.container_mb for j in pending if j.container_mb is not None]
    mine = [j.container_mb for j in pending if j.key == focus and j.container_mb is not None]
    fill = mine[0] if mine else (sizes[0] if sizes else None)
    return [j if j.container_mb is not None else replace(j, container_mb=fill) for j in pending]


def schedule(
    pending: Sequence[PendingJob],
    busy: Sequence[Busy],
    now: float,
    *,
    focus: str | None = None,
    minimize: Minimize = DEFAULT_MINIMIZE,
    max_orders: int = MAX_ORDERS,
) -> Schedule:
    """Start time and scale-out of every pending job (see the module doc); `focus` names the
    job whose options the schedule reports (the submit deciding)."""
    if not pending:
        return Schedule((), (), 0.0, 0, 0, minimize)
    search = _Search({j.key: j for j in priced(pending, minimize, focus)}, busy, now, minimize,
                     focus)
    movable = [j for j in pending if not j.committed]
    best: Schedule | None = None
    best_order: list[str] = []
    if len(movable) > 1:  # everybody at once, sized among each other: today's answer, aware
        best = _list_schedule(search, _seed_orders(movable)[0], together=True)
    for order in _seed_orders(movable):
        if search.tried >= max_orders or (best is not None and search.spent):
            break
        found = _list_schedule(search, order)
        if better(best, found):
            best, best_order = found, order
    improved = True
    while improved and search.tried < max_orders and len(best_order) > 1:
        improved = False
        for i in range(len(best_order) - 1):
            if search.tried >= max_orders or search.spent:
                break
            order = [*best_order[:i], best_order[i + 1], best_order[i], *best_order[i + 2:]]
            found = _list_schedule(search, order)
            if better(best, found):
                best, best_order, improved = found, order, True
    assert best is not None
    return best


def _seed_orders(pending: Sequence[PendingJob]) -> list[list[str]]:
    """Earliest deadline first, arrival order, and the previous plan's order, without repeats."""
    seeds = [
        sorted(pending, key=lambda j: (j.deadline_at, j.submitted_at, j.key)),
        sorted(pending, key=lambda j: (j.submitted_at, j.key)),
        sorted(pending, key=lambda j: (j.planned_start_at if j.planned_start_at is not None
                                       else j.submitted_at, j.key)),
    ]
    out: list[list[str]] = []
    for seed in seeds:
        order = [j.key for j in seed]
        if order not in out:
            out.append(order)
    return out


def _list_schedule(search: _Search, order: Sequence[str], together: bool = False) -> Schedule:
    """Place the jobs in `order`, each at its cheapest admissible start (`together`: all at
    once, each sized among those placed before it); then solve, repair and price the whole
    timeline."""
    search.tried += 1
    tag = ("together",) if together else ()
    done = next((n for n in range(len(order), 0, -1)
                 if (*tag, *order[:n]) in search.prefixes), 0)
    placed, focus_options = (_committed(search), ()) if not done else search.prefixes[
        (*tag, *order[:done])]
    placed = list(placed)
    for n, key in enumerate(order[done:], start=done + 1):
        job = search.jobs[key]
        others = [*search.fixed, *(_interval(p) for p in placed)]
        moments_ = _moments(search, job, placed)
        offered = [start_option(search.sizers[key], m, others, search.now)
                   for m in (moments_[:1] if together else moments_)]
        if key == search.focus:
            focus_options = tuple(sorted(offered, key=lambda o: o.start_at))
        placed = _admissible(search, job, cheapest(offered), placed)
        search.prefixes[(*tag, *order[:n])] = (list(placed), focus_options)
    final = _repair(search, placed)
    met = sum(p.feasible for p in final)
    return Schedule(tuple(final), focus_options, sum(p.cost for p in final), met,
                    search.tried, search.minimize)


def _committed(search: _Search) -> list[Placement]:
    """The jobs already started, where they run, as every schedule starts from them."""
    out: list[Placement] = []
    for job in search.jobs.values():
        if job.committed:
            assert job.started_at is not None and job.started_scale_out is not None
            others = [*search.fixed, *(_interval(p) for p in out)]
            sized = search.sizers[job.key].at(job.started_scale_out, job.started_at, others)
            out.append(_resized(Placement(job.key, job.job, job.started_at,
                                          job.started_scale_out, 0.0, 0.0, None, 0.0, False),
                                sized))
    return out


def _moments(search: _Search, job: PendingJob, placed: Sequence[Placement]) -> list[Moment]:
    """Now, the running apps' ends and the placed jobs' ends, each at the job's confidence."""
    level = job.confidence if job.confidence is not None else 0.5
    waits: list[tuple[float, WaitFor]] = []
    for b in search.busy:
        if b.end_at is None:
            continue
        waits.append((end_at_level(b.started_at, b.end_at, b.end_ratios, level),
                      WaitFor(b.name, b.job, b.started_at, b.end_at, b.scale_out,
                              b.end_ratios)))
    for p in placed:
        ratios = search.jobs[p.key].ratios
        end = p.start_at + p.predicted_s
        waits.append((end_at_level(p.start_at, end, ratios, level),
                      WaitFor(f"{p.job} (waiting submit {p.key})", p.job, p.start_at, end,
                              p.scale_out, ratios)))
    return moments(job, search.now, waits)


def _interval(p: Placement) -> Interval:
    return Interval(p.job, p.start_at, p.start_at + p.predicted_s, p.scale_out)


def _placement(job: PendingJob, option: StartOption) -> Placement:
    return Placement(job.key, job.job, option.start_at, option.scale_out, option.predicted_s,
                     option.upper_s, option.meet_probability, option.cost, option.feasible,
                     option.waits_for)


def _admissible(search: _Search, job: PendingJob, ranked: Sequence[StartOption],
                placed: Sequence[Placement]) -> list[Placement]:
    """The placements with the job's best start that keeps every job placed before it on
    time (that was), those made late sized again where that suffices (`_repair`); if none
    does, the one that keeps the most on time (then the cheapest)."""
    was_met = {p.key for p in placed if p.feasible}
    tried: list[tuple[int, float, int, list[Placement]]] = []
    for n, option in enumerate(ranked[:TRIES_PER_JOB]):
        candidate = [*placed, _placement(job, option)]
        if not was_met or not option.feasible:
            return candidate
        solved = _solve(search, candidate)
        if all(p.feasible for p in solved if p.key in was_met):
            return candidate
        repaired = _repair(search, candidate)
        met = {p.key for p in repaired if p.feasible}
        if was_met | {job.key} <= met:
            return repaired
        tried.append((len(met), -sum(p.cost for p in repaired), -n, repaired))
    if not tried:
        return [*placed, _placement(job, ranked[0])]
    return max(tried, key=lambda t: t[:3])[3]


def _repair(search: _Search, placed: Sequence[Placement]) -> list[Placement]:
    """The timeline solved jointly; then each job it makes late is sized again at its start
    among all the others (more executors, so it ends in time), REPAIR_ROUNDS times at most."""
    current = _solve(search, placed)
    for _ in range(REPAIR_ROUNDS):
        late = sorted((p for p in current if not p.feasible),
                      key=lambda p: search.jobs[p.key].deadline_at)
        changed = False
        for p in late:
            if search.jobs[p.key].committed:
                continue  # it runs: only what starts beside it can change
            others = [*search.fixed, *(_interval(q) for q in current if q.key != p.key)]
            _, sized = search.sizers[p.key].smallest(p.start_at, others)
            if sized.judgement.feasible and sized.scale_out != p.scale_out:
                current = [_resized(q, sized) if q.key == p.key else q for q in current]
                changed = True
        if not changed:
            break
        current = _solve(search, current)
    return current


def _resized(p: Placement, sized: Any) -> Placement:
    j = sized.judgement
    return Placement(p.key, p.job, p.start_at, sized.scale_out, sized.runtime_s, j.upper_s,
                     j.meet_probability, sized.cost, j.feasible, p.waits_for)


def _solve(search: _Search, placed: Sequence[Placement]) -> list[Placement]:
    """The placements with their runtimes solved jointly, judged and priced again. A job's
    own mixture (a wait's P and cost) is kept where the joint runtime does not change it."""
    if len(placed) <= 1:
        return list(placed)
    slots = [Slot(p.key, p.job, search.jobs[p.key].model, p.start_at, p.scale_out)
             for p in placed]
    guess = {p.key: p.predicted_s for p in placed}
    search.solved += len(slots)
    runtime, rows = joint_runtimes(slots, search.fixed, guess=guess)
    out = []
    for p in placed:
        job = search.jobs[p.key]
        r = runtime[p.key]
        if abs(r - p.predicted_s) <= 0.5:
            out.append(p)
            continue
        verdict = search.risks[p.key].judge(job.model, p.scale_out, r, rows[p.key],
                                            job.budget_s(p.start_at))
        cost = reservation_cost(search.minimize, p.scale_out, r, job.container_at(p.scale_out))
        out.append(Placement(p.key, p.job, p.start_at, p.scale_out, r, verdict.upper_s,
                             verdict.meet_probability, cost, verdict.feasible, p.waits_for))
    return out
