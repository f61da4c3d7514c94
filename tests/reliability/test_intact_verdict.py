"""store/intact.py: the verdict of a history's last quick_check, kept per file stamp. An
unchanged file is checked once; a file damaged in place, replaced, or written through WAL since
is checked again and a damaged one refused. Real SQLite files, damaged as a stray `dd` would;
quick_check counted with sqlite3's trace callback on every connection opened.

Most tests shorten the settling margin (RACY_NS, 2 s) to 0.2 s and wait it out: ample on the
test's file system (ns timestamps, Linux's coarse clock ticks at most 10 ms apart)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import cobell_cli.store.intact as intact
from cobell_cli.errors import HistoryError
from cobell_cli.store.history import History
from tests.cli_support import cobell
from tests.reliability.test_damaged_history import (
    EXAMPLE,
    _assert_refused,
    _index_page_offset,
    _overwrite,
)

MARGIN_NS = 200_000_000
PREDICT = ("predict", "-j", "sgd", "-t", "300", "--cluster", "none")


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every quick_check that any connection opened from now on runs."""
    seen: list[str] = []
    connect = sqlite3.connect

    def traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)  # type: ignore[arg-type]
        conn.set_trace_callback(lambda sql: seen.append(sql) if "quick_check" in sql else None)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    return seen


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(intact, "RACY_NS", MARGIN_NS)
    path = tmp_path / "h.db"
    assert cobell("--db", path, "history", "import", EXAMPLE).exit_code == 0
    return path


def settle(path: Path) -> None:
    """Wait until the file's newest time is RACY_NS old: its next check's verdict is kept."""
    newest = max(intact.stamp(path)[3::5] + intact.stamp(path)[4::5])  # type: ignore[index]
    time.sleep(max(0.0, (newest + intact.RACY_NS - time.time_ns()) / 1e9) + 0.01)


def read(path: Path, verdicts: Path | None) -> int:
    with History.open(path, read_only=True, verdicts=verdicts) as history:
        return len(history.training_runs("sgd", window=100))


def refused(path: Path, verdicts: Path) -> None:
    """Opening refuses the file, read-only or not, before any query could meet the page."""
    with pytest.raises(HistoryError, match="is damaged"):
        History.open(path, read_only=True, verdicts=verdicts)
    with pytest.raises(HistoryError, match="is damaged"):
        History.open(path, verdicts=verdicts)


@pytest.fixture
def checked(db: Path, tmp_path: Path, checks: list[str]) -> Iterator[Path]:
    """`db` settled, checked once, and its verdict kept in tmp_path / "verdicts"."""
    settle(db)
    read(db, tmp_path / "verdicts")
    assert len(checks) == 1
    yield tmp_path / "verdicts"


def test_an_unchanged_file_is_checked_once_by_readers_and_writers(
        db: Path, checked: Path, checks: list[str]) -> None:
    assert read(db, checked) == read(db, checked) > 0
    with History.open(db, reap_lost=False, verdicts=checked) as history:
        assert history.job_names()
    assert len(checks) == 1
    assert [p.name.startswith("intact-") for p in checked.iterdir()] == [True]


def test_without_verdicts_every_open_checks(db: Path, checked: Path, checks: list[str]) -> None:
    read(db, None)
    read(db, None)
    assert len(checks) == 3


def test_a_file_damaged_in_place_is_refused_after_a_passed_check(
        db: Path, tmp_path: Path, checks: list[str]) -> None:
    """The damage keeps the size and sets mtime back as it was: ctime still moves."""
    offset = _index_page_offset(db, "runs_job_status")
    settle(db)
    verdicts = tmp_path / "verdicts"
    read(db, verdicts)
    read(db, verdicts)
    assert len(checks) == 1
    before = os.stat(db)
    _overwrite(db, offset, 200)
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(db).st_size == before.st_size
    refused(db, verdicts)


def test_a_file_replaced_at_the_same_path_is_checked_again(
        db: Path, checked: Path, tmp_path: Path) -> None:
    """Another file of the same size and mtime moved over it (a restore, `mv`)."""
    copy = tmp_path / "copy.db"
    shutil.copyfile(db, copy)
    _overwrite(copy, _index_page_offset(copy, "runs_job_status"), 200)
    before = os.stat(db)
    os.utime(copy, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(copy, db)
    refused(db, checked)


def test_a_commit_through_wal_is_checked_again(
        db: Path, checked: Path, checks: list[str]) -> None:
    """The commit lands in the -wal only (the writer stays open: no checkpoint)."""
    main = os.stat(db)
    with History.open(db, reap_lost=False) as writer:
        writer.set_excluded([1], True)
        assert (os.stat(db).st_mtime_ns, os.stat(db).st_size) == (main.st_mtime_ns,
                                                                  main.st_size)
        count = len(checks)
        read(db, checked)
        assert len(checks) == count + 1


def test_a_damaged_verdict_means_check(db: Path, checked: Path, checks: list[str]) -> None:
    (verdict,) = checked.iterdir()
    verdict.write_bytes(b"\xff\x00 not a verdict")
    read(db, checked)
    assert len(checks) == 2
    read(db, checked)  # the check's verdict was kept again
    assert len(checks) == 2


def test_a_file_written_moments_ago_is_checked_on_every_open(
        tmp_path: Path, checks: list[str]) -> None:
    """Within the default margin a write could leave the times as they were: no verdict."""
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", EXAMPLE).exit_code == 0
    checks.clear()
    read(db, tmp_path / "verdicts")
    read(db, tmp_path / "verdicts")
    assert len(checks) == 2
    assert not (tmp_path / "verdicts").exists()


def test_a_second_predict_runs_no_check_and_a_damaged_file_is_still_refused(
        db: Path, tmp_path: Path, checks: list[str]) -> None:
    """The CLI keeps the verdict beside the model cache, and not with the cache off."""
    offset = _index_page_offset(db, "runs_job_status")
    settle(db)
    first = cobell("--db", db, *PREDICT)
    assert first.exit_code == 0, first.stderr
    assert cobell("--db", db, *PREDICT).stdout == first.stdout
    assert len(checks) == 1
    assert list((tmp_path / "xdg-cache" / "cobell" / "models").glob("intact-*"))
    assert cobell("--db", db, *PREDICT, env={"COBELL_MODEL_CACHE": "off"}).exit_code == 0
    assert len(checks) == 2
    before = os.stat(db)
    _overwrite(db, offset, 200)
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))
    _assert_refused(cobell("--db", db, *PREDICT), db)
