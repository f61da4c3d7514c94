"""The pure combination of a co-runner's live progress with its model (core/remaining.py,
core/overlap/, core/plan/co_runners.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cobell_cli.core import remaining
from cobell_cli.core.overlap import CoRunnerInput, predict_overlaps
from cobell_cli.core.plan import plan
from cobell_cli.core.remaining import (
    DriverProgress,
    StagePlan,
    remaining_work,
    stage_fraction,
    stage_plan,
)
from cobell_cli.core.running import RunningApp

NOW = 10_000.0


def progress(known: int, complete: int, active: tuple[float, ...] = (),
             first_job_at: float | None = None) -> DriverProgress:
    return DriverProgress(jobs_known=1, jobs_done=0, stages_known=known,
                          stages_complete=complete, active_fractions=active,
                          tasks_known=0, tasks_done=0, first_job_at=first_job_at)


# --- states of a driver, and "more work done" moves between them ---------------------------

fractions = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def driver_states(draw: st.DrawFn) -> DriverProgress:
    known = draw(st.integers(1, 30))
    complete = draw(st.integers(0, known))
    active = tuple(draw(st.lists(fractions, max_size=min(3, known - complete))))
    return progress(known, complete, active)


@st.composite
def more_done(draw: st.DrawFn, d: DriverProgress) -> DriverProgress:
    """The same known stages, more completed work: an active stage completes, or active
    stages advance."""
    if d.active_fractions and draw(st.booleans()):
        return replace(d, stages_complete=d.stages_complete + 1,
                       active_fractions=d.active_fractions[1:])
    ahead = tuple(min(1.0, f + draw(fractions)) for f in d.active_fractions)
    return replace(d, active_fractions=ahead)


@st.composite
def plans(draw: st.DrawFn, known: int) -> StagePlan | None:
    kind = draw(st.sampled_from(["none", "count", "shares", "profiles"]))
    if kind == "none":
        return None
    stages = draw(st.integers(1, 40))
    if kind == "count":
        return StagePlan(stages=float(stages))
    if kind == "shares":
        raw = draw(st.lists(st.floats(0.01, 10.0), min_size=stages, max_size=stages))
        return StagePlan(stages=float(stages), shares=tuple(v / sum(raw) for v in raw))
    profiles = [_normalised(draw(st.lists(st.floats(0.01, 10.0), min_size=stages,
                                          max_size=stages)))
                for _ in range(draw(st.integers(3, 6)))]
    mean = _normalised([sum(col) for col in zip(*profiles, strict=True)])
    return StagePlan(stages=float(stages), shares=mean, profiles=tuple(profiles))


def _normalised(values) -> tuple[float, ...]:
    return tuple(v / sum(values) for v in values)


model_errors = st.one_of(st.none(), st.floats(0.0, 2.0))


settings_seconds = st.floats(1.0, 5000.0, allow_nan=False)


@given(data=st.data(), elapsed=settings_seconds, base=settings_seconds,
       startup=st.one_of(st.none(), st.floats(0.0, 1.0)), model_error=model_errors)
def test_remaining_work_is_never_negative(data, elapsed, base, startup, model_error):
    d = data.draw(driver_states())
    est = remaining_work(d, elapsed, base, data.draw(plans(d.stages_known)),
                         startup_iso_s=None if startup is None else startup * elapsed,
                         model_log_sd=model_error)
    assert est.remaining_s >= 0 and not math.isnan(est.remaining_s)
    assert 0 <= est.weight < 1
    assert 0 < est.fraction_done <= 1


@given(data=st.data(), elapsed=settings_seconds, base=settings_seconds,
       startup=st.one_of(st.none(), st.floats(0.0, 1.0)), model_error=model_errors)
def test_more_completed_work_never_increases_the_remaining_time(data, elapsed, base, startup,
                                                                model_error):
    d = data.draw(driver_states())
    later = data.draw(more_done(d))
    stage_plan_ = data.draw(plans(d.stages_known))
    t0 = None if startup is None else startup * elapsed
    before = remaining_work(d, elapsed, base, stage_plan_, startup_iso_s=t0,
                            model_log_sd=model_error).remaining_s
    after = remaining_work(later, elapsed, base, stage_plan_, startup_iso_s=t0,
                           model_log_sd=model_error).remaining_s
    assert after <= before * (1 + 1e-12) + 1e-9


@given(data=st.data(), elapsed=settings_seconds, base=settings_seconds)
def test_without_a_stage_plan_the_model_alone_decides(data, elapsed, base):
    d = data.draw(driver_states())
    est = remaining_work(d, elapsed, base, None)
    assert est.weight == 0
    assert est.remaining_s == pytest.approx(max(base - elapsed, 0.0), rel=1e-9, abs=1e-9)


def test_the_weight_grows_with_the_known_share_of_the_run():
    shares = StagePlan(stages=4, shares=(0.1, 0.1, 0.4, 0.4))
    early = remaining_work(progress(known=1, complete=1), 50.0, 100.0, shares)
    late = remaining_work(progress(known=3, complete=2), 50.0, 100.0, shares)
    assert 0 < early.weight < late.weight < remaining.W_MAX


def test_progress_pulls_the_estimate_towards_what_the_driver_shows():
    """The model thinks half is done (50 of 100 s); the driver shows 90 % of the stage work
    done, so the remaining work is below the model's 50 s and above the progress's own."""
    shares = StagePlan(stages=10)
    est = remaining_work(progress(known=10, complete=9), 50.0, 100.0, shares)
    progress_only = 50.0 * (1 - 0.9) / 0.9
    assert progress_only < est.remaining_s < 50.0
    w = est.weight
    assert est.fraction_done == pytest.approx(w * 0.9 + (1 - w) * 0.5)


def test_start_up_time_is_not_taken_for_slow_stage_work():
    """Half the stage work done in the 40 s after a 60 s start-up: 40 s more, not 100 s."""
    plan_ = StagePlan(stages=2)
    d = progress(known=2, complete=1)
    with_startup = remaining_work(d, 100.0, 200.0, plan_, startup_iso_s=60.0, w_max=0.99,
                                  weight_power=0.0)
    without = remaining_work(d, 100.0, 200.0, plan_, w_max=0.99, weight_power=0.0)
    assert with_startup.remaining_s < without.remaining_s
    # f_p = 100 / (100 + 40): nearly all weight on progress leaves about 40 s
    assert with_startup.remaining_s == pytest.approx(40.0, rel=0.05)


def test_the_share_spread_is_how_far_past_runs_stray_where_the_mean_run_is():
    """Mean shares (0.5, 0.5): half the stage work is the first stage, which took 0.3, 0.5
    and 0.7 of the three past runs; at the end every run has done all of it."""
    profiles = ((0.3, 0.7), (0.5, 0.5), (0.7, 0.3))
    plan_ = StagePlan(stages=2, shares=(0.5, 0.5), profiles=profiles)
    assert plan_.share_spread(0.5) == pytest.approx(0.2)
    assert plan_.share_spread(0.25) == pytest.approx(0.1)  # half of the first stage
    assert plan_.share_spread(1.0) == pytest.approx(0.0)
    assert StagePlan(stages=2, shares=(0.5, 0.5), profiles=profiles[:2]).share_spread(0.5) \
        is None


def test_the_progress_weighs_by_how_well_each_estimate_is_measured():
    """Past runs whose shares stray widely (±0.2 at half the work): a model that errs by
    1 % keeps nearly all the weight; one that errs by 100 % hands the progress the most it
    ever gets (W_MAX times the known share); without a measured model error, W_MAX."""
    profiles = ((0.3, 0.7), (0.5, 0.5), (0.7, 0.3))
    plan_ = StagePlan(stages=2, shares=(0.5, 0.5), profiles=profiles)
    d = progress(known=2, complete=1)
    precise = remaining_work(d, 50.0, 100.0, plan_, model_log_sd=0.01)
    vague = remaining_work(d, 50.0, 100.0, plan_, model_log_sd=1.0)
    unknown = remaining_work(d, 50.0, 100.0, plan_)
    # inverse variance: 0.01^2 / (0.01^2 + (0.2 / 0.5)^2)
    assert precise.weight == pytest.approx(0.01**2 / (0.01**2 + 0.4**2))
    assert precise.measured and vague.measured and not unknown.measured
    assert vague.weight == unknown.weight == pytest.approx(remaining.W_MAX)
    # the same past runs, all alike: the progress is exact, the weight the most it gets
    alike = StagePlan(stages=2, shares=(0.5, 0.5), profiles=((0.5, 0.5),) * 3)
    assert remaining_work(d, 50.0, 100.0, alike, model_log_sd=0.01).weight == \
        pytest.approx(remaining.W_MAX)


def test_the_measured_weight_is_read_where_the_model_expects_the_run_after_start_up():
    """60 s of start-up in 100 s elapsed: where the model has the run half done, 2/7 of its
    stage work is done (f = e·s / (e·s + W·(1 - s)), W = 40 s of working time), and the
    past runs' spread is read there."""
    profiles = ((0.2, 0.8), (0.4, 0.6), (0.6, 0.4))
    plan_ = StagePlan(stages=2, shares=(0.4, 0.6), profiles=profiles)
    d = progress(known=2, complete=1)
    est = remaining_work(d, 100.0, 200.0, plan_, startup_iso_s=60.0, model_log_sd=0.1)
    staged = 0.5 * 40.0 / (100.0 * 0.5 + 0.5 * 40.0)  # the model's 0.5, without start-up
    spread = plan_.share_spread(staged)
    assert staged == pytest.approx(2 / 7)
    var_p = (spread / staged * (1 - 0.5 * 60.0 / 100.0)) ** 2
    assert est.weight == pytest.approx(0.1**2 / (0.1**2 + var_p))


def test_stage_shares_weigh_stages_by_their_past_task_time():
    heavy_first = StagePlan(stages=2, shares=(0.9, 0.1))
    d = progress(known=2, complete=1)
    assert heavy_first.work_done(d) == pytest.approx(0.9)
    assert StagePlan(stages=2).work_done(d) == pytest.approx(0.5)
    # more stages known than the plan knows: equal weights over what is known
    assert heavy_first.work_done(progress(known=4, complete=1)) == pytest.approx(0.25)
    assert heavy_first.coverage(progress(known=1, complete=0)) == pytest.approx(0.9)


def test_stage_plan_from_past_runs():
    runs = [{"stages": 3}, {"stage_shares": [2.0, 1.0, 1.0]}, {"stage_shares": [6.0, 2.0, 0.0]},
            {"stages": None}, {"stages": True}, {"stage_shares": [1.0, "x"]}, {}]
    got = stage_plan(runs)
    assert got is not None
    assert got.stages == 3 and got.runs == 3
    assert got.shares == pytest.approx((0.625, 0.25, 0.125))
    assert got.profiles == ((0.5, 0.25, 0.25), (0.75, 0.25, 0.0))
    assert stage_plan([{}, {"stages": 0}]) is None
    only_counts = stage_plan([{"stages": 4}, {"stages": 6}])
    assert only_counts == StagePlan(stages=5.0, shares=None, runs=2)


def test_stage_fraction_and_driver_progress_checks():
    assert stage_fraction(3, 2, 10) == pytest.approx(0.4)
    assert stage_fraction(0, 0, 0) == 0.0
    assert progress(5, 2, (0.5, 0.25)).stages_done == pytest.approx(2.75)
    with pytest.raises(ValueError):
        progress(2, 2, (0.5,))  # more completed and active stages than known
    with pytest.raises(ValueError):
        progress(3, 0, (1.5,))
    with pytest.raises(ValueError):
        remaining_work(progress(1, 0), 0.0, 10.0, None)


# --- in the overlap prediction -------------------------------------------------------------


def co_runner(driver: DriverProgress | None, plan_: StagePlan | None, started: float = NOW - 100,
              base: float = 400.0) -> CoRunnerInput:
    return CoRunnerInput(app_id="app-1", job="etl", started_at=started, base_runtime_s=base,
                         scale_out=8, interference=lambda job: (0.3, 1.0), driver=driver,
                         stage_plan=plan_)


def overlaps(*inputs: CoRunnerInput, mode: str = "joint"):
    return predict_overlaps([4, 8, 16], [600.0, 320.0, 180.0], lambda job: (0.2, 2.0), "new",
                            list(inputs), NOW, mode=mode, target_s=400.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["joint", "paper"])
def test_no_usable_progress_is_algorithm_1_exactly(mode):
    today = overlaps(co_runner(None, None), mode=mode)
    for driver, plan_ in [(progress(3, 1), None), (progress(0, 0), StagePlan(stages=4))]:
        assert overlaps(co_runner(driver, plan_), mode=mode) == today
    assert today.co_runners[0].source == "model"


@pytest.mark.parametrize("mode", ["joint", "paper"])
def test_a_nearly_finished_driver_ends_the_co_runner_sooner(mode):
    """The model thinks 300 of 400 s are left; the driver shows 9 of 10 stages done."""
    today = overlaps(co_runner(None, None), mode=mode)
    live = overlaps(co_runner(progress(10, 9), StagePlan(stages=10)), mode=mode)
    c = live.co_runners[0]
    assert c.source == "progress" and "live progress" in (c.note or "")
    assert all(e < t for e, t in zip(c.end_at, today.co_runners[0].end_at, strict=True))
    assert all(e > NOW for e in c.end_at)


def test_a_driver_far_behind_keeps_the_co_runner_overlapping_longer():
    """The model's co-runner should be nearly done (350 of 400 s elapsed); the driver shows
    a tenth of the stages: it overlaps the new job longer than the model says."""
    today = overlaps(co_runner(None, None, started=NOW - 350))
    live = overlaps(co_runner(progress(10, 1), StagePlan(stages=10), started=NOW - 350))
    assert all(a > b for a, b in zip(live.co_runners[0].overlap_ratio,
                                     today.co_runners[0].overlap_ratio, strict=True))


def test_a_live_co_runner_still_slowed_the_others_since_its_real_start():
    """Two long co-runners side by side for 900 s; B's driver answers. B's remainder starts
    now, but B slowed A since B's real start: A's end moves only as far as B's end does
    (times the slow-down alpha = 0.3 + 1/8 B causes A), not by 900 s of lost overlap."""
    a = replace(co_runner(None, None, started=NOW - 1000, base=2000.0), app_id="A")
    b_model = replace(co_runner(None, None, started=NOW - 900, base=1500.0), app_id="B")
    ref = overlaps(a, b_model)
    b_live = replace(b_model, driver=progress(10, 5), stage_plan=StagePlan(stages=10))
    live = overlaps(a, b_live)
    assert live.co_runners[1].source == "progress"
    alpha = 0.3 + 1.0 / 8
    for i in range(3):
        moved_a = live.co_runners[0].end_at[i] - ref.co_runners[0].end_at[i]
        moved_b = live.co_runners[1].end_at[i] - ref.co_runners[1].end_at[i]
        assert abs(moved_a) <= alpha * abs(moved_b) + 1.0


# --- in the plan ---------------------------------------------------------------------------


def _runs(job: str, n: int, stages: int | None = None) -> list[dict]:
    out = []
    for i in range(n):
        x = [2, 4, 8, 16][i % 4]
        run = {"id": i + 1, "job": job, "status": "succeeded", "scale_out": x,
               "runtime_s": 100.0 + 800.0 / x, "started_at": 1000.0 * i,
               "finished_at": 1000.0 * i + 100.0 + 800.0 / x, "input_bytes": None,
               "overlaps": {}}
        if stages is not None:
            run["stages"] = stages
        out.append(run)
    return out


def test_plan_reports_each_co_runners_source_and_what_its_driver_said():
    app = RunningApp(app_id="app-9", name="etl", job="etl", user=None, queue=None,
                     state="RUNNING", started_at=NOW - 150.0, scale_out=4, backend="yarn")
    common = dict(job="sgd", history=_runs("sgd", 8), now=NOW, target_s=400.0,
                  min_scale_out=1, max_scale_out=16, confidence=None)
    quiet = plan(co_runners=[app], co_runner_histories={"etl": _runs("etl", 8, 10)}, **common)
    assert quiet.co_runners[0].source == "model" and quiet.co_runners[0].driver is None
    live_app = replace(app, driver=progress(10, 8, (0.5,)))
    live = plan(co_runners=[live_app], co_runner_histories={"etl": _runs("etl", 8, 10)},
                **common)
    view = live.co_runners[0]
    assert view.source == "progress"
    assert view.driver is not None and view.driver["stages_done"] == pytest.approx(8.5)
    assert view.stage_plan == {"stages": 10.0, "shares_known": False, "runs": 8}
    assert view.predicted_end_at is not None and quiet.co_runners[0].predicted_end_at
    assert view.predicted_end_at < quiet.co_runners[0].predicted_end_at
    # no stage count in the co-runner's history: the driver's counts are not used
    no_counts = plan(co_runners=[live_app], co_runner_histories={"etl": _runs("etl", 8)},
                     **common)
    assert no_counts.co_runners[0].source == "model"
    assert no_counts.co_runners[0].predicted_end_at == quiet.co_runners[0].predicted_end_at
    assert "live progress" in (view.note or "")


def _weight(note: str | None) -> float:
    assert note is not None
    return float(note.split("weight ")[1].split(":")[0].split(" ")[0])


def test_a_co_runner_whose_past_runs_split_their_work_alike_gets_more_weight():
    """The same co-runner job, its runtimes off the curve by ±5 %, twice: once its past
    runs' event-log profiles split the work between its two stages alike, once they stray
    (0.2-0.8 in the first stage). The driver's counts count for less in the second."""
    app = RunningApp(app_id="app-9", name="etl", job="etl", user=None, queue=None,
                     state="RUNNING", started_at=NOW - 150.0, scale_out=4, backend="yarn",
                     driver=progress(2, 1, (0.5,)))
    common = dict(job="sgd", history=_runs("sgd", 8), now=NOW, target_s=400.0,
                  min_scale_out=1, max_scale_out=16, confidence=None, co_runners=[app])

    def etl(first_shares):
        runs = _runs("etl", 8)
        for i, (run, first) in enumerate(zip(runs, first_shares, strict=True)):
            run["runtime_s"] *= 1.05 if i % 2 else 0.95
            run["stage_shares"] = [first, 1.0 - first]
        return runs

    alike = plan(co_runner_histories={"etl": etl([0.5] * 8)}, **common).co_runners[0]
    stray = plan(co_runner_histories={"etl": etl([0.2, 0.8] * 4)}, **common).co_runners[0]
    assert alike.source == stray.source == "progress"
    assert "measured" in (stray.note or "") and "measured" in (alike.note or "")
    assert _weight(alike.note) == pytest.approx(remaining.W_MAX, abs=0.01)
    assert 0 < _weight(stray.note) < 0.5 * _weight(alike.note)
