"""Algorithm 1 on hand-computed cases, and properties of the joint generalisation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cobell_cli.core.overlap import (
    BISECTION_MAX_ITER,
    MAX_ITER,
    CoRunnerInput,
    overlap_duration,
    predict_overlapping,
    predict_overlaps,
    progress_end_at,
    runtime,
)


def linear_f(base_s: float, alpha: float):
    """A co-runner model g(x, ov) = f(x)·(1 + α·ov) at a fixed scale-out."""
    return lambda _x, ov: base_s * (1.0 + alpha * ov)


def const(a: float, b: float):
    return lambda _job: (a, b)


# --- OVERLAPDURATION ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t1", "t2", "d", "expected"),
    [
        (100.0, 150.0, 10.0, 0.0),  # co-runner ended before the job starts
        (100.0, 50.0, 30.0, 30.0),  # job ends (80) before the co-runner: whole job overlaps
        (100.0, 50.0, 80.0, 50.0),  # co-runner ends first: overlap until its end
        (100.0, 50.0, 50.0, 50.0),  # both end at 100
        (100.0, 100.0, 10.0, 0.0),  # co-runner ends exactly at the job's start
    ],
)
def test_overlap_duration_cases(t1: float, t2: float, d: float, expected: float) -> None:
    assert overlap_duration(t1, t2, d) == pytest.approx(expected)


# --- RUNTIME -------------------------------------------------------------------------------


def test_runtime_one_step_by_hand() -> None:
    # Co-runner started at 0, runs 100 s alone, alpha 0.5; now = 50, C = 200: it ends at 100,
    # overlapping 50 s, i.e. half its own runtime, so 100·(1 + 0.5·0.5) = 125.
    assert runtime(100.0, linear_f(100.0, 0.5), 4, 0.0, 50.0, 200.0) == pytest.approx(125.0)


def test_runtime_without_overlap_is_the_plain_prediction() -> None:
    assert runtime(100.0, linear_f(100.0, 0.5), 4, 0.0, 150.0, 200.0) == pytest.approx(100.0)


# --- PREDICTOVERLAPPING --------------------------------------------------------------------


def test_predict_overlapping_unclipped_fix_point() -> None:
    # r = 100·(1 + 0.5·(r - 50)/r)  =>  r² - 150 r + 2500 = 0  =>  r = 75 + √3125.
    fp = predict_overlapping(linear_f(100.0, 0.5), 4, 0.0, 50.0, 200.0)
    r = 75.0 + math.sqrt(3125.0)
    assert fp.converged and fp.method == "iteration"
    assert fp.runtime_s == pytest.approx(r, abs=1e-3)
    assert fp.end_at == pytest.approx(r, abs=1e-3)
    assert fp.overlap_s == pytest.approx(r - 50.0, abs=1e-3)
    assert fp.overlap_ratio == pytest.approx((r - 50.0) / 200.0, abs=1e-5)


def test_predict_overlapping_job_ends_first() -> None:
    # C = 30 < remaining: overlap = C; r = 100 + 1500/r  =>  r = 50 + √4000; ratio 1.
    fp = predict_overlapping(linear_f(100.0, 0.5), 4, 0.0, 50.0, 30.0)
    assert fp.runtime_s == pytest.approx(50.0 + math.sqrt(4000.0), abs=1e-3)
    assert fp.overlap_ratio == pytest.approx(1.0)


def test_predict_overlapping_falls_back_to_bisection_at_the_cap() -> None:
    full = predict_overlapping(linear_f(100.0, 0.5), 4, 0.0, 50.0, 200.0)
    capped = predict_overlapping(linear_f(100.0, 0.5), 4, 0.0, 50.0, 200.0, max_iter=1)
    assert capped.method == "bisection" and capped.converged
    assert capped.runtime_s == pytest.approx(full.runtime_s, abs=2e-3)


def test_predict_overlapping_rejects_bad_target() -> None:
    with pytest.raises(ValueError):
        predict_overlapping(linear_f(100.0, 0.5), 4, 0.0, 50.0, 0.0)


@settings(max_examples=300, deadline=None)
@given(
    base=st.floats(1.0, 5000.0),
    alpha=st.floats(0.0, 30.0),
    started=st.floats(0.0, 5000.0),
    now=st.floats(0.0, 5000.0),
    c=st.floats(1.0, 5000.0),
)
def test_predict_overlapping_properties(
    base: float, alpha: float, started: float, now: float, c: float
) -> None:
    f = linear_f(base, alpha)
    fp = predict_overlapping(f, 4, started, now, c)
    assert fp.converged
    assert fp.iterations <= MAX_ITER + BISECTION_MAX_ITER
    assert 0.0 <= fp.overlap_ratio <= 1.0
    assert base - 1e-9 <= fp.runtime_s <= base * (1 + alpha) + 1e-6
    # It is a fix-point of RUNTIME (to the tolerance, amplified at most by the slope).
    again = runtime(fp.runtime_s, f, 4, min(started, now), now, c)
    assert again == pytest.approx(fp.runtime_s, abs=2e-3 * (1 + alpha))


# --- the generalisation --------------------------------------------------------------------


def test_progress_extrapolation() -> None:
    app = CoRunnerInput("a", None, started_at=10.0, progress=0.5)
    assert progress_end_at(app, 50.0) == pytest.approx(90.0)  # 40 s done at 50 %: 40 s left
    assert progress_end_at(CoRunnerInput("a", None, 10.0, progress=0.01), 50.0) is None
    assert progress_end_at(CoRunnerInput("a", None, None, progress=0.5), 50.0) is None
    assert progress_end_at(CoRunnerInput("a", None, 10.0, progress=None), 50.0) is None


def test_joint_one_co_runner_by_hand() -> None:
    # Co-runner: started 0, 100 s alone, alpha 0.5 from the new job; now 50. It ends before the
    # new job does, so its end solves the published case: e = 75 + √3125 (≈130.9), d = e - 50.
    # New job: 200 s alone, alpha 0.4: r = 200·(1 + 0.4·d/r)  =>  r² - 200 r - 80 d = 0.
    app = CoRunnerInput("c1", "other", 0.0, None, 100.0, 4.0, const(0.5, 0.0))
    pred = predict_overlaps([8.0], [200.0], const(0.4, 0.0), "new", [app], 50.0)
    e = 75.0 + math.sqrt(3125.0)
    d = e - 50.0
    r = (200.0 + math.sqrt(200.0**2 + 4 * 80.0 * d)) / 2.0
    c = pred.co_runners[0]
    assert all(pred.converged)
    assert c.source == "model"
    assert c.end_at[0] == pytest.approx(e, abs=1e-2)
    assert c.overlap_s[0] == pytest.approx(d, abs=1e-2)
    assert pred.runtime_s[0] == pytest.approx(r, abs=1e-2)
    assert c.overlap_ratio[0] == pytest.approx(d / r, abs=1e-4)


def test_joint_co_runner_outlasting_the_job_by_hand() -> None:
    # Co-runner 1000 s alone: the new job (100 s alone, alpha 0.4) overlaps fully: r = 140.
    # The co-runner, slowed for 140 s: e² - 1000 e - 0.5·1000·140 = 0.
    app = CoRunnerInput("c1", "other", 0.0, None, 1000.0, 4.0, const(0.5, 0.0))
    pred = predict_overlaps([8.0], [100.0], const(0.4, 0.0), "new", [app], 50.0)
    e = (1000.0 + math.sqrt(1000.0**2 + 4 * 70000.0)) / 2.0
    assert pred.runtime_s[0] == pytest.approx(140.0, abs=1e-2)
    assert pred.co_runners[0].overlap_ratio[0] == pytest.approx(1.0)
    assert pred.co_runners[0].end_at[0] == pytest.approx(e, abs=1e-2)


def test_paper_mode_uses_the_target_as_runtime() -> None:
    app = CoRunnerInput("c1", "other", 0.0, None, 100.0, 4.0, const(0.5, 0.0))
    pred = predict_overlaps(
        [8.0, 16.0], [200.0, 120.0], const(0.4, 0.0), "new", [app], 50.0,
        mode="paper", target_s=150.0,
    )
    d = 75.0 + math.sqrt(3125.0) - 50.0
    ratio = d / 150.0  # relative to C, whatever the candidate
    assert pred.co_runners[0].overlap_ratio == pytest.approx([ratio, ratio], abs=1e-5)
    assert pred.runtime_s == pytest.approx([200 * (1 + 0.4 * ratio), 120 * (1 + 0.4 * ratio)])


def test_co_runner_without_history_uses_progress_or_outlasts() -> None:
    apps = [
        CoRunnerInput("p", None, started_at=10.0, progress=0.5),  # ends at 90
        CoRunnerInput("u", None, started_at=10.0, progress=None),
    ]
    pred = predict_overlaps([1.0], [100.0], const(0.0, 0.0), "new", apps, 50.0)
    p, u = pred.co_runners
    assert (p.source, u.source) == ("progress", "outlasts")
    assert p.end_at[0] == pytest.approx(90.0) and p.overlap_ratio[0] == pytest.approx(0.4)
    assert math.isinf(u.end_at[0]) and u.overlap_ratio[0] == 1.0
    # Zero interference params: the co-runners change nothing.
    assert pred.runtime_s[0] == pytest.approx(100.0)


def test_overdue_co_runner_falls_back() -> None:
    # The model says 20 s, but it started 50 s ago and is still running.
    app = CoRunnerInput("o", "other", 0.0, 0.8, 20.0, 4.0, const(0.5, 0.0))
    for mode in ("joint", "paper"):
        pred = predict_overlaps(
            [4.0], [100.0], const(0.3, 0.0), "new", [app], 50.0, mode=mode, target_s=100.0
        )
        c = pred.co_runners[0]
        assert c.source == "progress", mode
        assert c.end_at[0] == pytest.approx(50.0 + 50.0 * 0.2 / 0.8)
        assert c.note and "already finished" in c.note


def test_mutual_interference_lengthens_co_runners() -> None:
    # Two modelled co-runners overlapping each other: each ends later than when the other
    # does not slow it (alpha_pair 0), and the new job's runtime grows with them.
    def app(aid: str, pair: float) -> CoRunnerInput:
        return CoRunnerInput(
            aid, aid, 0.0, None, 200.0, 4.0, lambda j: (0.5, 0.0) if j == "new" else (pair, 0.0)
        )

    xs, base = [4.0], [150.0]
    alone = predict_overlaps(xs, base, const(0.3, 0.0), "new", [app("a", 0), app("b", 0)], 100.0)
    mutual = predict_overlaps(xs, base, const(0.3, 0.0), "new", [app("a", 1), app("b", 1)], 100.0)
    for c0, c1 in zip(alone.co_runners, mutual.co_runners, strict=True):
        assert c1.end_at[0] > c0.end_at[0] + 1.0
    assert mutual.runtime_s[0] > alone.runtime_s[0]


# --- properties ----------------------------------------------------------------------------

ab = st.tuples(st.floats(0.0, 3.0), st.floats(0.0, 30.0))


@st.composite
def co_runner_inputs(draw: st.DrawFn) -> CoRunnerInput:
    kind = draw(st.sampled_from(["model", "progress", "none"]))
    pairs = draw(st.dictionaries(st.sampled_from(["new", "j1", "j2"]), ab, max_size=3))
    default = draw(ab)
    return CoRunnerInput(
        app_id=f"app{draw(st.integers(0, 10**6))}",
        job=draw(st.sampled_from(["j1", "j2", None])),
        started_at=draw(st.one_of(st.none(), st.floats(0.0, 2000.0))),
        progress=draw(st.floats(0.0, 1.0)) if kind == "progress" else None,
        base_runtime_s=draw(st.floats(1.0, 5000.0)) if kind == "model" else None,
        scale_out=float(draw(st.integers(1, 64))),
        interference=lambda j, p=pairs, d=default: p.get(j, d),  # type: ignore[misc]
    )


@settings(max_examples=150, deadline=None)
@given(
    co=st.lists(co_runner_inputs(), max_size=4, unique_by=lambda c: c.app_id),
    own=ab,
    serial=st.floats(1.0, 500.0),
    parallel=st.floats(0.0, 20000.0),
    mode=st.sampled_from(["joint", "paper"]),
    target=st.floats(10.0, 5000.0),
)
def test_overlap_properties(
    co: list[CoRunnerInput],
    own: tuple[float, float],
    serial: float,
    parallel: float,
    mode: str,
    target: float,
) -> None:
    now = 2000.0
    xs = np.arange(1.0, 65.0)
    base = serial + parallel / xs
    pred = predict_overlaps(
        xs, base, lambda _j: own, "new", co, now, mode=mode, target_s=target  # type: ignore[arg-type]
    )
    assert all(pred.converged)
    assert max(pred.iterations) <= MAX_ITER + BISECTION_MAX_ITER
    runtime_s = np.asarray(pred.runtime_s)
    assert (runtime_s >= base - 1e-9).all()
    total_alpha = sum(own[0] + own[1] / xs for _ in co) if co else 0.0
    assert (runtime_s <= base * (1 + total_alpha) + 1e-6).all()
    for c in pred.co_runners:
        assert all(0 <= ov <= 1 for ov in c.overlap_ratio)
        assert all(d >= 0 for d in c.overlap_s)
        if c.source == "model":
            assert all(end > now for end in c.end_at)
    if mode == "joint":
        # The new job's runtime is consistent with the overlaps it reports.
        rc = sum((own[0] + own[1] / xs) * np.asarray(c.overlap_ratio) for c in pred.co_runners)
        assert runtime_s == pytest.approx(base * (1 + rc), rel=1e-6, abs=1e-3)
        for c in pred.co_runners:
            tol = 5e-3 * (1 + float(np.max(total_alpha)))
            expected = np.clip(np.asarray(c.end_at) - now, 0, runtime_s)
            assert np.asarray(c.overlap_s) == pytest.approx(expected, abs=tol)


@settings(max_examples=50, deadline=None)
@given(serial=st.floats(1.0, 500.0), parallel=st.floats(0.0, 20000.0), own=ab)
def test_no_co_runners_means_no_interference(
    serial: float, parallel: float, own: tuple[float, float]
) -> None:
    xs = np.arange(1.0, 65.0)
    base = serial + parallel / xs
    for mode in ("joint", "paper"):
        pred = predict_overlaps(
            xs, base, lambda _j: own, "new", [], 0.0, mode=mode, target_s=100.0  # type: ignore[arg-type]
        )
        assert pred.runtime_s == tuple(base)
        assert pred.overlaps_by_job(0) == {}
