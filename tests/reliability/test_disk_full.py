"""A disk that fills up while a job runs (issue 15, item 14): the history is never corrupted,
the job's exit code is cobell's, and the completion is journalled (or, when not even the
journal fits, cobell says so in one line). A real 1 MB tmpfs, filled to its last byte by the
job itself."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cobell_cli.store.history import History
from tests.reliability.faults import job, start_submit

FILL = """
import os, sqlite3, time
# First wait until cobell's writes while the job runs (its start time) are in the history
# file itself and its -wal is empty again, so nothing cobell wrote during the run can be
# given back when the disk is full: the filler then takes every page there is, for certain.
# (A start-time write that had appended its WAL frames but was not yet closed while the
# filler ran gave those pages back when its connection checkpointed and truncated the WAL:
# room for the completion or its journal line, and the test failed in 3 of 12 runs.)
db, deadline = {db!r}, time.monotonic() + 60
while True:
    try:
        conn = sqlite3.connect(f"file:{{db}}?mode=ro&immutable=1", uri=True)
        try:
            row = conn.execute("SELECT started_at FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError:  # read while cobell wrote: read again
        row = None
    wal = db + "-wal"
    if row and row[0] is not None and (not os.path.exists(wal) or os.path.getsize(wal) == 0):
        break
    assert time.monotonic() < deadline, "cobell never recorded the job's start"
    time.sleep(0.01)
path = {filler!r}
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
try:
    while True:
        os.write(fd, b"x" * 4096)
except OSError as exc:
    assert exc.errno == 28, exc  # ENOSPC
os.close(fd)
assert os.statvfs(os.path.dirname(path)).f_bavail == 0, "the disk is not full"
print("disk full", flush=True)
"""


def pending_file(db: Path) -> Path:
    """Where a completion the history cannot take goes (docs/reliability.md, "What cobell
    guarantees")."""
    return db.with_name(db.name + ".pending")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"needs a real small file system; mounting a 1 MB tmpfs failed "
                    f"({done.stderr.strip()}): run the tests as root")  # fmt: skip
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def _integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def _submit_filling(db: Path, filler: Path, *arguments: str) -> tuple[int, str, str]:
    """A submit whose job fills the disk to the last byte and exits 0."""
    with History.open(db):
        pass
    command = [*job(FILL.format(filler=str(filler), db=str(db))), *arguments]
    proc = start_submit(db, command, "--json")
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def test_a_full_disk_journals_the_completion_and_keeps_the_exit_code(small_disk: Path) -> None:
    db, filler = small_disk / "h.db", small_disk / "filler"
    code, out, err = _submit_filling(db, filler)
    assert code == 0, err
    assert "disk full" in out and "Traceback" not in err
    (line,) = [x for x in err.splitlines() if "journal" in x]
    assert str(pending_file(db)) in line and "run 1 (succeeded, exit 0)" in line
    assert "no space left on the device" in line
    assert json.loads(out.strip().splitlines()[-1])["recorded_in"] == str(pending_file(db))
    assert not [p.name for p in small_disk.iterdir() if ".reserve." in p.name]
    filler.unlink()  # space again: the next writer records the run
    assert _integrity(db) == "ok"
    with History.open(db) as history:
        (run,) = history.runs()
    assert run["status"] == "succeeded" and run["exit_code"] == 0 and run["runtime_s"] > 0
    assert not pending_file(db).exists()


def test_a_disk_too_full_even_for_the_journal_says_so_and_keeps_the_exit_code(
    small_disk: Path,
) -> None:
    db, filler = small_disk / "h.db", small_disk / "filler"
    # a command longer than the 16 KiB cobell sets aside for the completion's journal line
    code, out, err = _submit_filling(db, filler, "word " * 8192)
    assert code == 0, err
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if "NOT recorded" in x]
    assert line.startswith("cobell: warning: run 1 (succeeded, exit 0) NOT recorded")
    assert "No space left on device" in line and "will show as lost" in line
    assert json.loads(out.strip().splitlines()[-1])["exit_code"] == 0
    assert not pending_file(db).exists() or pending_file(db).stat().st_size == 0
    filler.unlink()
    assert _integrity(db) == "ok"
    with History.open(db) as history:
        (run,) = history.runs()
    assert run["status"] == "lost"  # the process is gone: never fitted, never `running`


def test_a_log_file_on_the_full_disk_stops_the_copy_never_the_job(small_disk: Path) -> None:
    db, filler, log = small_disk / "h.db", small_disk / "filler", small_disk / "job.log"
    pid_file = small_disk.parent / "job.pid"
    chatty = FILL.format(filler=str(filler), db=str(db)) + (
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "for i in range(4000):  # 400 kB: far more than a pipe holds\n"
        "    print(f'line {i:05d} ' + 'y' * 88, flush=True)\n"
    )
    with History.open(db):
        pass
    proc = start_submit(db, job(chatty), "--log-file", str(log), "--json")
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        raise AssertionError("the job blocked: its output was no longer drained") from None
    assert proc.returncode == 0, err
    printed = [x for x in out.splitlines() if x.startswith("line ")]
    assert len(printed) == 4000  # every line reached the terminal
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if "--log-file" in x]
    assert "No space left on device" in line
    filler.unlink()
    with History.open(db) as history:
        (run,) = history.runs()
    assert run["status"] == "succeeded"
