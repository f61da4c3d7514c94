"""A damaged history (a b-tree page overwritten) is treated like a truncated one (issue 35,
bug 3): exit 5, one line naming the file and how to recover it, nothing on stdout, and the
file never written to. Real SQLite files, damaged as a disk or a stray `dd` would."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cobell_cli.errors import EXIT_HISTORY, HistoryError
from cobell_cli.store.history import History
from tests.cli_support import cobell
from tests.reliability.faults import directory_state

EXAMPLE = Path(__file__).parents[2] / "history" / "example.csv"
SCRIPT = "echo ran {scale_out} > ran.txt"  # a job that would leave a file if it started


def _overwrite(db: Path, offset: int, length: int = 301) -> None:
    with db.open("r+b") as fh:
        fh.seek(offset)
        fh.write(b"\xab" * length)


def _index_page_offset(db: Path, index: str) -> int:
    """Where the root page of `index` starts in the file (pages count from 1)."""
    conn = sqlite3.connect(db)
    try:
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (index,)).fetchone()
    finally:
        conn.close()
    return (root - 1) * page_size


def _assert_refused(result, db: Path) -> None:
    assert result.exit_code == EXIT_HISTORY, (result.exit_code, result.stderr)
    assert "internal error" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"history {db} is damaged" in line
    assert f"sqlite3 {db} .recover" in line
    assert result.stdout == ""


COMMANDS = (
    ("predict", "-j", "sgd", "-t", "600", "--cluster", "none"),
    ("predict", "-j", "sgd", "-t", "600", "--cluster", "none", "--json"),
    ("model", "show", "-j", "sgd"),
    ("history", "jobs"),
    ("history", "list"),
    ("history", "list", "--json"),
    ("history", "show", "3"),
    ("model", "eval", "-j", "sgd"),
    ("model", "plot", "-j", "sgd", "-o", "plot.png"),
    ("history", "export"),
    ("history", "export", "--format", "json"),
    ("history", "exclude", "3"),
    ("history", "include", "3"),
    ("history", "rm", "3", "--yes"),
    ("history", "import", str(EXAMPLE), "--new-ids"),
    ("submit", "-j", "sgd", "-t", "600", "--cluster", "none", "--", "sh", "-c", SCRIPT),
)


@pytest.fixture
def damaged_sgd(tmp_path: Path, bell_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The issue's file: 105 runs of Bell's sgd, 301 bytes overwritten at offset 8192."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", bell_dir / "sgd.spark.csv").exit_code == 0
    _overwrite(db, 8192)
    return db


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_refuses_a_damaged_history_and_leaves_it_as_it_was(
    damaged_sgd: Path, command: tuple[str, ...]
) -> None:
    before = directory_state(damaged_sgd.parent)
    _assert_refused(cobell("--db", damaged_sgd, *command), damaged_sgd)
    assert directory_state(damaged_sgd.parent) == before
    assert not (damaged_sgd.parent / "ran.txt").exists()  # submit started nothing


def test_export_to_a_file_writes_no_file(damaged_sgd: Path) -> None:
    out = damaged_sgd.parent / "out.csv"
    _assert_refused(cobell("--db", damaged_sgd, "history", "export", "-o", out), damaged_sgd)
    assert not out.exists()


def test_a_damaged_index_page_of_any_history_is_refused_by_every_writer(tmp_path: Path) -> None:
    """Without the shared data: the index a planner reads through, overwritten in place."""
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", EXAMPLE).exit_code == 0
    _overwrite(db, _index_page_offset(db, "runs_job_status"), 200)
    before = directory_state(tmp_path)
    for command in (("history", "exclude", "1"), ("history", "export"),
                    ("predict", "-j", "sgd", "-t", "300", "--cluster", "none")):
        _assert_refused(cobell("--db", db, *command), db)
    assert directory_state(tmp_path) == before


def test_the_api_refuses_a_damaged_history_read_only_or_not(tmp_path: Path) -> None:
    """A Python user's History.open refuses the file before any query (read-only too: a
    query that met the bad page would otherwise be the first to know)."""
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", EXAMPLE).exit_code == 0
    _overwrite(db, _index_page_offset(db, "runs_job_recent"), 200)
    with pytest.raises(HistoryError, match="is damaged"), History.open(
            db, read_only=True) as history:
        history.training_runs("sgd", window=100)
    with pytest.raises(HistoryError, match="is damaged"):
        History.open(db)
