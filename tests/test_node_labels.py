"""Where a run ran (`node_label`, migration 4): kept, exported and imported like any column;
the node-type model and the label choice (core/nodetype) on runs that carry it."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist
from types import SimpleNamespace

import numpy as np
import pytest

from cobell_cli.core.nodetype import (
    LabelOption,
    NodeTypeModel,
    TypeFactor,
    TypeSpeeds,
    cheapest_label,
    plan_labels,
    time_shares,
)
from cobell_cli.core.nodetype.labels import prior_margin
from cobell_cli.core.plan import plan
from cobell_cli.store import interchange
from cobell_cli.store.history import History


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_the_node_label_survives_export_and_import(tmp_path: Path, fmt: str) -> None:
    runs = [{"job": "etl", "status": "succeeded", "scale_out": 4, "runtime_s": 30.0,
             "started_at": 1.0, "node_label": "gpu"},
            {"job": "etl", "status": "succeeded", "scale_out": 2, "runtime_s": 50.0,
             "started_at": 2.0}]
    write = interchange.to_csv if fmt == "csv" else interchange.to_json
    with History.open(tmp_path / "a.db") as history:
        history.insert_runs(runs, keep_ids=False)
        text = write(history.runs(newest_first=False, with_colocations=True))
        assert [r["node_label"] for r in history.training_runs("etl")] == ["gpu", None]
    parsed = interchange.parse(Path(f"x.{fmt}"), text)
    assert parsed.problems == [] and [r.get("node_label") for r in parsed.records] == ["gpu", None]


# --- the node-type model ----------------------------------------------------------------------

# time shares (cpu, disk, network, other) of three jobs, and each type's slowness per class
SHARES = {"cpu-job": {"cpu": 0.9, "disk": 0.0, "network": 0.0, "wait": 0.1},
          "disk-job": {"cpu": 0.1, "disk": 0.8, "network": 0.0, "wait": 0.1},
          "mixed": {"cpu": 0.5, "disk": 0.4, "network": 0.0, "wait": 0.1}}
SLOW = {"": np.ones(4), "fast-cpu": np.array([0.5, 1.5, 1.0, 1.0]),
        "fast-disk": np.array([1.2, 0.4, 1.0, 1.0])}


def _factor(job: str, t: str) -> float:
    return float(time_shares(SHARES[job]) @ SLOW[t])


def _runs(job: str, types: tuple[str, ...], noise: float = 0.0, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for t in types:
        for x in (2, 4, 8, 16) if t == "" else (4, 8, 16):
            y = (200.0 / x + 20.0) * _factor(job, t) * float(rng.lognormal(0, noise))
            out.append({"id": len(out) + 1, "job": job, "status": "succeeded", "scale_out": x,
                        "runtime_s": y, "overlaps": {}, "node_label": t or None})
    return out


def test_one_curve_and_a_factor_per_type() -> None:
    model = NodeTypeModel().fit(_runs("disk-job", ("", "fast-disk")))
    assert model.base_ == ""
    phi, source = model.factor("fast-disk")
    assert source == "runs" and phi == pytest.approx(_factor("disk-job", "fast-disk"), rel=0.02)
    assert float(model.predict([6], None, "fast-disk")[0]) == pytest.approx(
        (200 / 6 + 20) * _factor("disk-job", "fast-disk"), rel=0.05)
    with pytest.raises(ValueError, match="no runs on node type 'fast-cpu'"):
        model.predict([4], None, "fast-cpu")


def test_a_type_the_job_never_ran_on_gets_the_prior_of_its_bottleneck() -> None:
    """The types' speeds per resource, learned from the other jobs, predict where a
    disk-bound job runs fast: the disk-optimised type, not the CPU-optimised one."""
    factors = [f for job in ("cpu-job", "mixed")
               for f in NodeTypeModel().fit(_runs(job, ("", "fast-cpu", "fast-disk")))
               .type_factors(job)]
    speeds = TypeSpeeds().fit(factors, SHARES)
    model = NodeTypeModel().fit(_runs("disk-job", ("",)), SHARES["disk-job"], speeds)
    (fast_disk, source), (fast_cpu, _) = model.factor("fast-disk"), model.factor("fast-cpu")
    assert source == "profile"
    assert fast_disk < 1.0 < fast_cpu
    assert fast_disk == pytest.approx(_factor("disk-job", "fast-disk"), rel=0.25)
    assert fast_cpu == pytest.approx(_factor("disk-job", "fast-cpu"), rel=0.25)
    without = NodeTypeModel().fit(_runs("disk-job", ("",)))
    assert without.factor("fast-disk") is None  # no speeds: nothing to say


def test_speeds_without_jobs_on_two_types_say_nothing() -> None:
    speeds = TypeSpeeds().fit([TypeFactor("a", "", 1.0, 3)], SHARES)
    assert speeds.ratio(SHARES["mixed"], "fast-cpu", "") is None
    assert speeds.held_out_log_sd_ == 0.0


@pytest.mark.parametrize("runs_there", [1, 3])
def test_the_prior_is_worth_one_run_on_a_type(runs_there: int) -> None:
    """A type the job ran on a little: its factor is the runs' shrunk toward the profile
    prior as if the prior were one more run (factors.PRIOR_RUNS; measured against 0-10 runs'
    worth on bench.hetero's seeds, bench/results/nodetype_constants.md): one run there and
    the prior weigh about the same, three runs outweigh it about three to one. Here the
    prior says "no difference" (a type as fast as the base for every resource), the runs say
    fast-disk."""
    base = _runs("disk-job", ("",)) * 3
    there = [r for r in _runs("disk-job", ("fast-disk",)) if r["scale_out"] == 8] * runs_there
    runs = [{**r, "id": i} for i, r in enumerate(base + there, 1)]
    same = TypeSpeeds(reference="", slowness_={"": np.ones(4), "fast-disk": np.ones(4)})
    own, _ = NodeTypeModel().fit(runs).factor("fast-disk")  # no prior: the runs alone
    shrunk, source = NodeTypeModel().fit(runs, SHARES["disk-job"], same).factor("fast-disk")
    assert source == "runs" and own == pytest.approx(_factor("disk-job", "fast-disk"), rel=0.02)
    weight = runs_there / (runs_there + 1.0)  # of the runs against the prior, in log
    assert math.log(shrunk) / math.log(own) == pytest.approx(weight, abs=0.06)


def test_a_types_factor_is_the_geometric_mean_of_its_runs_ratios() -> None:
    """Each run on a type says runtime / curve; the factor is their geometric mean (the mean
    log residual), so one run 30 % slower than the others moves it by 1.3^(1/3), not 0."""
    base = _runs("disk-job", ("",)) * 3
    there = _runs("disk-job", ("fast-disk",))
    there[-1] = {**there[-1], "runtime_s": 1.3 * there[-1]["runtime_s"]}
    runs = [{**r, "id": i} for i, r in enumerate(base + there, 1)]
    phi, _ = NodeTypeModel().fit(runs).factor("fast-disk")
    assert phi == pytest.approx(_factor("disk-job", "fast-disk") * 1.3 ** (1 / 3), rel=0.015)


def _speeds(jobs: tuple[str, ...]) -> TypeSpeeds:
    factors = [f for job in jobs
               for f in NodeTypeModel().fit(_runs(job, ("", "fast-cpu", "fast-disk")))
               .type_factors(job)]
    return TypeSpeeds().fit(factors, SHARES)


def test_the_types_speeds_shrink_toward_no_difference_and_chain_through_the_reference() -> None:
    """speeds.RIDGE: one job's factor on a type moves that type's learned speed only part of
    the way from "no difference" (1), so the prior for a job of the same profile lies between
    1 and what the job measured. The reference is the type most jobs ran on, and a ratio
    between two other types is the ratio of their ratios to it."""
    one = TypeSpeeds().fit([TypeFactor("disk-job", "", 1.0, 10),
                            TypeFactor("disk-job", "fast-disk", 0.5, 3),
                            TypeFactor("cpu-job", "", 1.0, 10)], SHARES)
    assert one.reference == ""
    assert 0.51 < one.ratio(SHARES["disk-job"], "fast-disk", "") < 0.95
    speeds = _speeds(("cpu-job", "mixed"))
    p = SHARES["disk-job"]
    assert speeds.ratio(p, "fast-cpu", "fast-disk") == pytest.approx(
        speeds.ratio(p, "fast-cpu", "") / speeds.ratio(p, "fast-disk", ""))
    assert speeds.ratio(p, "fast-cpu", "fast-disk") > 1.5  # the disk-bound job: fast-disk


def test_memory_time_counts_with_waiting_as_other() -> None:
    shares = time_shares({"cpu": 0.2, "disk": 0.1, "network": 0.1, "memory": 0.3, "wait": 0.1})
    assert shares.tolist() == pytest.approx([0.25, 0.125, 0.125, 0.5])


def test_the_cheapest_label_that_meets_the_target_wins() -> None:
    """A faster label at a higher price can cost less: fewer executors for less time."""
    factors = [f for job in ("cpu-job", "mixed")
               for f in NodeTypeModel().fit(_runs(job, ("", "fast-cpu", "fast-disk")))
               .type_factors(job)]
    speeds = TypeSpeeds().fit(factors, SHARES)
    runs = _runs("disk-job", ("", "fast-disk"), noise=0.01)
    model = NodeTypeModel().fit(runs, SHARES["disk-job"], speeds)

    def plan_fn(*, history: list, target_s: float, co_runners: tuple = ()) -> object:
        return plan(job="disk-job", history=history, now=0.0, target_s=target_s,
                    min_scale_out=1, max_scale_out=32, co_runners=co_runners,
                    confidence=None)

    prices = {"": 1.0, "fast-disk": 1.5, "fast-cpu": 1.2}
    options, unknown = plan_labels(plan_fn, runs=runs, labels=["", "fast-disk", "fast-cpu"],
                                   prices=prices, target_s=40.0, model=model, confidence=None)
    assert unknown == [] and {o.node_label for o in options} == set(prices)
    by = {o.node_label: o for o in options}
    assert by["fast-disk"].factor_source == "runs" and by["fast-cpu"].factor_source == "profile"
    best = cheapest_label(options, 40.0)
    assert best.node_label == "fast-disk" and best.feasible
    assert best.cost == pytest.approx(1.5 * best.scale_out * best.predicted_s)
    assert all(best.cost <= o.cost for o in options if o.feasible)
    assert math.isclose(best.predicted_s, best.plan.predicted_s * best.factor)


@pytest.mark.parametrize("held_out_log_sd", [0.0, 0.2])
def test_a_label_known_only_from_the_prior_carries_the_priors_error(
        held_out_log_sd: float) -> None:
    """A label the job never ran on is planned against the target over its prior factor
    times the prior's margin (labels.prior_margin: z · the speeds' held-out log sd added in
    quadrature to the plan's own bound): a label as fast as the job's own by its prior and
    5 % cheaper wins while that error is 0, and loses once the prior is known to be off by
    0.2 in log sd, the target it must then meet divided by more than 1 but less than 1.29
    (the margin exp(z · sd) that adds the two errors as one)."""
    runs = [{**r, "id": i} for i, r in
            enumerate(_runs("disk-job", ("",), noise=0.02, seed=3) * 3, 1)]
    twin = TypeSpeeds(reference="", slowness_={"": np.ones(4), "twin": np.ones(4)},
                      held_out_log_sd_=held_out_log_sd)
    model = NodeTypeModel().fit(runs, SHARES["disk-job"], twin)

    def plan_fn(*, history: list, target_s: float, co_runners: tuple = ()) -> object:
        return plan(job="disk-job", history=history, now=0.0, target_s=target_s,
                    min_scale_out=1, max_scale_out=32, co_runners=co_runners, confidence=0.9)

    options, _ = plan_labels(plan_fn, runs=runs, labels=["", "twin"],
                             prices={"": 1.0, "twin": 0.95}, target_s=60.0, model=model,
                             confidence=0.9)
    by = {o.node_label: o for o in options}
    assert by["twin"].factor_source == "profile" and by["twin"].factor == pytest.approx(1.0)
    assert by[""].feasible and by["twin"].feasible
    z_sd = NormalDist().inv_cdf(0.9) * held_out_log_sd
    tighter = math.exp(z_sd)
    at_sum = plan_fn(history=runs, target_s=60.0 / tighter)
    q = math.log(at_sum.upper_s / at_sum.predicted_s)
    margin = math.exp(math.hypot(q, z_sd) - q)
    assert by["twin"].margin == pytest.approx(margin)
    assert by["twin"].plan.target_s == pytest.approx(60.0 / margin)
    assert (1.0 < margin < tighter) if held_out_log_sd else margin == 1.0
    best = cheapest_label(options, 60.0)
    assert best.node_label == ("twin" if held_out_log_sd == 0.0 else "")
    if held_out_log_sd:
        assert by["twin"].scale_out > by[""].scale_out


def test_label_settings_parse_and_bad_ones_are_one_line() -> None:
    from cobell_cli import config
    from cobell_cli.errors import ConfigError

    s = config.load({"node_labels": "default,fast", "label_prices": "fast=2.5,default=1"},
                    env={})
    assert s.node_labels == ["", "fast"] and s.label_prices == {"fast": 2.5, "": 1.0}
    assert config.load({"node_labels": "AUTO"}, env={}).node_labels == ["auto"]
    env = config.load({}, env={"COBELL_LABEL_PRICES": "gpu=4"})
    assert env.label_prices == {"gpu": 4.0}
    for bad in ({"label_prices": "fast=0"}, {"label_prices": "fast"}, {"node_labels": "a,,b"}):
        with pytest.raises(ConfigError) as err:
            config.load(bad, env={})
        assert "\n" not in err.value.line()


def test_the_label_is_injected_on_yarn_only() -> None:
    from cobell_cli.errors import UsageError
    from cobell_cli.run.launch import inject, with_node_label

    yarn = inject(["spark-submit", "--master", "yarn", "--conf",
                   "spark.yarn.executor.nodeLabelExpression=slow", "app.py", "--x", "1"], 4, "etl")
    out = with_node_label(yarn, "fast")
    assert "spark.yarn.executor.nodeLabelExpression=fast" in out.argv
    assert "spark.yarn.executor.nodeLabelExpression=slow" not in out.argv
    assert any("cobell-label:fast" in a for a in out.argv) and out.argv[-3:] == ["app.py", "--x",
                                                                               "1"]
    assert any("replaced spark.yarn.executor.nodeLabelExpression=slow" in w for w in out.warnings)
    assert with_node_label(yarn, "") == yarn  # the default partition needs nothing
    standalone = inject(["spark-submit", "--master", "spark://m:7077", "app.py"], 2, "etl")
    with pytest.raises(UsageError, match="standalone cannot place executors"):
        with_node_label(standalone, "fast")
    other = inject(["run.sh", "{scale_out}"], 2, "etl")
    assert "not injected" in with_node_label(other, "fast").warnings[-1]


def _option(label: str, price: float, x: int, predicted: float, upper: float,
            factor: float = 1.0) -> LabelOption:
    """A label's infeasible plan, as far as choosing among labels reads it."""
    plan_ = SimpleNamespace(scale_out=x, predicted_s=predicted, upper_s=upper, feasible=False,
                            confidence=0.9, interval_confidence=0.9, calibration=None,
                            usable_runs=20, meet_probability=None)
    return LabelOption(label, price, factor, "runs", plan_)


def test_with_no_label_feasible_the_planners_rule_picks_across_labels() -> None:
    """The rule of core/plan/infeasible.py, across labels: aim at the lowest upper bound (x
    factor) and take the cheapest option about as likely (one standard error over 20 runs)
    to stay within it, not the lowest prediction."""
    cheap = _option("", 1.0, 8, predicted=100.0, upper=140.0)  # P(<= 139 s) 0.895, cost 800
    near = _option("net", 1.25, 8, predicted=90.0, upper=139.0)  # P(<= 139 s) 0.9, cost 900
    assert cheapest_label([cheap, near], 100.0) is cheap  # as likely: fewer executor-seconds
    wide = _option("wide", 1.0, 8, predicted=80.0, upper=200.0)  # lowest prediction, P 0.78
    assert cheapest_label([wide, near], 100.0) is near  # a wide bound is a likely long miss
    fast = _option("fast", 1.0, 10, predicted=100.0, upper=125.0, factor=0.8)  # 80 s, 100 s
    assert cheapest_label([cheap, near, fast], 60.0) is fast  # real speed is not given up


def test_the_priors_margin_adds_its_error_to_the_plans_in_quadrature() -> None:
    """q = log(upper / predicted) = 0.3 and z · sd = 0.4 make a bound 0.5 above the
    prediction in log (hypot), so the margin over the plan's bound is exp(0.2), not the
    exp(0.4) of adding them as one error; a plan without a bound above its prediction gets
    exp(z · sd) whole."""
    plan_ = SimpleNamespace(predicted_s=100.0, upper_s=100.0 * math.exp(0.3))
    assert prior_margin(plan_, 0.4) == pytest.approx(math.exp(0.2))
    assert 100.0 * math.exp(0.3) * prior_margin(plan_, 0.4) == pytest.approx(
        100.0 * math.exp(0.5))
    assert prior_margin(SimpleNamespace(predicted_s=100.0, upper_s=None), 0.4) == (
        pytest.approx(math.exp(0.4)))
    assert prior_margin(SimpleNamespace(predicted_s=100.0, upper_s=100.0), 0.4) == (
        pytest.approx(math.exp(0.4)))
