"""Each candidate's predictive distribution (core/predictive.py) and the rule for a target no
candidate meets (core/plan/infeasible.py), on distributions built directly."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cobell_cli.core.calibration import Error, RatioDistribution
from cobell_cli.core.plan.infeasible import by_probability, unreachable
from cobell_cli.core.predictive import (
    PRIOR_ERRORS,
    Candidate,
    Predictive,
    Shape,
    predictive,
)

XS = [float(x) for x in range(4, 61)]


def _errors(rng: np.random.Generator, at: dict[float, tuple[int, float]]) -> list[Error]:
    """n errors of log sd `sd` at each scale-out of `at`: {scale_out: (n, sd)}."""
    return [Error(x, float(math.exp(rng.normal(0.0, sd)))) for x, (n, sd) in at.items()
            for _ in range(n)]


def _build(errors: list[Error], runs: list[float], model_sd: float = 0.05,
           observed: tuple[float, float] | None = None) -> Predictive:
    lo_hi = observed or (min(runs), max(runs))
    return predictive(XS, [100.0] * len(XS), [model_sd] * len(XS), runs, errors, lo_hi)


def _width(dist: Predictive, x: float) -> tuple[float, float]:
    """(median / 10 % quantile, 90 % quantile / median) at scale-out x."""
    j = XS.index(x)
    median = dist.quantile_s(j, 0.5)
    return median / dist.quantile_s(j, 0.1), dist.quantile_s(j, 0.9) / median


def test_a_candidate_never_run_is_wider_both_ways_than_one_run_many_times() -> None:
    rng = np.random.default_rng(1)
    errors = _errors(rng, {24.0: (30, 0.04), 12.0: (4, 0.04)})
    dist = _build(errors, [e.scale_out for e in errors])  # type: ignore[misc]
    at_24 = _width(dist, 24.0)
    for never in (18.0, 40.0, 60.0):
        wider = _width(dist, never)
        assert wider[0] > at_24[0] and wider[1] > at_24[1], never
    # the further from the runs, the wider
    assert _width(dist, 60.0)[1] > _width(dist, 40.0)[1] > _width(dist, 30.0)[1]


def test_the_width_follows_the_errors_near_each_candidate() -> None:
    rng = np.random.default_rng(2)
    errors = _errors(rng, {8.0: (20, 0.01), 40.0: (20, 0.10)})
    dist = _build(errors, [e.scale_out for e in errors])  # type: ignore[misc]
    assert _width(dist, 8.0)[1] < 1.04 < 1.10 < _width(dist, 40.0)[1]
    pooled = RatioDistribution([e.ratio for e in errors])
    # one pooled width would give both the same bound: the pooled 90 % ratio
    assert dist.candidates[XS.index(8.0)].scale < pooled.log_sd < \
        dist.candidates[XS.index(40.0)].scale


def test_where_no_errors_are_near_the_spread_is_the_pooled_one() -> None:
    rng = np.random.default_rng(3)
    errors = _errors(rng, {8.0: (10, 0.02), 10.0: (10, 0.08)})
    runs = [e.scale_out for e in errors]
    dist = _build(errors, runs, observed=(4.0, 60.0))  # no extrapolation term anywhere
    far = dist.candidates[XS.index(60.0)]
    assert far.spread == pytest.approx(dist.shape.log_sd, rel=1e-3)
    assert far.location == pytest.approx(dist.shape.log_mean, abs=1e-4)
    assert far.scale == pytest.approx(far.spread * math.sqrt(1 + 1 / (far.runs_near + 1)))
    # with few errors near, the local spread is pulled towards the pooled one
    near = dist.candidates[XS.index(8.0)]
    local = float(np.std([math.log(e.ratio) for e in errors if e.scale_out == 8.0]))
    assert local < near.spread < dist.shape.log_sd
    assert near.weight > PRIOR_ERRORS


def test_no_two_neighbours_share_a_width_by_construction() -> None:
    rng = np.random.default_rng(4)
    errors = _errors(rng, {16.0: (8, 0.03), 24.0: (12, 0.05), 32.0: (5, 0.04)})
    dist = _build(errors, [e.scale_out for e in errors])  # type: ignore[misc]
    scales = [c.scale for c in dist.candidates]
    assert all(a != b for a, b in pairwise(scales))


def test_beyond_the_runs_the_models_own_growth_widens_it() -> None:
    rng = np.random.default_rng(5)
    errors = _errors(rng, {24.0: (20, 0.03)})
    runs = [24.0] * 20
    flat = predictive(XS, [100.0] * len(XS), [0.05] * len(XS), runs, errors, (24.0, 24.0))
    growing = [0.05 + max(0.0, math.log(x / 24.0)) for x in XS]
    wide = predictive(XS, [100.0] * len(XS), growing, runs, errors, (24.0, 24.0))
    j = XS.index(48.0)
    assert wide.candidates[j].extrapolation == pytest.approx(math.log(48 / 25))
    assert wide.candidates[j].scale > flat.candidates[j].scale
    assert wide.candidates[XS.index(24.0)].scale == flat.candidates[XS.index(24.0)].scale


def test_with_the_pooled_errors_everywhere_p_meet_is_the_pooled_conformal_one() -> None:
    """The distribution generalises calibration.meet_probability: at a candidate whose local
    errors are the pooled ones and with no extra uncertainty, it is the same number."""
    ratios = [0.95, 0.97, 1.0, 1.01, 1.02, 1.04, 1.05, 1.08, 1.1, 1.2]
    shape = Shape(ratios)
    c = Candidate(24.0, 100.0, shape.log_mean, shape.log_sd, math.inf, math.inf, 0.0)
    dist = Predictive([c], shape)
    for threshold in (90.0, 100.0, 104.5, 110.0, 130.0):
        expected = RatioDistribution(ratios).meet_probability(threshold / 100.0)
        assert dist.meet_probability(0, threshold) == pytest.approx(expected, abs=1e-9)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(
    positions=st.lists(st.sampled_from([4.0, 8.0, 16.0, 24.0, 32.0, 48.0, 60.0]),
                       min_size=3, max_size=40),
    logs=st.lists(st.floats(-0.3, 0.3), min_size=40, max_size=40),
    p=st.floats(0.5, 0.99),
    threshold=st.floats(50.0, 200.0),
)
def test_the_upper_bound_within_the_target_means_p_meet_at_least_p(
        positions: list[float], logs: list[float], p: float, threshold: float) -> None:
    """Also at the bound itself: where it is one of the errors (a conformal rank, or the
    largest beyond the t tail), round-off puts it an ulp either side, and below it P read one
    rank less than p. The rule for an unreachable target compares every candidate with the
    aim's P there: one rank less once let a candidate 24x over the target in."""
    errors = [Error(x, math.exp(v)) for x, v in zip(positions, logs, strict=False)]
    dist = _build(errors, positions)
    for j in range(len(XS)):
        assert dist.meet_probability(j, dist.quantile_s(j, p)) >= p - 1e-6
        if j % 7:
            continue
        if dist.quantile_s(j, p) <= threshold:
            assert dist.meet_probability(j, threshold) >= p - 1e-9
        assert dist.quantile_s(j, 0.1) <= dist.quantile_s(j, 0.5) <= dist.quantile_s(j, 0.9)


# --- the rule when no candidate meets the target --------------------------------------------


def _candidate(x: float, median: float, spread: float, runs: float, extra: float = 0.0,
               ) -> Candidate:
    return Candidate(x, median, 0.0, spread, runs + PRIOR_ERRORS, runs, extra)


def _normal_shape(n: int = 200) -> Shape:
    """n errors at the normal quantiles, log sd about 0.04: a shape close to the normal."""
    from statistics import NormalDist

    return Shape([math.exp(0.04 * NormalDist().inv_cdf((i + 0.5) / n)) for i in range(n)])


def test_a_history_stuck_at_one_scale_out_moves_to_where_a_run_could_meet_the_target() -> None:
    """24 ran 30 times and misses half the time; 26 never ran: its median meets the target by
    7 %, but the model's own interval beyond the runs is wide, so its P(meet) is within one
    standard error of 24's, and the cheaper 24 would be kept, where one more run teaches
    nothing. Exploration takes 26: as likely to meet it, and one run there landing at its
    median would bring it to the confidence."""
    shape = _normal_shape()
    target = 100.0
    dist = Predictive([_candidate(24, 99.5, 0.04, 30.0),
                       _candidate(26, 93.0, 0.04, 0.5, extra=0.35)], shape)
    costs = [24 * 99.5, 26 * 93.0]
    p = [dist.meet_probability(j, target) for j in range(2)]
    assert 0.5 < p[0] < p[1] < p[0] + 0.08 < 0.9  # within one standard error: no reason to pay
    assert dist.meet_probability_after_run(0, target) < 0.9 <= \
        dist.meet_probability_after_run(1, target)
    choice = unreachable(dist, costs, target, 0.9)
    assert choice.index == 1 and choice.explored_from == 0
    # without the move the rule would have kept 24
    assert by_probability(p, costs, shape.n) == 0


def test_exploration_is_not_taken_where_the_choice_itself_can_learn() -> None:
    shape = _normal_shape()
    dist = Predictive([
        _candidate(24, 103.0, 0.04, 30.0),
        _candidate(28, 90.0, 0.04, 0.5, extra=0.06),
    ], shape)
    choice = unreachable(dist, [24 * 103.0, 28 * 90.0], 100.0, 0.9)
    assert choice.index == 1 and choice.explored_from is None  # the likelier, learns itself


def _per_run(scale_outs: list[float], runs: list[float], errors: list[Error],
             bandwidth: float) -> list[tuple[float, float, float, float]]:
    """Each candidate's (location, spread, weight, runs near) with one kernel per run and
    error, as predictive() computed them before it computed one per distinct scale-out."""
    from cobell_cli.core.predictive import MIN_LOG_SD

    shape = Shape.of([e.ratio for e in errors])
    assert shape is not None
    placed = [(math.log(e.scale_out), math.log(e.ratio)) for e in errors]
    logs = [math.log(x) for x in runs]
    out = []
    for x in scale_outs:
        t = math.log(x)
        near = sum(math.exp(-0.5 * ((t - r) / bandwidth) ** 2) for r in logs)
        weights = [math.exp(-0.5 * ((t - s) / bandwidth) ** 2) for s, _ in placed]
        total = sum(weights) + PRIOR_ERRORS
        mean = (sum(w * e for w, (_, e) in zip(weights, placed, strict=True))
                + PRIOR_ERRORS * shape.log_mean) / total
        pooled_sd = max(shape.log_sd, MIN_LOG_SD)
        spread = (sum(w * (e - mean) ** 2 for w, (_, e) in zip(weights, placed, strict=True))
                  + PRIOR_ERRORS * (pooled_sd ** 2 + (shape.log_mean - mean) ** 2)) / total
        out.append((mean, math.sqrt(spread), total, near))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sums_per_distinct_scale_out_give_the_per_run_numbers(seed: int) -> None:
    """Runs repeat scale-outs (1000 runs at 40 of them here): predictive() computes each
    candidate's kernel once per distinct scale-out and sums the errors by scale-out group; the
    numbers are the per-run ones (the run counts near, to the last bit; the errors' location,
    spread and weight, regrouped, to rounding)."""
    from cobell_cli.core.predictive import LOCAL_BANDWIDTH

    rng = np.random.default_rng(seed)
    levels = sorted({float(x) for x in rng.integers(1, 200, size=40)})
    runs = [float(rng.choice(levels)) for _ in range(1000)]
    errors = [Error(x, float(math.exp(rng.normal(0.0, 0.1)))) for x in runs[:700]]
    dist = predictive(XS, [100.0] * len(XS), [0.05] * len(XS), runs, errors,
                      (min(runs), max(runs)))
    got = [(c.location, c.spread, c.weight, c.runs_near) for c in dist.candidates]
    want = _per_run(XS, runs, errors, LOCAL_BANDWIDTH)
    assert [g[3] for g in got] == [w[3] for w in want]
    assert [g[:3] for g in got] == [pytest.approx(w[:3], rel=1e-12, abs=1e-15) for w in want]


def test_a_run_landing_at_the_centre_narrows_the_spread_as_one_more_error_would() -> None:
    """`after_run` (the exploration rule's "what one more run there would teach") is the
    candidate's local estimate with one more error of no deviation at its own scale-out:
    computed here from the errors themselves, not from after_run's formula."""
    from cobell_cli.core.predictive import LOCAL_BANDWIDTH, NearErrors, _kernel, _local

    rng = np.random.default_rng(3)
    errors = _errors(rng, {8.0: (4, 0.10), 16.0: (3, 0.05), 40.0: (2, 0.20)})
    dist = _build(errors, [8.0, 16.0, 40.0])
    assert dist.shape is not None
    for x in (8.0, 12.0, 16.0, 40.0):
        j = XS.index(x)
        now = dist.candidates[j]
        placed = [(math.log(e.scale_out), math.log(e.ratio)) for e in errors]
        placed.append((math.log(x), now.location))  # one more run, where it is centred
        near = NearErrors.of([s for s, _ in placed], [e for _, e in placed])
        kernel = {s: _kernel(math.log(x) - s, LOCAL_BANDWIDTH) for s, _ in placed}
        location, spread, weight = _local(near, dist.shape, PRIOR_ERRORS, kernel)
        after = now.after_run()
        assert after.location == pytest.approx(location, abs=1e-12)
        assert after.spread == pytest.approx(spread, rel=1e-9)
        assert after.weight == pytest.approx(weight, rel=1e-12)
        assert after.runs_near == pytest.approx(now.runs_near + 1, rel=1e-12)
        assert after.spread < now.spread
