"""run/wait.py: the wait for a deadline's start, on stepped clocks and a real history row."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cobell_cli.core.schedule.decision import StartDecision
from cobell_cli.run import wait
from cobell_cli.store import waiting
from cobell_cli.store.history import History

T0 = 1_800_000_000.0


class SteppedClock(wait.Clock):
    """A wall clock and a monotonic one that advance only when the wait sleeps; `jumps`
    steps the wall clock (NTP, a suspend) once it has read a given time."""

    def __init__(self, jumps: dict[float, float] | None = None) -> None:
        self.now, self.mono = T0, 0.0
        self.jumps = dict(jumps or {})
        self.slept: list[float] = []
        super().__init__(wall=lambda: self.now, monotonic=lambda: self.mono, sleep=self._sleep)

    def _sleep(self, seconds: float) -> None:
        assert 0 < seconds <= wait.SLICE_S  # short slices, never one long sleep
        self.slept.append(seconds)
        self.now += seconds
        self.mono += seconds
        for at, by in list(self.jumps.items()):
            if self.now >= at:
                self.now += by
                del self.jumps[at]


def decision(start_in_s: float, now: float = T0) -> StartDecision:
    return StartDecision(deadline_at=now + 3600, now=now, start_at=now + start_in_s,
                         scale_out=4, predicted_s=100.0, meet_probability=0.95, feasible=True,
                         waits_for="etl (application_1)", start_reason="waiting for etl")


@pytest.fixture
def row(tmp_path: Path) -> tuple[Path, int]:
    db = tmp_path / "h.db"
    with History.open(db) as history:
        row_id = waiting.insert(history, job="report", pid=os.getpid(), submitted_at=T0,
                                deadline_at=T0 + 3600, start_at=T0 + 30)
    return db, row_id


def _wait(db: Path, row_id: int, clock: SteppedClock, first: StartDecision,
          answers: list[StartDecision], running=None) -> tuple[wait.Waited, list[bool]]:
    forced: list[bool] = []

    def replan(force: bool):
        forced.append(force)
        return None, answers.pop(0)

    done = wait.wait_for_start(history_path=db, row_id=row_id, decision=first, planned=None,
                               replan=replan, running=running, say=lambda _line: None,
                               clock=clock)
    return done, forced


def test_the_wait_ends_at_the_planned_start_and_replans(row) -> None:
    db, row_id = row
    clock = SteppedClock()
    done, forced = _wait(db, row_id, clock, decision(30), [decision(0, T0 + 30)])
    assert forced == [False] and done.decision.start_now
    assert done.waited_s == pytest.approx(30, abs=1.0) and done.replans == 0


def test_a_clock_stepped_back_does_not_make_it_wait_longer(row) -> None:
    db, row_id = row
    clock = SteppedClock(jumps={T0 + 10: -3600.0})  # NTP steps the wall clock back an hour
    done, _ = _wait(db, row_id, clock, decision(30), [decision(0, T0 + 30)])
    assert done.waited_s == pytest.approx(30, abs=1.5)  # the monotonic clock ended it


def test_a_clock_stepped_forward_ends_the_wait_at_once(row) -> None:
    db, row_id = row
    clock = SteppedClock(jumps={T0 + 5: 7200.0})  # a suspend: two hours gone
    done, _ = _wait(db, row_id, clock, decision(30), [decision(0, T0 + 7300)])
    assert done.waited_s == pytest.approx(5, abs=1.5)


def test_a_late_co_runner_extends_the_wait_a_few_times_then_it_starts(row) -> None:
    db, row_id = row
    clock = SteppedClock()
    later = [decision(20 * (k + 2), T0 + 20 * (k + 1)) for k in range(wait.MAX_REPLANS)]
    done, forced = _wait(db, row_id, clock, decision(20), [*later, decision(0)])
    assert forced == [False] * wait.MAX_REPLANS + [True]
    assert done.replans == wait.MAX_REPLANS


def test_another_submit_moving_the_start_is_followed(row) -> None:
    db, row_id = row
    clock = SteppedClock()
    moved = {"done": False}

    def move(_seconds: float) -> None:
        if not moved["done"] and clock.now >= T0 + 5:
            with History.open(db) as history:
                waiting.update(history, row_id, start_at=T0 + 12)
            moved["done"] = True

    base_sleep = clock.sleep
    clock.sleep = lambda s: (base_sleep(s), move(s))  # type: ignore[assignment]
    done, _ = _wait(db, row_id, clock, decision(300), [decision(0, T0 + 12)])
    assert done.waited_s == pytest.approx(12, abs=1.5)


def test_an_app_planned_around_that_ended_ends_the_wait(row) -> None:
    db, row_id = row
    clock = SteppedClock()

    class Planned:
        cluster_app_ids = frozenset({"application_1"})

    def running() -> set[str]:
        return set() if clock.mono > 15 else {"application_1"}

    forced: list[bool] = []

    def replan(force: bool):
        forced.append(force)
        return Planned(), decision(0, clock.now)

    done = wait.wait_for_start(history_path=db, row_id=row_id, decision=decision(600),
                               planned=Planned(), replan=replan, running=running,
                               say=lambda _line: None, clock=clock)
    assert done.waited_s <= 15 + wait.POLL_S + 1 and forced == [False]


def test_a_row_gone_meanwhile_is_planned_again_at_once(row) -> None:
    db, row_id = row
    with History.open(db) as history:
        waiting.remove(history, row_id)
    clock = SteppedClock()
    done, forced = _wait(db, row_id, clock, decision(300), [decision(0)])
    assert forced == [False] and done.waited_s < 1
