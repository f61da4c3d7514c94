"""The history file under read-only commands, read-only files, racing creators and network file
systems (issue 15, items 11-13): real SQLite files, real processes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from cobell_cli.errors import HistoryError
from cobell_cli.store import files
from cobell_cli.store.history import SCHEMA_VERSION, History
from tests.cli_support import cobell
from tests.reliability.faults import directory_state

EXAMPLE = Path(__file__).parents[2] / "history" / "example.csv"
READ_ONLY_COMMANDS = (
    ("history", "list"),
    ("history", "list", "--format", "json"),
    ("history", "jobs"),
    ("history", "show", "1", "--json"),
    ("history", "export", "--format", "csv"),
    ("model", "show", "--job", "sgd"),
    ("predict", "--job", "sgd", "--target-runtime", "300", "--cluster", "none"),
)


def _imported(tmp_path: Path) -> Path:
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", EXAMPLE).exit_code == 0
    return db


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS, ids=" ".join)
def test_read_only_commands_leave_the_history_byte_for_byte(tmp_path: Path, command) -> None:
    db = _imported(tmp_path)
    before = directory_state(tmp_path)
    result = cobell("--db", db, *command)
    assert result.exit_code in (0, 2, 3), result.stderr  # 2/3: no model yet is fine here
    assert "internal error" not in result.stderr
    assert directory_state(tmp_path) == before


def test_a_zero_byte_history_reads_as_empty_and_stays_zero_bytes(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    db.touch()
    result = cobell("--db", db, "history", "list", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert db.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.db"]


def test_an_old_schema_file_is_listed_without_being_migrated(tmp_path: Path) -> None:
    from cobell_cli.store.schema import _migration_1

    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    _migration_1(conn)
    conn.execute(
        "INSERT INTO runs (job, status, scale_out, runtime_s) VALUES ('sgd', 'succeeded', 4, 9)"
    )
    conn.execute("PRAGMA application_id = 0x436F426C")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    before = directory_state(tmp_path)
    result = cobell("--db", db, "history", "list", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert '"runtime_s": 9.0' in result.stdout
    assert directory_state(tmp_path) == before
    # ... and the first write command migrates it for good.
    with History.open(db) as history:
        assert history.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_read_only_file_refuses_writes_with_exit_5_and_still_reads(tmp_path: Path) -> None:
    db = _imported(tmp_path)
    db.chmod(0o444)
    before = directory_state(tmp_path)
    imported = cobell("--db", db, "history", "import", EXAMPLE, "--new-ids")
    assert imported.exit_code == 5
    (line,) = imported.stderr.strip().splitlines()
    assert f"cannot write the history {db}: read-only" in line and "chmod u+w" in line
    removed = cobell("--db", db, "history", "rm", "1", "--yes")
    assert removed.exit_code == 5 and "read-only" in removed.stderr
    listed = cobell("--db", db, "history", "list", "--limit", "1")
    assert listed.exit_code == 0, listed.stderr
    assert directory_state(tmp_path) == before


def test_a_running_row_of_a_dead_process_is_shown_lost_without_writing(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with History.open(db) as history:
        run_id = history.start_run(job="sgd", host=os.uname().nodename, pid=2**22 + 7)
    before = directory_state(tmp_path)
    shown = cobell("--db", db, "history", "show", str(run_id), "--json")
    assert shown.exit_code == 0 and '"status": "lost"' in shown.stdout
    assert directory_state(tmp_path) == before
    with History.open(db) as history:  # a writer records it for good
        assert history.run(run_id)["status"] == "lost"


RACER = """
import sys, time
from pathlib import Path
from cobell_cli.store.history import History
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.001)
with History.open(sys.argv[1]) as history:
    history.start_run(job="sgd")
"""


@pytest.mark.parametrize("round_", range(6))
def test_many_processes_creating_the_history_at_once_all_succeed(tmp_path: Path, round_) -> None:
    db, go = tmp_path / "h.db", tmp_path / "go"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(db), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    go.touch()
    outcomes = [(p.wait(timeout=60), p.stderr.read()) for p in racers]
    assert [code for code, _ in outcomes] == [0] * 8, outcomes
    with History.open(db) as history:
        assert history.count() == 8
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".new")]


def test_a_zero_byte_file_is_initialised_by_the_first_writer(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    db.touch()
    with History.open(db) as history:
        assert history.start_run(job="sgd") == 1
        assert history.conn.execute("PRAGMA application_id").fetchone()[0] == 0x436F426C


def test_filesystem_type_reads_the_real_statfs() -> None:
    if sys.platform != "linux":
        pytest.skip("statfs f_type is read on Linux only; elsewhere the history assumes WAL")
    assert files.filesystem_type(Path("/proc")) == 0x9FA0  # PROC_SUPER_MAGIC
    assert files.filesystem_type(Path("/no/such/place")) is None
    if Path("/dev/shm").is_dir():
        assert files.filesystem_type(Path("/dev/shm")) == 0x01021994  # TMPFS_MAGIC


def test_network_file_systems_get_the_rollback_journal() -> None:
    assert files.journal_mode_for(0x6969) == "delete"  # NFS
    assert files.journal_mode_for(0xFF534D42) == "delete"  # CIFS
    assert files.journal_mode_for(0xEF53) == "wal"  # ext4
    assert files.journal_mode_for(None) == "wal"


def test_a_history_on_nfs_is_switched_to_the_rollback_journal(tmp_path, monkeypatch) -> None:
    db = tmp_path / "h.db"
    with History.open(db) as history:
        history.start_run(job="sgd")
        assert history.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # The same file seen through an NFS mount (statfs answers NFS_SUPER_MAGIC there).
    monkeypatch.setattr(files, "filesystem_type", lambda path: 0x6969)
    with History.open(db) as history:
        assert history.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        history.start_run(job="sgd")
    with History.open(tmp_path / "new.db") as history:
        assert history.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert not (tmp_path / "h.db-wal").exists()


def test_the_history_path_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="is a directory"):
        History.open(tmp_path, read_only=True)
