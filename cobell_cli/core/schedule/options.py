"""The starts one job is offered and, for each, the smallest scale-out that meets its deadline
at its confidence from there (`start_option`).

A start "after X" is the moment X has ended with the job's confidence (X's predicted end
stretched by the bound of its job's runtime / predicted ratios). X may still run then; the
waiting submit re-plans at that moment and takes more executors if X is late. So a wait's
P(meet) is the mixture q·P(meet | X ended) + (1 - q)·P(meet | X runs alongside, re-planned),
q = P(X has ended by the start), and its cost the same mixture of the two reservations: a
wait is offered only where that probability still reaches the confidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cobell_cli.core.cost import Minimize, reservation_cost
from cobell_cli.core.schedule.records import PendingJob, StartOption
from cobell_cli.core.schedule.risk import Judgement, Risk, ended_by
from cobell_cli.core.schedule.timeline import Interval, alone_s, runtime_among

MOMENT_MERGE_S = 1.0  # starts closer than this are one start
MAX_MOMENTS = 4  # now and the three earliest ends worth waiting for
COARSE = 12  # candidates looked at in the sizing's first pass


@dataclass(frozen=True)
class WaitFor:
    """What a start waits for: its name, job, size, run and error record."""

    name: str
    job: str | None
    started_at: float
    end_at: float  # predicted (point)
    scale_out: int | None
    ratios: tuple[float, ...]

    def ended_by(self, at: float) -> float:
        return ended_by(self.started_at, self.end_at, self.ratios, at)

    def still_running(self) -> Interval:
        return Interval(self.job, self.started_at, math.inf, self.scale_out)


@dataclass(frozen=True)
class Moment:
    start_at: float
    waits_for: WaitFor | None = None


@dataclass(frozen=True)
class Sized:
    """One candidate at one start: runtime, overlaps, judgement and cost."""

    scale_out: int
    runtime_s: float
    row: dict
    judgement: Judgement
    cost: float


class Sizer:
    """Sizes one job at one start among fixed intervals, remembering what it evaluated (the
    schedule tries the same start among the same others many times)."""

    def __init__(self, job: PendingJob, risk: Risk, minimize: Minimize) -> None:
        self.job = job
        self.risk = risk
        self.minimize = minimize
        self.memo: dict[tuple, Sized] = {}
        self.evaluations = 0

    def at(self, scale_out: int, start_at: float, others: Sequence[Interval]) -> Sized:
        found = self.memo.get((scale_out, round(start_at, 1), _signature(others)))
        if found is not None:
            return found
        hopeless = self._hopeless(scale_out, start_at)
        return hopeless if hopeless is not None else self._evaluated(scale_out, start_at, others)

    def _evaluated(self, scale_out: int, start_at: float, others: Sequence[Interval]) -> Sized:
        """The candidate among `others`, its overlaps solved (remembered)."""
        key = (scale_out, round(start_at, 1), _signature(others))
        found = self.memo.get(key)
        if found is None:
            self.evaluations += 1
            runtime, row = runtime_among(self.job.model, scale_out, start_at, others)
            judgement = self.risk.judge(self.job.model, scale_out, runtime, row,
                                        self.job.budget_s(start_at))
            cost = reservation_cost(self.minimize, scale_out, runtime,
                                    self.job.container_at(scale_out))
            found = self.memo[key] = Sized(scale_out, runtime, row, judgement, cost)
        return found

    def _hopeless(self, scale_out: int, start_at: float) -> Sized | None:
        """A candidate whose run alone already misses the budget at the confidence (what
        runs beside it only slows it): judged without solving for its overlaps."""
        budget = self.job.budget_s(start_at)
        alone = alone_s(self.job.model, scale_out)
        bound = self.risk.alone_bound(alone)
        if bound is None or bound <= budget:
            return None
        judgement = Judgement(bound, False, self.risk, budget, alone)
        cost = reservation_cost(self.minimize, scale_out, alone, self.job.container_at(scale_out))
        return Sized(scale_out, alone, {}, judgement, cost)

    def fastest(self, start_at: float, others: Sequence[Interval]) -> Sized:
        """A start with no budget left (the deadline has passed): the candidate with the
        lowest upper bound among `others`, then the shortest prediction, then the smallest, as
        the runtime plan's fastest start chooses. Every candidate misses, so none is cut short
        as hopeless: a curve may rise at the top, and the largest be the slowest."""
        sized = [self._evaluated(x, start_at, others) for x in self.job.candidates]
        return min(sized, key=lambda s: (s.judgement.upper_s, s.runtime_s, s.scale_out))

    def smallest(self, start_at: float, others: Sequence[Interval]) -> tuple[int, Sized]:
        """The smallest candidate meeting the budget: a coarse pass over every COARSE-th
        candidate, then down from the first that meets it (a job's runtime need not fall
        with its scale-out: a flat curve's bound can rise at the top). With memory-MB-seconds
        and containers sized per candidate, the cheapest of it and the coarse candidates
        above it that meet the budget (each executor's container shrinks as they grow). None
        meets it: the coarse candidate most likely to (the fastest among equals), infeasible:
        among many co-runners the upper bounds widen so far that the lowest one says little."""
        xs = self.job.candidates
        seen: dict[int, Sized] = {}

        def at(i: int) -> Sized:
            if i not in seen:
                seen[i] = self.at(xs[i], start_at, others)
            return seen[i]

        step = max(1, len(xs) // COARSE)
        coarse = sorted({*range(0, len(xs), step), len(xs) - 1})
        first = next((i for i in coarse if at(i).judgement.feasible), None)
        if first is None:
            best = self._likeliest([(i, at(i)) for i in coarse])
            return best, at(best)
        below = max((c for c in coarse if c < first), default=-1)
        found = first
        for i in range(first - 1, below, -1):
            if not at(i).judgement.feasible:
                break
            found = i
        if self.minimize != "executor-seconds" and len(set(self.job.containers_mb)) > 1:
            # a larger one may need smaller containers (one size for all: the smallest, as
            # for executor-seconds, which it then only scales)
            pool = [found, *(i for i in coarse if i > found and at(i).judgement.feasible)]
            found = min(pool, key=lambda i: (at(i).cost, i))
        return found, at(found)

    def _likeliest(self, sized: Sequence[tuple[int, Sized]]) -> int:
        """None meets the budget: the candidate likeliest to meet it, then the fastest, then the
        largest among equals. Where P(meet) is one plateau (n ratios move it in steps of
        1 / (n + 1)) and the curve is flat, that is the largest candidate: a history that
        tips a job into this branch reserves it up to 60 executors (docs/deadlines.md, "Out of
        reach"). The plan's rule (cheapest within one standard error of the best P(meet))
        was measured here: it meets fewer deadlines held out."""
        return min(sized, key=lambda s: (-(s[1].judgement.meet_probability or 0.0),
                                         s[1].runtime_s, -s[0]))[0]


def _signature(others: Sequence[Interval]) -> tuple:
    return tuple((o.job, round(o.start_at, 1), round(o.end_at, 1), o.scale_out) for o in others)


def start_option(
    sizer: Sizer, moment: Moment, others: Sequence[Interval], now: float,
) -> StartOption:
    """The cheapest way to meet the deadline from `moment` (see the module doc)."""
    job, wait = sizer.job, moment.waits_for
    start = moment.start_at
    if job.budget_s(start) <= 0:
        sized = sizer.fastest(start, others)
        return _option(moment, sized, sized.judgement.meet_probability, sized.cost, False,
                       "the deadline has passed" if start <= now else "too late a start")
    index, plain = sizer.smallest(start, others)
    if wait is None or not plain.judgement.feasible:
        return _option(moment, plain, plain.judgement.meet_probability, plain.cost,
                       plain.judgement.feasible, None)
    return _mixed(sizer, moment, others, index, plain)


def _mixed(sizer: Sizer, moment: Moment, others: Sequence[Interval], index: int,
           plain: Sized) -> StartOption:
    """A wait: P(meet) and cost mixed over whether what it waits for has ended (module doc)."""
    job, wait, start = sizer.job, moment.waits_for, moment.start_at
    assert wait is not None
    q = wait.ended_by(start)
    late = [*others, wait.still_running()]
    rescue_index, _ = sizer.smallest(start, late)
    xs = job.candidates
    for i in range(index, len(xs)):
        on_time = plain if i == index else sizer.at(xs[i], start, others)
        rescued = sizer.at(xs[max(i, rescue_index)], start, late)
        p1, p2 = on_time.judgement.meet_probability, rescued.judgement.meet_probability
        cost = q * on_time.cost + (1 - q) * rescued.cost
        if p1 is None or p2 is None or job.confidence is None:
            return _option(moment, on_time, p1, cost, on_time.judgement.feasible, None)
        p = q * p1 + (1 - q) * p2
        if on_time.judgement.feasible and p >= job.confidence - 1e-9:
            return _option(moment, on_time, p, cost, True, _late_note(wait, q))
        if i - index >= 4:  # a wait that needs this much more is not worth weighing further
            break
    return _option(moment, on_time, p, cost, False,
                   f"{_late_note(wait, q)}: P(meet) {p:.2f} stays below {job.confidence:g}")


def _late_note(wait: WaitFor, q: float) -> str:
    return f"{wait.name} ended by then with P {q:.2f}"


def _option(moment: Moment, sized: Sized, probability: float | None, cost: float,
            feasible: bool, note: str | None) -> StartOption:
    return StartOption(
        start_at=moment.start_at,
        waits_for=moment.waits_for.name if moment.waits_for is not None else None,
        scale_out=sized.scale_out,
        predicted_s=sized.runtime_s,
        upper_s=sized.judgement.upper_s,
        meet_probability=probability,
        cost=cost,
        feasible=feasible,
        note=note,
    )


def moments(job: PendingJob, now: float, waits: Sequence[tuple[float, WaitFor]]) -> list[Moment]:
    """Now, and after each of `waits` (the start and what it waits for) that falls within
    the job's `--max-wait` and leaves it at least its fastest alone runtime; merged when
    closer than MOMENT_MERGE_S (the earlier one kept); at most MAX_MOMENTS."""
    out = [Moment(now)]
    if job.start_now:
        return out
    fastest = min(alone_s(job.model, x) for x in job.candidates)
    for at, wait in sorted(waits, key=lambda w: w[0]):
        if at <= now + MOMENT_MERGE_S or at - out[-1].start_at < MOMENT_MERGE_S:
            continue
        if job.latest_start_at is not None and at > job.latest_start_at:
            continue
        if job.budget_s(at) < fastest:
            continue
        out.append(Moment(at, wait))
        if len(out) >= MAX_MOMENTS:
            break
    return out


COST_TIE = 0.005  # costs within 0.5 % are a tie: the earlier start wins


def cheapest(options: Sequence[StartOption]) -> list[StartOption]:
    """Options best first: the feasible by cost, the earlier start winning a tie (within
    COST_TIE); then the infeasible by P(meet), highest first, earlier start on ties."""
    feasible = sorted((o for o in options if o.feasible), key=lambda o: (o.cost, o.start_at))
    if feasible:
        tied = [o for o in feasible if o.cost <= feasible[0].cost * (1 + COST_TIE)]
        tied.sort(key=lambda o: o.start_at)
        feasible = tied + [o for o in feasible if o not in tied]
    rest = sorted((o for o in options if not o.feasible),
                  key=lambda o: (-(o.meet_probability or 0.0), o.start_at))
    return feasible + rest


__all__ = ["Moment", "Sized", "Sizer", "WaitFor", "cheapest", "moments", "start_option"]
