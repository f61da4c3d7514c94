"""The scheduler's records: what occupies the cluster (`Busy`), what waits to start
(`PendingJob`), the starts one job was offered (`StartOption`) and the decision for every
waiting job (`Placement`, `Schedule`). Times are epoch seconds, durations seconds."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from cobell_cli.core.cost import DEFAULT_MINIMIZE, Minimize
from cobell_cli.core.jsonable import jsonable


@dataclass(frozen=True)
class Busy:
    """An app that runs now (or has been started by a waiting submit): it slows whatever
    overlaps it. `end_at` is its predicted end (None: nothing predicts it; it is assumed to
    outlast every job planned here) and `end_ratios` how wrong its job's runtime predictions
    have been (runtime / predicted), which makes its end uncertain."""

    key: str
    job: str | None
    started_at: float
    end_at: float | None
    scale_out: int | None = None
    end_ratios: tuple[float, ...] = ()
    label: str | None = None  # how an option names what it waits for

    @property
    def name(self) -> str:
        return self.label or (f"{self.job} ({self.key})" if self.job else self.key)


@dataclass(frozen=True)
class PendingJob:
    """A submit with a deadline: its job's runtime model, how wrong that model has been
    (`ratios`: held-out and recorded runtime / predicted), its candidates and its deadline.

    `earliest_at` is the soonest it can start (the decision's present), `latest_start_at`
    the end of its `--max-wait` (None: no cap), `queue_wait_s` how long the cluster's queue
    is expected to hold its app before it runs (counted against the deadline).
    """

    key: str
    job: str
    model: Any  # plan.RuntimeModel; a model_table.ModelTable when read from the history
    ratios: tuple[float, ...]
    candidates: tuple[int, ...]
    deadline_at: float
    earliest_at: float
    submitted_at: float
    target_s: float | None = None
    latest_start_at: float | None = None
    queue_wait_s: float = 0.0
    start_now: bool = False
    confidence: float | None = 0.9
    container_mb: float | None = None  # one executor's container (memory-MB-seconds)
    # per candidate where the memory model sized each (more executors need less each); a
    # row read back from the history has the one container_mb only
    containers_mb: tuple[float | None, ...] = ()
    planned_start_at: float | None = None  # its plan before this decision (stability)
    started_at: float | None = None  # committed: it runs since then, at started_scale_out
    started_scale_out: int | None = None

    @property
    def committed(self) -> bool:
        """A job a waiting submit has started: it no longer moves or resizes, but what starts
        beside it slows it, and its deadline still counts."""
        return self.started_at is not None and self.started_scale_out is not None

    def container_at(self, scale_out: int) -> float | None:
        """One executor's container at `scale_out`: the one sized for that candidate, else
        container_mb."""
        if self.containers_mb and scale_out in self.candidates:
            sized = self.containers_mb[self.candidates.index(scale_out)]
            if sized is not None:
                return sized
        return self.container_mb

    def budget_s(self, start_at: float) -> float:
        """Seconds its run may take when it starts at `start_at`: to the deadline, less the
        queue's wait, and never more than the runtime target when one is given too."""
        budget = self.deadline_at - start_at - self.queue_wait_s
        return min(budget, self.target_s) if self.target_s is not None else budget


@dataclass(frozen=True)
class StartOption:
    """One start considered for a job: when, what it waits for, the smallest scale-out that
    meets the deadline at the confidence from there, and at what cost."""

    start_at: float
    waits_for: str | None  # None: start now
    scale_out: int
    predicted_s: float
    upper_s: float
    meet_probability: float | None
    cost: float
    feasible: bool
    note: str | None = None

    def to_dict(self, now: float) -> dict[str, Any]:
        out = jsonable(asdict(self))
        out["start_in_s"] = round(max(self.start_at - now, 0.0), 3)
        return out


@dataclass(frozen=True)
class Placement:
    """The decision for one pending job: its start, scale-out and predicted runtime in the
    joint timeline, whether it meets its deadline at its confidence, and its cost."""

    key: str
    job: str
    start_at: float
    scale_out: int
    predicted_s: float
    upper_s: float
    meet_probability: float | None
    cost: float
    feasible: bool
    waits_for: str | None = None


@dataclass(frozen=True)
class Schedule:
    """Every pending job's placement, the options the focus job was offered, and the search.

    `met` counts the jobs that meet their deadline at their confidence; among schedules the
    one meeting most deadlines wins, then the smallest total cost.
    """

    placements: tuple[Placement, ...]
    options: tuple[StartOption, ...]
    total_cost: float
    met: int
    orders_tried: int
    minimize: Minimize = DEFAULT_MINIMIZE

    def of(self, key: str) -> Placement:
        for p in self.placements:
            if p.key == key:
                return p
        raise KeyError(key)


def better(a: Schedule | None, b: Schedule) -> bool:
    """Whether `b` beats `a`: more deadlines met, then a smaller total cost."""
    if a is None:
        return True
    if b.met != a.met:
        return b.met > a.met
    return b.total_cost < a.total_cost * (1 - 1e-9)

