"""core/median.py: the numbers statistics.median gives (the what-if and the planner use it so
that a cached predict does not import statistics)."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cobell_cli.core.median import median

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(st.lists(finite | st.integers(-10**6, 10**6), min_size=1, max_size=40))
def test_the_median_is_statistics_median_bit_for_bit(values: list[float]) -> None:
    expected = statistics.median(values)
    got = median(iter(values))
    assert got == expected and type(got) is type(expected)


def test_known_answers_and_no_values() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError, match="empty"):
        median([])
