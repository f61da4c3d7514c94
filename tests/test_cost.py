"""The reservation's cost in the units --minimize names (core/cost.py)."""

from __future__ import annotations

import pytest

from cobell_cli.core.cost import (
    MINIMIZE_CHOICES,
    executor_seconds,
    memory_mb_seconds,
    reservation_cost,
)


def test_the_two_units_and_the_label_price() -> None:
    assert MINIMIZE_CHOICES == ("executor-seconds", "memory-mb-seconds")
    assert executor_seconds(8, 100.0) == 800.0
    assert executor_seconds(8, 100.0, price=2.5) == 2000.0
    assert memory_mb_seconds(2048, 8, 100.0) == 2048 * 800.0
    assert reservation_cost("memory-mb-seconds", 4, 10.0, container_mb=1024) == 40960.0
    assert reservation_cost("executor-seconds", 4, 10.0, container_mb=1024) == 40.0


def test_memory_cost_without_a_container_size_is_refused() -> None:
    with pytest.raises(ValueError, match="container size"):
        reservation_cost("memory-mb-seconds", 4, 10.0)
