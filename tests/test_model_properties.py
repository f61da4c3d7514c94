"""Property-based: any valid history gives positive finite predictions, monotone in overlap."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cobell_cli.core.model import fit_runtime_model

run = st.fixed_dictionaries(
    {
        "scale_out": st.integers(1, 256),
        "runtime_s": st.floats(0.01, 1e6, allow_nan=False, allow_infinity=False),
        "overlaps": st.dictionaries(st.sampled_from(["wc", "km", None, "?", "tpch"]),
                                    st.floats(0.0, 3.0, allow_nan=False), max_size=3),
        "status": st.sampled_from(["succeeded", "succeeded", "succeeded", "failed", None]),
    }
)
histories = st.lists(run, min_size=1, max_size=40).filter(
    lambda runs: any(r["status"] in ("succeeded", None) for r in runs))
queries = st.lists(st.integers(1, 1024), min_size=1, max_size=8)
slow = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@slow
@given(histories, queries)
def test_predictions_are_positive_and_finite_for_any_history(runs: list[dict],
                                                               q: list[int]) -> None:
    m = fit_runtime_model(runs)
    pred = m.predict(q)
    assert np.all(np.isfinite(pred)) and np.all(pred > 0)
    lower, upper = m.predict_interval(q, {"wc": 0.5})
    assert np.all(np.isfinite(lower)) and np.all(lower > 0) and np.all(upper >= lower)


@slow
@given(histories, st.integers(1, 512), st.floats(0, 2), st.floats(0, 2),
       st.sampled_from(["wc", "km", "stranger", None]))
def test_runtime_is_monotone_in_overlap(runs: list[dict], x: int, ov1: float, ov2: float,
                                        job: str | None) -> None:
    m = fit_runtime_model(runs)
    lo, hi = sorted([ov1, ov2])
    p_lo, p_hi = m.predict([x], {job: lo})[0], m.predict([x], {job: hi})[0]
    assert p_hi >= p_lo * (1 - 1e-12)
    a, b = m.interference(job)
    assert a >= 0 and b >= 0


@slow
@given(st.lists(st.integers(1, 128), min_size=1, max_size=3, unique=True),
       st.floats(1, 500), st.floats(0, 5000), st.floats(0, 50), st.floats(0, 2))
def test_one_or_two_scale_outs_are_honoured_exactly(xs: list[int], t0: float, t1: float,
                                                    t2: float, t3: float) -> None:
    xs = xs[:2]
    runs = [{"scale_out": x, "runtime_s": t0 + t1 / x + t2 * np.log(x) + t3 * x} for x in xs]
    m = fit_runtime_model(runs)
    np.testing.assert_allclose(m.predict(xs), [r["runtime_s"] for r in runs], rtol=1e-6)


@slow
@given(st.lists(st.integers(1, 128), min_size=6, max_size=20, unique=True),
       st.floats(1, 500), st.floats(0, 5000), st.floats(0, 50), st.floats(0, 2))
def test_noiseless_ernest_histories_are_recovered(xs: list[int], t0: float, t1: float,
                                                  t2: float, t3: float) -> None:
    """With enough scale-outs for the full basis plus CV, the model class is found again."""

    def f(x: np.ndarray) -> np.ndarray:
        return t0 + t1 / x + t2 * np.log(x) + t3 * x

    m = fit_runtime_model([{"scale_out": x, "runtime_s": float(f(np.float64(x)))} for x in xs])
    grid = np.linspace(min(xs), max(xs), 25)
    np.testing.assert_allclose(m.predict(grid), f(grid), rtol=1e-3)


@slow
@given(histories, st.lists(st.floats(0.05, 1.0), min_size=2, max_size=8),
       st.floats(0, 2))
def test_below_the_observed_range_fewer_nodes_are_never_faster(runs: list[dict],
                                                               fractions: list[float],
                                                               ov: float) -> None:
    """Below the smallest observed scale-out nothing was measured: the runtime may only
    grow as the scale-out shrinks, and the interval keeps containing the prediction."""
    m = fit_runtime_model(runs)
    x = np.sort(np.asarray(fractions) * m.scale_out_range_[0])
    for overlaps in (None, {"wc": ov}):
        pred = m.predict(x, overlaps)
        assert np.all(np.diff(pred) <= 1e-9 * pred[:-1])
        lower, upper = m.predict_interval(x, overlaps)
        assert np.all(lower <= pred * (1 + 1e-9)) and np.all(pred <= upper * (1 + 1e-9))
