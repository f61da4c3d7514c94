"""core/memory/: the experts recover the functions they model, selection prefers the simplest
form that predicts as well, the bound respects memory failures, reservations round as the
cluster grants them, and Spark's memory strings parse as Spark parses them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cobell_cli.core.memory.experts import EXPERTS, expert
from cobell_cli.core.memory.model import STEP_MB, MemoryEstimate, MemoryModel
from cobell_cli.core.memory.records import MB, MemoryObservation
from cobell_cli.core.memory.select import forward_folds, select
from cobell_cli.core.memory.sizing import ContainerRules, granted, largest_grant, reserve
from cobell_cli.core.memory.units import memory_mb

ZS = [10.0, 20.0, 40.0, 80.0, 160.0]


@pytest.mark.parametrize(
    ("name", "truth"),
    [
        ("constant", lambda z: 700.0),
        ("linear", lambda z: 400.0 + 3.0 * z),
        ("log", lambda z: 300.0 + 90.0 * math.log(z)),
        ("power", lambda z: 50.0 * z**0.6),
        ("saturating", lambda z: 500.0 + 800.0 * (1 - math.exp(-z / 40.0))),
    ],
)
def test_each_expert_recovers_its_own_function(name, truth) -> None:
    fitted = expert(name).fit(ZS, [truth(z) for z in ZS])
    assert fitted is not None
    for z in (15.0, 120.0, 320.0):  # between and beyond the runs
        assert fitted.predict(z) == pytest.approx(truth(z), rel=0.02)


def test_an_expert_needs_as_many_distinct_inputs_as_parameters() -> None:
    assert expert("linear").fit([10.0, 10.0], [500.0, 520.0]) is None
    assert expert("saturating").fit([10.0, 20.0], [500.0, 520.0]) is None
    assert expert("constant").fit([10.0], [500.0]) is not None


def test_memory_never_falls_as_input_grows() -> None:
    for exp in EXPERTS:
        fitted = exp.fit(ZS, [900.0, 850.0, 800.0, 760.0, 700.0])
        if fitted is not None:
            assert fitted.predict(400.0) >= fitted.predict(10.0) - 1e-6


def _runs(need, sizes_mb=(100, 150, 225, 340, 510), scale_outs=(1, 3)):
    return [
        MemoryObservation(int(s * MB), x, need(s, x)) for s in sizes_mb for x in scale_outs
    ]


def test_forward_folds_train_only_on_smaller_inputs() -> None:
    runs = _runs(lambda s, x: 600.0)
    folds = forward_folds(runs)
    assert folds, "five sizes leave folds to judge on"
    for train, test in folds:
        assert all(r.input_bytes < test.input_bytes for r in train)
        assert len({r.input_bytes for r in train}) >= 2


def test_selection_finds_a_per_executor_function_and_prefers_the_constant_when_flat() -> None:
    per_executor = select(_runs(lambda s, x: 500.0 + 4.0 * s / x), fallback=None)  # type: ignore[arg-type]
    assert per_executor.candidate.feature == "per_executor"
    assert per_executor.candidate.expert.name in {"linear", "power", "saturating"}
    # nearly flat (±1 %): every form predicts about as well, so the simplest is chosen
    wobble = {100: 1.0, 150: 1.01, 225: 0.99, 340: 1.0, 510: 1.01}
    flat = select(_runs(lambda s, x: 800.0 * wobble[s]), fallback=None)  # type: ignore[arg-type]
    assert flat.candidate.label == "constant"


def test_model_extrapolates_and_bounds_above_the_point() -> None:
    runs = _runs(lambda s, x: 500.0 + 2.0 * s)
    model = MemoryModel().fit(runs)
    est = model.estimate(int(800 * MB), 2, confidence=0.95)
    assert est.predicted_mb == pytest.approx(500 + 2 * 800, rel=0.05)
    assert est.upper_mb >= est.predicted_mb


def test_a_memory_failure_lifts_the_bound_above_the_failed_reservation() -> None:
    runs = _runs(lambda s, x: 600.0)
    failed = MemoryObservation(int(400 * MB), 1, None, reserved_mb=2048.0, failed=True)
    model = MemoryModel().fit([*runs, failed])
    at_failed = model.estimate(int(400 * MB), 1, confidence=0.9)
    assert at_failed.failed_below_mb == 2048.0
    assert at_failed.upper_mb >= 2048.0 + STEP_MB
    # less input per executor than the failure had (and the constant ignores the input):
    # the failure proves nothing there
    assert model.estimate(int(100 * MB), 3, confidence=0.9).failed_below_mb is None


def test_nearly_equal_inputs_determine_no_power_and_the_bound_stays_finite() -> None:
    """Two runs at almost the same input and different peaks fit an enormous exponent; its
    prediction at a larger input once overflowed (bench/memory_e2e.py crashed there): such
    runs determine no power, and the model's bound stays finite."""
    assert expert("power").fit([100.0, 100.0000001], [600.0, 1200.0]) is None
    steep = expert("power").fit([100.0, 200.0], [600.0, 600.0 * 2**3.9])
    assert steep is not None and steep.b == pytest.approx(3.9)
    runs = [MemoryObservation(int(100 * MB), 1, 600.0), MemoryObservation(int(100 * MB) + 1, 1,
                                                                          1200.0),
            MemoryObservation(int(400 * MB), 1, 900.0)]
    est = MemoryModel().fit(runs).estimate(int(800 * MB), 1, confidence=0.95)
    assert math.isfinite(est.upper_mb)


def test_model_without_any_measured_run_refuses() -> None:
    with pytest.raises(ValueError, match="no run"):
        MemoryModel().fit([MemoryObservation(10 * MB, 1, None, 1024.0, failed=True)])


@pytest.mark.parametrize(
    ("need", "rules", "heap", "overhead", "container"),
    [
        (1000, ContainerRules("standalone"), 1024, 0, 1024),
        (100, ContainerRules("standalone"), 512, 0, 512),  # Spark's smallest executor
        # YARN: 1024 + 384 = 1408 -> 2048; the slack is heap, the overhead given explicitly
        (1000, ContainerRules("yarn"), 2048 - 384, 384, 2048),
        (1000, ContainerRules("yarn", allocation_mb=512), 1536 - 384, 384, 1536),
        (5000, ContainerRules("yarn", allocation_mb=1024), 6144 - 564, 564, 6144),
    ],
)
def test_reservation_rounds_as_the_cluster_grants(need, rules, heap, overhead, container) -> None:
    got = reserve(need, rules)
    assert (got.executor_memory_mb, got.executor_overhead_mb, got.container_mb) == (
        heap, overhead, container,
    )  # fmt: skip
    assert got.executor_memory_mb >= need
    assert got.executor_overhead_mb >= (384 if rules.yarn else 0)


def test_reservation_covers_a_native_need_and_says_when_it_does_not_fit() -> None:
    got = reserve(1000, ContainerRules("yarn", allocation_mb=1024, maximum_mb=2048), 1100)
    assert got.executor_overhead_mb >= 1100 and got.executor_memory_mb >= 1000
    assert got.container_mb == 3072 and not got.fits


@pytest.mark.parametrize(
    ("heap", "rules", "overhead", "terms"),
    [
        # the sums, written out: heap + overhead + rounding = container
        (512, ContainerRules("yarn", allocation_mb=1024), None, (512, 384, 128, 1024)),
        (512, ContainerRules("yarn", allocation_mb=128), None, (512, 384, 0, 896)),
        (4096, ContainerRules("yarn", allocation_mb=512), None, (4096, 410, 102, 4608)),
        (50, ContainerRules("yarn", allocation_mb=512), None, (50, 384, 78, 512)),
        (2048, ContainerRules("yarn", allocation_mb=1024), 1000, (2048, 1000, 24, 3072)),
        (700, ContainerRules("standalone"), None, (700, 0, 0, 700)),
    ],
)
def test_a_given_heap_is_granted_its_overhead_and_the_schedulers_rounding(
    heap, rules, overhead, terms
) -> None:
    got = granted(heap, rules, overhead)
    assert (got.executor_memory_mb, got.executor_overhead_mb, got.rounding_mb,
            got.container_mb) == terms


@pytest.mark.parametrize(
    ("text", "mb"), [("512m", 512), ("4g", 4096), ("2048", 2048), ("4G", 4096), ("1t", 1024**2),
                     ("1536k", 2), ("2gb", 2048)]
)
def test_spark_memory_strings(text, mb) -> None:
    assert memory_mb(text) == mb


@pytest.mark.parametrize("text", ["4gigs", "1.5g", "", "-1g", "0", "g", "99999999999999999999g"])
def test_bad_memory_strings_name_the_forms(text) -> None:
    with pytest.raises(ValueError, match="memory"):
        memory_mb(text)


def test_the_selector_takes_the_nearest_jobs_function_and_scales_it_to_the_own_runs() -> None:
    from cobell_cli.core.memory.experts import Fitted
    from cobell_cli.core.memory.selector import KnownJob, nearest

    known = [
        KnownJob("cache", (0.0, 0.9, 0.05, 1.0), "constant", Fitted("constant", 600.0, 0.0)),
        KnownJob("collect", (1.0, 0.1, 0.30, 1.5), "linear(per_executor)",
                 Fitted("linear", 400.0, 3.0)),
    ]
    neighbour = nearest((0.9, 0.15, 0.25, 1.4), known)
    assert neighbour is not None and neighbour.job == "collect"
    # one run only: the form cannot be fitted, the neighbour's is scaled to the run
    own = [MemoryObservation(int(200 * MB), 2, 1.5 * (400 + 3 * 100))]
    model = MemoryModel(neighbour=neighbour).fit(own)
    assert model.source_ == "selector" and model.candidate_.label == "linear(per_executor)"
    assert model.predict(int(400 * MB), 1) == pytest.approx(1.5 * (400 + 3 * 400), rel=0.05)
    assert "collect" in model.describe()["chosen_by"]
    alone = MemoryModel().fit(own[:1])
    assert alone.source_ == "default" and alone.candidate_.label == "constant"


def test_a_need_beyond_the_largest_container_gets_the_largest_not_a_refused_one() -> None:
    """A bound that ran away (few held-out ratios, garbage in the peaks) asked YARN for a
    351 GB heap in bench.memory_e2e: YARN refuses such an application outright, so the plan
    reserves the largest container the cluster grants and says so."""
    from cobell_cli.core.memory.plan import MemoryRequest, _sized

    rules = ContainerRules("yarn", allocation_mb=1024, maximum_mb=8192)
    largest = largest_grant(rules)
    assert largest is not None and largest.container_mb == 8192 and not largest.fits
    assert largest.executor_memory_mb + largest.executor_overhead_mb == 8192
    assert largest.executor_overhead_mb >= 0.1 * largest.executor_memory_mb
    got = _sized(4, 100_000.0, 350_000.0, MemoryRequest(rules=rules, confidence=0.95))
    assert (got.container_mb, got.fits) == (8192, False)
    assert got.executor_memory_mb == largest.executor_memory_mb
    small = _sized(4, 1000.0, 1500.0, MemoryRequest(rules=rules, confidence=0.95))
    assert small.fits and small.container_mb < 8192
    assert largest_grant(ContainerRules("yarn")) is None  # no maximum known: nothing to cap


def test_few_wild_held_out_ratios_borrow_the_spread_across_jobs_not_a_t_on_2_dof() -> None:
    """Three held-out ratios [0.42, 1.40, 1.63] made the runtime's normal-theory bound (t on
    2 dof) a factor of 11.85 and bench.memory_e2e reserved a 27 GB heap for a 2 GB need. With
    a prior worth 4 ratios of spread 10 % the bound is the posterior predictive's quantile:
    2.33 (scipy.stats.t.ppf(0.95, 7) on the textbook NIX posterior, computed by hand); with
    no ratio at all, the prior's own predictive, 1.352 (t.ppf(0.95, 4) x sqrt(2 x 0.01))."""
    from cobell_cli.core.calibration import ratio_bound
    from cobell_cli.core.memory.bound import RatioPrior, ratio_upper

    prior = RatioPrior(mean=0.0, kappa=1.0, dof=4.0, scale2=0.01)
    wild = [0.42, 1.40, 1.63]
    assert ratio_bound(wild, 0.95) > 10  # the tail the memory bound does not take
    assert ratio_upper(wild, 0.95, prior) == pytest.approx(2.32963, rel=2e-3)
    assert ratio_upper([], 0.95, prior) == pytest.approx(1.35187, rel=2e-3)
    assert ratio_upper([0.4, 0.42, 0.44], 0.95, prior) == 1.0  # never below the point
    # many ratios of the job's own: its spread, not the prior's (20 ratios at +-30 %)
    own = [1.3, 1 / 1.3] * 10
    assert ratio_upper(own, 0.95, prior) > 1.4 > ratio_upper([], 0.95, prior)


def test_the_bound_covers_the_next_ratio_as_often_as_it_says() -> None:
    """Jobs drawn from the prior itself (a spread per job from the scaled inverse chi-square,
    a bias from the normal), 2 held-out ratios each: the 0.9 bound covers the next ratio of
    about 90 % of the jobs; an over-confident rule would cover far fewer."""
    import random

    from cobell_cli.core.memory.bound import RatioPrior, ratio_upper

    prior = RatioPrior(mean=0.05, kappa=2.0, dof=6.0, scale2=0.15**2)
    rng = random.Random(7)
    covered, jobs = 0, 4000
    for _ in range(jobs):
        var = prior.dof * prior.scale2 / rng.gammavariate(prior.dof / 2, 2.0)
        mean = rng.gauss(prior.mean, math.sqrt(var / prior.kappa))
        ratios = [math.exp(rng.gauss(mean, math.sqrt(var))) for _ in range(3)]
        covered += ratios[2] <= ratio_upper(ratios[:2], 0.9, prior)
    assert covered / jobs == pytest.approx(0.9, abs=0.02)


def test_the_prior_is_fitted_from_the_spread_across_jobs() -> None:
    """Forty jobs whose log ratios all scatter by 20 % around +10 %: the fitted prior says so
    (the marginal likelihood's maximum), and a job of two ratios then borrows that spread."""
    import random

    from cobell_cli.core.memory.bound import fit_prior

    rng = random.Random(3)
    groups = [[math.exp(rng.gauss(0.10, 0.20)) for _ in range(rng.randint(2, 6))]
              for _ in range(40)]
    prior = fit_prior(groups)
    assert math.sqrt(prior.scale2) == pytest.approx(0.20, abs=0.04)
    assert prior.mean == pytest.approx(0.10, abs=0.06)
    with pytest.raises(ValueError, match="two"):
        fit_prior([[1.0, 1.1], [0.9]])


def test_a_peaks_demand_discounts_its_slack_and_covers_what_failed() -> None:
    """Garbage fills a share g of the slack, so the heap peak follows the reservation: the live
    heap is the peak less g / (1 - g) of the slack, at least f of the peak, and the need h times
    it, never above the heap the run succeeded with. With g = 0.25, h = 1.1, f = 0.5, worked
    out by hand: a 1000 MB peak at 2000 MB holds 333 MB of garbage (need 733); at 5000 MB the
    floor keeps 500 live (need 550); at 1000 MB the heap it had caps the need."""
    from cobell_cli.core.memory.demand import DemandRule, demand_mb

    rule = DemandRule(garbage_share=0.25, headroom=1.1, live_floor=0.5)
    assert demand_mb(1000.0, 2000.0, rule) == pytest.approx(1.1 * (1000 - 1000 / 3))
    assert demand_mb(1000.0, 5000.0, rule) == pytest.approx(550.0)
    assert demand_mb(1000.0, 1000.0, rule) == 1000.0
    assert demand_mb(900.0, None, rule) == pytest.approx(990.0)  # no reservation known
    raw = DemandRule(garbage_share=0.0, headroom=1.03, live_floor=1.0)  # the peak as it is
    assert demand_mb(700.0, 2048.0, raw) == pytest.approx(721.0)


def test_a_demand_stays_within_what_the_jobs_reservations_prove() -> None:
    """Memory never falls as the input per executor grows, so a heap that succeeded at a
    larger input caps a demand (a generous first run's peak is mostly garbage), and a heap
    that failed for memory at a smaller input lifts it a step above (a sampled peak missed the
    top); outcomes at the other side of the input prove nothing, and no demand exceeds the
    heap its own run succeeded with. Worked out by hand with demand.DEMAND: a 5000 MB peak at
    8192 MB reads 1.06 x 0.96 x 5000 = 5088 MB; a 900 MB peak at 1500 MB reads 915.8 MB."""
    from cobell_cli.core.memory.demand import observations

    def run(mb_in: float, heap: int, peak: float | None) -> dict[str, object]:
        status = {"status": "succeeded", "peak_memory_mb": peak} if peak else {
            "status": "failed", "failure_reason": "memory"}
        return {"input_bytes": int(mb_in * MB), "scale_out": 2, "executor_memory_mb": heap,
                **status}

    generous = run(1000, 8192, 5000.0)
    alone = observations([generous])[0].demand_mb
    assert alone == pytest.approx(5088.0)
    # a 3000 MB heap succeeded at twice the input: the need here is below it
    capped = observations([generous, run(2000, 3000, 2000.0)])[0].demand_mb
    assert capped == 3000
    # at a smaller input (by more than records.SAME_INPUT) it proves nothing here
    assert observations([generous, run(800, 3000, 2000.0)])[0].demand_mb == pytest.approx(alone)
    # a failure at 1000 MB with less input lifts a 915.8 MB reading a step above it
    low = run(1600, 1500, 900.0)
    assert observations([low])[0].demand_mb == pytest.approx(915.84)
    assert observations([run(1000, 1000, None), low])[1].demand_mb == 1000 + 64
    # a failure at a larger input proves nothing here; one above the run's own heap lifts
    # it only to that heap (it succeeded with it)
    assert observations([run(2000, 1000, None), low])[1].demand_mb == pytest.approx(915.84)
    assert observations([run(1000, 1490, None), low])[1].demand_mb == 1500


_RUN = st.tuples(st.integers(1, 64), st.integers(1, 8), st.integers(512, 4096),
                 st.one_of(st.none(), st.floats(100.0, 4096.0)))


@given(st.lists(_RUN, max_size=30))
def test_the_sorted_proofs_are_the_pairwise_ones(rows) -> None:
    """demand.consistent sorts by input and keeps running extremes (a long history must not
    cost n²): for any history its demands are those of comparing every pair of runs, by
    records.at_least, as its docstring states the rule; never above a run's own heap."""
    from cobell_cli.core.memory.demand import consistent
    from cobell_cli.core.memory.records import at_least

    obs = [MemoryObservation(size * MB, x, demand, float(heap), demand is None)
           for size, x, heap, demand in rows]
    done = [o for o in obs if o.demand_mb is not None]
    failed = [o for o in obs if o.failed]
    for o, got in zip(obs, consistent(obs), strict=True):
        if o.failed:
            assert got == o
            continue
        below = min(p.reserved_mb for p in done if at_least(p, o, "per_executor"))
        above = [f.reserved_mb + STEP_MB for f in failed if at_least(o, f, "per_executor")]
        want = min(max([min(o.demand_mb, below), *above]), o.reserved_mb)
        assert got.demand_mb == pytest.approx(want) and got.demand_mb <= o.reserved_mb


@pytest.mark.parametrize("share", [0.04, 0.26, 0.55])  # the tune set's garbage shares
def test_reservations_come_down_from_a_generous_one_and_stop_failing(share) -> None:
    """The feedback loop of bench.memory_e2e: each run's peak (live heap + `share` of the
    slack) fed back as its demand asked for a larger reservation, which showed a larger peak;
    and a peak near the need (little slack, little garbage) fell short of it: a memory failure.
    A job with a fixed live heap, first run at 8 GB: the reservations come down, never run
    away again, and once the model has its own runs at most one run fails for memory (its
    failure lifts the bound above it). How fast they come down is the garbage's: the demand is
    the peak as it is (demand.py), and the constant averages the generous first runs' peaks
    with the later ones, so with a quarter of the slack garbage the 20th run is within 2x the
    need, with over half of it (the simulated worlds' worst) still near 3x."""
    from cobell_cli.core.memory.demand import observations

    live, need, size = 1000.0, 1150.0, int(4000 * MB)
    history, reserved, failures, seq = [], 8192, [], []
    for i in range(20):
        row = {"input_bytes": size + i * MB, "scale_out": 4, "executor_memory_mb": reserved}
        if reserved < need:
            history.append({**row, "status": "failed", "failure_reason": "memory"})
            failures.append(i)
        else:
            peak = live + share * (reserved - live)
            history.append({**row, "status": "succeeded", "peak_memory_mb": peak})
        model = MemoryModel().fit(observations(history))
        upper = model.estimate(size + (i + 1) * MB, 4, confidence=0.95).upper_mb
        reserved = reserve(upper, ContainerRules("standalone")).executor_memory_mb
        seq.append(reserved)
    assert max(seq[3:]) <= max(seq[:3])  # no runaway once the model has its own runs
    # still coming down, or already at the need (a failure just below it lifted the bound)
    # (a grant: reservations move in the cluster's steps)
    lifted = reserve(need + STEP_MB, ContainerRules("standalone")).executor_memory_mb
    assert seq[-1] < seq[2] and seq[-1] <= max(min(seq[:10]), lifted)
    assert need <= reserved <= (2 if share <= 0.26 else 3.2) * need
    assert len([i for i in failures if i >= 3]) <= 1


def test_held_out_ratios_are_taken_on_the_reserved_scale() -> None:
    """No executor gets less than Spark's 512 MB: a demand of 150 MB predicted at 300 MB is
    no error (both reserve 512), 700 MB predicted at 300 MB is one of 700 / 512, and 300 MB
    predicted at 700 MB one of 512 / 700; above the floor a ratio is the plain one."""
    from cobell_cli.core.memory.select import grant_ratio

    assert grant_ratio(150.0, 300.0) == 1.0
    assert grant_ratio(700.0, 300.0) == pytest.approx(700 / 512)
    assert grant_ratio(300.0, 700.0) == pytest.approx(512 / 700)
    assert grant_ratio(1500.0, 1000.0) == pytest.approx(1.5)
    # with the prior (the candidate bound, bound.py), a job whose every demand, and every
    # prediction of one, sits below the floor has nothing to widen its bound with; the
    # default (the conformal bound) takes the ratios as they are
    from cobell_cli.core.memory.bound import DEFAULT_PRIOR

    flat = [MemoryObservation(int(s * MB), 1, d) for s, d in
            zip((100, 150, 225, 340, 510), (120.0, 150.0, 90.0, 160.0, 140.0), strict=True)]
    assert set(MemoryModel(prior=DEFAULT_PRIOR).fit(flat).ratios_) == {1.0}
    assert 1.0 not in set(MemoryModel().fit(flat).ratios_)


def test_the_default_bound_is_the_conformal_rule_with_literal_margins() -> None:
    """The default bound (model.memory_ratio_bound, main's rule kept as the default: the prior
    did not win held out): expected values written out, not computed from the constants, so
    a changed TAIL_MARGIN (1.05) or MIN_MARGIN (1.25) fails here."""
    from cobell_cli.core.memory.model import memory_ratio_bound

    wild = [0.42, 1.40, 1.63]
    assert memory_ratio_bound(wild, 0.95) == pytest.approx(1.7115)  # 1.63 x 1.05, not 11.85
    assert memory_ratio_bound([0.8, 0.85, 0.9], 0.95) == 1.0  # never below the point
    assert memory_ratio_bound([1.1], 0.95) == 1.25  # one ratio says nothing of a tail
    ordered = [1 + i / 100 for i in range(40)]
    assert memory_ratio_bound(ordered, 0.9) == pytest.approx(1.36)  # the 37th of 40: conformal
    model = MemoryModel()
    assert model.prior is None  # the default carries no prior


def test_a_memory_failure_stays_in_the_bound_as_the_ratio_it_proves() -> None:
    """Demands read from peaks can be biased low (a GC room the rule does not know), which
    their own held-out ratios cannot show: a failure can. A run at 800 MB per executor failed
    at 2300 MB where the (exact) model predicts 2100: the need there is above 2300 + a step,
    so the model's ratio there is at least 2364 / 2100, and the bound keeps it, x 1.05 as
    the largest ratio, however many larger runs follow (the folds are theirs: ratios of 1).
    The model that sized the failed run predicts it (the runs before it). A candidate
    (`learn_failures`), not the default: bench/results/memory_demand_candidates.md."""

    def demand(z: float) -> float:
        return 500.0 + 2.0 * z

    failed = MemoryObservation(int(800 * MB), 1, None, reserved_mb=2300.0, failed=True)
    sizes = [100.0 * k for k in range(1, 19)]
    runs = [MemoryObservation(int(z * MB), 1, demand(z), reserved_mb=4 * demand(z))
            for z in sizes]
    proved = (2300.0 + STEP_MB) / demand(800.0)
    learnt = MemoryModel(learn_failures=True).fit([*runs[:8], failed])
    assert learnt.failure_ratios_ == [pytest.approx(proved)]
    assert learnt.ratio(0.95) == pytest.approx(proved * 1.05)
    later = MemoryModel(learn_failures=True).fit([*runs[:8], failed, *runs[8:]])  # ten more
    assert later.ratio(0.95) == pytest.approx(proved * 1.05)
    upper = later.estimate(int(2000 * MB), 1, 0.95).upper_mb
    assert upper == pytest.approx(demand(2000.0) * proved * 1.05, rel=1e-6)
    unlearnt = MemoryModel(learn_failures=False).fit([*runs[:8], failed, *runs[8:]])
    assert unlearnt.ratio(0.95) == pytest.approx(1.05)


def test_a_job_borrows_the_prior_of_the_other_jobs_of_its_history_not_its_own() -> None:
    """The candidate history prior: fitted on the other jobs' held-out ratios only. Jobs whose
    demands scatter by ~30 % give a wide prior; jobs on one clean line a narrow one; the job
    sized is left out (changing its own runs changes nothing), and with one other job there
    is no spread to borrow (None: the conformal bound decides)."""
    import random

    from cobell_cli.core.memory.history_prior import history_prior, job_ratios

    def job(seed: int, scatter: float) -> list[MemoryObservation]:
        rng = random.Random(seed)
        return [MemoryObservation(int(mb * MB), 1, 600 + 4 * mb * math.exp(rng.gauss(0, scatter)))
                for mb in (100, 150, 225, 340, 510, 765, 1150)]

    wild = {f"w{i}": job(i, 0.3) for i in range(4)}
    clean = {f"c{i}": job(i, 0.0) for i in range(4)}
    assert len(job_ratios(wild["w0"])) >= 2
    wide, narrow = history_prior({**wild, "me": job(9, 0.0)}, "me"), \
        history_prior({**clean, "me": job(9, 0.3)}, "me")
    assert wide is not None and narrow is not None
    assert wide.scale2 > 4 * narrow.scale2
    assert history_prior({**clean, "me": job(11, 0.9)}, "me") == narrow  # its own runs: unused
    assert history_prior({"c0": clean["c0"], "me": job(9, 0.0)}, "me") is None


def test_the_success_cap_bounds_by_what_a_success_proves_scaled_by_the_input() -> None:
    """Candidate success-cap: a run that succeeded at 2048 MB with 200 MB per executor proves
    at most 2048 x 1.5 at 300 MB (the need grows no faster than the input), and 2048 itself at
    less input; with several successes the tightest proof wins; the whole input counts too (one
    executor more does not shrink it); no input size, no proof. A wild bound is cut to it, a
    point above it is kept, and a failure still lifts it."""
    from cobell_cli.core.memory.model import success_bound

    ok = MemoryObservation(200 * MB, 1, 900.0, 2048.0)
    assert success_bound([ok], 300 * MB, 1) == pytest.approx(3072.0)
    assert success_bound([ok], 100 * MB, 1) == pytest.approx(2048.0)
    assert success_bound([ok, MemoryObservation(250 * MB, 1, 900.0, 1536.0)], 300 * MB, 1) \
        == pytest.approx(1536.0 * 300 / 250)
    assert success_bound([ok], 300 * MB, 2) == pytest.approx(3072.0)  # whole input: 1.5x
    assert success_bound([ok], 0, 1) is None
    assert success_bound([], 300 * MB, 1) is None

    def runs(*demands: float) -> list[MemoryObservation]:  # all at 2048 MB, the last at 200
        return [MemoryObservation(int(s * MB), 1, d, 2048.0)
                for s, d in zip((100, 120, 150, 200), demands, strict=True)]

    def upper(obs: list[MemoryObservation], cap: bool) -> MemoryEstimate:
        return MemoryModel(cap_by_successes=cap).fit(obs).estimate(300 * MB, 1, 0.95)

    wild, capped = upper(runs(600, 620, 1000, 1500), False), upper(runs(600, 620, 1000, 1500), True)
    assert wild.upper_mb > 3400 and capped.upper_mb == pytest.approx(3072.0)
    assert capped.predicted_mb < 3072.0
    steep = upper(runs(600, 650, 1300, 2000), True)  # its point is above the proof: kept
    assert steep.predicted_mb > 3072.0 and steep.upper_mb == steep.predicted_mb
    failed = [*runs(600, 620, 1000, 1500), MemoryObservation(300 * MB, 1, None, 3500.0, True)]
    assert MemoryModel(cap_by_successes=True).fit(failed).estimate(300 * MB, 1, 0.95).upper_mb \
        > 3500.0


def test_deep_folds_drop_the_two_size_folds_only_where_deeper_ones_exist() -> None:
    """Candidate deep-folds: a need that bends up after the second size makes the folds trained
    on two sizes under-predict; deep_only keeps the folds trained on more, and where every fold
    trained on two sizes it keeps them all (nothing else to judge on)."""
    from cobell_cli.core.memory.select import candidate, nested_ratios

    def need(mb: float) -> float:
        return 600.0 + (2.0 if mb < 200 else 6.0) * mb

    runs = [MemoryObservation(int(s * MB), 1, need(s)) for s in (100, 150, 225, 340, 510)]
    fallback = candidate("linear(per_executor)")
    every, deep = nested_ratios(runs, fallback), nested_ratios(runs, fallback, deep_only=True)
    assert len(every) == 3 and len(deep) == 2  # the folds of 340 and 510 kept, 225's dropped
    assert max(every) > max(deep) and set(deep) <= set(every)
    three = runs[:3]  # one fold, on two sizes: kept
    assert nested_ratios(three, fallback, deep_only=True) == nested_ratios(three, fallback)


def test_a_memory_confidence_given_holds_out_as_many_runs_as_it_needs() -> None:
    """n / (n + 1) >= P: 19 runs at 0.95, 99 at 0.99 (and at most 99); never fewer than the
    default's MAX_FOLDS; without the option, the default rule's MAX_FOLDS at any level."""
    from cobell_cli.core.memory.plan import MemoryRequest, bound_folds
    from cobell_cli.core.memory.select import MAX_FOLDS
    from cobell_cli.core.memory.sizing import ContainerRules

    def folds(p: float, asked: bool = True) -> int:
        rules = ContainerRules("yarn")
        return bound_folds(MemoryRequest(rules, confidence=p, confidence_asked=asked))

    assert (folds(0.95), folds(0.99), folds(0.999), folds(0.6)) == (19, 99, 99, MAX_FOLDS)
    assert folds(0.99, asked=False) == folds(0.5, asked=False) == MAX_FOLDS == 6
    assert folds(0.9) == 9 and folds(0.857) == MAX_FOLDS


def test_reserved_scale_ratios_count_no_error_below_sparks_smallest_heap() -> None:
    """Candidate reserved-scale: a job whose needs sit below Spark's 512 MB heap, predicted at
    half of them, errs by 2x as measured but not at all as reserved; its bound's ratios are
    then 1, not 2 (the default keeps them as measured)."""
    from cobell_cli.core.memory.model import MemoryModel

    sizes = (100, 150, 225, 340, 510)
    needs = (120.0, 130.0, 140.0, 300.0, 450.0)  # a bend the linear folds miss by up to 2x
    runs = [MemoryObservation(int(s * MB), 1, n) for s, n in zip(sizes, needs, strict=True)]
    measured = MemoryModel().fit(runs).ratios_
    reserved = MemoryModel(reserved_scale=True).fit(runs).ratios_
    assert max(measured) > 1.5 and reserved == [1.0] * len(measured)


def test_the_nested_folds_share_each_inner_folds_fit(monkeypatch) -> None:
    """A forward fold is fixed by its test run, so the nested procedure fits each inner fold
    once per candidate (select.FoldMemo), and its ratios are exactly those of selections made
    afresh for every outer fold."""
    import random

    from cobell_cli.core.memory import select as sel

    rng = random.Random(3)
    runs = [MemoryObservation(int(s * MB), x, 600.0 + 2.0 * s / x * rng.uniform(0.9, 1.1))
            for s, x in ((rng.randrange(100, 5000, 100), rng.choice((2, 4))) for _ in range(60))]
    fallback = sel.candidate("linear(per_executor)")
    afresh = []
    for train, test in sel.forward_folds(runs, 40):
        predicted = sel.held_out_prediction(train, test, fallback)  # no memo: every fit again
        afresh.append(sel.grant_ratio(test.demand_mb, predicted, 0.0))  # type: ignore[arg-type]
    fits = []
    real_fit = sel.Candidate.fit
    monkeypatch.setattr(sel.Candidate, "fit", lambda self, r: fits.append(1) or real_fit(self, r))
    assert sel.nested_ratios(runs, fallback, max_folds=40) == afresh
    assert sel.holdable_runs(runs) == len(sel.forward_folds(runs, len(runs)))
    assert sel.holdable_runs(runs[:2]) == 0
    inner = {id(test) for train, _ in sel.forward_folds(runs, 40)
             for _, test in sel.forward_folds(train)}
    # each inner fold once per candidate, and each outer fold's chosen candidate once
    assert len(fits) <= len(inner) * len(sel.CANDIDATES) + 40
