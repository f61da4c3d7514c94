"""bench.studies.memory_fold_depth reads the very ratios the memory bound is taken on."""

from __future__ import annotations

import pytest

from bench import memory_accuracy as ma
from bench.studies import memory_fold_depth as study
from cobell_cli.core.memory.model import MemoryModel
from cobell_cli.core.memory.select import MIN_SIZES


def test_each_cases_folds_are_the_bounds_ratios_grouped_by_what_they_trained_on() -> None:
    runs, cases = ma.load("tune-quiet")
    compared = 0
    for case in cases:
        obs = [o for o in study.case_observations(runs, case) if o.demand_mb]
        if not obs:
            continue
        folds = study.case_folds(obs)
        assert sorted(r for _, r in folds) == pytest.approx(sorted(MemoryModel().fit(obs).ratios_))
        sizes = len({o.input_bytes for o in obs})
        assert all(MIN_SIZES <= depth < sizes for depth, _ in folds)
        compared += bool(folds)
    assert compared >= 12  # the third size has no fold; the fourth and fifth do
