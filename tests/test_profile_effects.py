"""Resource profiles and the interference of pairs never seen together (core/profile_effects):
shares from task metrics, the structure and its choice against the pooled effect, the
priors a job's model consults, and the hook in the model, its table and the bound."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from cobell_cli.core.calibration import stranger_factors
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.model_table import ModelTable, tabulate
from cobell_cli.core.profile import AppProfile, StageProfile
from cobell_cli.core.profile_effects import (
    PairEffect,
    PairPriors,
    choose,
    job_profile,
    pair_effects,
    priors_for,
    shares,
)
from cobell_cli.core.profile_effects.shares import CLASSES
from cobell_cli.store.history import History

# --- shares -----------------------------------------------------------------------------------


def test_shares_read_each_resource_per_task_second() -> None:
    s = shares({"run_s": 100.0, "cpu_s": 60.0, "gc_s": 10.0, "input_bytes": 2e9,
                "shuffle_read_bytes": 0.0, "shuffle_fetch_wait_s": 5.0})
    assert s is not None and set(s) == set(CLASSES)
    assert s["cpu"] == pytest.approx(0.6) and s["memory"] == pytest.approx(0.1)
    assert s["disk"] == pytest.approx(0.5)  # 20 MB per task-second: half a share
    assert s["network"] == pytest.approx(0.05)
    assert s["wait"] == pytest.approx(1 - 0.6 - 0.1 - 0.05)


def test_a_run_without_task_time_has_no_profile() -> None:
    assert shares({}) is None and shares({"run_s": 0.0, "cpu_s": 3.0}) is None


def test_shares_do_not_depend_on_how_much_work_a_job_does() -> None:
    small = {"run_s": 10.0, "cpu_s": 4.0, "shuffle_write_bytes": 1e8}
    big = {k: 50 * v for k, v in small.items()}
    assert shares(small) == pytest.approx(shares(big))


def test_a_job_profile_is_the_median_of_its_runs() -> None:
    runs = [{"cpu": 0.2, "wait": 0.8}, {"cpu": 0.5, "wait": 0.5}, None, {"cpu": 0.9}]
    p = job_profile(runs)
    assert p is not None and p["cpu"] == 0.5 and p["wait"] == 0.5
    assert job_profile([None]) is None


# --- the structure ----------------------------------------------------------------------------

JOBS = {"cpu-a": (0.9, 0.1, 0.0, 0.0, 0.1), "cpu-b": (0.8, 0.1, 0.1, 0.0, 0.1),
        "disk-a": (0.1, 0.0, 0.9, 0.1, 0.4), "disk-b": (0.2, 0.0, 0.8, 0.2, 0.4),
        "net": (0.2, 0.0, 0.1, 0.9, 0.3), "sleepy": (0.05, 0.0, 0.0, 0.0, 0.95)}


def _truth(j: str, k: str) -> float:
    u, v = np.array(JOBS[j][:4]), np.array(JOBS[k][:4])
    return 0.6 * float(u @ v)


def _pairs(noise: float = 0.0, seed: int = 1) -> list[PairEffect]:
    rng = np.random.default_rng(seed)
    return [PairEffect(j, k, _truth(j, k) + noise * float(rng.normal()), 0.01)
            for j in JOBS for k in JOBS if j != k]


def test_profiles_that_explain_the_pairs_beat_the_pooled_effect() -> None:
    s = choose(_pairs(noise=0.01), {j: list(v) for j, v in JOBS.items()})
    assert s.form != "pooled"
    assert s.cv_error_[s.form] < 0.5 * s.cv_error_["pooled"]
    assert s.predict("cpu-a", "cpu-b") == pytest.approx(_truth("cpu-a", "cpu-b"), abs=0.05)
    assert s.predict("sleepy", "cpu-a") < 0.1 < s.predict("cpu-a", "cpu-b")


def test_profiles_that_say_nothing_leave_the_pooled_effect() -> None:
    """Effects unrelated to the profiles: the simplest form within one SE is the pooled."""
    rng = np.random.default_rng(3)
    pairs = [PairEffect(j, k, 0.3 + 0.05 * float(rng.normal()), 0.01)
             for j in JOBS for k in JOBS if j != k]
    s = choose(pairs, {j: list(v) for j, v in JOBS.items()})
    assert s.form == "pooled"
    assert priors_for("cpu-a", ["net"], s, {"interference": {}}).pairs == {}


def test_too_few_pairs_or_no_profiles_leave_the_pooled_effect() -> None:
    assert choose(_pairs()[:3], {j: list(v) for j, v in JOBS.items()}).form == "pooled"
    assert choose(_pairs(), {}).form == "pooled"


def test_a_job_without_a_profile_gets_no_prior() -> None:
    profiles = {j: list(v) for j, v in JOBS.items() if j != "net"}
    s = choose([p for p in _pairs() if "net" not in (p.victim, p.co_runner)], profiles)
    assert s.form != "pooled" and s.predict("cpu-a", "net") is None
    assert priors_for("cpu-a", ["net"], s, {"interference": {}}).pairs == {}


# --- the priors -------------------------------------------------------------------------------


def _description(pairs: dict[str, tuple[float, float]], pool: tuple[float, float] = (0.2, 0.8),
                 ) -> dict:
    return {"interference": {k: {"a": a, "b": b, "unpooled": {"a": a, "b": b},
                                 "effect_sd_own": 0.1, "reference_scale_out": 2.0}
                             for k, (a, b) in pairs.items()},
            "combination": {"pooling": {"mean": {"a": pool[0], "b": pool[1]}}}}


def test_seen_pairs_are_read_off_a_models_description_unpooled() -> None:
    desc = _description({"net": (0.1, 0.4), "*": (0.3, 0.3)})
    desc["interference"]["net"]["a"] = 9.0  # the pooled posterior is not what the runs said
    (e,) = pair_effects("cpu-a", desc)
    assert (e.victim, e.co_runner) == ("cpu-a", "net")
    assert e.effect == pytest.approx(0.1 + 0.4 / 2) and e.variance == pytest.approx(0.01)


def test_a_prior_splits_its_effect_as_the_pooled_pair_does() -> None:
    s = choose(_pairs(noise=0.01), {j: list(v) for j, v in JOBS.items()})
    priors = priors_for("cpu-a", ["cpu-b", "net"], s, _description({"net": (0.1, 0.1)}))
    assert set(priors.pairs) == {"cpu-b"}  # net has a pair of its own
    (a, b), cov = priors.pairs["cpu-b"]
    effect = s.predict("cpu-a", "cpu-b")
    assert a + b / 2 == pytest.approx(effect)
    assert a / (b / 2) == pytest.approx(0.2 / (0.8 / 2))  # the pool's split at x_ref = 2
    assert cov[0] >= 0 and cov[2] >= 0 and cov[1] ** 2 == pytest.approx(cov[0] * cov[2])


# --- the hook in the runtime model, its table and the bound ---------------------------------


def _runs() -> list[dict]:
    """A job slowed 60 % by `heavy` (its own pair) and met once by `light` (pooled)."""
    out = []
    rng = np.random.default_rng(5)
    for i, x in enumerate([1, 2, 3, 4, 6, 8] * 3):
        alone = 100.0 / x + 10.0
        ov = {"heavy": 0.5} if i // 6 == 1 else {}
        if i == 14:
            ov = {"light": 0.5}
        factor = 1 + 1.2 * ov.get("heavy", 0.0) + 0.2 * ov.get("light", 0.0)
        out.append({"scale_out": x, "runtime_s": alone * factor * float(rng.lognormal(0, 0.01)),
                    "overlaps": ov})
    return out


def test_the_model_consults_the_prior_only_for_a_job_without_its_own_pair() -> None:
    model = fit_runtime_model(_runs())
    pooled = model.interference("stranger")
    own = model.interference("heavy")
    prior = PairPriors("job", {"stranger": ((0.05, 0.0), (1e-4, 0.0, 0.0)),
                               "heavy": ((9.0, 9.0), (0.0, 0.0, 0.0))})
    model.pair_prior = prior
    assert model.interference("stranger") == (0.05, 0.0)
    assert model.pair_covariance("stranger") == (1e-4, 0.0, 0.0)
    assert model.interference("heavy") == own  # its own runs take over
    assert model.interference("other") == pooled  # no prior: the pooled pair, as before
    with_prior = model.predict([4], {"stranger": 1.0})[0]
    assert with_prior == pytest.approx(model.predict([4])[0] * 1.05)
    model.pair_prior = None
    assert model.interference("stranger") == pooled


def test_the_cached_table_answers_with_the_same_prior() -> None:
    model = fit_runtime_model(_runs())
    table = ModelTable.from_payload(tabulate(model, 8, 0.9).to_payload(),
                                    fallback=lambda: fit_runtime_model(_runs()))
    prior = PairPriors("job", {"stranger": ((0.3, 0.4), (1e-3, 0.0, 1e-3))})
    model.pair_prior = table.pair_prior = prior
    off_grid = table.predict([2.5], {"stranger": 0.7})[0]  # answered by the real model
    assert off_grid == pytest.approx(model.predict([2.5], {"stranger": 0.7})[0])
    for x in (1, 3, 8):
        assert table.predict([x], {"stranger": 0.7})[0] == pytest.approx(
            model.predict([x], {"stranger": 0.7})[0])
        lo, hi = table.predict_interval([x], {"stranger": 0.7}, confidence=0.9)
        mlo, mhi = model.predict_interval([x], {"stranger": 0.7}, confidence=0.9)
        assert (lo[0], hi[0]) == pytest.approx((float(mlo[0]), float(mhi[0])))


def test_a_prior_moves_the_point_but_never_bounds_a_stranger_below_the_worst_pair() -> None:
    model = fit_runtime_model(_runs())
    rows = [{"stranger": 1.0}]
    worst, strangers = stranger_factors([2.0], rows, model)
    assert strangers == ["stranger"] and worst[0] > 1.0
    worst_rc = max(a + b / 2.0 for a, b in (model.interference(k) for k in ("heavy", "x")))
    model.pair_prior = PairPriors("job", {"stranger": ((0.05, 0.0), (0.0, 0.0, 0.0))})
    mild, strangers = stranger_factors([2.0], rows, model)
    assert strangers == ["stranger"]
    assert mild[0] == pytest.approx((1 + worst_rc) / 1.05)  # the worst pair, over the prior
    model.pair_prior = PairPriors("job", {"stranger": ((worst_rc + 1.0, 0.0), (0.0, 0.0, 0.0))})
    assert stranger_factors([2.0], rows, model)[0] == [1.0]  # a prior above it is its own bound


# --- the history keeps older profiles readable ------------------------------------------------


def test_a_format_1_profile_in_the_history_still_loads(tmp_path: Path) -> None:
    p = AppProfile("app-1", "etl", 0, 10_000, 10.0,
                   stages=[StageProfile(0, 0, [], 0.0, 5.0, [5.0], [0.0])])
    data = p.to_dict()
    data.pop("resources")
    data["stages"][0].pop("resources")
    with History.open(tmp_path / "h.db") as history:
        (run_id,) = history.insert_runs([{"job": "etl", "status": "succeeded", "scale_out": 1,
                                          "runtime_s": 10.0, "started_at": 1.0}],
                                        keep_ids=False)
        with history.transaction():
            history.conn.execute("INSERT INTO run_profiles VALUES (?, 1, ?)",
                                 (run_id, json.dumps(data)))
        (back,) = history.profiles("etl")
    assert back.stages[0].task_s == [5.0] and back.resources == {}
    assert not math.isnan(back.runtime_s)


# --- predict: the history's profiles and pairs give a never-met co-runner its pair -----------

# pressed shares (cpu, memory, disk, network) and wait of each job's tasks
KINDS = {"victim": (0.8, 0.1, 0.0, 0.05, 0.05), "cpu-b": (0.85, 0.05, 0.0, 0.05, 0.05),
         "cpu-c": (0.7, 0.1, 0.1, 0.0, 0.1), "disk-a": (0.1, 0.0, 0.8, 0.0, 0.1),
         "disk-b": (0.15, 0.05, 0.7, 0.0, 0.1), "sleepy": (0.02, 0.0, 0.0, 0.0, 0.98)}
NEVER_MET = ("victim", "cpu-b")


def _effect(j: str, k: str) -> float:
    u, v = np.array(KINDS[j][:4]), np.array(KINDS[k][:4])
    return 1.0 * float(u @ v)


def _resources(kind: str) -> dict:
    cpu, mem, disk, net, _ = KINDS[kind]
    rate = 20e6  # bytes per task-second at half a share
    return {"run_s": 100.0, "cpu_s": 100 * cpu, "gc_s": 100 * mem,
            "input_bytes": 100 * rate * disk / (1 - disk),
            "shuffle_read_bytes": 100 * rate * net / (1 - net)}


def _history(path: Path) -> None:
    rng = np.random.default_rng(9)
    runs = []
    for job in KINDS:
        others = [k for k in KINDS if k != job and {job, k} != set(NEVER_MET)]
        for i, x in enumerate([2, 4, 8] * 6):
            co = others[i % len(others)] if i % 3 else None
            e = _effect(job, co) if co else 0.0
            y = (100.0 / x + 10.0) * (1 + 0.5 * e) * float(rng.lognormal(0, 0.01))
            start = 1000.0 * len(runs)
            runs.append({"job": job, "status": "succeeded", "scale_out": x, "runtime_s": y,
                         "started_at": start, "finished_at": start + y,
                         "colocations": [{"co_runner_job": co, "overlap_ratio": 0.5,
                                          "co_runner_scale_out": 4}] if co else []})
    with History.open(path) as history:
        ids = history.insert_runs(runs, keep_ids=False)
        with history.transaction():
            for run_id, run in zip(ids, runs, strict=True):
                history.conn.execute("INSERT INTO run_profiles VALUES (?, 2, ?)", (
                    run_id, json.dumps({"resources": _resources(run["job"])})))


def test_predict_gives_a_never_met_co_runner_its_pair_from_the_profiles(tmp_path: Path) -> None:
    from cobell_cli import api, config
    from cobell_cli.cluster.base import RunningApp
    from cobell_cli.cluster.none import NoCluster

    class Running(NoCluster):
        def running_apps(self) -> list[RunningApp]:
            return [RunningApp("app-1", "cpu-b", "cpu-b", "u", "q", "RUNNING", 5e6 - 10,
                               scale_out=4)]

    db = tmp_path / "h.db"
    _history(db)
    settings = config.load({"db": str(db), "max_scale_out": 16, "model_cache": "off"})
    with History.open(db, read_only=True) as history:
        assert set(history.resource_totals()) == set(KINDS)
        result = api.predict(history, Running("test"), settings, job="victim", target_s=60,
                             now=5e6).to_dict()
    priors = result["pair_priors"]
    assert priors is not None and priors["structure"]["form"] != "pooled"
    a, b = priors["priors"]["cpu-b"]["a"], priors["priors"]["cpu-b"]["b"]
    x_ref = 2.0  # the victim's smallest scale-out: where its pairs were read
    truth = _effect("victim", "cpu-b")
    assert a + b / x_ref == pytest.approx(truth, rel=0.3)
    # the bound still charges it the most harmful pair: a stranger there
    assert "cpu-b" in result["calibration"]["strangers"]


def test_model_show_and_history_show_print_the_resource_profile(tmp_path: Path) -> None:
    from tests.cli_support import cobell

    db = tmp_path / "h.db"
    _history(db)
    shown = cobell("--db", db, "model", "show", "-j", "disk-a", "--json")
    assert shown.exit_code == 0, shown.stderr
    profile = json.loads(shown.stdout)["resource_profile"]
    assert profile["runs"] == 18 and profile["shares"]["disk"] == pytest.approx(0.8)
    assert profile["shares"]["cpu"] == pytest.approx(0.1)
    text = cobell("--db", db, "model", "show", "-j", "disk-a")
    assert "resources" in text.stdout and "disk 0.80" in text.stdout
    run = cobell("--db", db, "history", "show", "1", "--json")
    assert json.loads(run.stdout)["resource_profile"]["shares"]["cpu"] == pytest.approx(0.8)
    assert "cpu 0.80" in cobell("--db", db, "history", "show", "1").stdout
