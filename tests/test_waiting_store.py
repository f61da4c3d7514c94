"""store/waiting.py and migration 4: submits waiting for their start, and the runs' new
columns (waited_s, deadline_at, start_reason) in the history, its import and its export."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cobell_cli.store import waiting
from cobell_cli.store.history import APPLICATION_ID, SCHEMA_VERSION, History, this_host
from cobell_cli.store.schema import MIGRATIONS

NOW = 1_800_000_000.0


def _row(**kw: object) -> dict:
    fields = dict(job="report", pid=os.getpid(), submitted_at=NOW, deadline_at=NOW + 900,
                  start_at=NOW + 100, scale_out=6, predicted_s=300.0, model={"format": 3},
                  ratios=[1.0, 1.1], candidates=[1, 2, 3])
    fields.update(kw)
    return fields


def test_migration_4_keeps_the_runs_and_adds_the_deadline_columns(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    for migrate in MIGRATIONS[:3]:
        migrate(conn)
    conn.execute("PRAGMA user_version = 3")
    conn.execute("INSERT INTO runs (job, status, scale_out, runtime_s) VALUES ('a', 'succeeded',"
                 " 4, 10.0)")
    conn.commit()
    conn.close()
    with History.open(db) as history:
        assert history.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        columns = {r[1] for r in history.conn.execute("PRAGMA table_info(runs)")}
        assert {"waited_s", "deadline_at", "start_reason"} <= columns
        assert history.conn.execute("SELECT job, runtime_s FROM runs").fetchall() == [("a", 10.0)]
        assert history.conn.execute("SELECT count(*) FROM waiting").fetchone()[0] == 0


def test_a_row_is_written_read_updated_and_removed(tmp_path: Path) -> None:
    with History.open(tmp_path / "h.db") as history:
        row_id = waiting.insert(history, **_row())
        got = waiting.get(history, row_id)
        assert got is not None and got["host"] == this_host() and got["state"] == "waiting"
        assert got["model"] == {"format": 3} and got["ratios"] == [1.0, 1.1]
        assert waiting.update(history, row_id, start_at=NOW + 50, scale_out=8)
        again = waiting.get(history, row_id)
        assert again is not None and again["decisions"] == got["decisions"] + 1
        assert waiting.update(history, row_id, run_id=None)  # not a new plan
        assert waiting.get(history, row_id)["decisions"] == again["decisions"]  # type: ignore[index]
        waiting.remove(history, row_id)
        assert waiting.get(history, row_id) is None
        assert not waiting.update(history, row_id, start_at=NOW)
        with pytest.raises(ValueError, match="unknown waiting field"):
            waiting.insert(history, **_row(), colour="red")


def test_a_row_whose_process_is_gone_is_reaped_like_a_lost_run(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    now = time.time()
    with History.open(db) as history:
        alive_id = waiting.insert(history, **_row(deadline_at=now + 900))
        gone_id = waiting.insert(history, **_row(pid=dead.pid, deadline_at=now + 900))
        far_id = waiting.insert(history, **_row(host="elsewhere", pid=1, deadline_at=now - 2e5))
        near_id = waiting.insert(history, **_row(host="elsewhere", pid=1, deadline_at=now - 60))
        live = {r["id"] for r in waiting.rows(history, now)}
        assert live == {alive_id, near_id}  # readers skip the dead at once
    with History.open(db) as history:  # the next writer removes them
        left = {r[0] for r in history.conn.execute("SELECT id FROM waiting")}
    assert left == {alive_id, near_id}
    assert gone_id not in left and far_id not in left


def test_a_decision_is_one_transaction(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with History.open(db) as history:
        with pytest.raises(RuntimeError), waiting.deciding(history, NOW) as rows:
            assert rows == []
            waiting.insert(history, **_row())
            raise RuntimeError("killed mid-decision")
        assert history.conn.execute("SELECT count(*) FROM waiting").fetchone()[0] == 0
        with waiting.deciding(history, NOW) as rows:
            waiting.insert(history, **_row())
        assert history.conn.execute("SELECT count(*) FROM waiting").fetchone()[0] == 1


def test_the_deadline_columns_survive_export_and_import(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cobell_cli.cli import app

    db, copy = tmp_path / "h.db", tmp_path / "copy.db"
    with History.open(db) as history:
        history.start_run(job="report", status="succeeded", scale_out=4, runtime_s=100.0,
                          submitted_at=NOW, started_at=NOW + 30, waited_s=30.0,
                          deadline_at=NOW + 900, start_reason="waiting for etl: cheaper")
    runner = CliRunner()
    for fmt in ("csv", "json"):
        out = tmp_path / f"runs.{fmt}"
        result = runner.invoke(app, ["--db", str(db), "history", "export", "-o", str(out),
                                     "--format", fmt])
        assert result.exit_code == 0, result.output
        target = tmp_path / f"{fmt}.db"
        result = runner.invoke(app, ["--db", str(target), "history", "import", str(out)])
        assert result.exit_code == 0, result.output
        with History.open(target) as history:
            row = history.conn.execute(
                "SELECT waited_s, deadline_at, start_reason FROM runs").fetchone()
        assert row == (30.0, NOW + 900, "waiting for etl: cheaper")
    assert not copy.exists()
    assert json.loads((tmp_path / "runs.json").read_text())
