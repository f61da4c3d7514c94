"""The what-if's replay memory: in the core (`WhatIfModel(memory=...)`), on disk
(store/replay_cache.py, real files), and through `cobell predict` (real processes)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from cobell_cli import api, config
from cobell_cli.cluster.none import NoCluster
from cobell_cli.core import whatif
from cobell_cli.core.profile import AppProfile, JobProfile
from cobell_cli.core.whatif import estimator, fit_whatif
from cobell_cli.store.history import History
from cobell_cli.store.replay_cache import ReplayCache
from tests.cli_support import cobell_process
from tests.test_whatif import profile, stage
from tests.test_whatif_plan import store_profile

XS = list(range(1, 41))  # exact replays and a few grid points beyond EXACT_UP_TO


def etl_profile(task_s: float = 1.0, executors: int = 2) -> AppProfile:
    """Two chained stages of 24 and 12 tasks after 2 s of driver time."""
    tasks = [task_s] * 24
    runtime = 2.0 + math.ceil(24 / executors) * task_s + math.ceil(12 / executors)
    stages = [stage(0, tasks, submit=2.0), stage(1, [1.0] * 12, parents=[0], submit=3.0)]
    return profile(stages, runtime_s=runtime, executors=executors,
                   jobs=[JobProfile(0, 2.0, runtime, [0, 1])], name="etl")


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the real replays (`replay_s` calls) the what-if makes."""
    calls: list[int] = []
    real = estimator.replay_s

    def counted(w: whatif.Workload, executors: int, startup: whatif.Startup | None = None
                ) -> float:
        calls.append(executors)
        return real(w, executors, startup)

    monkeypatch.setattr(estimator, "replay_s", counted)  # where WhatIfModel looks it up
    return calls


# --- the core: WhatIfModel(memory=...) ----------------------------------------------------


def test_a_second_fit_with_the_memory_replays_nothing_and_predicts_the_same(replays):
    memory: dict[str, dict[int, float]] = {}
    first = fit_whatif([etl_profile()], memory=memory).predict(XS)
    assert replays, "the first fit must replay"
    assert list(memory) and len(memory[next(iter(memory))]) > len(XS) // 2
    replays.clear()
    assert fit_whatif([etl_profile()], memory=memory).predict(XS) == first
    assert replays == []
    fit_whatif([etl_profile()]).predict(XS)  # without the memory: every fit replays
    assert replays


def test_the_memory_is_read_a_tampered_value_is_what_the_model_predicts():
    memory: dict[str, dict[int, float]] = {}
    model = fit_whatif([etl_profile()], memory=memory)
    before, replayed = model.predict([5])[0], model.replay(5)
    memory[model.cache_key()][5] = 10 * replayed
    again = fit_whatif([etl_profile()], memory=memory)
    assert again.cache_key() == model.cache_key()
    assert again.predict([5])[0] == pytest.approx(10 * before)


def test_changed_profile_content_under_the_same_app_id_gets_a_new_key(replays):
    old, new = etl_profile(task_s=1.0), etl_profile(task_s=1.0)
    # one warm task slower: same app id, runtime, number of tasks and start-up fit
    slower = [replace(new.stages[0], task_s=[1.0] * 10 + [9.0] + [1.0] * 13), new.stages[1]]
    new = replace(new, stages=slower)
    assert (old.app_id, old.runtime_s) == (new.app_id, new.runtime_s)
    memory: dict[str, dict[int, float]] = {}
    a = fit_whatif([old], memory=memory)
    replays.clear()
    b = fit_whatif([new], memory=memory)
    assert a.startup_ == b.startup_
    assert a.cache_key() != b.cache_key()
    assert b.predict(XS) != a.predict(XS)
    assert replays, "the new content must be replayed, not answered from the old table"
    assert len(memory) == 2


def test_the_start_up_fit_is_part_of_the_key():
    scaled = fit_whatif([etl_profile()])
    observed = fit_whatif([etl_profile()], host_offset=None)  # start-up as the log shows it
    assert scaled.startup_ != observed.startup_
    assert scaled.cache_key() != observed.cache_key()


# --- on disk: ReplayCache ----------------------------------------------------------------


def replay_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("replay-*.json"))


def test_a_saved_table_answers_another_process_and_is_written_once(tmp_path: Path, replays):
    first = ReplayCache(tmp_path)
    want = fit_whatif([etl_profile()], memory=first).predict(XS)
    first.save()
    [path] = replay_files(tmp_path)
    replays.clear()
    second = ReplayCache(tmp_path)  # a new process's view: nothing in memory
    assert fit_whatif([etl_profile()], memory=second).predict(XS) == want
    assert replays == []
    path.unlink()
    second.save()  # nothing grew: nothing written
    assert replay_files(tmp_path) == []


def test_a_tampered_stored_value_changes_the_prediction(tmp_path: Path):
    cache = ReplayCache(tmp_path)
    model = fit_whatif([etl_profile()], memory=cache)
    before = model.predict([7])[0]
    cache.save()
    [path] = replay_files(tmp_path)
    entry = json.loads(path.read_text())
    entry["replays"]["7"] *= 3
    path.write_text(json.dumps(entry))
    after = fit_whatif([etl_profile()], memory=ReplayCache(tmp_path)).predict([7])[0]
    assert after == pytest.approx(3 * before)


def test_tables_two_processes_grew_at_once_are_merged_in_the_file(tmp_path: Path):
    one, other = ReplayCache(tmp_path), ReplayCache(tmp_path)  # both before either saves
    fit_whatif([etl_profile()], memory=one).predict([3])
    fit_whatif([etl_profile()], memory=other).predict([5])
    one.save()
    other.save()
    [path] = replay_files(tmp_path)
    stored = {int(x) for x in json.loads(path.read_text())["replays"]}
    assert stored == {2, 3, 5}  # 2: the observed count, replayed by every fit


@pytest.mark.parametrize("damage", [
    "{not json",
    json.dumps({"key": "someone-else", "replays": {"5": 1.0}}),
    json.dumps([1, 2, 3]),
    "KEY:" + json.dumps({"5": -1.0}),
    "KEY:" + json.dumps({"five": 1.0}),
    "KEY:" + json.dumps([[5, 1.0]]),
])
def test_a_damaged_or_foreign_file_is_ignored_and_rewritten(tmp_path: Path, replays,
                                                            damage: str):
    cache = ReplayCache(tmp_path)
    want = fit_whatif([etl_profile()], memory=cache).predict(XS)
    cache.save()
    [path] = replay_files(tmp_path)
    key = json.loads(path.read_text())["key"]
    if damage.startswith("KEY:"):
        damage = json.dumps({"key": key, "replays": json.loads(damage[4:])})
    path.write_text(damage)
    replays.clear()
    again = ReplayCache(tmp_path)
    assert fit_whatif([etl_profile()], memory=again).predict(XS) == want
    assert replays, "a damaged file is a miss: the what-if replays"
    again.save()
    assert json.loads(path.read_text())["key"] == key
    assert len(json.loads(path.read_text())["replays"]) > len(XS) // 2


def test_a_changed_what_if_code_does_not_read_old_tables(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch):
    cache = ReplayCache(tmp_path)
    fit_whatif([etl_profile()], memory=cache).predict([4])
    cache.save()
    import cobell_cli.store.replay_cache as replay_cache

    monkeypatch.setattr(replay_cache, "model_source_digest", lambda: "another version")
    with pytest.raises(KeyError):
        ReplayCache(tmp_path)[fit_whatif([etl_profile()]).cache_key()]


def test_an_unwritable_directory_is_no_cache_not_an_error(tmp_path: Path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = ReplayCache(blocked / "models")
    want = fit_whatif([etl_profile()]).predict(XS)
    assert fit_whatif([etl_profile()], memory=cache).predict(XS) == want
    cache.save()
    assert blocked.read_text() == "not a directory"


# --- through predict ----------------------------------------------------------------------


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "history.db"
    with History.open(path) as history:
        history.insert_runs([{"job": "etl", "status": "succeeded", "scale_out": 2,
                              "runtime_s": etl_profile().runtime_s, "started_at": 100.0}],
                            keep_ids=False)
        store_profile(history, history.runs(job="etl")[0]["id"], etl_profile())
    return path


def models_dir() -> Path:
    return config.cache_dir() / "models"


def test_predict_twice_in_processes_writes_the_table_once_and_predicts_the_same(db: Path):
    argv = ("--db", db, "predict", "--cluster", "none", "--job", "etl", "-t", "10",
            "--max-scale-out", "32", "--json")
    first = cobell_process(*argv)
    assert first.returncode == 0, first.stderr
    [path] = replay_files(models_dir())
    written = path.stat()
    second = cobell_process(*argv)
    assert second.returncode == 0, second.stderr
    assert replay_files(models_dir()) == [path]
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (written.st_ino,
                                                             written.st_mtime_ns)
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert a["phase"] == b["phase"] == "bootstrap-whatif"
    assert (a["scale_out"], a["predicted_s"], a["candidates"]) == (
        b["scale_out"], b["predicted_s"], b["candidates"])


def test_predict_plans_from_the_stored_table(db: Path):
    settings = config.load({"db": str(db), "max_scale_out": 16, "confidence": "point"})

    def predict() -> dict:
        with History.open(db, read_only=True) as history:
            return api.predict(history, NoCluster("test"), settings, job="etl", target_s=10.0,
                               now=1e6).to_dict()

    first = predict()
    x = first["scale_out"]
    [path] = replay_files(models_dir())
    entry = json.loads(path.read_text())
    entry["replays"][str(x)] *= 2
    path.write_text(json.dumps(entry))
    second = predict()
    at_x = {c["scale_out"]: c["predicted_s"] for c in second["candidates"]}
    assert at_x[x] == pytest.approx(2 * first["predicted_s"])


def test_with_the_model_cache_off_nothing_is_stored(db: Path):
    settings = config.load({"db": str(db), "max_scale_out": 16, "model_cache": False})
    with History.open(db, read_only=True) as history:
        api.predict(history, NoCluster("test"), settings, job="etl", target_s=10.0, now=1e6)
    assert replay_files(models_dir()) == []


def test_planning_decodes_each_stored_profile_once_and_sees_a_replaced_one(db: Path):
    with History.open(db) as history:
        mine = history.profiles("etl")
        everyone = history.profiles()
        assert everyone[0] is mine[0]  # the job's profile, read again among everyone's
        run_id = history.runs(job="etl")[0]["id"]
        history.save_profile(run_id, etl_profile(task_s=2.0))
        [replaced] = history.profiles("etl")
    assert replaced is not mine[0]
    assert replaced.stages[0].task_s == [2.0] * 24
