"""The history store against real SQLite files."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from cobell_cli.errors import HistoryError, UsageError
from cobell_cli.store.history import APPLICATION_ID, SCHEMA_VERSION, History


def run(job: str = "sgd", x: int = 8, runtime: float = 300.0, **extra) -> dict:
    return {"job": job, "scale_out": x, "runtime_s": runtime, "status": "succeeded", **extra}


def test_new_file_is_private_wal_and_versioned(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "h.db"
    with History.open(path) as history:
        assert history.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert history.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


def test_start_and_finish_run_with_colocations(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        run_id = history.start_run(job="sgd", scale_out=4, host="h", pid=os.getpid(), command=["a"])
        assert history.run(run_id)["status"] == "running"
        history.finish_run(run_id, status="succeeded", runtime_s=120.5, finished_at=1.0e9)
        history.add_colocations(
            run_id,
            [
                {
                    "co_runner_app_id": "application_1_0001",
                    "co_runner_job": "wc",
                    "overlap_s": 60.0,
                    "overlap_ratio": 0.5,
                }
            ],
        )
        stored = history.run(run_id)
        assert stored["runtime_s"] == 120.5 and stored["command"] == '["a"]'
        assert stored["colocations"][0]["co_runner_job"] == "wc"
        training = history.training_runs("sgd")
        assert training[0]["overlaps"] == {"wc": 0.5}


def test_training_runs_sum_overlaps_per_job_and_skip_unusable(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        history.insert_runs(
            [
                run(
                    colocations=[
                        {"co_runner_job": "wc", "overlap_ratio": 0.25},
                        {"co_runner_job": "wc", "overlap_ratio": 0.5},
                        {"co_runner_job": None, "overlap_ratio": 1.0},
                    ]
                ),
                {"job": "sgd", "scale_out": 4, "status": "failed"},
                {"job": "sgd", "scale_out": 4, "runtime_s": 9.0, "status": "lost"},
                run(job="other"),
            ]
        )
        training = history.training_runs("sgd")
    assert len(training) == 1
    assert training[0]["overlaps"] == {"wc": 0.75, None: 1.0}


def test_training_runs_carry_the_co_runners_overlap_weighted_scale_outs(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        history.insert_runs(
            [
                run(
                    colocations=[
                        {"co_runner_job": "wc", "overlap_ratio": 0.25, "co_runner_scale_out": 8},
                        {"co_runner_job": "wc", "overlap_ratio": 0.75, "co_runner_scale_out": 16},
                        {"co_runner_job": "pr", "overlap_ratio": 0.5},  # size unknown
                    ]
                ),
                run(colocations=[{"co_runner_job": "pr", "overlap_ratio": 0.5}]),
            ]
        )
        first, second = history.training_runs("sgd")
    assert first["co_runner_scale_outs"] == {"wc": 14.0}
    assert "co_runner_scale_outs" not in second


def test_insert_runs_is_all_or_nothing(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        with pytest.raises(ValueError, match="scale_out"):
            history.insert_runs(
                [run(), run(), {"job": "sgd", "status": "succeeded", "scale_out": 0}]
            )
        assert history.count() == 0
        history.insert_runs([run(id=7)])
        with pytest.raises(UsageError, match="run id 7 is already"):
            history.insert_runs([run(id=8), run(id=7)])
        assert [r["id"] for r in history.runs()] == [7]


def test_invalid_overlap_ratio_is_refused(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        with pytest.raises(ValueError, match="overlap_ratio"):
            history.insert_runs([run(colocations=[{"overlap_ratio": 1.5}])])
        assert history.count() == 0


def test_delete_cascades_to_colocations_and_refuses_unknown_ids(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        (run_id,) = history.insert_runs([run(colocations=[{"overlap_ratio": 0.3}])])
        with pytest.raises(UsageError, match="no run with id 99"):
            history.delete_runs([run_id, 99])
        assert history.count() == 1
        history.delete_runs([run_id])
        assert history.conn.execute("SELECT count(*) FROM colocations").fetchone()[0] == 0


def test_dead_running_run_becomes_lost_on_open(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    with History.open(path) as history:
        mine = history.start_run(job="sgd", host="here", pid=424242)
        alive = history.start_run(job="sgd", host="here", pid=1)
        elsewhere = history.start_run(job="sgd", host="other-host", pid=424242)
    with History.open(path, host="here", alive=lambda pid: pid == 1) as history:
        assert history.run(mine)["status"] == "lost"
        assert history.run(alive)["status"] == "running"
        assert history.run(elsewhere)["status"] == "running"
        assert history.training_runs("sgd") == []


def test_dead_runs_of_every_job_are_found_along_the_job_index(tmp_path: Path) -> None:
    """Every open asks for this host's dead runs: among many finished runs, the running ones
    of every job (names sorting anywhere, any script) are found without reading each run."""
    path = tmp_path / "h.db"
    jobs = ["a", "sgd", "Zeta", "日本語-etl", "z" * 64]
    with History.open(path) as history:
        history.insert_runs([run(job) for job in jobs for _ in range(40)])
        dead = {job: history.start_run(job=job, host="here", pid=424242) for job in jobs}
        history.start_run(job="sgd", host="here", pid=1)
        history.start_run(job="a", host="other-host", pid=424242)
    with History.open(path, read_only=True) as history:
        statements: list[str] = []
        history.conn.set_trace_callback(statements.append)
        assert sorted(history.dead_runs("here", alive=lambda pid: pid == 1)) == sorted(
            dead.values())
        history.conn.set_trace_callback(None)
        assert history.dead_runs("nowhere") == []
        (query,) = statements
        plan = " ".join(row[-1] for row in history.conn.execute(f"EXPLAIN QUERY PLAN {query}"))
        assert "SCAN runs" not in plan, plan


def test_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    History.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(HistoryError, match="newer cobell"):
        History.open(path)
    assert path.read_bytes() == before


def test_old_schema_is_migrated_forward(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    sqlite3.connect(path).close()  # an empty SQLite file: schema version 0
    with History.open(path) as history:
        assert history.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        history.insert_runs([run()])
        assert history.count() == 1


def test_not_sqlite_and_foreign_sqlite_are_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("this is not a database, just text " * 100)
    with pytest.raises(HistoryError, match="not an SQLite database"):
        History.open(junk)
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(HistoryError, match="not a cobell history"):
        History.open(other)


def test_missing_history_without_create(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="no history at"):
        History.open(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_unwritable_directory_is_a_clear_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        target = Path("/proc/cobell-cannot-create/h.db")
    else:
        locked = tmp_path / "ro"
        locked.mkdir(mode=0o500)
        target = locked / "sub" / "h.db"
    with pytest.raises(HistoryError, match="cannot create"):
        History.open(target)


def test_lock_held_past_timeout_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    History.open(path).close()
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        with (
            History.open(path, reap_lost=False, busy_timeout_s=0.2) as history,
            pytest.raises(HistoryError, match="locked"),
        ):
            history.insert_runs([run()])
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()


def test_concurrent_writers_all_land(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    History.open(path).close()
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            with History.open(path) as history:
                for i in range(20):
                    run_id = history.start_run(job=f"j{n}", host="h", pid=os.getpid())
                    history.finish_run(
                        run_id, status="succeeded", scale_out=2, runtime_s=float(i + 1)
                    )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with History.open(path) as history:
        assert history.count() == 160
        assert history.conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert {r["status"] for r in history.runs()} == {"succeeded"}


def test_jobs_summary(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        history.insert_runs(
            [
                run(x=4, runtime=100, submitted_at=10.0),
                run(x=8, runtime=60, submitted_at=20.0),
                run(x=8, runtime=80, submitted_at=30.0),
                {"job": "sgd", "status": "failed"},
            ]
        )
        (summary,) = history.jobs()
    assert summary == {
        "job": "sgd",
        "runs": 4,
        "succeeded": 3,
        "scale_outs": 2,
        "last_run": 30.0,
        "median_runtime_s": 80.0,
    }


def test_runs_filters(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        history.insert_runs(
            [run(submitted_at=float(t), job="a" if t % 2 else "b") for t in range(10)]
            + [{"job": "a", "status": "failed", "submitted_at": 100.0}]
        )
        assert [r["submitted_at"] for r in history.runs(job="a", limit=2)] == [100.0, 9.0]
        assert len(history.runs(status="failed")) == 1
        assert len(history.runs(since=5.0)) == 6
        assert [r["submitted_at"] for r in history.runs(job="b", newest_first=False)][:2] == [0, 2]


def test_training_window_keeps_the_newest_runs_oldest_first(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        history.insert_runs(
            [
                run(
                    runtime=100.0 + i,
                    started_at=1000.0 - i,  # inserted newest first: id order is not time order
                    colocations=[{"co_runner_job": "wc", "overlap_ratio": i / 10}],
                )
                for i in range(10)
            ]
        )
        everything = history.training_runs("sgd")
        newest = history.training_runs("sgd", window=3)
    assert [r["started_at"] for r in everything] == [991.0 + i for i in range(10)]
    assert newest == everything[-3:]
    assert [r["overlaps"] for r in newest] == [{"wc": 0.2}, {"wc": 0.1}, {"wc": 0.0}]
    # Planning reads no command line or reason: they can be long and are never modelled.
    assert "command" not in newest[0] and newest[0]["scale_out"] == 8


def test_version_1_file_gains_the_recency_index_and_keeps_its_runs(tmp_path: Path) -> None:
    from cobell_cli.store.history import _migration_1

    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    _migration_1(conn)
    conn.execute(
        "INSERT INTO runs (job, scale_out, runtime_s, status) VALUES ('sgd', 4, 9, 'succeeded')"
    )
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with History.open(path) as history:
        assert history.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        names = {r[0] for r in history.conn.execute("SELECT name FROM sqlite_master")}
        assert {"runs_job_recent", "runs_app_id", "run_profiles"} <= names
        assert [r["runtime_s"] for r in history.training_runs("sgd", window=5)] == [9.0]
        (run,) = history.runs()
        assert run["source"] == "cobell" and run["meet_probability"] is None
        assert run["node_label"] is None  # migration 4: where it ran is not known


def test_source_and_probability_are_checked(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        run_id = history.start_run(job="sgd", source=None)
        assert history.run(run_id)["source"] == "cobell"
        with pytest.raises(ValueError, match="source: expected one of"):
            history.start_run(job="sgd", source="guess")
        with pytest.raises(ValueError, match=r"meet_probability: must be within \[0, 1\]"):
            history.start_run(job="sgd", meet_probability=1.5)
        imported = history.start_run(job="sgd", source="yarn", mean_scale_out=3.5)
        assert history.run(imported)["source"] == "yarn"


def test_this_host_is_the_name_earlier_versions_stamped_running_rows_with() -> None:
    import socket

    from cobell_cli.store.processes import this_host

    assert this_host() == socket.gethostname()  # or their `running` rows would never be reaped


def test_job_names_are_the_sorted_distinct_jobs(tmp_path: Path) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    path = tmp_path / "h.db"
    History.open(path).close()

    names = st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters=",")

    @settings(max_examples=30, deadline=None)
    @given(st.lists(st.text(names, min_size=1, max_size=6), max_size=12))
    def check(jobs: list[str]) -> None:
        with History.open(path) as history:
            history.conn.execute("DELETE FROM runs")
            history.conn.commit()
            history.insert_runs([run(job=j) for j in jobs])
            assert history.job_names() == sorted(set(jobs))

    check()
