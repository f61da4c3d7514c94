"""What one submit with a deadline does now: start, or wait until when and for what
(`StartDecision`), from the joint schedule of every waiting submit; and the records the
schedule is made of, built from the history's rows (store/waiting.py) and a fresh plan."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from cobell_cli.core.cost import DEFAULT_MINIMIZE, Minimize
from cobell_cli.core.jsonable import jsonable
from cobell_cli.core.schedule.joint import schedule
from cobell_cli.core.schedule.records import Busy, PendingJob, Schedule, StartOption
from cobell_cli.core.words import count

START_SLACK_S = 1.0  # a start this close to now is now
NEW = "new"  # the deciding submit's key before it has a row
# Submits that cron fires in the same minute arrive within seconds of each other; the first to
# decide cannot know the others are coming. A submit whose plan says "now" within this long
# of its arrival waits until then (never past its --max-wait; not with --start-now) and plans
# again with whoever arrived meanwhile (decided together). Deadlines are minutes to hours
# away; this costs seconds of them. Not fitted on any data (set by hand at c09d566): a
# latency budget, the longest a submit may wait before deciding, not a statistic of the runs.
GATHER_S = 10.0
GATHERING = "submits arriving with it"


@dataclass(frozen=True)
class StartDecision:
    """The deciding submit's start: when, at what scale-out, what it waits for, and why."""

    deadline_at: float
    now: float
    start_at: float
    scale_out: int
    predicted_s: float | None
    meet_probability: float | None
    feasible: bool
    waits_for: str | None
    start_reason: str
    options: tuple[StartOption, ...] = ()
    others_waiting: int = 0
    queue_wait_s: float = 0.0
    minimize: Minimize = DEFAULT_MINIMIZE

    @property
    def start_now(self) -> bool:
        return self.start_at <= self.now + START_SLACK_S

    @property
    def start_in_s(self) -> float:
        return max(self.start_at - self.now, 0.0)

    def to_dict(self) -> dict[str, Any]:
        out = jsonable({k: v for k, v in asdict(self).items() if k != "options"})
        out["start_in_s"] = 0.0 if self.start_now else round(self.start_in_s, 3)
        out["options"] = [o.to_dict(self.now) for o in self.options]
        return out


def decide(
    new: PendingJob,
    others: Sequence[PendingJob],
    busy: Sequence[Busy],
    now: float,
    *,
    minimize: Minimize = DEFAULT_MINIMIZE,
) -> tuple[StartDecision, Schedule]:
    """The joint schedule of `new` and the other submits with deadlines (waiting or started),
    and `new`'s part of it."""
    found = schedule([*others, new], busy, now, focus=new.key, minimize=minimize)
    mine = found.of(new.key)
    options = found.options
    start_at, waits_for = max(mine.start_at, now), mine.waits_for
    reason = _reason(new, mine.start_at, mine.waits_for, options, len(others), now, minimize)
    gathered = min(new.submitted_at + GATHER_S, new.latest_start_at or math.inf)
    if start_at <= now + START_SLACK_S and now < gathered and not new.start_now:
        start_at, waits_for = gathered, GATHERING
        reason = f"{GATHERING} ({GATHER_S:g} s after its submit), then: {reason}"
    return StartDecision(
        deadline_at=new.deadline_at,
        now=now,
        start_at=start_at,
        scale_out=mine.scale_out,
        predicted_s=mine.predicted_s,
        meet_probability=mine.meet_probability,
        feasible=mine.feasible,
        waits_for=waits_for,
        start_reason=reason,
        options=options,
        others_waiting=len(others),
        queue_wait_s=new.queue_wait_s,
        minimize=minimize,
    ), found


def _reason(new: PendingJob, start_at: float, waits_for: str | None,
            options: Sequence[StartOption], others: int, now: float, minimize: str) -> str:
    """Why this start won, in the words the options table uses."""
    chosen = next((o for o in options if abs(o.start_at - start_at) < 1e-6), None)
    level = (f"P(meet) >= {new.confidence:g}" if new.confidence is not None
             else "the point prediction")
    jointly = (f", decided with {count(others, 'other submit')} that have deadlines"
               if others else "")
    if chosen is None or not chosen.feasible:
        return (f"no start meets the deadline at {level}: starting at once at the fastest "
                f"scale-out{jointly}")
    now_option = next((o for o in options if o.waits_for is None), None)
    if chosen.waits_for is None:
        if len(options) == 1:
            return f"starting now: no later start to weigh{jointly}"
        return f"starting now: the cheapest start that meets the deadline at {level}{jointly}"
    if now_option is not None and now_option.feasible and now_option.cost > 0:
        saving = 100 * (1 - chosen.cost / now_option.cost)
        return (f"waiting for {waits_for}: {saving:.0f} % fewer {minimize} than starting now "
                f"at {now_option.scale_out}, at {level}{jointly}")
    return f"waiting for {waits_for}: starting now cannot meet the deadline at {level}{jointly}"


def pending_from_row(row: Mapping[str, Any], now: float) -> PendingJob:
    """A row of the history as the scheduler sees it (its model read back): a waiting
    submit, or one that started its job (committed: it runs where it started)."""
    from cobell_cli.core.model_table import ModelTable

    return PendingJob(
        key=str(row["id"]),
        job=row["job"],
        model=ModelTable.from_payload(row["model"]),
        ratios=tuple(float(r) for r in row.get("ratios") or ()),
        candidates=tuple(int(x) for x in row["candidates"]),
        deadline_at=float(row["deadline_at"]),
        earliest_at=now,
        submitted_at=float(row["submitted_at"]),
        target_s=row.get("target_s"),
        latest_start_at=row.get("latest_start_at"),
        queue_wait_s=float(row.get("queue_wait_s") or 0.0),
        start_now=bool(row.get("start_now")),
        confidence=row.get("confidence"),
        container_mb=row.get("container_mb"),
        planned_start_at=row.get("start_at"),
        started_at=row.get("start_at") if row.get("state") == "started" else None,
        started_scale_out=row.get("scale_out") if row.get("state") == "started" else None,
    )


def busy_from_row(row: Mapping[str, Any]) -> Busy:
    """A started row: the run its submit started, with its planned end."""
    predicted = row.get("predicted_s")
    return Busy(
        key=f"submit-{row['id']}",
        job=row["job"],
        started_at=float(row["start_at"]),
        end_at=float(row["start_at"]) + float(predicted) if predicted else None,
        scale_out=row.get("scale_out"),
        end_ratios=tuple(float(r) for r in row.get("ratios") or ()),
        label=f"{row['job']} (started by a waiting submit)",
    )
