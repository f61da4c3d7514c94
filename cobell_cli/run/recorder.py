"""One `cobell submit` run's row in the history, written so that the history never costs the job.

- The row is inserted as `running` before the job starts; a history that cannot be written then
  (locked past the busy timeout, read-only, not a history) means the job is not started (exit 5).
- Once the job runs, nothing about the history may change its fate or its exit code. Writes
  while it runs (the start time, the app id) are made by a background thread that retries for
  as long as the job runs: a locked history never blocks the job, its output or cobell.
- The completion waits for a lock up to the busy timeout (less if a signal comes: cobell stops
  waiting). One that still cannot be written (locked, disk full, read-only, any SQLite error) is
  appended to the pending journal beside the history (store/journal.py) with the run's whole
  row; co-runners measured later follow it there. The caller gets one line saying where.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cobell_cli.errors import CobellError, HistoryError
from cobell_cli.store import journal
from cobell_cli.store.history import HistoryLocked, write_retrying

# What a history write can fail with; all of them leave the history as it was.
WRITE_ERRORS = (HistoryError, sqlite3.Error, OSError)
_BACKGROUND_RETRY_S = 1.0  # after an error other than a lock (disk full...), while the job runs


def why_not_written(exc: BaseException) -> str:
    """The reason in a few words (a lock's hint to retry later does not apply: cobell did)."""
    if isinstance(exc, HistoryLocked):
        return str(exc)
    return exc.line() if isinstance(exc, CobellError) else f"{type(exc).__name__}: {exc}"


class RunRecorder:
    """The row of one run: `start` inserts it, `update` and `finish` complete it."""

    def __init__(self, history_path: Path, run_id: int, row: Mapping[str, Any]) -> None:
        self.history_path = history_path
        self.run_id = run_id
        self.row = dict(row)
        self.journalled: Path | None = None  # where the completion went, if not the history
        # why the completion's runtime was kept out of fitting (store/implausible.py), if it was
        self.excluded_reason: str | None = None
        # room for the completion's journal line on a disk that fills up while the job runs
        self._reservation = journal.reserve(history_path, row["host"], row["pid"])
        self._unwritten: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def start(
        cls, history_path: Path, row: Mapping[str, Any], give_up: Callable[[], bool]
    ) -> RunRecorder:
        """Insert the run as `running`; raises HistoryError (the job must not start then)."""
        run_id = write_retrying(history_path, lambda h: h.start_run(**row), give_up=give_up)
        return cls(history_path, run_id, row)

    # -- while the job runs -------------------------------------------------------------------

    def update(self, **fields: Any) -> None:
        """Record fields in the background; returns at once (called from the run's loop)."""
        with self._lock:
            self.row.update(fields)
            self._unwritten.update(fields)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._write_in_background, daemon=True, name="cobell-recorder"
                )
                self._thread.start()
        self._wake.set()

    def _write_in_background(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            with self._lock:
                fields = dict(self._unwritten)
            if not fields or self._stop.is_set():
                continue
            try:
                write_retrying(
                    self.history_path,
                    lambda h, f=fields: h.finish_run(self.run_id, **f),  # type: ignore[misc]
                    wait_s=None,
                    give_up=self._stop.is_set,
                )
            except WRITE_ERRORS:
                if self._stop.wait(_BACKGROUND_RETRY_S):
                    return
                self._wake.set()
                continue
            with self._lock:
                for key, value in fields.items():
                    if self._unwritten.get(key) is value:
                        del self._unwritten[key]

    def _stop_background(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    # -- once it has ended ----------------------------------------------------------------------

    def finish(self, give_up: Callable[[], bool], **fields: Any) -> str | None:
        """Write the whole row with the completion, its runtime judged in the same write
        (`excluded_reason` says if it was kept out); journal it if that fails. Returns a
        one-line warning when the completion did not reach the history, else None."""
        self._stop_background()
        self.row.update(fields)
        try:
            flagged = write_retrying(
                self.history_path,
                lambda h: h.complete_run(self.run_id, **self.row),
                give_up=give_up,
            )
        except WRITE_ERRORS as exc:
            return self._journal(why_not_written(exc))
        self.excluded_reason = flagged.get(self.run_id)
        return None

    def amend(self, **fields: Any) -> str | None:
        """Change fields of the completed run (what the cluster said of it afterwards), in the
        history or, like the completion, in the journal; a one-line warning if neither."""
        self.row.update(fields)
        if self.journalled is not None:
            return self._journal("its completion is journalled")
        try:
            write_retrying(self.history_path, lambda h: h.finish_run(self.run_id, **fields))
        except WRITE_ERRORS as exc:
            return self._journal(why_not_written(exc))
        return None

    def add_colocations(self, rows: Sequence[Mapping[str, Any]]) -> str | None:
        """Store the measured co-runners beside the run (in the journal if the run is there)."""
        if self.journalled is not None:
            return self._journal("its completion is journalled", rows)
        try:
            write_retrying(self.history_path, lambda h: h.add_colocations(self.run_id, rows))
        except WRITE_ERRORS as exc:
            return self._journal(why_not_written(exc), rows)
        return None

    def close(self) -> None:
        """Give the reserved space back (the run is recorded, or journalled)."""
        journal.release(self._reservation)
        self._reservation = None

    def _journal(
        self, why: str, colocations: Sequence[Mapping[str, Any]] | None = None
    ) -> str | None:
        """Append the whole row (and co-runners) to the journal; the line to tell the user."""
        self.close()  # the reserved space is the journal's now
        run = f"run {self.run_id} ({self.row.get('status')}, exit {self.row.get('exit_code')})"
        what = run if colocations is None else f"the co-runners of {run}"
        record = journal.entry(self.run_id, self.row, why, colocations)
        try:
            where = journal.append(self.history_path, record)
        except OSError as exc:
            lost = "; the run will show as lost" if self.journalled is None else ""
            return (
                f"{what} NOT recorded: the history could not be written ({why}), nor the "
                f"journal {journal.journal_path(self.history_path)} ({exc.strerror or exc}){lost}"
            )
        if self.journalled is not None:
            return None  # the completion's line already said where
        self.journalled = where
        return (
            f"{what} could not be written to the history ({why}); journalled in {where}, "
            "the next cobell that writes the history records it"
        )
