"""The what-if in planning: the bootstrap from a profile, the candidate curve, the history's
profiles read by the API (a real SQLite history), and the reason that says so."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from cobell_cli import api, config
from cobell_cli.cluster.none import NoCluster
from cobell_cli.core.model import fit_runtime_model
from cobell_cli.core.plan import plan
from cobell_cli.core.profile import PROFILE_FORMAT, AppProfile, JobProfile
from cobell_cli.core.whatif import fit_whatif
from cobell_cli.store.history import History
from tests.test_whatif import profile, stage


def wide_profile(executors: int = 2, name: str = "etl") -> AppProfile:
    """24 tasks of 1 s after 2 s of driver time: the replay at N takes 2 + ceil(24 / N)."""
    runtime = 2.0 + math.ceil(24 / executors)
    return profile([stage(0, [1.0] * 24, submit=2.0)], runtime_s=runtime, executors=executors,
                   jobs=[JobProfile(0, 2.0, runtime, [0])], name=name)


def run(i: int, x: int, runtime_s: float) -> dict:
    return {"id": i, "job": "etl", "status": "succeeded", "scale_out": x, "runtime_s": runtime_s,
            "started_at": 1000.0 * i, "input_bytes": None, "overlaps": {}}


def test_one_run_with_a_profile_is_planned_from_the_whatif_not_by_search():
    history = [run(1, 2, 14.0)]
    common = dict(job="etl", history=history, now=1e6, target_s=8.5, min_scale_out=1,
                  max_scale_out=16, confidence=None)
    searched = plan(**common)
    assert searched.phase == "bootstrap-search"
    chosen = plan(**common, profiles=[wide_profile(2)])
    assert chosen.phase == "bootstrap-whatif"
    # 2 + ceil(24 / N) <= 8.5 first at N = 4 (8 s)
    assert chosen.scale_out == 4 and chosen.predicted_s == pytest.approx(8.0)
    assert "what-if" in chosen.reason and chosen.model["kind"] == "what-if"
    predicted = {c.scale_out: c.predicted_s for c in chosen.candidates}
    assert predicted[3] == pytest.approx(10.0) and predicted[8] == pytest.approx(5.0)


def test_at_a_confidence_the_whatif_plans_on_its_upper_bound():
    # Since issue 34 the bound is read from the candidate's predictive distribution (around
    # the what-if corrected by the run: 14 s at 2, as measured), not the what-if's own
    # interval. A target between the point and the bound at 2 tells the two decisions apart.
    history = [run(1, 2, 14.0)]
    target = 15.0
    careful = plan(job="etl", history=history, now=1e6, target_s=target, min_scale_out=1,
                   max_scale_out=16, confidence=0.97, profiles=[wide_profile(2)])
    point = plan(job="etl", history=history, now=1e6, target_s=target, min_scale_out=1,
                 max_scale_out=16, confidence=None, profiles=[wide_profile(2)])
    assert careful.phase == point.phase == "bootstrap-whatif"
    expected = next(c.scale_out for c in careful.candidates if c.upper_s <= target)
    assert careful.scale_out == expected and careful.upper_s <= target
    assert careful.upper_s > careful.predicted_s
    assert point.scale_out < careful.scale_out  # the point plan decides on the prediction


def test_a_profile_without_tasks_falls_back_to_search_with_a_warning():
    empty = profile([stage(0, [])], runtime_s=5.0)
    chosen = plan(job="etl", history=[run(1, 2, 14.0)], now=1e6, target_s=8.5,
                  min_scale_out=1, max_scale_out=16, profiles=[empty])
    assert chosen.phase == "bootstrap-search"
    assert any("what-if cannot use" in w for w in chosen.warnings)


def test_one_scale_out_the_model_extrapolates_along_the_whatif():
    runs = [run(i, 2, 14.0 * f) for i, f in ((1, 1.0), (2, 1.02), (3, 0.98))]
    model = fit_runtime_model(runs, whatif=fit_whatif([wide_profile(2)]))
    assert model.describe()["extrapolation"]["kind"] == "what-if"
    # through the runs' level (14 s at 2), then along 2 + ceil(24 / N)
    assert model.predict([4])[0] == pytest.approx(8.0, rel=0.01)
    assert fit_runtime_model(runs).describe()["extrapolation"]["kind"] != "what-if"


def test_runs_4_to_6_take_the_whatif_when_it_predicts_held_out_runs_better():
    history = [run(i, x, 1.1 * (2 + math.ceil(24 / x))) for i, x in enumerate((2, 3, 5), 1)]
    chosen = plan(job="etl", history=history, now=1e6, target_s=8.0, min_scale_out=1,
                  max_scale_out=16, confidence=None, profiles=[wide_profile(2)])
    assert chosen.phase == "bootstrap-whatif"
    assert "The what-if replaced the runtime model" in chosen.reason
    assert chosen.scale_out == 5  # 1.1 x (2 + ceil(24 / 5)) = 7.7 s; at 4: 1.1 x 8 = 8.8
    # Runs on a smooth Amdahl curve the waves cannot follow: the model keeps its place.
    smooth = [run(i, x, 3.0 + 30.0 / x) for i, x in enumerate((1, 3, 5, 7), 1)]
    kept = plan(job="etl", history=smooth, now=1e6, target_s=8.0, min_scale_out=1,
                max_scale_out=16, confidence=None, profiles=[wide_profile(2)])
    assert kept.phase == "bootstrap-parametric"


def test_the_whatif_is_a_candidate_chosen_by_cross_validation():
    # Runs follow the replay (2 + ceil(24/x)) times 1.1: the what-if fits them exactly,
    # a smooth Ernest curve cannot follow the waves.
    w = fit_whatif([wide_profile(2)])
    runs = [run(i, x, 1.1 * (2 + math.ceil(24 / x))) for i, x in enumerate(
        (1, 2, 3, 4, 5, 7, 9, 13), start=1)]
    model = fit_runtime_model(runs, whatif=w)
    assert "whatif" in model.cv_["interpolation_cv_mre"]
    assert model.cv_["interpolation"] == "whatif"
    assert model.cv_["interpolation_cv_mre"]["whatif"] < 1e-9
    assert model.predict([6])[0] == pytest.approx(1.1 * 6.0)
    plain = fit_runtime_model(runs)
    assert "whatif" not in plain.cv_["interpolation_cv_mre"]


# --- the history's profiles, read by the API ------------------------------------------------


def store_profile(history: History, run_id: int, p: AppProfile, fmt: int = PROFILE_FORMAT,
                  text: str | None = None) -> None:
    with history.transaction():
        history.conn.execute(
            "INSERT INTO run_profiles (run_id, format, summary) VALUES (?, ?, ?)",
            (run_id, fmt, text if text is not None else json.dumps(p.to_dict())))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "history.db"
    with History.open(path) as history:
        history.insert_runs([
            {"job": "etl", "status": "succeeded", "scale_out": 2, "runtime_s": 14.0,
             "started_at": 100.0},
            {"job": "other", "status": "succeeded", "scale_out": 4, "runtime_s": 30.0,
             "started_at": 50.0},
            {"job": "other", "status": "succeeded", "scale_out": 2, "runtime_s": 40.0,
             "started_at": 60.0},
        ], keep_ids=False)
        ids = {r["job"] + str(r["scale_out"]): r["id"] for r in history.runs()}
        store_profile(history, ids["etl2"], wide_profile(2))
        store_profile(history, ids["other4"], wide_profile(4, name="other"))
        store_profile(history, ids["other2"], wide_profile(2, name="other"), fmt=99)
    return path


def test_profiles_query_newest_first_parsed_and_bounded(db: Path):
    with History.open(db, read_only=True) as history:
        mine = history.profiles("etl")
        assert [p.app_name for p in mine] == ["etl"]
        assert mine[0].stages[0].task_s == [1.0] * 24
        everyone = history.profiles()
        # the other job's second profile has an unknown format: left out
        assert [p.app_name for p in everyone] == ["etl", "other"]
        assert len(history.profiles(limit=1)) == 1
        assert history.profiles("nobody") == []


def test_a_damaged_profile_is_left_out(db: Path):
    with History.open(db) as history:
        run_id = next(r["id"] for r in history.runs(job="other") if r["scale_out"] == 4)
        with history.transaction():
            history.conn.execute("DELETE FROM run_profiles WHERE run_id = ?", (run_id,))
        store_profile(history, run_id, wide_profile(), text="{not json")
        assert [p.app_name for p in history.profiles()] == ["etl"]


def test_predict_reads_the_profiles_and_says_the_whatif_planned(db: Path):
    settings = config.load({"db": str(db), "max_scale_out": 16, "confidence": "point"})
    with History.open(db, read_only=True) as history:
        result = api.predict(history, NoCluster("test"), settings, job="etl", target_s=8.5,
                             now=1e6).to_dict()
    assert result["phase"] == "bootstrap-whatif"
    assert result["scale_out"] == 4
    assert result["model"]["kind"] == "what-if"
    assert "what-if" in result["reason"]


def test_an_event_log_path_without_a_profile_is_read(tmp_path: Path):
    log = sorted((Path(__file__).parent / "data" / "eventlogs" / "logs").glob("app-*0000*"))[0]
    path = tmp_path / "h.db"
    with History.open(path) as history:
        history.insert_runs([{"job": "etl", "status": "succeeded", "scale_out": 2,
                              "runtime_s": 54.9, "started_at": 1.0, "event_log": str(log)}],
                            keep_ids=False)
    settings = config.load({"db": str(path), "max_scale_out": 16})
    with History.open(path, read_only=True) as history:
        assert history.event_log_paths("etl") == [str(log)]
        result = api.predict(history, NoCluster("test"), settings, job="etl", target_s=40,
                             now=1e6).to_dict()
    assert result["phase"] == "bootstrap-whatif"
    assert result["model"]["observed"][0]["scale_out"] == 2


def test_a_missing_event_log_is_a_warning_and_the_search_goes_on(tmp_path: Path):
    path = tmp_path / "h.db"
    with History.open(path) as history:
        history.insert_runs([{"job": "etl", "status": "succeeded", "scale_out": 2,
                              "runtime_s": 54.9, "started_at": 1.0,
                              "event_log": str(tmp_path / "gone.zstd")}], keep_ids=False)
    settings = config.load({"db": str(path), "max_scale_out": 16})
    with History.open(path, read_only=True) as history:
        result = api.predict(history, NoCluster("test"), settings, job="etl", target_s=40,
                             now=1e6).to_dict()
    assert result["phase"] == "bootstrap-search"
    assert any("cannot read the job's event log" in w for w in result["warnings"])


def test_model_show_fits_with_the_jobs_whatif(tmp_path: Path):
    from tests.cli_support import cobell

    path = tmp_path / "h.db"
    xs = (1, 2, 3, 4, 5, 7, 9, 13)
    with History.open(path) as history:
        history.insert_runs([{"job": "etl", "status": "succeeded", "scale_out": x,
                              "runtime_s": 1.1 * (2 + math.ceil(24 / x)),
                              "started_at": float(i)} for i, x in enumerate(xs)],
                            keep_ids=False)
        store_profile(history, history.runs(job="etl")[-1]["id"], wide_profile(2))
    r = cobell("--db", path, "model", "show", "--job", "etl")
    assert r.exit_code == 0, r.stderr
    assert "the what-if replay of the job's event-log profile" in r.stdout
    shown = json.loads(cobell("--db", path, "model", "show", "--job", "etl", "--json").stdout)
    assert shown["cv"]["interpolation"] == "whatif"


def test_from_run_7_the_model_with_interference_keeps_its_place_when_it_fits():
    # runs on a smooth Amdahl curve the replay's waves cannot follow, some slowed by a
    # co-runner (a = 0.5 per unit overlap): the fitted curve predicts them, the what-if not
    history = []
    for i, x in enumerate((1, 2, 3, 4, 5, 7, 9, 13, 2, 4), start=1):
        ov = 0.8 if i % 2 else 0.0
        r = run(i, x, (3.0 + 30.0 / x) * (1 + 0.5 * ov))
        r["overlaps"] = {"wordcount": ov} if ov else {}
        history.append(r)
    chosen = plan(job="etl", history=history, now=1e6, target_s=8.0, min_scale_out=1,
                  max_scale_out=16, confidence=None, profiles=[wide_profile(2)])
    assert chosen.phase == "model"
    assert "replaced the runtime model" not in chosen.reason
