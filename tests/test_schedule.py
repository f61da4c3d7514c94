"""core/schedule: starts weighed against a deadline, and the joint schedule of waiting jobs.

The models here are model tables built by hand (model_table.ModelTable, the record a waiting
submit stores), so every number the schedule reads is known: a job's alone runtime
1000/x + 40 s, an interference pair per co-runner job, and its error ratios.
"""

from __future__ import annotations

import math

import pytest

from cobell_cli.core.calibration import RatioDistribution, ratio_bound
from cobell_cli.core.model_table import ModelTable
from cobell_cli.core.schedule import Busy, PendingJob, schedule
from cobell_cli.core.schedule.decision import busy_from_row, decide, pending_from_row
from cobell_cli.core.schedule.options import (
    Moment,
    Sizer,
    WaitFor,
    cheapest,
    moments,
    start_option,
)
from cobell_cli.core.schedule.queue import queue_wait_s
from cobell_cli.core.schedule.records import StartOption
from cobell_cli.core.schedule.risk import Risk, end_at_level, ended_by
from cobell_cli.core.schedule.timeline import (
    Interval,
    Slot,
    joint_runtimes,
    runtime_among,
    runtime_s,
)
from cobell_cli.run.launch import spark_queue

NOW = 1_800_000_000.0
RATIOS = (0.92, 0.95, 0.97, 0.98, 1.0, 1.0, 1.01, 1.02, 1.03, 1.05, 1.06, 1.08)
XS = tuple(range(2, 41))


def table(pairs: dict[str, tuple[float, float]] | None = None, combination: str = "additive",
          alone: float = 1000.0, rise: float = 0.0, width: float = 0.03) -> ModelTable:
    """A job whose alone runtime is alone/x + 40 s (+ rise·x), slowed by (a + b/x)·ov per
    co-runner; its interval (1 -+ width) x that."""
    grid = range(1, 65)
    pairs = pairs if pairs is not None else {"etl": (1.0, 0.0), "light": (0.05, 0.0)}
    runtime = [alone / x + 40.0 + rise * x for x in grid]
    return ModelTable(
        alone_s=runtime, lower_s=[0.97 * r for r in runtime],
        upper_s=[(1 + width) * r for r in runtime], confidence=0.9, pairs=pairs,
        default_pair=(0.3, 0.0), scale_out_range=(2, 40),
        description={"interference": {k: {"a": a, "b": b} for k, (a, b) in pairs.items()}},
        loo_ratios=list(RATIOS), combination=combination,
    )


def job(key: str = "new", deadline_in_s: float = 900.0, **kw: object) -> PendingJob:
    fields: dict = dict(key=key, job="report", model=table(), ratios=RATIOS, candidates=XS,
                        deadline_at=NOW + deadline_in_s, earliest_at=NOW, submitted_at=NOW)
    fields.update(kw)
    return PendingJob(**fields)  # type: ignore[arg-type]


def etl(ends_in_s: float = 120.0, ratios: tuple[float, ...] = RATIOS) -> Busy:
    return Busy("application_1_0001", "etl", NOW - 300.0, NOW + ends_in_s, 16, ratios)


# --- the timeline ------------------------------------------------------------------------


@pytest.mark.parametrize("combination", ["additive", "bottleneck", "saturating"])
def test_the_fast_runtime_is_the_tables_own_prediction(combination: str) -> None:
    model = table({"etl": (0.6, 2.0), "light": (0.2, 1.0)}, combination)
    for x in (2, 7, 33):
        for row in ({"etl": 0.4}, {"etl": 1.0, "light": 0.7}, {"nobody": 0.5}):
            assert runtime_s(model, x, row) == pytest.approx(model.predict([x], row)[0])


def test_a_runtime_among_others_is_the_models_fix_point() -> None:
    model = table()
    r, row = runtime_among(model, 10, NOW, [Interval("etl", NOW - 50, NOW + 60)])
    # 140 s alone; etl (a = 1) overlaps 60 s of it: r = 140·(1 + 60/r), r² = 140 r + 8400
    assert r == pytest.approx((140 + math.sqrt(140**2 + 4 * 8400)) / 2, abs=1.0)
    assert row["etl"] == pytest.approx(60 / r, rel=1e-2)  # the fix-point settles to 1 s
    alone, row = runtime_among(model, 10, NOW + 60, [Interval("etl", NOW - 50, NOW + 60)])
    assert alone == pytest.approx(140.0) and not row


def test_jobs_placed_together_slow_each_other() -> None:
    model = table({"report": (0.5, 0.0)})
    both = [Slot("a", "report", model, NOW, 10), Slot("b", "report", model, NOW, 10)]
    runtime, _rows = joint_runtimes(both, [])
    assert runtime["a"] == pytest.approx(210.0, abs=1.0)  # 140·(1 + 0.5)
    apart = [Slot("a", "report", model, NOW, 10), Slot("b", "report", model, NOW + 200, 10)]
    runtime, _ = joint_runtimes(apart, [])
    assert runtime["a"] == pytest.approx(140.0) and runtime["b"] == pytest.approx(140.0)


# --- risk ----------------------------------------------------------------------------------


def test_a_feasible_judgement_meets_the_budget_with_the_confidence() -> None:
    risk = Risk(RATIOS, 0.9)
    verdict = risk.judge(table(), 10, 140.0, {}, budget_s=160.0)
    assert verdict.feasible
    assert verdict.upper_s == pytest.approx(140.0 * ratio_bound(RATIOS, 0.9))
    assert verdict.meet_probability >= 0.9
    tight = risk.judge(table(), 10, 140.0, {}, budget_s=141.0)
    assert not tight.feasible and tight.meet_probability < 0.9


def test_feasible_and_p_meet_are_one_statement_however_wide_the_models_interval() -> None:
    """A model whose own interval is twice its prediction (a history it never ran near) and
    tight ratios: the judgement follows the ratios, so "feasible", "upper bound within the
    budget" and "P(meet) >= the confidence" agree at every budget (before deadagree a
    candidate at P(meet) 0.99 was out of reach: bench/studies/deadline_agree.py)."""
    wide = table(width=1.0)
    risk = Risk(RATIOS, 0.9)
    for budget in (130.0, 141.0, 150.0, 155.0, 160.0, 200.0, 279.0):
        verdict = risk.judge(wide, 10, 140.0, {}, budget_s=budget)
        assert verdict.feasible == (verdict.upper_s <= budget)
        assert verdict.feasible == (verdict.meet_probability >= 0.9), budget
    assert risk.judge(wide, 10, 140.0, {}, budget_s=160.0).feasible


def test_without_ratios_the_models_interval_decides() -> None:
    wide = table(width=1.0)
    alone = wide.alone_s[9]  # scale-out 10
    risk = Risk((), 0.9)
    assert not risk.judge(wide, 10, alone, {}, budget_s=1.5 * alone).feasible
    assert risk.judge(wide, 10, alone, {}, budget_s=2.01 * alone).feasible
    assert risk.judge(wide, 10, alone, {}, budget_s=2.01 * alone).meet_probability is None


def test_an_app_has_ended_at_its_level_with_that_probability() -> None:
    end = end_at_level(NOW - 300, NOW + 100, RATIOS, 0.9)
    assert end > NOW + 100
    assert ended_by(NOW - 300, NOW + 100, RATIOS, end) >= 0.9
    assert ended_by(NOW - 300, NOW + 100, RATIOS, NOW - 10) == 0.0
    assert 0.4 < ended_by(NOW - 300, NOW + 100, (), NOW + 100) < 0.6  # no record: log-normal


# --- one job: now or later -----------------------------------------------------------------


def test_a_loose_deadline_waits_for_the_heavy_co_runner() -> None:
    found = schedule([job(deadline_in_s=900.0)], [etl(ends_in_s=120.0)], NOW, focus="new")
    mine = found.of("new")
    now_option = next(o for o in found.options if o.waits_for is None)
    assert mine.start_at > NOW and "etl" in (mine.waits_for or "")
    assert mine.feasible and mine.cost < now_option.cost
    assert mine.meet_probability is not None and mine.meet_probability >= 0.9


def test_a_tight_deadline_starts_now() -> None:
    # waiting for etl would leave less than the job's fastest run
    found = schedule([job(deadline_in_s=200.0)], [etl(ends_in_s=120.0)], NOW, focus="new")
    mine = found.of("new")
    assert mine.start_at == NOW and mine.waits_for is None and mine.feasible


def test_max_wait_and_start_now_take_the_wait_away() -> None:
    capped = schedule([job(latest_start_at=NOW + 60)], [etl(ends_in_s=120.0)], NOW, focus="new")
    assert [o.waits_for for o in capped.options] == [None]
    forced = schedule([job(start_now=True)], [etl(ends_in_s=120.0)], NOW, focus="new")
    assert forced.of("new").start_at == NOW and len(forced.options) == 1


def test_a_deadline_in_the_past_is_a_loud_best_effort_now() -> None:
    found = schedule([job(deadline_in_s=-60.0)], [etl()], NOW, focus="new")
    mine = found.of("new")
    assert not mine.feasible and mine.start_at == NOW and found.met == 0


def test_a_deadline_in_the_past_takes_the_fastest_candidate_among_the_co_runners() -> None:
    """It took the largest candidate: on a curve that rises at the top that is the slowest of
    all (the demo's history, run at 1-6 executors: 64 at 343 s where 3 takes 39 s). The
    fastest is judged among what runs (etl slows the small candidates most: b/x)."""
    model = table({"etl": (0.2, 30.0)}, rise=2.5)
    found = schedule([job(deadline_in_s=-60.0, model=model)], [etl(ends_in_s=600.0)], NOW,
                     focus="new")
    mine = found.of("new")
    among = [Interval("etl", NOW - 300.0, NOW + 600.0, 16)]
    # the bound is the runtime times one ratio quantile: the lowest bound is the fastest run
    fastest = min(XS, key=lambda x: (runtime_among(model, x, NOW, among)[0], x))
    alone_fastest = min(XS, key=lambda x: 1000.0 / x + 2.5 * x)  # 20
    assert mine.start_at == NOW and not mine.feasible
    assert mine.scale_out == fastest != XS[-1]
    assert fastest > alone_fastest  # the co-runner moved it: it was solved, not taken alone


def test_an_app_nothing_predicts_is_not_waited_for() -> None:
    unknown = Busy("application_1_0002", None, NOW - 10, None, 8)
    found = schedule([job(deadline_in_s=3600.0)], [unknown], NOW, focus="new")
    assert [o.waits_for for o in found.options] == [None]


def test_ties_go_to_the_earlier_start() -> None:
    def option(start: float, cost: float, feasible: bool = True) -> StartOption:
        return StartOption(start, None, 4, 100.0, 110.0, 0.95, cost, feasible)

    ranked = cheapest([option(NOW + 100, 1000.0), option(NOW, 1003.0), option(NOW + 50, 900.0),
                       option(NOW + 10, 10.0, feasible=False)])
    assert [o.start_at for o in ranked] == [NOW + 50, NOW + 100, NOW, NOW + 10]
    assert [o.start_at for o in cheapest([option(NOW + 100, 1000.0), option(NOW, 1003.0)])] \
        == [NOW, NOW + 100]


def test_a_wait_is_offered_only_where_its_own_probability_reaches_the_confidence() -> None:
    # etl's own runtime errors are wild: whether it has ended by a start is a coin toss.
    wild = (0.3, 0.5, 0.8, 1.0, 1.3, 1.9, 2.5, 3.0)
    found = schedule([job(deadline_in_s=500.0)], [etl(ends_in_s=100.0, ratios=wild)], NOW,
                     focus="new")
    for option in found.options:
        if option.feasible:
            assert option.meet_probability is not None and option.meet_probability >= 0.9


def test_a_waits_probability_mixes_whether_what_it_waits_for_has_ended() -> None:
    """A start after etl's predicted end meets the deadline for sure if etl has ended, and
    never if etl still runs (beside it, at a = 5, even the largest candidate misses): with no
    error record for etl its end is a coin toss at its predicted end (ended_by: the
    log-normal's median), so the wait's P(meet) is about one half, and it is not offered."""
    start = NOW + 100.0
    pending = job(deadline_in_s=400.0, model=table({"etl": (5.0, 0.0)}))

    def option(moment: Moment, others: list[Interval]) -> StartOption:
        return start_option(Sizer(pending, Risk(RATIOS, 0.9), "executor-seconds"), moment,
                            others, NOW)

    ended = option(Moment(start), [])
    running = option(Moment(start), [Interval("etl", NOW - 300.0, math.inf, 16)])
    assert ended.feasible and ended.meet_probability >= 0.9  # the premise: etl gone, met
    assert running.meet_probability <= 0.01  # etl beside it all along: missed
    coin = WaitFor("etl", "etl", NOW - 300.0, start, 16, ())
    assert coin.ended_by(start) == pytest.approx(0.5)
    wait = option(Moment(start, coin), [])
    assert wait.waits_for == "etl" and not wait.feasible
    assert 0.4 <= wait.meet_probability <= 0.6
    assert "P(meet)" in (wait.note or "")


def test_a_feasible_waits_cost_mixes_the_reservation_it_keeps_and_the_one_it_rescues_with() -> None:
    """A wait for an app that may still run at the start (no error record: ended with P 1/2 at
    its predicted end) is re-planned at the start if the app runs late: with probability 1/2
    the reservation that meets the deadline alone, else the larger one that meets it beside
    the app. Both meet it, so the wait does too, at the mixture of the two costs."""
    start = NOW + 100.0
    pending = job(deadline_in_s=900.0, model=table({"etl": (0.5, 0.0)}))

    def option(moment: Moment, others: list[Interval]) -> StartOption:
        return start_option(Sizer(pending, Risk(RATIOS, 0.9), "executor-seconds"), moment,
                            others, NOW)

    ended = option(Moment(start), [])
    running = option(Moment(start), [Interval("etl", NOW - 300.0, math.inf, 16)])
    assert ended.feasible and running.feasible and running.scale_out > ended.scale_out
    wait = option(Moment(start, WaitFor("etl", "etl", NOW - 300.0, start, 16, ())), [])
    assert wait.feasible and wait.scale_out == ended.scale_out
    assert wait.cost == pytest.approx(0.5 * ended.cost + 0.5 * running.cost, rel=1e-6)
    assert wait.meet_probability >= 0.9


def test_with_no_candidate_meeting_the_deadline_the_likeliest_is_taken_not_the_largest() -> None:
    """A curve that rises again at the top (a collect-like term, 2.5·x s): the fastest
    candidate, the likeliest to make a deadline out of reach, lies inside the range."""
    found = schedule([job(deadline_in_s=90.0, model=table(rise=2.5))], [], NOW, focus="new")
    mine = found.of("new")
    fastest = min(XS, key=lambda x: 1000.0 / x + 2.5 * x)  # 20
    assert not mine.feasible and mine.scale_out < XS[-1]
    assert abs(mine.scale_out - fastest) <= len(XS) // 12 + 1  # the coarse pass's step


def test_the_starts_offered_are_now_and_the_next_distinct_ends_that_leave_time() -> None:
    """Ends closer than MOMENT_MERGE_S to a start already offered are that start; an end
    that leaves less than the job's fastest run is no start; at most MAX_MOMENTS in all."""
    pending = job(deadline_in_s=900.0)  # fastest alone: 1000/40 + 40 = 65 s

    def at(offset: float, name: str) -> tuple[float, WaitFor]:
        return NOW + offset, WaitFor(name, "etl", NOW - 10.0, NOW + offset, 16, ())

    waits = [at(100.0, "a"), at(100.4, "b"), at(200.0, "c"), at(860.0, "too late"),
             at(300.0, "d"), at(400.0, "e")]
    chosen = moments(pending, NOW, waits)
    assert [m.start_at - NOW for m in chosen] == [0.0, 100.0, 200.0, 300.0]
    assert [m.waits_for.name for m in chosen[1:]] == ["a", "c", "d"]
    assert [m.start_at - NOW for m in moments(pending, NOW, [at(860.0, "x")])] == [0.0]


def test_a_start_that_leaves_the_fastest_candidate_its_run_is_offered_on_a_rising_curve() -> None:
    """The fastest alone run was taken from the two ends of the range only: on a curve that
    rises at the top (1000/x + 40 + 2.5·x) the ends take 545 s and 165 s, the middle 140 s
    (at 20), so an end leaving 150 s was no start though 20 executors fit in it."""
    pending = job(deadline_in_s=900.0, model=table(rise=2.5))
    wait = WaitFor("a", "etl", NOW - 10.0, NOW + 750.0, 16, ())
    assert [m.start_at - NOW for m in moments(pending, NOW, [(NOW + 750.0, wait)])] == [
        0.0, 750.0]
    late = WaitFor("b", "etl", NOW - 10.0, NOW + 770.0, 16, ())  # leaves 130 s: none fits
    assert [m.start_at - NOW for m in moments(pending, NOW, [(NOW + 770.0, late)])] == [0.0]


def test_a_candidate_that_misses_alone_is_judged_without_solving_its_overlaps() -> None:
    """What runs beside a job only slows it: a candidate whose run alone already misses the
    budget at the confidence is judged on its alone runtime (no fix-point solved)."""
    sizer = Sizer(job(deadline_in_s=100.0), Risk(RATIOS, 0.9), "executor-seconds")
    busy = [Interval("etl", NOW - 50.0, NOW + 500.0, 16)]
    hopeless = sizer.at(2, NOW, busy)  # alone 540 s against 100 s
    assert not hopeless.judgement.feasible and sizer.evaluations == 0
    assert hopeless.runtime_s == pytest.approx(540.0) and hopeless.row == {}
    sizer.at(40, NOW, busy)  # 65 s alone: within reach, its overlaps solved
    assert sizer.evaluations == 1


# --- several jobs: the joint schedule ------------------------------------------------------


def test_a_burst_that_interferes_staggers_and_costs_less_than_all_at_once() -> None:
    model = table({"report": (1.2, 0.0)})
    burst = [job(f"j{i}", deadline_in_s=1000.0, model=model, submitted_at=NOW + i / 100)
             for i in range(3)]
    found = schedule(burst, [], NOW)
    starts = sorted(p.start_at for p in found.placements)
    assert found.met == 3
    assert starts[-1] > NOW  # at least one waits for another
    together = schedule([job(f"j{i}", deadline_in_s=1000.0, model=model, start_now=True)
                         for i in range(3)], [], NOW)
    assert found.total_cost < together.total_cost


def test_memory_mb_seconds_prices_each_reservation_by_its_container() -> None:
    """core.cost prices memory-MB-seconds; a waiting submit recorded without a container size
    is priced at the deciding one's, so one size for all makes the same schedule, scaled."""
    model = table({"report": (1.2, 0.0)})
    burst = [job(f"j{i}", deadline_in_s=1000.0, model=model, submitted_at=NOW + i / 100)
             for i in range(3)]
    by_executor = schedule(burst, [], NOW, focus="j2")
    sized = [burst[0], burst[1], job("j2", deadline_in_s=1000.0, model=model,
                                      submitted_at=NOW + 0.02, container_mb=2048.0)]
    by_memory = schedule(sized, [], NOW, focus="j2", minimize="memory-mb-seconds")
    assert by_memory.minimize == "memory-mb-seconds"
    assert [(p.key, p.start_at, p.scale_out) for p in by_memory.placements] == [
        (p.key, p.start_at, p.scale_out) for p in by_executor.placements]
    assert by_memory.total_cost == pytest.approx(2048.0 * by_executor.total_cost)


def test_a_burst_with_tight_deadlines_starts_together() -> None:
    model = table({"report": (0.1, 0.0)})
    burst = [job(f"j{i}", deadline_in_s=200.0, model=model) for i in range(3)]
    found = schedule(burst, [], NOW)
    assert all(p.start_at == NOW for p in found.placements)
    assert found.met == 3


def test_the_deciding_submit_gets_its_part_and_why() -> None:
    decision, _found = decide(job(deadline_in_s=900.0), [], [etl(ends_in_s=120.0)], NOW)
    assert not decision.start_now and decision.start_in_s > 0
    assert decision.start_reason.startswith("waiting for etl")
    assert "fewer executor-seconds than starting now" in decision.start_reason
    out = decision.to_dict()
    assert out["deadline_at"] == NOW + 900.0 and out["start_at"] == decision.start_at
    assert out["start_in_s"] == pytest.approx(decision.start_at - NOW)
    assert {o["start_in_s"] for o in out["options"]} >= {0.0}
    assert all({"scale_out", "meet_probability", "cost", "start_at"} <= o.keys()
               for o in out["options"])


def test_rows_of_the_history_read_back_as_the_scheduler_records() -> None:
    model = table()
    row = {"id": 7, "job": "report", "model": model.to_payload(), "ratios": list(RATIOS),
           "candidates": list(XS), "deadline_at": NOW + 900, "submitted_at": NOW - 5,
           "target_s": None, "latest_start_at": None, "queue_wait_s": 0.0, "start_now": False,
           "confidence": 0.9, "container_mb": None, "start_at": NOW + 100}
    pending = pending_from_row(row, NOW)
    assert pending.key == "7" and pending.planned_start_at == NOW + 100
    assert pending.model.predict([10], {"etl": 0.5}) == model.predict([10], {"etl": 0.5})
    busy = busy_from_row({**row, "state": "started", "start_at": NOW - 20, "predicted_s": 140,
                          "scale_out": 10})
    assert busy.end_at == NOW + 120 and busy.scale_out == 10


# --- the YARN queue ------------------------------------------------------------------------


def _app(app_id: str, queue: str, state: str, started: float) -> object:
    from cobell_cli.cluster.base import RunningApp

    return RunningApp(app_id, app_id, None, "u", queue, state, started)


def test_a_queue_with_apps_waiting_holds_the_new_app_until_enough_running_ones_end() -> None:
    accepted = [_app("a1", "etl", "ACCEPTED", NOW - 30)]
    running = [_app("r1", "etl", "RUNNING", NOW - 500), _app("r2", "etl", "RUNNING", NOW - 400),
               _app("r3", "other", "RUNNING", NOW - 400)]
    ends = {"r1": NOW + 100, "r2": NOW + 250, "r3": NOW + 10}
    wait, note = queue_wait_s("etl", accepted, running, ends, NOW)  # type: ignore[arg-type]
    assert wait == pytest.approx(250.0) and "1 app already waits" in (note or "")
    assert queue_wait_s("other", accepted, running, ends, NOW)[0] == 0.0  # type: ignore[arg-type]
    # nothing predicts the running apps' ends: the longest wait so far
    wait, _ = queue_wait_s("etl", accepted, running, {}, NOW)  # type: ignore[arg-type]
    assert wait == pytest.approx(30.0)


def test_the_rms_queue_path_is_the_submits_queue() -> None:
    """The real RM (Hadoop 3.5) lists an app's queue as `root.etl`; a submit says `etl`."""
    accepted = [_app("a1", "root.etl", "ACCEPTED", NOW - 30)]
    running = [_app("r1", "root.etl", "RUNNING", NOW - 500)]
    wait, _ = queue_wait_s("etl", accepted, running, {"r1": NOW + 100}, NOW)  # type: ignore[arg-type]
    assert wait == pytest.approx(100.0)
    assert queue_wait_s("root.etl", accepted, running, {}, NOW)[0] == pytest.approx(30.0)  # type: ignore[arg-type]
    assert queue_wait_s("other", accepted, running, {}, NOW)[0] == 0.0  # type: ignore[arg-type]


def test_the_queue_of_a_command() -> None:
    """The one reading of a command's queue (launch.spark_queue) the deadline and the node
    labels share; None (YARN's default queue) when the command names none."""
    yarn = ["spark-submit", "--master", "yarn"]
    assert spark_queue([*yarn, "--queue", "etl", "app.py"]) == "etl"
    assert spark_queue([*yarn, "--conf", "spark.yarn.queue=night", "a.py"]) == "night"
    assert spark_queue([*yarn, "app.py"]) is None


def test_ratio_distribution_reads_back_the_bound() -> None:
    # what ended_by relies on: a bound at p reads back as a probability of at least p
    assert RatioDistribution(list(RATIOS)).meet_probability(ratio_bound(RATIOS, 0.9)) >= 0.9
    assert math.isfinite(end_at_level(NOW, NOW + 10, (), 0.95))


def test_a_started_job_keeps_its_deadline_against_what_starts_beside_it() -> None:
    model = table({"report": (1.0, 0.0)})
    running = job("started", deadline_in_s=600.0, model=model, started_at=NOW - 100,
                  started_scale_out=2)  # 540 s alone: ends at +440, 160 s to spare
    found = schedule([running, job("new", deadline_in_s=1500.0, model=model)], [], NOW,
                     focus="new")
    kept = found.of("started")
    assert kept.start_at == NOW - 100 and kept.scale_out == 2 and kept.feasible
    mine = found.of("new")
    assert mine.feasible and mine.start_at > NOW  # now would slow the started job past 600 s
    alone = schedule([running.__class__(**{**running.__dict__, "deadline_at": NOW + 5000}),
                      job("new", deadline_in_s=1500.0, model=model)], [], NOW, focus="new")
    assert alone.of("started").feasible


def test_a_start_now_first_gathers_the_submits_cron_fires_with_it() -> None:
    from cobell_cli.core.schedule.decision import GATHER_S, GATHERING

    fresh, _ = decide(job(deadline_in_s=900.0), [], [], NOW)
    assert fresh.start_at == NOW + GATHER_S and fresh.waits_for == GATHERING
    assert fresh.start_reason.startswith(GATHERING)
    late, _ = decide(job(deadline_in_s=900.0, submitted_at=NOW - GATHER_S), [], [], NOW)
    assert late.start_now
    forced, _ = decide(job(deadline_in_s=900.0, start_now=True), [], [], NOW)
    assert forced.start_now
    capped, _ = decide(job(deadline_in_s=900.0, latest_start_at=NOW + 3), [], [], NOW)
    assert capped.start_at == NOW + 3
