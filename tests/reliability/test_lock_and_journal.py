"""A history lock never costs a job that has started, nor its exit code, nor its record (issue
15, items 1 and 2): a second process really holds the write lock (`BEGIN IMMEDIATE`) while real
`cobell submit` processes run; a completion that cannot be written goes to the pending journal
beside the history, is shown as `pending` by read-only commands, and is applied exactly once by
the next writer, even one killed while applying it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import threading
import time
from pathlib import Path

import pytest

from cobell_cli.store.history import BUSY_TIMEOUT_S, History
from tests.cli_support import cobell, cobell_process
from tests.reliability.faults import (
    PY,
    directory_state,
    job,
    lock_held,
    start_submit,
    wait_for,
)

APP_ID = "application_1700000000000_0042"


def pending_file(db: Path) -> Path:
    """Where a completion the history cannot take goes (docs/reliability.md, "What cobell
    guarantees")."""
    return db.with_name(db.name + ".pending")


def stored(db: Path) -> dict:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        (row,) = conn.execute("SELECT * FROM runs").fetchall()
        return dict(row)
    finally:
        conn.close()


def colocation_count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM colocations").fetchone()[0]
    finally:
        conn.close()


def test_a_lock_held_past_the_busy_timeout_at_completion_costs_nothing(tmp_path: Path) -> None:
    db, mid = tmp_path / "h.db", tmp_path / "mid"
    proc = start_submit(
        db,
        job(f"""
            import pathlib, time
            pathlib.Path({str(mid)!r}).touch()
            time.sleep(1.0)
            print("job done", flush=True)
        """),
        "--json",
    )
    wait_for(mid.exists, what="the job started")
    with lock_held(db) as holder:  # from mid-run ...
        out, err = proc.communicate(timeout=BUSY_TIMEOUT_S + 60)
        held_s = time.monotonic() - holder.locked_at  # ... until past the busy timeout
        listed_while_locked = cobell_process("--db", db, "history", "list", "--format", "json")
    assert held_s > BUSY_TIMEOUT_S
    assert proc.returncode == 0, err
    assert "job done" in out
    pending = pending_file(db)
    (line,) = [x for x in err.splitlines() if "journal" in x]
    assert line.startswith("cobell: warning: ")
    assert str(pending) in line and "run 1 (succeeded, exit 0)" in line and "locked" in line
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["status"] == "succeeded" and summary["recorded_in"] == str(pending)
    assert stat.S_IMODE(pending.stat().st_mode) == 0o600
    assert stored(db)["status"] == "running"  # the history itself was never written

    # Read-only commands show it as pending, in every format, and write nothing.
    (run,) = json.loads(listed_while_locked.stdout)
    assert run["status"] == "pending" and run["exit_code"] == 0 and run["runtime_s"] >= 1.0
    assert "pending: succeeded (exit 0)" in run["reason"]
    before = directory_state(tmp_path)
    table = cobell("--db", db, "history", "list")
    assert table.exit_code == 0 and " pending " in table.stdout
    csv = cobell("--db", db, "history", "list", "--format", "csv")
    assert ",pending," in csv.stdout.splitlines()[1]
    only = cobell("--db", db, "history", "list", "--status", "pending", "--format", "json")
    assert [r["id"] for r in json.loads(only.stdout)] == [1]
    running = cobell("--db", db, "history", "list", "--status", "running", "--format", "json")
    assert json.loads(running.stdout) == []
    assert directory_state(tmp_path) == before

    # The next cobell that writes the history records it, once.
    other = tmp_path / "other.csv"
    other.write_text("Nodes,Runtime\n4,1000\n")
    imported = cobell_process("--db", db, "history", "import", other, "--job", "other")
    assert imported.returncode == 0, imported.stderr
    assert not pending.exists()
    with History.open(db) as history:
        (recorded,) = history.runs(job="toy")
        assert recorded["status"] == "succeeded" and recorded["exit_code"] == 0
        assert recorded["runtime_s"] >= 1.0 and recorded["finished_at"] > recorded["started_at"]
        assert [r["id"] for r in history.training_runs("toy")] == [1]


def test_a_history_turned_read_only_during_the_run_costs_nothing(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    proc = start_submit(db, job(f"import os; os.chmod({str(db)!r}, 0o444)"), "--json")
    out, err = proc.communicate(timeout=120)
    assert json.loads(out.splitlines()[-1])["recorded_in"] == str(pending_file(db))
    assert proc.returncode == 0, err
    (line,) = [x for x in err.splitlines() if "journal" in x]
    assert "read-only" in line and str(pending_file(db)) in line
    (run,) = json.loads(cobell("--db", db, "history", "list", "--format", "json").stdout)
    assert run["status"] == "pending"
    db.chmod(0o600)
    with History.open(db) as history:
        assert history.run(1)["status"] == "succeeded"
    assert not pending_file(db).exists()


def _lines_with_times(stream, into: list[tuple[float, str]]) -> threading.Thread:
    def read() -> None:
        for line in stream:
            into.append((time.monotonic(), line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def test_a_lock_held_when_the_job_prints_its_app_id_never_costs_the_job(tmp_path: Path) -> None:
    db, ready, go, done = tmp_path / "h.db", tmp_path / "ready", tmp_path / "go", tmp_path / "done"
    proc = start_submit(
        db,
        job(f"""
            import pathlib, sys, time
            pathlib.Path({str(ready)!r}).touch()
            while not pathlib.Path({str(go)!r}).exists():
                time.sleep(0.01)
            print("INFO YarnClientImpl: Submitted application {APP_ID}", file=sys.stderr,
                  flush=True)
            deadline = time.monotonic() + 180
            while not pathlib.Path({str(done)!r}).exists() and time.monotonic() < deadline:
                print("tick", flush=True)
                time.sleep(0.2)
        """),
    )
    lines: list[tuple[float, str]] = []
    reader = _lines_with_times(proc.stdout, lines)
    wait_for(ready.exists, what="the job started")
    with lock_held(db) as holder:
        go.touch()  # the app id is printed while the lock is held
        time.sleep(BUSY_TIMEOUT_S + 3)  # ... and held past the busy timeout
        assert proc.poll() is None, proc.stderr.read()  # the job was not stopped
        ticks = [t for t, line in lines if line.strip() == "tick"]
        assert ticks and ticks[-1] > holder.locked_at + BUSY_TIMEOUT_S  # output kept streaming
        assert stored(db)["app_id"] is None
    # Released: the app id written in the background reaches the history while the job runs.
    wait_for(lambda: stored(db)["app_id"] == APP_ID, 15, "the app id recorded")
    assert proc.poll() is None
    done.touch()
    _, err = proc.communicate(timeout=60)
    reader.join(5)
    assert proc.returncode == 0, err
    row = stored(db)
    assert row["status"] == "succeeded" and row["app_id"] == APP_ID and row["exit_code"] == 0
    assert row["runtime_s"] > BUSY_TIMEOUT_S
    assert not pending_file(db).exists()


def test_a_signal_while_waiting_for_the_lock_after_the_job_journals_at_once(
    tmp_path: Path,
) -> None:
    db, started, go, ended = (tmp_path / n for n in ("h.db", "started", "go", "ended"))
    proc = start_submit(
        db,
        job(f"""
            import pathlib, time
            pathlib.Path({str(started)!r}).touch()
            while not pathlib.Path({str(go)!r}).exists():
                time.sleep(0.01)
            pathlib.Path({str(ended)!r}).touch()
        """),
        "--json",
    )
    wait_for(started.exists, what="the job started")
    with lock_held(db):
        go.touch()
        wait_for(ended.exists, what="the job ran")
        time.sleep(1.5)  # cobell now waits for the lock to record the completion
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=BUSY_TIMEOUT_S)
        assert time.monotonic() - sent < 5
    assert proc.returncode == 0, err  # the job's code, not 130
    assert str(pending_file(db)) in err
    assert json.loads(out.strip().splitlines()[-1])["status"] == "succeeded"
    (run,) = json.loads(cobell("--db", db, "history", "list", "--format", "json").stdout)
    assert run["status"] == "pending"


def test_a_signal_while_waiting_for_the_lock_before_the_job_starts_starts_nothing(
    tmp_path: Path,
) -> None:
    db, ran = tmp_path / "h.db", tmp_path / "ran"
    with History.open(db):
        pass
    with lock_held(db):
        proc = start_submit(db, job(f"import pathlib; pathlib.Path({str(ran)!r}).touch()"))
        assert proc.stderr is not None
        for line in proc.stderr:  # planned; now it waits to insert the run
            if line.startswith("cobell: running"):
                break
        time.sleep(1.0)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=BUSY_TIMEOUT_S)
        assert time.monotonic() - sent < 5
    assert proc.returncode == 130
    assert err.strip() == "cobell: interrupted by SIGINT"
    assert not ran.exists()
    with History.open(db) as history:
        assert history.count() == 0


# -- the journal itself: exactly once, concurrent appenders, damaged lines -------------------


@pytest.fixture
def journal():
    from cobell_cli.store import journal

    return journal


def _journalled_run(db: Path, *, colocations: int = 2) -> int:
    """A `running` row of a dead process and its completion in the journal, as cobell leaves
    them when the history could not take the completion."""
    from cobell_cli.store import journal

    with History.open(db) as history:
        run_id = history.start_run(job="toy", scale_out=4, host=os.uname().nodename, pid=2**22 + 9)
    row = {"job": "toy", "scale_out": 4, "status": "succeeded", "runtime_s": 7.5,
           "started_at": 100.0, "finished_at": 107.5, "exit_code": 0}  # fmt: skip
    co = [{"co_runner_job": f"co{i}", "overlap_ratio": 0.5} for i in range(colocations)]
    journal.append(db, journal.entry(run_id, row, "history locked", co))
    return run_id


def test_read_only_commands_show_a_journalled_run_as_pending_and_write_nothing(
    tmp_path: Path, journal
) -> None:
    db = tmp_path / "h.db"
    run_id = _journalled_run(db)
    before = directory_state(tmp_path)
    listed = cobell("--db", db, "history", "list", "--format", "json")
    (run,) = json.loads(listed.stdout)
    assert run["status"] == "pending" and run["runtime_s"] == 7.5
    assert [c["co_runner_job"] for c in run["colocations"]] == ["co0", "co1"]
    shown = json.loads(cobell("--db", db, "history", "show", str(run_id), "--json").stdout)
    assert shown["status"] == "pending" and len(shown["colocations"]) == 2
    exported = cobell("--db", db, "history", "export", "--format", "json")
    (stored_run,) = json.loads(exported.stdout)["runs"]
    assert stored_run["status"] == "running"  # what the file holds: not presumed lost
    assert directory_state(tmp_path) == before
    with History.open(db) as history:  # the next writer applies it
        assert history.run(run_id)["status"] == "succeeded"


APPLY_AND_DIE = """
import os, signal, sys
from cobell_cli.store import journal
from cobell_cli.store.history import History
where = sys.argv[2]
def die(*_a, **_k):
    os.kill(os.getpid(), signal.SIGKILL)
if where == "before-commit":
    History._apply_entry = die
else:
    journal.Taken.remove = die
History.open(sys.argv[1])
"""


@pytest.mark.parametrize("where", ["before-commit", "after-commit"])
def test_an_applier_killed_mid_apply_leaves_the_run_applied_exactly_once(
    tmp_path: Path, journal, where: str
) -> None:
    db = tmp_path / "h.db"
    run_id = _journalled_run(db)
    killed = subprocess.run([PY, "-c", APPLY_AND_DIE, str(db), where], timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert pending_file(db).exists()  # not removed: the next writer applies it
    expected_now = "running" if where == "before-commit" else "succeeded"
    assert stored(db)["status"] == expected_now
    with History.open(db) as history:
        run = history.run(run_id)
    assert run["status"] == "succeeded" and run["runtime_s"] == 7.5
    assert colocation_count(db) == 2  # applied once, not twice
    assert not pending_file(db).exists()
    with History.open(db):
        pass
    assert colocation_count(db) == 2
    raw = sqlite3.connect(db)
    assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    raw.close()


APPENDER = """
import sys
from cobell_cli.store import journal
from pathlib import Path
db = Path(sys.argv[1])
for i in range(int(sys.argv[3])):
    journal.append(db, journal.entry(int(sys.argv[2]), {"status": "succeeded", "runtime_s": 1.0,
                   "scale_out": 1, "exit_code": 0}, "test"))
"""
APPLIER = """
import sys, time
from cobell_cli.store.history import History
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    History.open(sys.argv[1]).close()
"""


def test_appenders_racing_an_applier_lose_no_entry(tmp_path: Path, journal) -> None:
    db = tmp_path / "h.db"
    with History.open(db) as history:
        ids = [history.start_run(job=f"j{i}") for i in range(6)]
    appliers = [subprocess.Popen([PY, "-c", APPLIER, str(db), "6"]) for _ in range(4)]
    appenders = [subprocess.Popen([PY, "-c", APPENDER, str(db), str(i), "30"]) for i in ids]
    assert [p.wait(60) for p in appenders] == [0] * len(ids)
    assert [p.wait(60) for p in appliers] == [0] * len(appliers)
    with History.open(db) as history:
        statuses = {r["id"]: r["status"] for r in history.runs()}
    assert statuses == dict.fromkeys(ids, "succeeded")
    assert not pending_file(db).exists()
    assert not journal.rejected_path(db).exists()


def test_damaged_lines_are_set_aside_and_good_ones_applied(tmp_path: Path, journal) -> None:
    db = tmp_path / "h.db"
    run_id = _journalled_run(db, colocations=0)
    pending = pending_file(db)
    good = pending.read_bytes()
    flipped = good.replace(b'"runtime_s":7.5', b'"runtime_s":9.5')  # CRC no longer matches
    pending.write_bytes(flipped + good + b'{"format":1,"entry":"torn')
    with History.open(db) as history:
        assert history.run(run_id)["runtime_s"] == 7.5
    assert not pending.exists()
    rejected = journal.rejected_path(db).read_bytes().splitlines()
    assert rejected == [flipped.rstrip(b"\n"), b'{"format":1,"entry":"torn']
    assert stat.S_IMODE(journal.rejected_path(db).stat().st_mode) == 0o600


def test_a_completion_whose_run_was_removed_is_set_aside(tmp_path: Path, journal) -> None:
    db = tmp_path / "h.db"
    run_id = _journalled_run(db)
    raw = sqlite3.connect(db)
    raw.execute("DELETE FROM runs WHERE id = ?", (run_id,))
    raw.commit()
    raw.close()
    with History.open(db) as history:
        assert history.count() == 0
    assert not pending_file(db).exists()
    (line,) = journal.rejected_path(db).read_bytes().splitlines()
    assert journal.decode(line)["run_id"] == run_id


def test_an_append_after_a_torn_line_is_kept_whole(tmp_path: Path, journal) -> None:
    db = tmp_path / "h.db"
    pending_file(db).write_bytes(b'{"format":1,"entry":"torn')
    journal.append(db, journal.entry(3, {"status": "failed"}, "test"))
    (record,) = journal.read(db)
    assert record["run_id"] == 3 and record["run"] == {"status": "failed"}


def test_an_append_outlasts_many_appliers_removing_the_file_under_it(
        tmp_path: Path, journal, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under load, every cobell opening the history applies and removes the journal: an
    append may find its file removed between its open and its lock again and again (five
    times in a row failed a completion in a loaded test run). Here the removal happens for
    real, twenty times, at exactly that moment."""
    import fcntl

    db = tmp_path / "h.db"
    real_flock, removals = fcntl.flock, []

    def flock_after_an_applier(fd: int, op: int) -> None:
        if op == fcntl.LOCK_EX and len(removals) < 20:
            os.unlink(journal.journal_path(db))  # what an applier does once it applied
            removals.append(fd)
        real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock_after_an_applier)
    record = journal.entry(7, {"status": "succeeded", "runtime_s": 1.0, "scale_out": 1,
                               "exit_code": 0}, "test")
    path = journal.append(db, record)
    monkeypatch.setattr(fcntl, "flock", real_flock)
    assert len(removals) == 20
    assert [e["run_id"] for e in journal.read(db)] == [7] and path.exists()
