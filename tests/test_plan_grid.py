"""Plan.grid: which candidates a plan judged (issue 35: --json says when the grid is sparse)."""

from __future__ import annotations

from dataclasses import replace

from cobell_cli.core.plan import plan
from cobell_cli.core.plan.records import CandidatePrediction


def _plan(**kw):
    runs = [{"id": i, "job": "j", "status": "succeeded", "scale_out": x, "runtime_s": 10 + 100 / x,
             "started_at": 1000.0 * i} for i, x in enumerate((2, 4, 8, 16, 3, 6, 12), 1)]
    return plan(job="j", history=runs, now=1e5, target_s=30.0, **kw)


def test_a_range_judged_whole_is_full_and_counts_the_maximum_off_the_step():
    p = _plan(min_scale_out=1, max_scale_out=10, step=4)  # 1, 5, 9 and 10
    assert [c.scale_out for c in p.candidates] == [1, 5, 9, 10]
    assert p.grid == {"kind": "full", "candidates": 4, "scale_outs": 4}
    assert p.to_dict()["grid"] == p.grid


def test_fewer_judged_than_the_range_holds_is_sparse_and_none_judged_is_the_search():
    p = _plan(min_scale_out=1, max_scale_out=10)
    fewer = replace(p, candidates=p.candidates[:3] + p.candidates[-1:])
    assert fewer.grid == {"kind": "sparse", "candidates": 4, "scale_outs": 10}
    assert replace(p, candidates=()).grid["kind"] == "none"
    assert all(isinstance(c, CandidatePrediction) for c in p.candidates)
