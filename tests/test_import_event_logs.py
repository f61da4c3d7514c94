"""`cobell history import --from-event-logs`: event logs of REAL Spark runs (recorded by
tests/data/eventlogs/record.py), read by the streaming reader, and broken logs beside them."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.cli_support import cobell

LOGS = Path(__file__).parent / "data" / "eventlogs" / "logs"
pytest.importorskip("cobell_cli.sources.eventlog", reason="needs the streaming event-log reader")
pytest.importorskip("zstandard", reason="the recorded logs are zstd: needs the eventlog extra")


def rows(db: Path, sql: str) -> list[sqlite3.Row]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def import_logs(db: Path, *args: object) -> dict:
    result = cobell("--db", db, "history", "import", "--from-event-logs", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_log_directory_becomes_runs(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    summary = import_logs(db, LOGS)
    assert summary["seen"] == 5 and summary["imported"] == 4, summary
    assert summary["skipped_by_reason"] == {"no end event (running or crashed)": 1}
    assert summary["scale_out_from"] == {"executors (event log)": 4}
    runs = {r["job"]: r for r in rows(db, "SELECT * FROM runs")}
    assert set(runs) == {"etl", "adhoc report", "pi", "broken"}
    assert runs["broken"]["status"] == "failed" and runs["etl"]["status"] == "succeeded"
    assert runs["etl"]["scale_out"] == 2 and runs["pi"]["scale_out"] == 1
    assert all(r["source"] == "event-log" and Path(r["event_log"]).exists() for r in runs.values())
    assert Path(runs["pi"]["event_log"]).name.startswith("eventlog_v2_")  # a rolling log
    pairs = rows(
        db,
        "SELECT r.job, c.co_runner_job FROM colocations c JOIN runs r ON r.id = c.run_id "
        "ORDER BY r.job",
    )
    assert [tuple(p) for p in pairs] == [("adhoc report", "etl"), ("etl", "adhoc report")]
    again = import_logs(db, LOGS)
    assert again["imported"] == 0 and again["skipped_by_reason"]["already in the history"] == 4


def test_one_file_and_one_rolling_directory(tmp_path: Path) -> None:
    single = next(LOGS.glob("app-*.zstd"))
    rolling = next(LOGS.glob("eventlog_v2_*"))
    summary = import_logs(tmp_path / "h.db", single, rolling, "--dry-run")
    assert summary["seen"] == 2 and summary["imported"] == 2
    assert not (tmp_path / "h.db").exists()


def test_broken_logs_are_counted_skips_and_the_rest_is_imported(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(LOGS, logs)
    whole = next(p for p in sorted(logs.glob("app-*.zstd")))
    data = whole.read_bytes()
    (logs / "app-20990101000000-0098.zstd").write_bytes(data[: len(data) // 2])  # truncated
    (logs / "app-20990101000000-0099.zstd").write_bytes(b"\x00not zstd at all" * 100)  # corrupt
    (logs / "app-20990101000000-0100.lzf").write_bytes(b"ZV\x00\x01")  # unknown codec
    (logs / "app-20990101000000-0101").write_text("this is not JSON\n")  # garbage
    db = tmp_path / "h.db"
    summary = import_logs(db, logs)
    assert summary["seen"] == 9 and summary["imported"] == 4
    reasons = summary["skipped_by_reason"]
    assert sum(reasons.values()) == 5
    assert reasons.get("no end event (running or crashed)", 0) >= 1
    unreadable = [r for r in reasons if r.startswith("unreadable")]
    assert len(unreadable) >= 2 and any("lzf" in r for r in unreadable)
    assert rows(db, "SELECT count(*) FROM runs")[0][0] == 4


def test_a_missing_path_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    result = cobell("--db", db, "history", "import", "--from-event-logs", tmp_path / "nope")
    assert result.exit_code == 2 and "no event log at" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not db.exists() or rows(db, "SELECT count(*) FROM runs")[0][0] == 0
    none = cobell("--db", db, "history", "import", "--from-event-logs")
    assert none.exit_code == 2 and "at least one PATH" in none.stderr
