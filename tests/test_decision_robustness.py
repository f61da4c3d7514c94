"""No single run moves the decision of a history of >= 10 runs by more than one candidate step
(issue 34's goal), for runs a job could produce: with the real runtime model, on histories
made as cobell's own loop makes them (three spread bootstrap runs, then runs at the one to
three scale-outs near the decision), one more run at any candidate whose runtime lies within
three standard deviations of the job's true runtime there.

NOT MET YET (issue 34): the per-candidate distribution (core/predictive.py) does not hold it.
Hypothesis's derandomized search finds seed=4, x=4, k=2.0: one run at 4 executors, 2 sd slow,
moves the decision from 14 to 17 executors. The curve barely moves (837 -> 842 s at 14); the
bound does. At 0.95 the conformal rank of fewer than 19 errors lies beyond the largest
(calibration.ratio_bound), so the one new largest error sets every candidate's bound (981 ->
1123 s at 14) and P(meet) at 13-16 sits on one step of the ranks, 17/19 = 0.895. Measured
2026-11-30 over seeds 0-29, one run at 4, 8, 16, 32, 60 executors, k = -3, -2, 2, 3 (600
cases, this module's helpers): 120 move the decision more than one step today, 26 under
`bench.studies.shape_quantile.variant("t")` (the pooled shape Student t, n - 1 degrees of
freedom), which costs late runs at 0.95 (bench/results/shape_quantile.md): not adopted.
The same count, seeds 0-29 (development) / 30-59 (held out), under the study's issue-34
variants (2026-11-30, on 4a47df8): today 120 / 133; `local` (locally weighted conformal) 21 /
61; `interior` (a lone edge run's held-out error left out) 39 / 49; `local_interior` 13 / 25;
`dp` (Dirichlet-process ranks, PRIOR_ERRORS) 26 / 91; held out less today's, SE over seeds:
-72 +- 20, -84 +- 21, -108 +- 22, -42 +- 25. Each, put into core/, fails `python -m bench
gate` (24, 26, 32, 45 figures worse; 27, 31, 28, 35 better): nodesim pooled late 5.8 -> 6.4
% (local, interior, both) and 7.7 % (dp), simulator pooled late 0.6 -> 3.2 % (dp),
memory_e2e's simulator sgd MB-s over the oracle's 1.100 -> 1.201, 1.123, 1.223, 1.220. Not
adopted (branch onestep).
The test stays, strict: it fails the day the goal is met, so the marker goes then. That
example runs first (`@example`): while it fails, Hypothesis neither searches nor shrinks (the
search and its shrinking took 226 s of a CI run on 2 cores), and only a failed assertion
counts as the expected failure."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cobell_cli.core.calibration import DEFAULT_CONFIDENCE
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.plan import plan

MIN_X, MAX_X = 4, 60


def _truth(serial: float, at_24_s: float, x: float) -> float:
    """Amdahl's law through at_24_s at 24 executors with a serial share `serial`."""
    return at_24_s * (serial + (1 - serial) * 24 / x)


def _history(seed: int) -> tuple[list[dict[str, Any]], float, Any]:
    """A job's runs as the planner's loop leaves them, its target, and its true runtime."""
    rng = np.random.default_rng(seed)
    serial, at_24, sd = rng.uniform(0.03, 0.3), rng.uniform(100, 1000), rng.uniform(0.01, 0.06)

    def truth(x: float) -> float:
        return _truth(serial, at_24, x)

    needed = rng.uniform(8, 48)
    boot = [32, int(rng.integers(6, 31)), int(rng.integers(33, 60))]
    near = sorted({max(MIN_X, min(MAX_X, round(needed * m)))
                   for m in rng.uniform(0.95, 1.25, size=int(rng.integers(1, 4)))})
    xs = boot + [int(rng.choice(near)) for _ in range(int(rng.integers(7, 28)))]
    runs = [_run(i, x, truth(x) * math.exp(rng.normal(0, sd))) for i, x in enumerate(xs)]
    return runs, truth(needed), (truth, sd)


def _run(i: int, x: int, runtime_s: float) -> dict[str, Any]:
    return {"id": i, "job": "j", "scale_out": x, "runtime_s": runtime_s,
            "status": "succeeded", "started_at": float(i), "overlaps": {}}


def _decide(runs: list[dict[str, Any]], target_s: float) -> int:
    return plan(job="j", history=runs, now=1e9, target_s=target_s, min_scale_out=MIN_X,
                max_scale_out=MAX_X, fit=fit_runtime_model,
                confidence=DEFAULT_CONFIDENCE).scale_out


@pytest.mark.xfail(strict=True, raises=AssertionError,
                   reason="issue 34's one-step goal is not met yet: seed=4, x=4, k=2.0 moves "
                   "14 -> 17 (see the module doc)")
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), x=st.integers(MIN_X, MAX_X), k=st.floats(-3.0, 3.0))
@example(seed=4, x=4, k=2.0)  # the known counterexample first: while it fails, no search runs
def test_one_run_a_job_could_produce_moves_the_decision_at_most_one_step(
        seed: int, x: int, k: float) -> None:
    runs, target_s, (truth, sd) = _history(seed)
    before = _decide(runs, target_s)
    after = _decide([*runs, _run(len(runs), x, truth(x) * math.exp(k * sd))], target_s)
    assert abs(after - before) <= 1, (before, after)
