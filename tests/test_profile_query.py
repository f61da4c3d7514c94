"""History.profiles: the newest profiles of a job (or of any job), whichever runs between the
profiled ones hold none (store/queries.py probes only the profiled runs' id range)."""

from __future__ import annotations

from pathlib import Path

from cobell_cli.store.history import History
from tests.test_replay_cache import etl_profile


def _history(db: Path, jobs: list[str], profiled: set[int]) -> list[int]:
    """One run per entry of `jobs`, started in order; the runs at `profiled` positions get
    a profile whose app id names the position."""
    from dataclasses import replace

    ids = []
    with History.open(db) as history:
        for i, job in enumerate(jobs):
            [run_id] = history.insert_runs([{
                "job": job, "scale_out": 2, "status": "succeeded", "runtime_s": 20.0,
                "submitted_at": 1e9 + i, "started_at": 1e9 + i, "finished_at": 1e9 + i + 20}],
                keep_ids=False)
            if i in profiled:
                history.save_profile(run_id, replace(etl_profile(), app_id=f"app-{i}"))
            ids.append(run_id)
    return ids


def test_a_history_without_profiles_has_none_for_any_job(tmp_path: Path) -> None:
    _history(tmp_path / "h.db", ["etl", "other", "etl"], profiled=set())
    with History.open(tmp_path / "h.db") as history:
        assert history.profiles("etl") == [] and history.profiles() == []


def test_the_first_and_last_profiled_runs_count_and_the_newest_come_first(
        tmp_path: Path) -> None:
    jobs = ["etl", "other", "etl", "other", "etl", "etl", "other", "etl"]
    _history(tmp_path / "h.db", jobs, profiled={0, 3, 4, 5, 7})
    with History.open(tmp_path / "h.db") as history:
        assert [p.app_id for p in history.profiles("etl", limit=3)] == ["app-7", "app-5", "app-4"]
        assert [p.app_id for p in history.profiles("etl", limit=10)] == [
            "app-7", "app-5", "app-4", "app-0"]
        assert [p.app_id for p in history.profiles("other")] == ["app-3"]
        assert [p.app_id for p in history.profiles(limit=10)] == [
            "app-7", "app-5", "app-4", "app-3", "app-0"]
        assert history.profiles("nosuch") == []
