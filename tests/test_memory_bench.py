"""The memory benchmark's bookkeeping: what a cut-short search proves about a need, and how a
reservation is scored against a need known only within bounds."""

from __future__ import annotations

from bench.memory_accuracy import Case, Score
from bench.memory_record import PROFILE_MEMORY_MB, bounds


def rec(rows: int, memory: int, outcome: str) -> dict:
    return {"rows": rows, "executor_memory_mb": memory, "outcome": outcome}


def test_bounds_take_successes_down_to_smaller_inputs_and_failures_up_to_larger() -> None:
    sizes = [1, 2, 3, 4, 5]
    profile = {1: rec(1, PROFILE_MEMORY_MB, "succeeded"), 2: rec(2, PROFILE_MEMORY_MB, "succeeded"),
               3: rec(3, PROFILE_MEMORY_MB, "succeeded"), 4: rec(4, PROFILE_MEMORY_MB, "memory")}
    searched = [rec(3, 960, "memory"), rec(3, 1472, "succeeded"), rec(4, 1600, "timeout"),
                rec(5, 512, "error")]
    cases = bounds(profile, searched, sizes)
    assert sorted(cases) == [3, 4, 5]
    assert (cases[3].fail, cases[3].ok) == (960, 1472)
    # the profile's own failure bounds from below (above the slow probe), and no upper bound
    assert (cases[4].fail, cases[4].ok) == (PROFILE_MEMORY_MB, None)
    assert cases[5].fail == PROFILE_MEMORY_MB  # more input: no less need; an error says nothing


def test_a_bounded_need_scores_only_what_is_certain() -> None:
    case = Case("collect", 100, 1, above_mb=960, at_most_mb=1920)
    assert case.need_mb is None
    assert Score("m", case, 1920).ok and not Score("m", case, 1920).failed
    assert Score("m", case, 960).failed and not Score("m", case, 960).ok
    middle = Score("m", case, 1408)
    assert not middle.ok and not middle.failed
    assert middle.ratio == 1408 / 1920 and middle.ratio_high == 1408 / 1024
    unsized = Score("m", case, None)
    assert not unsized.ok and not unsized.failed
    settled = Case("collect", 100, 1, above_mb=1344, at_most_mb=1408)
    assert settled.need_mb == 1408 and Score("m", settled, 1408).ratio == 1.0
