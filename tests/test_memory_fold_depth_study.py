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


def test_the_cases_by_depth_are_the_benchmarks_scores_and_the_candidate_leaves_core_as_it_was(
) -> None:
    from cobell_cli.core.memory import model, select

    plain = select.select
    by_depth = study.case_depths("tune-quiet")
    assert select.select is plain and model.select is plain
    runs, cases = ma.load("tune-quiet")
    scored = {s.case: s.reserved_mb for s in ma.score(runs, cases, study.CONFIDENCE)
              if s.method == "cobell"}
    default = [s for (method, _), scores in by_depth.items() if method == "default"
               for s in scores]
    assert len(default) == len(cases) == 36
    assert {s.case: s.reserved_mb for s in default} == scored
    assert {depth for _, depth in by_depth} == {2, 3, 4}  # sizes 3-5, each from those below


def test_the_candidate_takes_the_whole_input_only_where_it_fits_the_runs_better() -> None:
    from cobell_cli.core.memory.records import MemoryObservation

    def run(mb: float, x: int, demand: float) -> MemoryObservation:
        return MemoryObservation(input_bytes=int(mb * 2**20), scale_out=x, demand_mb=demand,
                                 reserved_mb=2048, failed=False)

    # collect on test-quiet: at 2 executors each executor peaks higher than at 1
    contradicting = [run(60, 1, 109), run(89, 1, 189), run(60, 2, 272), run(89, 2, 352)]
    chosen = study._better_feature(contradicting)
    assert chosen is not None and chosen.label == "linear(input)"
    one_count = [run(60, 1, 109), run(89, 1, 189)]  # the features differ by a scale only
    assert study._better_feature(one_count) is None
    shares = [run(60, 1, 200), run(120, 2, 200), run(90, 1, 300), run(180, 2, 300)]
    assert study._better_feature(shares) is None  # memory follows each executor's share
