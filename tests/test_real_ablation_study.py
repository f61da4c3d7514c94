"""bench.studies.real_ablation on a small made-up set (the real sets take a minute)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import real_colocation as rc
from bench.studies import real_ablation as ra
from tests.history_support import succeeded_run, write_csv

LEVEL_LINE = "(a) - level line at 3 scale-outs"


def _write_oversubscribed(path: Path, seed: int = 5) -> None:
    """One job on a two-core machine: fastest at 2 executors, slower at 4; beside one other
    job (a = 0.5) in half its runs, 2 % noise (a profile set's shape)."""
    rng = np.random.default_rng(seed)
    level = {1: 30.0, 2: 24.0, 4: 40.0}
    rows = []
    for i in range(18):
        x = (1, 2, 4)[i % 3]
        ov = float(rng.uniform(0.3, 0.9)) if i % 2 else 0.0
        runtime = level[x] * (1 + 0.5 * ov) * float(np.exp(rng.normal(0, 0.02)))
        start = 1_700_000_000.0 + 1000.0 * i
        colo = ([{"co_runner_app_id": f"app-{i}", "co_runner_job": "other",
                  "co_runner_scale_out": 1, "overlap_s": ov * runtime, "overlap_ratio": ov}]
                if ov else [])
        rows.append(succeeded_run(i + 1, "slows", x, start, runtime, colo))
    write_csv(path, rows)


def test_each_variant_is_the_estimators_switch_scored_run_by_run(tmp_path, monkeypatch):
    path = tmp_path / "slows.csv"
    _write_oversubscribed(path)
    monkeypatch.setattr(rc, "SETS", {"made-up": path})
    monkeypatch.setattr(ra, "VARIANTS", {k: ra.VARIANTS[k] for k in
                                         (ra.DEFAULT, LEVEL_LINE, "(d) a always")})
    errors = ra.set_errors("made-up")
    assert set(errors) == {ra.DEFAULT, LEVEL_LINE, "(d) a always", rc.JOINT}
    assert all(e.shape == (18,) for e in errors.values())
    # no monotone curve follows a job that slows past 2 executors: the switch must bite
    assert errors[LEVEL_LINE].mean() > errors[ra.DEFAULT].mean() + 2.0
    diff, se = ra.paired(errors, LEVEL_LINE)
    assert diff == pytest.approx((errors[LEVEL_LINE] - errors[ra.DEFAULT]).mean())
    assert se == pytest.approx((errors[LEVEL_LINE] - errors[ra.DEFAULT]).std(ddof=1)
                               / np.sqrt(18))
    text = ra.report({"made-up": errors}, "test", 1.0)
    row = next(line for line in text.splitlines() if line.startswith(f"| {LEVEL_LINE} |"))
    assert f"({diff:+.2f} ± {se:.2f})" in row
    assert "default better by > 1 SE on made-up" in text


def test_the_rule_reads_each_set_s_paired_difference():
    base = np.linspace(5.0, 15.0, 20)
    same = base + np.tile([0.5, -0.5], 10)  # within an SE
    better = base - 2.0 - np.tile([0.1, -0.1], 10)
    results = {"s1": {ra.DEFAULT: base, "v": same, "w": better},
               "s2": {ra.DEFAULT: base, "v": same, "w": base + np.tile([3.0, -1.0], 10)}}
    assert ra.verdict(results, "v") == "within one SE on every set"
    # sets that disagree are both named (profiles check against profiles dev, 1 Dec 2026)
    assert ra.verdict(results, "w") == ("default better by > 1 SE on s2; the variant by > 1 SE "
                                        "on s1")
    results["s1"]["w"] = same
    assert ra.verdict(results, "w") == "default better by > 1 SE on s2"
    results["s1"]["w"] = better
    results["s2"]["w"] = same
    assert ra.verdict(results, "w") == "no worse anywhere, better by > 1 SE on s1"


def test_pooled_takes_the_left_out_runs_of_the_named_sets_together():
    base = np.linspace(5.0, 15.0, 6)
    results = {"a": {ra.DEFAULT: base, "v": base + np.array([1, 2, 3, 1, 2, 3])},
               "b": {ra.DEFAULT: base[:4], "v": base[:4] - 1.0},
               "c": {ra.DEFAULT: base, "v": base + 10.0}}
    diff, se, n = ra.pooled(results, "v", ["a", "b", "missing"])
    together = np.array([1, 2, 3, 1, 2, 3, -1, -1, -1, -1], float)
    assert n == 10
    assert diff == pytest.approx(together.mean())
    assert se == pytest.approx(together.std(ddof=1) / np.sqrt(10))
