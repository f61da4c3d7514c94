"""bench.studies.shape_quantile: its variants change the planner's distribution only while
inside, as described, and its paired statistics are the run-by-run differences."""

from __future__ import annotations

import math

import pytest

from bench.studies import shape_quantile as sq
from cobell_cli.core import predictive as pr
from cobell_cli.core.calibration import ratio_bound
from cobell_cli.core.plan import model_phase

# ten errors: at 0.95 the conformal rank is beyond the largest, the bound max(largest, t)
RATIOS = [0.95, 0.97, 1.0, 1.01, 1.02, 1.04, 1.05, 1.08, 1.1, 1.4]


def _local(t: float, placed: list[tuple[float, float]], shape: pr.Shape,
           ) -> tuple[float, float, float]:
    """predictive._local (or a variant's) at log scale-out t over (log scale-out, log error)."""
    at_s, logs = [s for s, _ in placed], [e for _, e in placed]
    kernel_at = {s: pr._kernel(t - s, pr.LOCAL_BANDWIDTH) for s in at_s}
    return pr._local(pr.NearErrors.of(at_s, logs), shape, pr.PRIOR_ERRORS, kernel_at)


def _ratio_at(shape: pr.Shape, p: float) -> float:
    return math.exp(shape.log_mean + shape.log_sd * shape.quantile(p))


def test_t_and_lower_bound_below_the_largest_error_and_leave_nothing_behind() -> None:
    shape = pr.Shape(RATIOS)
    today = _ratio_at(shape, 0.95)
    assert today == pytest.approx(ratio_bound(RATIOS, 0.95)) and today >= max(RATIOS)
    with sq.variant("t"):
        t = _ratio_at(shape, 0.95)
    with sq.variant("lower"):
        lower = _ratio_at(shape, 0.95)
    assert lower == pytest.approx(min(t, today))
    assert t < max(RATIOS)  # one 1.4 among errors near 1: the t bound stays below it
    assert _ratio_at(shape, 0.95) == today  # restored


@pytest.mark.parametrize("name", ["t", "lower", "dp"])
def test_a_variants_bound_within_a_threshold_means_p_meet_at_least_p(name: str) -> None:
    shape = pr.Shape(RATIOS)
    with sq.variant(name):
        for p in (0.5, 0.8, 0.9, 0.95, 0.97):
            z = shape.quantile(p)
            assert shape.cdf(z + 1e-9) >= p - 1e-6


def test_no_pair_sd_drops_the_pairs_term_while_inside_even_on_error() -> None:
    before = model_phase._pair_log_sd
    with pytest.raises(RuntimeError), sq.variant("no_pair_sd"):
        assert model_phase._pair_log_sd(None, [1.0], [{"x": 1.0}]) is None
        raise RuntimeError("inside")
    assert model_phase._pair_log_sd is before
    with pytest.raises(ValueError, match="unknown variant"), sq.variant("wider"):
        pass


def _cells(runtimes: list[float], node_s: list[float]) -> dict:
    default = [dict(i=i + 1, x=1, runtime_s=r, target_s=100.0, node_s=n,
                    overshoot_pct=max(0.0, r - 100.0), bootstrap=i == 0)
               for i, (r, n) in enumerate(zip(runtimes, node_s, strict=True))]
    oracle = [dict(i=i + 1, node_s=10.0) for i in range(len(runtimes))]
    return {"simulator/single/sgd": {"default": default, "oracle": oracle}}


def test_summary_and_paired_differences_are_run_by_run_after_the_bootstrap() -> None:
    base = sq.per_run(_cells([150.0, 90.0, 110.0, 95.0], [99.0, 11.0, 12.0, 10.0]))
    other = sq.per_run(_cells([150.0, 99.0, 104.0, 101.0], [99.0, 10.0, 11.0, 10.0]))
    assert sorted(k[1] for k in base) == [2, 3, 4]  # run 1 is the bootstrap's
    s = sq.summary(other)
    assert s["late_pct"] == pytest.approx(200 / 3)
    assert s["max_overshoot_pct"] == pytest.approx(4.0)
    assert s["node_s_ratio"] == pytest.approx(31 / 30)
    d = sq.paired(base, other)
    assert d["runs"] == 3
    assert d["cost"] == pytest.approx((-0.1 - 0.1 + 0.0) / 3)
    assert d["late_pp"] == pytest.approx((0 + 0 + 100) / 3)
    assert d["late_se"] == pytest.approx(100 / 3)
    assert sq.per_run(_cells([150.0, 90.0], [1.0, 1.0]), world="nodesim") == {}


def test_robust_one_huge_error_moves_neither_the_pooled_nor_the_local_scale() -> None:
    """Forty errors near 1 and one of 5x (a run 5x the curve): today the pooled and local log
    sds take it in; under `robust` neither moves by more than a few per cent."""
    quiet = [math.exp(0.02 * math.sin(i)) for i in range(40)]
    placed = [(math.log(40.0), math.log(r)) for r in quiet]
    with_outlier = [*placed, (math.log(41.0), math.log(5.0))]
    t = math.log(41.0)
    today = (pr.Shape([*quiet, 5.0]).log_sd, _local(t, with_outlier, pr.Shape([*quiet, 5.0]))[1])
    with sq.variant("robust"):
        before = pr.Shape(quiet)
        after = pr.Shape([*quiet, 5.0])
        local_before = _local(t, placed, before)[1]
        local_after = _local(t, with_outlier, after)[1]
    assert after.log_sd == pytest.approx(before.log_sd, rel=0.1)
    assert local_after == pytest.approx(local_before, rel=0.1)
    assert today[0] > 5 * after.log_sd and today[1] > 5 * local_after
    assert pr.Shape([*quiet, 5.0]).log_sd == today[0]  # restored


def test_weighted_median() -> None:
    assert sq.weighted_median([(3.0, 1.0), (1.0, 1.0), (2.0, 1.0)]) == 2.0
    assert sq.weighted_median([(1.0, 1.0), (10.0, 5.0)]) == 10.0


def test_robust_ratio_keeps_the_pooled_shape_and_scales_the_local_spread_by_mads() -> None:
    """The pooled sd and ranks stay today's (the tails); near the 5x error the local spread is
    the pooled sd times local / pooled MAD, about the pooled sd, not today's inflated one."""
    quiet = [math.exp(0.02 * math.sin(i)) for i in range(40)]
    placed = [(math.log(40.0 if i % 2 else 20.0), math.log(r)) for i, r in enumerate(quiet)]
    with_outlier = [*placed, (math.log(41.0), math.log(5.0))]
    shape = pr.Shape([*quiet, 5.0])
    t = math.log(41.0)
    today = _local(t, with_outlier, shape)
    with sq.variant("robust_ratio"):
        assert pr.Shape([*quiet, 5.0]).log_sd == shape.log_sd
        mean, spread, _ = _local(t, with_outlier, shape)
    assert spread == pytest.approx(shape.log_sd, rel=0.35)
    assert today[1] > 1.25 * spread
    assert abs(mean - shape.log_mean) < 0.01


def _placed_errors() -> tuple[list[float], list[pr.Error]]:
    """Twenty quiet errors at 16 executors and one of 1.5x from the lone run at 48."""
    quiet = [pr.Error(16.0, math.exp(0.02 * math.sin(i))) for i in range(20)]
    return [16.0] * 20 + [48.0], [*quiet, pr.Error(48.0, 1.5)]


def test_local_reads_a_lone_large_error_as_its_own_places_not_every_candidates() -> None:
    """Today the one 1.5x error at 48 sets the pooled shape's 95 % point, which 16's quiet
    errors scale (121 s on a 100 s prediction); under `local` it is standardised by 48's own
    wide scale, and 16's bound falls to 108 s (its local spread still shrunk to the pooled)."""
    runs, errors = _placed_errors()

    def bound_at_16() -> float:
        dist = pr.predictive([16.0, 48.0], [100.0, 40.0], [0.01, 0.01], runs, errors,
                             (16.0, 48.0))
        return dist.quantile_s(0, 0.95)

    today = bound_at_16()
    with sq.variant("local"):
        local = bound_at_16()
    assert today > 120.0 > 110.0 > local
    assert bound_at_16() == today  # restored


def test_interior_leaves_out_the_held_out_error_of_a_run_alone_at_an_edge() -> None:
    runs = [{"scale_out": x, "runtime_s": 1.0} for x in (8, 16, 16, 16, 16, 32)]

    class Model:
        def held_out_ratios(self) -> list[float]:
            return [1.3, 1.01, 0.99, 1.0, 1.02, 1.5]

    _, today = pr.held_out_errors(runs, Model(), None, False)  # type: ignore[arg-type,misc]
    with sq.variant("interior"):
        _, kept = pr.held_out_errors(runs, Model(), None, False)  # type: ignore[arg-type,misc]
    assert [e.scale_out for e in today] == [8.0, 16.0, 16.0, 16.0, 16.0, 32.0]
    assert [e.scale_out for e in kept] == [16.0] * 4
