"""bench.real_colocation: the recorded history and the leave-one-run-out comparison."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from bench import real_colocation as bench
from tests.history_support import succeeded_run, write_csv

CONDITIONS = {"alone", "colo-scan", "colo-shuffle", "colo-scan+colo-shuffle"}


def _write_history(path: Path, n: int, seed: int = 3) -> None:
    """Runs of the target whose truth is the paper's form: Ernest's curve plus a + b/x per
    co-runner, times its overlap ratio, with 1 % noise."""
    rng = random.Random(seed)
    effect = {"colo-shuffle": (0.30, 0.6), "colo-scan": (0.10, 0.2)}
    runs = []
    for i in range(1, n + 1):
        x = rng.choice((1, 2, 3, 4))
        kinds = rng.choice(((), ("colo-shuffle",), ("colo-scan",), ("colo-shuffle", "colo-scan")))
        alone = 20.0 + 60.0 / x + 2.0 * x
        overlaps = {k: rng.uniform(0.3, 1.0) for k in kinds}
        slow = sum((effect[k][0] + effect[k][1] / x) * ov for k, ov in overlaps.items())
        runtime = alone * (1.0 + slow) * (1.0 + rng.gauss(0.0, 0.01))
        start = 1_700_000_000.0 + 1000.0 * i
        colocations = [{"co_runner_app_id": f"app-{i}-{k}", "co_runner_job": k,
                        "co_runner_scale_out": 2, "overlap_s": ov * runtime,
                        "overlap_ratio": ov} for k, ov in overlaps.items()]
        runs.append(succeeded_run(i, bench.TARGET_JOB, x, start, runtime, colocations))
    write_csv(path, runs)


def test_load_runs_reads_what_planning_reads_and_the_models_rank_as_the_truth_says(tmp_path):
    path = tmp_path / "colo.csv"
    _write_history(path, 32)
    runs = bench.load_runs(path)
    assert len(runs) == 32
    assert any(r["overlaps"] for r in runs), "colocations were not imported"
    errors = bench.leave_one_out(runs)
    cobell, bell = errors[bench.COBELL].mean(), errors[bench.BELL].mean()
    assert cobell < 4.0, f"cobell {cobell:.2f} % on runs of its own form"
    assert bell > 2 * cobell, "ignoring co-runners should cost accuracy here"
    # the paper's joint fit on runs of the paper's form, 1 % noise: about the noise
    assert errors[bench.JOINT].mean() < 2.0
    floor = bench.repetition_floor(runs)
    assert floor.size >= 4 and floor.mean() < 3.0  # 1 % noise on these runs
    text = bench.report({"made-up": (path, runs, errors)}, 1.0, "test")
    joint = errors[bench.JOINT].mean()
    assert "| alone |" in text
    row = next(line for line in text.splitlines() if line.startswith("| made-up |"))
    assert row.startswith(f"| made-up | `{path}` | 32 | {cobell:.2f} | {joint:.2f} | "
                          f"{cobell / joint:.3f} | "
                          f"{'yes' if cobell <= bench.GOAL_RATIO * joint else 'no'} |")
    diff = errors[bench.COBELL] - errors[bench.JOINT]
    assert f"| {diff.mean():+.2f} (" in row  # the paired difference, run by run


def test_a_profiles_set_is_left_out_job_by_job(tmp_path):
    """A set without the co-location target (issue 28's profile sets) predicts every job's
    runs from that job's other runs only."""
    path = tmp_path / "two-jobs.csv"
    _write_history(path, 12)
    text = path.read_text().replace(bench.TARGET_JOB, "job-a")
    lines = text.splitlines()
    lines += [line.replace("job-a", "job-b") for line in lines[1:]]
    lines = [lines[0]] + [f"{i},{line.split(',', 1)[1]}" for i, line in enumerate(lines[1:], 1)]
    path.write_text("\n".join(lines) + "\n")
    assert bench.job_names(path) == ["job-a", "job-b"]
    groups = [bench.load_runs(path, job) for job in bench.job_names(path)]
    assert [len(g) for g in groups] == [12, 12]
    errors = bench.set_errors(groups, {"first run of the job": _first_of_job})
    # each left-out run sees its own job's runs only: the first run of each job predicts
    assert errors["first run of the job"].size == 24


def _first_of_job(train, run):
    assert {r["job"] for r in train} == {run["job"]}
    return train[0]["runtime_s"]


def test_the_subset_keeps_runs_alone_or_with_one_co_runner(tmp_path):
    path = tmp_path / "colo.csv"
    _write_history(path, 40)
    runs = bench.load_runs(path)
    subset = bench.at_most_one_co_runner(runs)
    assert {bench._kind(r) for r in subset} == CONDITIONS - {"colo-scan+colo-shuffle"}
    assert len(subset) == sum(bench._kind(r) != "colo-scan+colo-shuffle" for r in runs) < 40


@pytest.mark.skipif(not bench.HISTORY.is_file(),
                    reason="history/colocation-local.csv not recorded in this checkout")
def test_the_committed_real_history_has_the_issues_design():
    runs = bench.load_runs(bench.HISTORY)
    assert len(runs) >= 48
    assert {int(r["scale_out"]) for r in runs} == {1, 2, 3, 4}
    kinds = {bench._kind(r) for r in runs}
    assert kinds == CONDITIONS
    assert all(np.isfinite(r["runtime_s"]) and r["runtime_s"] > 0 for r in runs)


@pytest.mark.skipif(not bench.TEST_HISTORY.is_file(),
                    reason="history/colocation-test.csv not recorded in this checkout")
def test_the_committed_test_history_has_one_co_runner_at_a_time():
    runs = bench.load_runs(bench.TEST_HISTORY)
    assert len(runs) >= 7  # the first chunk (history/README.md); the design has 24 cells
    assert {int(r["scale_out"]) for r in runs} <= {1, 2, 3, 4}
    assert len({int(r["scale_out"]) for r in runs}) >= 3
    assert {bench._kind(r) for r in runs} == CONDITIONS - {"colo-scan+colo-shuffle"}
