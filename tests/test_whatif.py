"""core/whatif/ on hand-made profiles with known answers, and properties of the replay."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cobell_cli.core.profile import AppProfile, ExecutorSpan, JobProfile, StageProfile
from cobell_cli.core.whatif import (
    Startup,
    Trend,
    critical_path_s,
    fit_startup,
    fit_whatif,
    replay_s,
    sparklens_runtime_s,
    workload,
)


def stage(sid: int, tasks: list[float], parents=(), job: int = 0, submit: float = 0.0,
          executors: list[str] | None = None, launch: list[float] | None = None) -> StageProfile:
    return StageProfile(stage_id=sid, job_id=job, parent_ids=list(parents), submit_s=submit,
                        end_s=None, task_s=list(tasks),
                        launch_s=launch if launch is not None else
                        [submit + 0.001 * k for k in range(len(tasks))],
                        task_executor=executors or [])


def profile(stages: list[StageProfile], runtime_s: float, *, executors: int = 1,
            added_s: list[float] | None = None, jobs: list[JobProfile] | None = None,
            name: str = "app", cores: int = 1) -> AppProfile:
    added = added_s if added_s is not None else [0.0] * executors
    if jobs is None:
        ends = {}
        for s in stages:
            ends[s.job_id] = max(ends.get(s.job_id, 0.0), runtime_s)
        jobs = [JobProfile(j, 0.0, e, [s.stage_id for s in stages if s.job_id == j])
                for j, e in sorted(ends.items())]
    return AppProfile(app_id=f"app-{name}-{executors}", app_name=name, start_ms=0,
                      end_ms=round(runtime_s * 1000), last_event_s=runtime_s,
                      cores_per_executor=cores,
                      executors=[ExecutorSpan(str(i), cores, t) for i, t in enumerate(added)],
                      jobs=jobs, stages=stages)


# --- known answers ------------------------------------------------------------------------


def test_one_wide_stage_divides_into_waves():
    p = profile([stage(0, [1.0] * 8)], runtime_s=8.0)
    w = workload(p)
    assert [replay_s(w, n) for n in (1, 2, 3, 8, 16)] == pytest.approx([8, 4, 3, 1, 1])


def test_dag_parents_first_and_fifo_by_stage_id():
    # A (2 x 3 s) and B (4 x 1 s) have no parents; C (1 x 2 s) needs both.
    stages = [stage(0, [3.0, 3.0]), stage(1, [1.0] * 4), stage(2, [2.0], parents=(0, 1))]
    w = workload(profile(stages, runtime_s=12.0))
    # 1 slot: A, B, then C. 2 slots: A on both (3 s), B in two waves (5 s), C (7 s).
    # 6 slots: A and B at once, C after A (5 s).
    assert [replay_s(w, n) for n in (1, 2, 6)] == pytest.approx([12.0, 7.0, 5.0])
    assert critical_path_s(w) == pytest.approx(5.0)


def test_driver_time_stays_serial():
    jobs = [JobProfile(0, 2.0, 6.0, [0]), JobProfile(1, 9.0, 13.0, [1])]
    stages = [stage(0, [2.0, 2.0], job=0, submit=2.0), stage(1, [4.0], job=1, submit=9.0)]
    w = workload(profile(stages, runtime_s=14.0, jobs=jobs))
    assert [g.gap_s for g in w.groups] == pytest.approx([2.0, 3.0]) and w.tail_s == 1.0
    # 2 + 4 + 3 + 4 + 1 at one executor; 2 + 2 + 3 + 4 + 1 at two
    assert replay_s(w, 1) == pytest.approx(14.0)
    assert replay_s(w, 2) == pytest.approx(12.0)


def test_tasks_wait_for_executors_to_register():
    # The job starts at 1 s but the only executor registers at 5 s.
    jobs = [JobProfile(0, 1.0, 9.0, [0])]
    p = profile([stage(0, [2.0, 2.0], submit=1.0)], runtime_s=9.0, added_s=[5.0], jobs=jobs)
    w = workload(p)
    assert replay_s(w, 1) == pytest.approx(9.0)
    assert sparklens_runtime_s(w, 1) == pytest.approx(5.0)  # the plain replay misses it
    # Sparklens keeps the driver time (9 - 8 s in the job) and divides the job: 1 + 2
    assert sparklens_runtime_s(w, 2) == pytest.approx(3.0)


def test_cold_tasks_pay_once_per_slot():
    # Two executors; the first task on each takes 2 s more.
    p = profile([stage(0, [3.0, 3.0, 1.0, 1.0, 1.0, 1.0], executors=["0", "1"] * 3)],
                runtime_s=5.0, executors=2)
    w = workload(p)
    assert w.warmup_s == pytest.approx(2.0)
    assert replay_s(w, 2) == pytest.approx(5.0)
    # three slots: three cold tasks (3 s), then three warm (1 s)
    assert replay_s(w, 3) == pytest.approx(4.0)
    # six slots: every task cold
    assert replay_s(w, 6) == pytest.approx(3.0)
    assert sparklens_runtime_s(w, 6) == pytest.approx(3.0)
    assert sparklens_runtime_s(w, 3) == pytest.approx(4.0)


def test_a_straggler_that_is_cold_keeps_its_length():
    tasks = [1.0 + 2.0, 10.0 + 2.0, 1.0, 1.0, 1.0, 1.0]
    p = profile([stage(0, tasks, executors=["0", "1", "0", "0", "0", "0"])],
                runtime_s=12.0, executors=2)
    w = workload(p)
    assert w.warmup_s == pytest.approx(6.5)  # median of (3 - 1, 12 - 1)
    # whatever the cold extra, the straggler is never shorter than the warm tasks
    assert replay_s(w, 8) >= 1.0


def test_startup_trend_moves_registration_and_warmup_with_executors():
    startup = Startup(first=Trend.linear(0.5), spacing=Trend.linear(0.0, 0.5),
                      warmup=Trend.linear(1.0))
    p = profile([stage(0, [3.0, 1.0, 1.0, 1.0], executors=["0"] * 4)], runtime_s=8.0,
                added_s=[2.0])
    w = workload(p)
    assert w.warmup_s == pytest.approx(2.0)
    assert startup.registration_s(w, 1) == pytest.approx([2.0])
    assert startup.registration_s(w, 3) == pytest.approx([3.0, 3.5, 4.0])
    assert startup.warmup_s(w, 3) == pytest.approx(4.0)
    # 3 executors at 3, 3.5, 4 s; each first task 1 + 4 s; the fourth after the first (8 s)
    assert replay_s(w, 3, startup) == pytest.approx(9.0)


def test_fit_startup_learns_trends_within_a_job():
    profiles = []
    for tag, base in (("a", 2.0), ("b", 10.0)):  # different levels, the same trends
        for n in (1, 2, 4):
            added = [base + 0.5 * n + 0.2 * k for k in range(n)]
            tasks = [1.0 + 0.3 * n] * n + [1.0 + 0.1 * n] * 8
            p = profile([stage(0, tasks, executors=[str(k) for k in range(n)] + ["0"] * 8)],
                        runtime_s=30.0, executors=n, added_s=added, name=f"{tag}-x{n}")
            p.job_tag = tag  # app names differ per run; the job is the tag
            profiles.append(p)
    s = fit_startup(profiles)
    assert s.profiles == 6
    assert s.first.f(4) - s.first.f(1) == pytest.approx(1.5)
    assert s.first.f(6) - s.first.f(4) == pytest.approx(1.0)  # the last segment continued
    assert s.first.level == pytest.approx(6.5)  # mean of the jobs' levels at N = 1
    assert s.spacing.f(4) - s.spacing.f(2) == pytest.approx(0.0, abs=1e-9)
    assert s.spacing.level == pytest.approx(0.2)
    assert s.warmup.f(4) - s.warmup.f(1) == pytest.approx(0.9 - 0.3, abs=1e-9)
    assert s.task_log.f(4) - s.task_log.f(1) == pytest.approx(math.log(1.4 / 1.1))


def test_trends_never_fall_with_more_executors():
    p = [profile([stage(0, [1.0] * 4, executors=["0"] * 4)], runtime_s=9.0, executors=n,
                 added_s=[t] * n, name=f"x{n}") for n, t in ((1, 5.0), (2, 3.0), (4, 8.0))]
    for q in p:
        q.job_tag = "j"
    first = fit_startup(p).first
    values = [first.f(n) for n in (1, 2, 3, 4, 8)]
    assert values == sorted(values)
    assert first.f(2) - first.f(1) == pytest.approx(0.0)  # 5 then 3: pooled to one level


def test_unusable_profiles_are_value_errors():
    no_tasks = profile([stage(0, [])], runtime_s=3.0)
    with pytest.raises(ValueError, match="no tasks"):
        workload(no_tasks)
    running = profile([stage(0, [1.0])], runtime_s=3.0)
    running.end_ms = None
    with pytest.raises(ValueError, match="no end"):
        workload(running)
    with pytest.raises(ValueError, match="no profile"):
        fit_whatif([no_tasks, running])


# --- the estimator ------------------------------------------------------------------------


def _job_profile(n: int) -> AppProfile:
    return profile([stage(0, [1.0] * 24)], runtime_s=24.0 / n + 2.0, executors=n,
                   jobs=[JobProfile(0, 2.0, 24.0 / n + 2.0, [0])])


def test_one_profile_predicts_its_own_run_and_the_waves():
    m = fit_whatif([_job_profile(2)])
    assert m.correction_ == "none"
    assert m.predict([2, 4, 24]) == pytest.approx([14.0, 8.0, 3.0])
    lower, upper = m.predict_interval([2, 4, 24], confidence=0.9)
    assert all(lo < p < hi for lo, p, hi in zip(lower, m.predict([2, 4, 24]), upper,
                                                   strict=True))
    # farther from the observed run, wider
    assert upper[2] / m.predict([24])[0] > upper[1] / m.predict([4])[0]
    assert m.interference("any") == (0.0, 0.0)
    assert m.describe()["kind"] == "what-if"


def test_runs_slower_by_a_constant_factor_choose_the_constant_correction():
    p = _job_profile(2)
    runs = [{"scale_out": n, "runtime_s": 1.3 * (24.0 / n + 2.0)} for n in (1, 3, 4, 6)]
    m = fit_whatif([p], runs)
    assert m.correction_ == "constant"
    assert m.predict([8])[0] == pytest.approx(1.3 * 5.0)


def test_runs_whose_ratio_grows_with_scale_out_choose_the_log_linear_correction():
    p = _job_profile(2)
    runs = [{"scale_out": n, "runtime_s": (24.0 / n + 2.0) * n ** 0.2} for n in (1, 2, 3, 4, 6)]
    m = fit_whatif([p], runs)
    assert m.correction_ == "log-linear"
    assert m.theta_[1] == pytest.approx(0.2)
    assert m.predict([5])[0] == pytest.approx(m.replay(5) * 5 ** 0.2)
    # beyond the runs the trend is held at the edge: the replay alone scales on
    assert m.predict([8])[0] == pytest.approx(5.0 * 6 ** 0.2)


def test_a_steep_trend_from_runs_close_together_is_not_carried_far_below_them():
    p = _job_profile(2)
    replay = fit_whatif([p]).replay
    runs = [{"scale_out": n, "runtime_s": replay(n) * (n / 16) ** 1.5} for n in (16, 18, 20, 22)]
    m = fit_whatif([p], runs)
    assert m.correction_ == "log-linear" and m.theta_[1] == pytest.approx(1.5)
    edge = m.predict([16])[0] / replay(16)
    assert m.predict([2])[0] == pytest.approx(14.0 * edge)
    # carried on, the slope would have predicted an eighth of that
    assert m.predict([2])[0] > 7 * 14.0 * (2 / 16) ** 1.5


def test_bad_scale_outs_are_value_errors():
    m = fit_whatif([_job_profile(2)])
    for bad in ([0], [math.nan], [-1]):
        with pytest.raises(ValueError):
            m.predict(bad)


# --- properties ---------------------------------------------------------------------------

durations = st.lists(st.floats(0.01, 20.0), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(durations)
def test_a_pure_stage_never_slows_down_with_more_slots(tasks):
    w = workload(profile([stage(0, tasks)], runtime_s=sum(tasks)))
    times = [replay_s(w, n) for n in range(1, len(tasks) + 2)]
    assert all(b <= a + 1e-9 for a, b in itertools.pairwise(times))
    assert times[0] == pytest.approx(sum(tasks), abs=1e-3)  # the profile keeps ms
    # a slot per task: the longest warm task plus the cold extra every first task pays
    longest = max(w.warm_task_s(w.groups[0].stages[0]))
    assert times[-1] == pytest.approx(longest + (w.warmup_s or 0.0), abs=1e-3)


@st.composite
def dags(draw):
    n = draw(st.integers(1, 6))
    stages = []
    for sid in range(n):
        parents = draw(st.lists(st.integers(0, sid - 1), max_size=2, unique=True)) if sid else []
        stages.append(stage(sid, draw(durations), parents=parents))
    gap = draw(st.floats(0.0, 5.0))
    runtime = gap + sum(sum(s.task_s) for s in stages) + draw(st.floats(0.0, 5.0))
    jobs = [JobProfile(0, gap, runtime, list(range(n)))]
    return profile(stages, runtime_s=runtime, jobs=jobs)


@settings(max_examples=150, deadline=None)
@given(dags(), st.integers(1, 64))
def test_never_below_the_critical_path_nor_above_serial_work(p, n):
    w = workload(p)
    assert replay_s(w, n) >= critical_path_s(w) - 1e-9
    # without cold extras, N slots never take longer than one slot running all in turn
    warm = replace(w, warmup_s=None)
    assert replay_s(warm, n) <= p.runtime_s + 1e-3


@st.composite
def chains(draw):
    n = draw(st.integers(1, 5))
    stages = [stage(sid, draw(durations), parents=[sid - 1] if sid else []) for sid in range(n)]
    executors = draw(st.integers(1, 4))
    cold = draw(st.booleans())
    for s in stages:  # cold tasks: every executor's first, when asked
        s.task_executor = [str(k % executors) for k in range(len(s.task_s))] if cold else []
    added = draw(st.lists(st.floats(0.0, 10.0), min_size=executors, max_size=executors))
    runtime = 10.0 + sum(sum(s.task_s) for s in stages)
    return profile(stages, runtime_s=runtime, executors=executors, added_s=added)


@settings(max_examples=150, deadline=None)
@given(chains(), st.integers(1, 12))
def test_the_chain_fast_path_is_the_event_simulation(p, n):
    import cobell_cli.core.whatif.replay as replay

    w = workload(p)
    fast = replay_s(w, n)
    original = replay._chain
    replay._chain = lambda stages: None
    try:
        slow = replay_s(w, n)
    finally:
        replay._chain = original
    assert fast == pytest.approx(slow, abs=1e-9)


def test_the_hosts_contention_adds_the_typical_tasks_extra_to_a_straggler():
    # a trend: warm tasks take 1.5x as long at 2 executors as at 1
    startup = Startup(task_log=Trend.linear(math.log(1.5)))
    p = profile([stage(0, [1.0, 1.0, 1.0, 10.0], executors=["0"] * 4)], runtime_s=13.0)
    w = workload(p)
    assert startup.task_factor(w, 2) == pytest.approx(1.5)
    # every task 0.5 s longer (the median task's extra), the straggler too: 1.5 + 10.5
    assert replay_s(w, 2, startup) == pytest.approx(12.0)


def _cold_by_tuple_sort(p: AppProfile, cores: int) -> dict[int, list[bool]]:
    """The definition of cold tasks, as workload() computed it before: every launch sorted by
    (time, stage id, task index); an executor's first `cores` are cold, and in stages without
    executor ids the run's first scale_out x cores launches."""
    stages = {s.stage_id: s for s in p.stages if s.task_s}
    launches = sorted((t, sid, k) for sid, s in stages.items()
                      for k, t in enumerate(s.launch_s or [0.0] * len(s.task_s)))
    flags = {sid: [False] * len(s.task_s) for sid, s in stages.items()}
    seen: dict[str, int] = {}
    for n, (_, sid, k) in enumerate(launches):
        ids = stages[sid].task_executor
        if len(ids) == len(stages[sid].task_s):
            seen[ids[k]] = seen.get(ids[k], 0) + 1
            flags[sid][k] = seen[ids[k]] <= cores
        else:
            flags[sid][k] = n < p.scale_out * cores
    return flags


@st.composite
def launch_orders(draw):
    """Stages listed out of id order, launch times with many ties (a few distinct values),
    some stages without executor ids or launch times, one to three cores."""
    cores = draw(st.integers(1, 3))
    executors = draw(st.integers(1, 4))
    ids = draw(st.lists(st.integers(0, 30), min_size=1, max_size=6, unique=True))
    stages = []
    for sid in ids:
        n = draw(st.integers(1, 12))
        launch = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=n, max_size=n))
        named = draw(st.sampled_from(["all", "none", "short"]))
        owners = [str(draw(st.integers(0, executors - 1))) for _ in range(n)]
        s = stage(sid, [1.0] * n, launch=[] if draw(st.booleans()) else launch,
                  executors=owners if named == "all" else owners[:-1] if named == "short" else [])
        stages.append(s)
    return profile(stages, runtime_s=50.0, executors=executors, cores=cores), cores


@settings(max_examples=300, deadline=None)
@given(launch_orders())
def test_cold_tasks_are_those_of_the_launch_order_by_time_stage_and_index(case):
    p, cores = case
    expected = _cold_by_tuple_sort(p, cores)
    w = workload(p)
    got = {s.stage_id: list(s.cold) for g in w.groups for s in g.stages}
    assert got == expected


def test_a_workloads_warm_medians_are_computed_once_for_every_start_up_fit(monkeypatch):
    """choose_startup fits the start-up once per other job and once for the cluster, each fit
    over the job's own profiles again: their stages' medians are the workload's, made once."""
    import sys

    module = sys.modules["cobell_cli.core.whatif.workload"]
    calls: list[int] = []
    original = module.median
    monkeypatch.setattr(module, "median", lambda v: calls.append(1) or original(v))
    p = profile([stage(0, [3.0, 3.0, 1.0, 1.0, 1.0, 1.0], executors=["0", "1"] * 3),
                 stage(1, [2.0] * 4, submit=1.0, executors=["0", "1"] * 2)],
                runtime_s=9.0, executors=2, added_s=[0.5, 1.0])
    w = workload(p)
    calls.clear()
    first = fit_startup([p], False, [w])
    assert [fit_startup([p], False, [w]) for _ in range(3)] == [first] * 3
    assert len(calls) == 2 and w.warm_medians == ((0, 1.0), (1, 2.0))
