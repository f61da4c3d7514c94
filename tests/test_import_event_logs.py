"""`cobell history import --from-event-logs`: event logs of REAL Spark runs (recorded by
tests/data/eventlogs/record.py), read by the streaming reader, and broken logs beside them."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from tests.cli_support import cobell
from tests.extras import require_extra

LOGS = Path(__file__).parent / "data" / "eventlogs" / "logs"
require_extra("zstandard", reason="the recorded logs are zstd: needs the eventlog extra")


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
    assert set(runs) == {"etl", "adhoc-report", "pi", "broken"}
    assert runs["broken"]["status"] == "failed" and runs["etl"]["status"] == "succeeded"
    assert runs["etl"]["scale_out"] == 2 and runs["pi"]["scale_out"] == 1
    assert all(r["source"] == "event-log" and Path(r["event_log"]).exists() for r in runs.values())
    assert Path(runs["pi"]["event_log"]).name.startswith("eventlog_v2_")  # a rolling log
    pairs = rows(
        db,
        "SELECT r.job, c.co_runner_job FROM colocations c JOIN runs r ON r.id = c.run_id "
        "ORDER BY r.job",
    )
    assert [tuple(p) for p in pairs] == [("adhoc-report", "etl"), ("etl", "adhoc-report")]
    again = import_logs(db, LOGS)
    assert again["imported"] == 0 and again["skipped_by_reason"]["already in the history"] == 4


def test_every_imported_job_name_is_one_submit_takes(tmp_path: Path) -> None:
    """The app `adhoc report` became the job `adhoc report`, which predict and model show
    accepted and submit refused: an app name that is not a job name is mapped, and said so."""
    db = tmp_path / "h.db"
    summary = import_logs(db, LOGS)
    assert summary["renamed_jobs"] == {"adhoc report": "adhoc-report"}
    listed = cobell("--db", db, "history", "jobs", "--format", "json")
    jobs = [row["job"] for row in json.loads(listed.stdout)]
    assert "adhoc-report" in jobs
    for job in jobs:
        planned = cobell("--db", db, "submit", "-j", job, "-t", "60", "--cluster", "none",
                         "--dry-run", "--", "echo", "local[{scale_out}]")
        assert planned.exit_code == 0, (job, planned.stderr)
    text = cobell("--db", tmp_path / "other.db", "history", "import", "--from-event-logs", LOGS)
    assert "'adhoc report' -> adhoc-report" in text.stderr + text.stdout


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


def test_each_imported_log_leaves_its_profile_in_the_same_transaction(tmp_path: Path) -> None:
    from cobell_cli.core.profile import PROFILE_FORMAT, AppProfile
    from cobell_cli.sources.eventlog_profile import summarize

    db = tmp_path / "h.db"
    dry = import_logs(db, LOGS, "--dry-run")
    assert dry["profiles"] == 4 and not db.exists()
    summary = import_logs(db, LOGS)
    assert summary["profiles"] == 4 and summary["unprofiled_by_reason"] == {}
    stored = rows(
        db,
        "SELECT r.app_id, r.event_log, p.format, p.summary FROM run_profiles p "
        "JOIN runs r ON r.id = p.run_id",
    )
    assert len(stored) == 4
    for row in stored:
        profile = AppProfile.from_dict(json.loads(row["summary"]))
        assert profile.app_id == row["app_id"] and row["format"] == PROFILE_FORMAT
        # folded in the import's single pass: the same as reading the log for a profile alone
        assert json.loads(row["summary"]) == summarize(row["event_log"]).to_dict()
    assert import_logs(db, LOGS)["profiles"] == 0  # nothing new: no second profile
    assert rows(db, "SELECT count(*) FROM run_profiles")[0][0] == 4


def test_an_event_the_profile_cannot_fold_costs_the_profile_not_the_run(tmp_path: Path) -> None:
    events = [
        {"Event": "SparkListenerApplicationStart", "App ID": "app-1", "App Name": "x",
         "Timestamp": 1000},
        {"Event": "SparkListenerExecutorAdded", "Executor ID": "1", "Timestamp": 1000},
        {"Event": "SparkListenerJobStart", "Job ID": 0},  # no Submission Time
        {"Event": "SparkListenerApplicationEnd", "Timestamp": 11000},
    ]  # fmt: skip
    log = tmp_path / "logs" / "app-1"
    log.parent.mkdir()
    log.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    db = tmp_path / "h.db"
    summary = import_logs(db, log.parent)
    assert summary["imported"] == 1 and summary["profiles"] == 0
    (reason,) = summary["unprofiled_by_reason"]
    assert "Submission Time" in reason
    assert rows(db, "SELECT count(*) FROM run_profiles")[0][0] == 0
    again = import_logs(db, log.parent)  # already imported: nothing to say about its profile
    assert again["imported"] == 0 and again["unprofiled_by_reason"] == {}


def test_since_as_a_date_or_a_duration(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    # the recorded apps ended on 2026-11-22 (UTC)
    assert import_logs(db, LOGS, "--since", "2026-11-22", "--dry-run")["imported"] == 4
    later = import_logs(db, LOGS, "--since", "2026-11-23T00:00:00Z", "--dry-run")
    assert later["imported"] == 0
    assert later["skipped_by_reason"]["finished before --since"] == 4
    import time

    from cobell_cli.cli.history import parse_since

    ended = parse_since("2026-11-22T23:45:00Z", 0)
    days = (time.time() - ended) / 86400
    assert import_logs(db, LOGS, "--since", f"{days + 1:.0f}d", "--dry-run")["imported"] == 4
    assert import_logs(db, LOGS, "--since", "1h", "--dry-run")["imported"] == 0


def test_job_identity_order_for_event_logs(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('job_patterns = { report = "^adhoc" }\n')
    result = cobell(
        "--config", config, "--db", tmp_path / "h.db", "history", "import",
        "--from-event-logs", LOGS, "--job", "misc", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    jobs = {r["app_id"]: r["job"] for r in rows(tmp_path / "h.db", "SELECT * FROM runs")}
    # etl: its cobell-job: tag; adhoc report: the pattern; cobell:pi: cobell's own app name;
    # broken: --job (no tag, no pattern)
    assert sorted(jobs.values()) == ["etl", "misc", "pi", "report"]


def test_progress_on_a_terminal(tmp_path: Path) -> None:
    import sys

    from tests.test_import_yarn import stderr_on_a_terminal

    argv = [sys.executable, "-m", "cobell_cli", "--db", str(tmp_path / "h.db"), "history"]
    seen = stderr_on_a_terminal([*argv, "import", "--from-event-logs", str(LOGS)])
    assert b"reading" in seen and b"apps" in seen  # the progress count, on the terminal
    assert b"imported 4 of 5 apps" in seen and b"4 event-log profiles" in seen
