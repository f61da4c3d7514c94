"""The memory benchmark's bookkeeping: what a cut-short search proves about a need, and how a
reservation is scored against a need known only within bounds."""

from __future__ import annotations

import json
import time

import pytest

from bench import memory_record as mr
from bench.memory_accuracy import Case, Score
from bench.memory_record import PROFILE_MEMORY_MB, bounds


def rec(rows: int, memory: int, outcome: str) -> dict:
    return {"rows": rows, "executor_memory_mb": memory, "outcome": outcome}


def test_bounds_take_successes_down_to_smaller_inputs_and_failures_up_to_larger() -> None:
    sizes = [1, 2, 3, 4, 5]
    profile = {1: rec(1, PROFILE_MEMORY_MB, "succeeded"), 2: rec(2, PROFILE_MEMORY_MB, "succeeded"),
               3: rec(3, PROFILE_MEMORY_MB, "succeeded"), 4: rec(4, PROFILE_MEMORY_MB, "memory")}
    searched = [rec(3, 960, "memory"), rec(3, 1472, "succeeded"), rec(4, 1600, "timeout"),
                rec(5, 512, "error")]
    cases = bounds(profile, searched, sizes)
    assert sorted(cases) == [3, 4, 5]
    assert (cases[3].fail, cases[3].ok) == (960, 1472)
    # the profile's own failure bounds from below (above the slow probe), and no upper bound
    assert (cases[4].fail, cases[4].ok) == (PROFILE_MEMORY_MB, None)
    assert cases[5].fail == PROFILE_MEMORY_MB  # more input: no less need; an error says nothing


def test_a_bounded_need_scores_only_what_is_certain() -> None:
    case = Case("collect", 100, 1, above_mb=960, at_most_mb=1920)
    assert case.need_mb is None
    assert Score("m", case, 1920).ok and not Score("m", case, 1920).failed
    assert Score("m", case, 960).failed and not Score("m", case, 960).ok
    middle = Score("m", case, 1408)
    assert not middle.ok and not middle.failed
    assert middle.ratio == 1408 / 1920 and middle.ratio_high == 1408 / 1024
    unsized = Score("m", case, None)
    assert not unsized.ok and not unsized.failed
    settled = Case("collect", 100, 1, above_mb=1344, at_most_mb=1408)
    assert settled.need_mb == 1408 and Score("m", settled, 1408).ratio == 1.0


def test_the_sets_side_by_side_count_each_executor_count_on_its_own() -> None:
    """A tune set with x1 and x2 cases beside a test set with x1 only: each set's row for all
    its cases and one per executor count, the counts and medians worked out by hand."""
    from bench.memory_accuracy import side_by_side

    def settled(job: str, x: int, need: int) -> Case:
        return Case(job, 100, x, above_mb=need - 64, at_most_mb=need)

    tune = [Score("cobell", settled("a", 1, 1024), 1024),  # covers, ratio 1.0
            Score("cobell", settled("b", 1, 1024), 2048),  # covers, ratio 2.0
            Score("cobell", settled("a", 2, 1024), 960)]  # short: at most what failed
    test = [Score("cobell", settled("a", 1, 1024), 1536),  # covers, ratio 1.5
            Score("other", settled("a", 1, 1024), 512)]  # another method: not counted
    rows = [line for line in side_by_side({"tune": tune, "test": test})
            if line.startswith("| t")]
    assert rows == [
        "| tune | all | 3/3 | 2 (67 %) | 1 | 1.00 .. 1.00 | no / yes |",
        "| tune | 1 | 2/2 | 2 (100 %) | 0 | 1.50 .. 1.50 | yes / no |",
        "| tune | 2 | 1/1 | 0 (0 %) | 1 | 0.94 .. 0.94 | no / yes |",
        "| test | all | 1/1 | 1 (100 %) | 0 | 1.50 .. 1.50 | yes / no |",
        "| test | 1 | 1/1 | 1 (100 %) | 0 | 1.50 .. 1.50 | yes / no |",
    ]


class _Cluster(mr.Recorder):
    """Stands in for the Spark applications: a size succeeds when the memory covers a hidden
    need (growing with the input), and fails for memory otherwise."""

    def __init__(self, data, needs) -> None:
        super().__init__(data, data, "", ["tune", "test"])
        self.hidden, self.apps, self.todos = needs, 0, []

    def run(self, x, todo, memory_mb, purpose, own_app=False):
        self.apps += 1
        self.todos.append((purpose, sorted(todo), [r for rows in todo.values() for r, _ in rows]))
        for (set_name, job), rows in todo.items():
            for size, _limit in rows:
                ok = self.hidden[(set_name, job, size, x)] <= memory_mb
                record = {"set": set_name, "job": job, "rows": size, "scale_out": x,
                          "executor_memory_mb": memory_mb, "purpose": purpose, "seconds": 5.0,
                          "outcome": "succeeded" if ok else "memory", "at": float(self.apps),
                          **({"own_app": True} if own_app else {})}
                with self.runs_path(set_name).open("a") as fh:
                    fh.write(json.dumps(record) + "\n")
                if not ok:
                    break


def test_the_shared_search_finds_every_need_to_64_mb(tmp_path) -> None:
    slopes = {"collect": 5.0, "distinct": 2.2, "zipf": 0.7, "cache": 0.0, "sort": 0.0,
              "broadcast": 3.1}
    hidden = {(s, j, r, 1): max(mr.FLOOR_MB, int(300 + slopes[j] * r / 1000 * (2 if s == "test"
                                                                                else 1)))
              for s in ("tune", "test") for j in mr.ORDER for r in mr.sizes(j, s)}
    for s in ("tune", "test"):
        (tmp_path / s).mkdir()
    rec = _Cluster(tmp_path, hidden)
    groups = [(s, j) for j in mr.ORDER for s in ("tune", "test")]
    assert mr.record_batch(rec, 1, groups, time.time() + 600)
    settled = 0
    for s in ("tune", "test"):
        for key, entry in rec.needs[s].items():
            if "need_mb" not in entry:  # the two smallest sizes: runs only, no need searched
                continue
            need = hidden[(s, entry["job"], entry["rows"], 1)]
            assert entry["need_mb"] - mr.STEP_MB < need <= entry["need_mb"], key
            settled += 1
    assert settled == 36  # 12 (set, job)s x sizes 3-5, every need below the ceiling
    # one application per memory for all jobs: fewer than one per case
    assert rec.apps < settled


def test_the_first_size_of_an_application_gets_the_warm_up_time(tmp_path) -> None:
    for s in ("tune", "test"):
        (tmp_path / s).mkdir()
    rec = mr.Recorder(tmp_path, tmp_path, "", ["tune", "test"])
    batch = mr.Batch(rec, 1, [("tune", "collect"), ("test", "collect")])
    first, third = mr.sizes("collect", "tune")[0], mr.sizes("collect", "tune")[2]
    batch.profile = {("tune", "collect"): {first: {"seconds": 90.0}, third: {"seconds": 10.0}},
                     ("test", "collect"): {}}
    warm = mr.PROBE_SLOWDOWN * 10.0 + mr.PROBE_GRACE_S
    assert batch.limit(("tune", "collect"), third) == warm
    assert batch.limit(("tune", "collect"), third, first=True) == warm + 90.0


def _hidden(sets=("tune", "test")) -> dict:
    slopes = {"collect": 5.0, "distinct": 2.2, "zipf": 0.7, "cache": 0.0, "sort": 0.0,
              "broadcast": 3.1}
    return {(s, j, r, 1): max(mr.FLOOR_MB, int(300 + slopes[j] * r / 1000))
            for s in sets for j in mr.ORDER for r in mr.sizes(j, s)}


def test_profile_applications_of_their_own_hold_one_job_or_one_size(tmp_path) -> None:
    """--profile-apps job/size: no profile application runs two jobs (a peak would carry the
    other's garbage), `size` not even two sizes; the search then settles every need."""
    for mode, per_app in (("job", 5), ("size", 1)):
        (tmp_path / mode / "tune").mkdir(parents=True)
        (tmp_path / mode / "test").mkdir()
        rec = _Cluster(tmp_path / mode, _hidden())
        groups = [("tune", "collect"), ("tune", "cache")]
        assert mr.record_batch(rec, 1, groups, time.time() + 600, profile_apps=mode)
        profiles = [(g, rows) for purpose, g, rows in rec.todos if purpose == "profile"]
        assert len(profiles) == len(groups) * 5 // per_app
        assert all(len(g) == 1 and len(rows) == per_app for g, rows in profiles)
        assert sum("need_mb" in e for e in rec.needs["tune"].values()) == 6, mode


def test_an_ignored_record_bounds_nothing(tmp_path) -> None:
    """A first-size timeout marked `ignored` (slowness, not memory) does not bound the need."""
    (tmp_path / "tune").mkdir()
    rec = mr.Recorder(tmp_path, tmp_path, "", ["tune"])
    sizes = mr.sizes("collect", "tune")
    lines = [{"job": "collect", "scale_out": 1, "rows": r, "executor_memory_mb": 2048,
              "purpose": "profile", "outcome": "succeeded", "at": 1.0} for r in sizes]
    lines.append({"job": "collect", "scale_out": 1, "rows": sizes[2], "executor_memory_mb": 1280,
                  "purpose": "search", "outcome": "timeout", "at": 2.0, "ignored": "warm-up"})
    lines.append({"job": "collect", "scale_out": 1, "rows": sizes[2], "executor_memory_mb": 1344,
                  "purpose": "search", "outcome": "succeeded", "at": 3.0})
    rec.runs_path("tune").write_text("".join(json.dumps(r) + "\n" for r in lines))
    profile, searched = rec.earlier("tune", "collect", 1)
    cases = bounds(profile, searched, sizes)
    assert (cases[sizes[2]].fail, cases[sizes[2]].ok) == (mr.FLOOR_MB - mr.STEP_MB, 1344)


def test_the_accuracy_decomposition_multiplies_to_the_container_ratio() -> None:
    """bench.memory_accuracy's diagnosis: four factors, each defined on its own, whose product
    is the reservation score() gives cobell over the need's grant. The need (448 MB) is below
    Spark's 512 MB floor, so its own factor is 448 / 512; the rounding is the reservation over
    the bound, the reservation 64 MB steps above it (worked out here, not read from the code)."""
    import math

    from bench import memory_accuracy as ma

    runs = [ma.Run("j", r * ma.MB, 1, 2048, "succeeded", peak, {})
            for r, peak in ((100, 400.0), (150, 520.0), (225, 610.0), (340, 800.0))]
    case = ma.Case("j", 500 * ma.MB, 1, above_mb=384, at_most_mb=448)
    point, bound, rounding, floor = ma.decompose(runs, case, 0.95)
    (scored,) = [s for s in ma.score(runs, [case], 0.95) if s.method == "cobell"]
    upper = ma.size_cobell(runs, case, confidence=0.95)
    assert upper is not None and scored.reserved_mb == max(512, math.ceil(upper / 64) * 64)
    assert floor == pytest.approx(448 / 512)
    assert rounding == pytest.approx(scored.reserved_mb / upper)
    assert point * 448 * bound == pytest.approx(upper, rel=1e-3)
    assert point * bound * rounding * floor == pytest.approx(scored.reserved_mb / 512, rel=1e-3)
    assert "bound factor" in ma.explain(runs, [case], 0.95)


def _e2e_record(index, strategy, attempts, sized=None, need=1000.0, x=4, runtime=100.0):
    from bench import memory_e2e as me

    r = me.MemRecord(index, strategy, x, runtime, 200.0, need, sized=sized)
    for heap, container, failed in attempts:
        r.attempts.append(me.Attempt(heap, container, 0.5 * runtime if failed else runtime,
                                     failed))
    return r


def test_the_e2e_decomposition_multiplies_up_to_the_mb_s_over_the_oracles() -> None:
    """point x bound = upper / need; x rounding = first containers / the oracle's; x retries
    = MB-s / the oracle's: each a ratio of sums weighted by executors x seconds."""
    from bench import memory_e2e as me

    first = me.co.MODEL_FROM_USABLE + 1  # after the bootstrap
    mine = [_e2e_record(first, "cobell", [(1664, 2048, False)], (900.0, 1170.0)),
            _e2e_record(first + 1, "cobell", [(1152, 1536, True), (2176, 2560, False)],
                        (800.0, 960.0), x=8),
            _e2e_record(first - 1, "cobell", [(8192, 9216, False)], (2000.0, 4000.0))]
    oracle = {i: _e2e_record(i, "oracle", [(1152, 1536, False)], x=x)
              for i, x in ((first, 4), (first + 1, 8), (first - 1, 4))}
    d = me.decomposition(mine, oracle)
    assert d is not None and d.runs == 2  # the bootstrap run is not counted
    assert d.point == pytest.approx((4 * 900 + 8 * 800) / (12 * 1000.0))
    assert d.upper == pytest.approx((4 * 1170 + 8 * 960) / (12 * 1000.0))
    assert d.container == pytest.approx((4 * 2048 + 8 * 1536) / (12 * 1536))
    mb_s = (4 * 2048 * 100 + 8 * (1536 * 50 + 2560 * 100)) / (12 * 1536 * 100)
    assert d.mb_s == pytest.approx(mb_s) and d.retries > 1.0 and d.oom_pct == 50.0
    assert me.decomposition(mine[2:], oracle) is None  # nothing sized after the bootstrap


def test_the_goal_verdict_holds_cobell_to_the_law_planner_only_where_it_misses() -> None:
    from bench.memory_e2e import goal_verdict

    assert goal_verdict(1.15, 0.0, 1.05, 0.0) == "met"
    assert goal_verdict(1.12, 2.4, 1.05, 0.0) == "missed (the law planner meets it)"
    assert goal_verdict(1.20, 0.0, 1.05, 0.0) == "missed (the law planner meets it)"
    # the law planner misses (too costly, or too many OOMs): within 5 % of it is enough
    assert goal_verdict(1.25, 0.0, 1.20, 0.0) == "within 5 % of the law planner"
    assert goal_verdict(1.27, 0.0, 1.20, 0.0) == "missed"
    assert goal_verdict(1.10, 3.0, 1.08, 2.0) == "missed"  # more OOMs than it
    assert goal_verdict(1.10, 2.0, 1.08, 2.0) == "within 5 % of the law planner"


def test_the_law_planner_knows_the_law_at_the_runs_input_but_not_its_draw() -> None:
    """Its median is the need without the run's noise; its P-quantile is that times the
    log-normal quantile; the OOM chance it expects of a heap at its quantile is 1 - P."""
    import math

    from bench import memory_e2e as me
    from bench import nodesim
    from bench import simulator as sim

    for truth in (sim, nodesim):
        need = truth.memory_need_mb("sgd", 30_000.0, 24, 1.07)
        median = truth.memory_need_mb("sgd", 30_000.0, 24, 1.0)
        assert need == pytest.approx(1.07 * median)
        q = me.law_need_mb(truth, "sgd", 30_000.0, 24, 0.99)
        assert q == pytest.approx(median * math.exp(2.3263479 * sim.MEMORY_SIGMA), rel=1e-6)
        assert me.oom_chance(q, median) == pytest.approx(0.01, abs=1e-6)
        assert me.oom_chance(median, median) == pytest.approx(0.5)


def test_the_law_planners_expected_ooms_read_its_first_grant() -> None:
    from bench import memory_e2e as me

    first = me.co.MODEL_FROM_USABLE + 1
    median = 1000.0
    law = [_e2e_record(first, "law", [(1000, 1536, False)], (median, 1100.0)),
           _e2e_record(first + 1, "law", [(2000, 2560, False)], (median, 1100.0)),
           _e2e_record(first - 1, "law", [(500, 1024, True), (1000, 1536, False)],
                       (median, 1100.0))]  # the bootstrap's run is not counted
    assert me.expected_oom_pct(law) == pytest.approx(100.0 * (0.5 + 0.0) / 2, abs=1e-6)


def test_pooling_a_world_keeps_each_strategys_runs_of_both_jobs() -> None:
    from bench import memory_e2e as me

    cells = {("w", "a"): {"cobell": [1, 2], "oracle": [3]},
             ("w", "b"): {"cobell": [4], "oracle": [5, 6]},
             ("v", "a"): {"cobell": [7], "oracle": [8]}}
    pools = me.with_pools(cells)  # type: ignore[arg-type]
    assert pools[("w", "pooled")] == {"cobell": [1, 2, 4], "oracle": [3, 5, 6]}
    assert pools[("v", "pooled")] == {"cobell": [7], "oracle": [8]}
    assert list(pools)[:3] == list(cells)


def test_the_knob_sweep_moves_the_bounds_floor_and_puts_it_back(monkeypatch) -> None:
    from bench import memory_sensitivity as ms
    from cobell_cli.core.memory import model

    shipped = model.MIN_MARGIN
    monkeypatch.setattr(ms, "CONFIDENCES", (0.95,))
    monkeypatch.setattr(ms, "MARGINS", (1.0, 2.0))
    rows = ms.sweep("tune-v2")  # 6 cases of one job: small enough for a test
    assert shipped == model.MIN_MARGIN
    (_, low_floor, low), (_, high_floor, high) = rows
    assert (low_floor, high_floor) == (1.0, 2.0)
    assert low["sized"] == high["sized"] > 0
    # a wider floor never reserves less: the grid really moved the constant
    assert high["mean_ratio"] > low["mean_ratio"]


def test_the_recorder_runs_one_application_at_a_time(tmp_path) -> None:
    """Executor counts one after the other: a quiet recording never has two applications."""
    for s in ("tune", "test"):
        (tmp_path / s).mkdir()

    class _Timed(_Cluster):
        active = most = 0

        def run(self, *args, **kwargs):
            _Timed.active += 1
            _Timed.most = max(_Timed.most, _Timed.active)
            time.sleep(0.02)
            try:
                return super().run(*args, **kwargs)
            finally:
                _Timed.active -= 1

    hidden = {**_hidden(), **{(s, j, r, 2): n for (s, j, r, _), n in _hidden().items()}}
    rec = _Timed(tmp_path, hidden)
    assert mr.record(rec, [("tune", "collect"), ("tune", "cache")], [1, 2], time.time() + 600)
    assert _Timed.most == 1 and rec.apps > 2


def test_a_sizes_measures_are_its_own_spark_jobs(tmp_path) -> None:
    """case_measures reads cobell's fold: the size's jobs' peaks (the largest over them), their
    GC (summed) and task totals; another job's peaks are not the size's."""
    from cobell_cli.sources.eventlog_profile import summarize

    mb, t0 = 1024 * 1024, 1_700_000_000_000

    def task(stage, heap, unified, minor):
        return {"Event": "SparkListenerTaskEnd", "Stage ID": stage,
                "Task Info": {"Executor ID": "1", "Launch Time": t0 + 100, "Finish Time": t0 + 900},
                "Task Metrics": {"Executor Run Time": 800, "JVM GC Time": 50,
                                 "Shuffle Write Metrics": {"Shuffle Bytes Written": 1000}},
                "Task Executor Metrics": {"JVMHeapMemory": heap * mb,
                                          "OnHeapUnifiedMemory": unified * mb,
                                          "MinorGCCount": minor, "MinorGCTime": 7 * minor}}

    events = [{"Event": "SparkListenerApplicationStart", "App Name": "m", "App ID": "a",
               "Timestamp": t0},
              {"Event": "SparkListenerExecutorAdded", "Executor ID": "1", "Timestamp": t0,
               "Executor Info": {"Total Cores": 1}},
              *[{"Event": "SparkListenerJobStart", "Job ID": j, "Submission Time": t0,
                 "Stage Infos": [{"Stage ID": j, "Parent IDs": []}]} for j in range(3)],
              task(0, 1500, 10, 3), task(1, 600, 200, 5), task(2, 700, 20, 8),
              task(2, 650, 30, 9),
              {"Event": "SparkListenerApplicationEnd", "Timestamp": t0 + 1000}]
    log = tmp_path / "a"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    out = mr.case_measures(summarize(log), [1, 2])
    assert out["heap_mb"] == 700.0  # not job 0's 1500
    assert out["measures"]["unified_mb"] == 200.0
    assert out["measures"]["minor_gc"] == (5 - 3) + (9 - 5)
    assert out["tasks"] == 3 and out["task_run_s"] == pytest.approx(2.4)
    assert out["shuffle_write_bytes"] == 3000
    assert mr.case_measures(None, [1]) == {"heap_mb": None, "executors": None}


def test_the_accuracy_report_states_the_constants_the_code_uses(monkeypatch) -> None:
    """bench.memory_accuracy wrote "the heap peak less 0.351 of its slack" while the code used
    0.26: its text is now made from the code's constants themselves (the default's demand.DEMAND
    and model.py's margins, the candidate's demand.PEAK_RULE and bound.DEFAULT_PRIOR)."""
    from bench import memory_accuracy as ma
    from cobell_cli.core.memory import bound, demand, model

    monkeypatch.setattr(demand, "DEMAND", demand.DemandRule(0.417, 1.123, 0.789))
    monkeypatch.setattr(demand, "PEAK_RULE", demand.DemandRule(0.0, 0.913, 1.0))
    monkeypatch.setattr(bound, "DEFAULT_PRIOR", bound.RatioPrior(0.031, 2.5, 7.0, 0.0169))
    monkeypatch.setattr(model, "TAIL_MARGIN", 1.077)
    monkeypatch.setattr(model, "MIN_MARGIN", 1.333)
    text = ma.method_text()
    for figure in ("0.417", "1.123", "0.789", "0.913", "0.031", "spread 0.13", "2.5",
                   "7 ratios", "1.077", "1.333"):
        assert figure in text, figure
    assert "0.351" not in text


def test_the_published_command_drops_the_played_cache() -> None:
    """A --played cache is of runs the same code plays again; `python -m bench` reruns the
    committed command, and a stale cache after a planner change must not be what it reads."""
    from bench.memory_e2e import _without_cache

    assert _without_cache(["--seed", "2018", "2019", "--played", "/tmp/p.pkl", "--jobs", "2"]) \
        == ["--seed", "2018", "2019", "--jobs", "2"]
    assert _without_cache(["--played=/tmp/p.pkl", "--quick"]) == ["--quick"]


def test_a_demand_candidate_is_swapped_in_for_its_replay_and_put_back() -> None:
    """bench.studies.memory_demand_candidates: plan_memory sizes with the candidate's rule
    while it runs (a larger GC room, a larger heap), with the default's before and after."""
    from bench.studies import memory_demand_candidates as mc
    from cobell_cli.core.memory import demand, model
    from cobell_cli.core.memory.plan import MemoryRequest, plan_memory
    from cobell_cli.core.memory.sizing import ContainerRules

    runs = [{"input_bytes": size * 2**20, "scale_out": 4, "executor_memory_mb": 4096,
             "status": "succeeded", "peak_memory_mb": 600.0 + size / 10}
            for size in (1000, 2000, 3000, 4000, 5000)]
    runs.append({"input_bytes": 5000 * 2**20, "scale_out": 4, "executor_memory_mb": 1024,
                 "status": "failed", "failure_reason": "memory"})
    request = MemoryRequest(ContainerRules(backend="yarn", allocation_mb=512),
                            input_bytes=5000 * 2**20)

    def point() -> float:
        return plan_memory(runs, [4], request).at(4).predicted_peak_mb  # type: ignore[union-attr]

    saved = demand.observations, model.MemoryModel
    before = point()
    with mc.candidate("gc-room-1.15"):
        roomier = point()
    with mc.candidate("prior"):
        assert model.MemoryModel().prior is not None
    from cobell_cli.core.memory import plan as memory_plan

    with mc.candidate("asked-0.99"):  # as `--memory-confidence 0.99` plans
        asked = memory_plan.plan_memory(runs, [4], request)
    assert asked.confidence == 0.99 and asked.description["held_out_ratios"] == 3
    assert memory_plan.plan_memory is plan_memory
    assert (demand.observations, model.MemoryModel) == saved and point() == before
    assert roomier == pytest.approx(before * 1.15 / demand.DEMAND.headroom, rel=0.02)
    with pytest.raises(ValueError), mc.candidate("no-such"):
        pass


def test_a_candidate_wins_only_lower_on_both_by_a_standard_error() -> None:
    from bench.studies import memory_demand_candidates as mc

    cells = [(seed, world, "sgd") for seed in (2018, 2019, 2020) for world in ("simulator",
                                                                            "nodesim")]
    base = {c: (1.10, 2.0) for c in cells}
    better = {c: (1.05 - 0.01 * (c[0] - 2019), 0.0) for c in cells}
    cheaper = {c: (1.05 - 0.01 * (c[0] - 2019), 2.0) for c in cells}  # same OOMs
    costly = {c: (1.30, 0.0) for c in cells}  # fewer OOMs, more MB-s: no win
    names = ("default", "better", "cheaper", "costly")
    text = mc.render(dict(zip(names, (base, better, cheaper, costly), strict=True)),
                     {n: {"cases": 1, "ok": 1, "sized": 1, "success_pct": 100.0,
                          "median_ratio": 1.0} for n in names}, "cmd", 1.0)
    rows = {n: [line for line in text.splitlines() if line.startswith(f"| {n} | ")
                and "sim" in line] for n in names}
    assert all(len(r) == 2 for r in rows.values())
    assert all(line.endswith("| yes |") for line in rows["better"] + rows["cheaper"])
    assert all(line.endswith("| no |") for line in rows["costly"] + rows["default"])
    assert not mc.wins_over((-0.05, 0.06), (0.0, 0.0))  # within its standard error
    assert mc.difference([1.0, 2.0], [0.5, 1.0]) == pytest.approx((0.75, 0.25))


def test_a_candidate_is_compared_with_the_default_case_by_case() -> None:
    """bench.memory_accuracy's "log container vs the default": the mean and standard error of
    log(candidate / default) over the cases both sized, worked out by hand; another method's
    scores and a case the candidate did not size are left out."""
    import math

    from bench.memory_accuracy import paired_log_ratio

    a, b, c = (Case(job, 100, 1, above_mb=448, at_most_mb=512) for job in "abc")
    default = [Score("cobell", a, 1024), Score("cobell", b, 2048), Score("cobell", c, 512),
               Score("other", a, 4096)]
    candidate = [Score("cobell", a, 512), Score("cobell", b, 2048), Score("cobell", c, None)]
    mean, se = paired_log_ratio(default, candidate)
    diffs = [math.log(0.5), 0.0]
    assert mean == pytest.approx(sum(diffs) / 2)
    assert se == pytest.approx(abs(diffs[0] - diffs[1]) / math.sqrt(2) / math.sqrt(2))
    assert all(math.isnan(v) for v in paired_log_ratio(default, candidate[1:]))


def test_the_candidates_study_lists_the_held_out_cells_whose_oom_runs_differ() -> None:
    """oom_lines: one row per held-out cell where a candidate's OOM runs are not the default's;
    the development seed and equal cells are left out."""
    from bench.studies import memory_demand_candidates as mc

    dev, held, same = (mc.DEVELOPMENT_SEED, "nodesim", "sgd"), (2019, "nodesim", "sgd"), \
        (2020, "simulator", "kmeans")
    rows = [line for line in mc.oom_lines({
        "default": {dev: [], held: [35], same: [4]},
        "deep-folds": {dev: [3], held: [6, 35], same: [4]}}) if line.startswith("| deep")]
    assert rows == ["| deep-folds | 2019 | nodesim | sgd | [35] | [6, 35] |"]


def test_the_default_prior_is_the_fit_bench_memory_measure_reports_on_tune_quiet() -> None:
    """bound.DEFAULT_PRIOR says it is fit_prior on tune-quiet's held-out ratios under the tune
    set's chosen rule, on the reserved scale a prior reads; the bench once drifted to the
    default model's own ratios (another scale) and reported another prior without noticing."""
    from bench.memory_measure import _same, prior_groups
    from cobell_cli.core.memory.bound import DEFAULT_PRIOR, fit_prior
    from cobell_cli.core.memory.demand import PEAK_RULE

    groups = prior_groups("tune-quiet", PEAK_RULE)
    assert sorted(groups) == ["broadcast", "cache", "collect", "distinct", "sort", "zipf"]
    assert _same(fit_prior(list(groups.values())), DEFAULT_PRIOR)
