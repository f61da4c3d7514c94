"""Waiting for a deadline submit's start: the edge around core/schedule's decision.

The submit sleeps in short slices (SLICE_S) and, at every slice, reads the wall clock and its
row of the history (another submit's decision may have moved its start): its wait ends when
the wall clock reaches the planned start, or when a monotonic clock says the planned wait has
passed, whichever comes first, so a clock stepped back (NTP) never makes it wait longer and
one stepped forward (a suspend) starts it at once. Every POLL_S it asks the cluster whether
the apps it planned around still run; one that ended early ends the wait too. When the wait
ends it re-plans with what runs then (`replan`): it starts, or waits again if what it waits
for is late, at most MAX_REPLANS times; after that it starts whatever the plan says. A
signal (SIGINT, SIGTERM, SIGHUP) raises from the sleep (cobell_cli.interrupts): the submit
ends with 128+N and nothing started; the caller removes its row.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cobell_cli.core.schedule.decision import StartDecision

SLICE_S = 1.0  # longest sleep between looks at the clock and the history
POLL_S = 10.0  # how often the cluster is asked whether what the submit planned around ended
MAX_REPLANS = 3  # re-plans that may extend a wait; then the next one starts the job


@dataclass
class Clock:
    """The clocks and the sleep the wait uses (tests step them)."""

    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


@dataclass
class Waited:
    """How the wait ended: the decision the job starts on, the plan it was made with, how
    long the submit waited, and how often it re-planned."""

    decision: StartDecision
    planned: Any
    waited_s: float
    replans: int


def read_row(history_path: Path, row_id: int) -> dict[str, Any] | None:
    """The submit's own row, read without writing (None: gone)."""
    from cobell_cli.store import waiting
    from cobell_cli.store.history import History

    with History.open(history_path, read_only=True, create=False, reap_lost=False) as history:
        return waiting.get(history, row_id)


def wait_for_start(
    *,
    history_path: Path,
    row_id: int | Callable[[], int],
    decision: StartDecision,
    planned: Any,
    replan: Callable[[bool], tuple[Any, StartDecision]],
    running: Callable[[], set[str]] | None,
    say: Callable[[str], None],
    clock: Clock | None = None,
) -> Waited:
    """Wait until the planned start (module doc); `replan(force)` plans again and records
    the decision (force: start now whatever it says), `running()` the cluster's running app
    ids (None: nothing to poll). `row_id` is the submit's row (or what says it: a row reaped
    meanwhile is written anew by the next re-plan)."""
    clock = clock or Clock()
    began = clock.monotonic()
    start_at = decision.start_at
    ref_wall, ref_mono = clock.wall(), clock.monotonic()
    seen = None
    replans = 0
    next_poll = began + POLL_S
    planned_around = set(getattr(planned, "cluster_app_ids", ()))
    say(waiting_line(decision, clock.wall()))
    while True:
        row = read_row(history_path, row_id() if callable(row_id) else row_id)
        if row is not None and seen is not None and row["decisions"] != seen \
                and row["state"] == "waiting" and row["start_at"] != start_at:
            start_at = float(row["start_at"])
            ref_wall, ref_mono = clock.wall(), clock.monotonic()
            say(f"cobell: another submit re-planned this one: {_until(start_at, ref_wall)}")
        seen = row["decisions"] if row is not None else seen
        now = clock.wall()
        due = now >= start_at or clock.monotonic() - ref_mono >= start_at - ref_wall
        ended = False
        if running is not None and clock.monotonic() >= next_poll:
            next_poll = clock.monotonic() + POLL_S
            ended = bool(planned_around - running())
        if due or ended or row is None:
            force = replans >= MAX_REPLANS
            planned, decision = replan(force)
            if decision.start_now or force:
                return Waited(decision, planned, clock.monotonic() - began, replans)
            replans += 1
            start_at = decision.start_at
            ref_wall, ref_mono = clock.wall(), clock.monotonic()
            planned_around = set(getattr(planned, "cluster_app_ids", ()))
            seen = None
            say(waiting_line(decision, ref_wall, again=True))
            continue
        clock.sleep(max(min(SLICE_S, start_at - now), 0.01))


def _until(start_at: float, now: float) -> str:
    from cobell_cli.core.words import duration_text
    from cobell_cli.timespec import local_iso

    return f"waiting until {local_iso(start_at)} (in {duration_text(start_at - now)})"



def waiting_line(decision: StartDecision, now: float, again: bool = False) -> str:
    """The one line that says what the submit waits for and until when."""
    from cobell_cli.core.schedule.decision import GATHERING

    what = (f" for {decision.waits_for} to end" if decision.waits_for not in (None, GATHERING)
            else f" for {GATHERING}" if decision.waits_for else "")
    verb = "still " if again else ""
    return (f"cobell: {verb}{_until(decision.start_at, now)}{what}, then scale-out "
            f"{decision.scale_out}; SIGINT or SIGTERM ends the wait and starts nothing")
