"""Numbers in sentences (core/words.py): one plural rule and one duration formatter for every
line a person reads (issue 35: "1 similar runs", "target 585.754 s", "in 240.0 h")."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cobell_cli.core.words import count, duration_text


def test_counted_nouns() -> None:
    assert [count(n, "run") for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]
    assert count(1, "similar run") == "1 similar run"
    assert count(3, "process") == "3 processes"


@pytest.mark.parametrize(("seconds", "text"), [
    (0.001, "0.001 s"), (0.5, "0.5 s"), (7.25, "7.25 s"), (45, "45 s"), (585.754, "586 s"),
    (999.4, "999 s"), (1000, "16 min 40 s"), (1050, "17 min 30 s"), (3600, "60 min"),
    (7200, "2 h"), (5 * 3600 + 12 * 60, "5 h 12 min"), (240 * 3600, "10 d"),
    (26 * 86400 + 3 * 3600, "26 d 3 h"), (-3, "0 s"), (math.inf, "forever"),
])
def test_durations_for_a_person(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_a_duration_has_at_most_two_units_and_no_fraction_beyond_ten_seconds(s: float) -> None:
    parts = duration_text(s).split()
    assert len(parts) in (2, 4)
    if s >= 10:
        assert all(p.isdigit() for p in parts[::2])
