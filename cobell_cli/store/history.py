"""The run history: one SQLite file shared by every cobell process on a machine.

Consistency rules, because cron jobs, terminals and killed processes all write here:
- every write is one short `BEGIN IMMEDIATE` transaction (all or nothing, never held while a job
  runs), with a busy timeout so concurrent writers queue instead of failing; WAL on local disks,
  the rollback journal on network file systems (store/files.py says why);
- the schema version lives in `PRAGMA user_version`; older files are migrated forward inside a
  transaction, newer ones are refused untouched; read-only opens never change the file;
- a `running` row whose process is gone (same host, pid dead) becomes `lost` when the history is
  next opened for writing; `lost` runs never train a model;
- a completion that could not be written (store/journal.py) is applied when the history is next
  opened for writing, before anything else; read-only opens show it as `pending`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from cobell_cli.core.job_name import JOB_NAME_RULE, job_name_problem, normal
from cobell_cli.errors import HistoryError, UsageError
from cobell_cli.store import files, journal
from cobell_cli.store.implausible import flag_implausible
from cobell_cli.store.processes import pid_alive, this_host
from cobell_cli.store.queries import JOB_HOP, RunQueries
from cobell_cli.store.schema import (
    APPLICATION_ID,
    COLOCATION_COLUMNS,
    FAILURE_REASONS,
    MAX_MEMORY_MB,
    MIGRATIONS,
    RECENCY,
    RUN_COLUMNS,
    SCHEMA_VERSION,
    SOURCES,
    STATUSES,
    TRAINING_COLUMNS,
    _migration_1,
)

__all__ = [
    "APPLICATION_ID",
    "COLOCATION_COLUMNS",
    "MIGRATIONS",
    "RECENCY",
    "RUN_COLUMNS",
    "SCHEMA_VERSION",
    "SOURCES",
    "STATUSES",
    "TRAINING_COLUMNS",
    "History",
    "HistoryLocked",
    "_migration_1",
    "profile_json",
    "validate_run",
    "write_retrying",
]

BUSY_TIMEOUT_S = 30.0
RETRY_ATTEMPT_S = 0.25  # one attempt of write_retrying: how soon a signal is noticed
JOURNAL_APPLY_WAIT_S = 1.0  # for the lock to apply the pending journal, before the own write
T = TypeVar("T")


class HistoryLocked(HistoryError):
    """Another process held the write lock for longer than we waited."""


def _locked(path: Path, waited_s: float = BUSY_TIMEOUT_S) -> HistoryLocked:
    return HistoryLocked(
        f"history {path} is locked by another process (waited {waited_s:.0f} s)",
        hint="retry later, or find the holder with `fuser` on the file",
    )


class History(RunQueries):
    """A cobell history file; construct with History.open()."""

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        *,
        read_only: bool = False,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        verdicts: Path | None = None,
    ) -> None:
        self.path = path
        self.conn = conn
        self.read_only = read_only
        self.busy_timeout_s = busy_timeout_s
        self.verdicts = verdicts

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        create: bool = True,
        read_only: bool = False,
        reap_lost: bool = True,
        host: str | None = None,
        alive: Callable[[int], bool] = pid_alive,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
        verdicts: Path | None = None,
    ) -> History:
        """Open for writing (creating the file if `create`), or `read_only`: then the file is
        never changed, and a missing one reads as empty when `create` is set. `busy_timeout_s`:
        how long one write waits for another process's lock. `verdicts`: a directory where the
        verdict of the file's last integrity check is kept, so that an unchanged file is not
        checked whole again (store/intact.py); None checks on every open."""
        path = Path(path).expanduser()
        if read_only:
            history = cls._open_read_only(path, missing_ok=create, verdicts=verdicts)
            history.pending = journal.pending_runs(path)
            if reap_lost:
                history.presumed_lost = frozenset(history.dead_runs(host or this_host(), alive))
            return history
        if not path.exists():
            if not create:
                raise HistoryError(f"no history at {path} yet", hint=files.NO_SUCH_HISTORY_HINT)
            files.create(path)
        elif path.is_dir():
            raise HistoryError(f"history path {path} is a directory", hint="pass a file to --db")
        files.check_writable(path)
        try:
            conn = sqlite3.connect(path, timeout=busy_timeout_s)
        except sqlite3.Error as exc:
            raise HistoryError(f"cannot open history {path}: {exc}") from None
        history = cls(path, conn, busy_timeout_s=busy_timeout_s, verdicts=verdicts)
        try:
            history._prepare()
            history._apply_journal()
            if reap_lost:
                history.mark_lost(host or this_host(), alive)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _translate(exc, path) from None
        except BaseException:
            conn.close()
            raise
        return history

    @classmethod
    def _open_read_only(cls, path: Path, *, missing_ok: bool, verdicts: Path | None) -> History:
        try:
            conn = files.connect_read_only(path, missing_ok=missing_ok, timeout_s=BUSY_TIMEOUT_S,
                                           verdicts=verdicts)
        except sqlite3.DatabaseError as exc:
            if files.directory_read_only(path) and _unwritable(exc):
                raise HistoryError(
                    f"cannot read the history {path}: its directory {path.parent} is read-only "
                    f"to you and {files.wal_beside(path).name} beside it holds changes SQLite "
                    "cannot read without writing its index there",
                    hint="ask the file's owner to run any cobell command that writes (which "
                    "folds them into the file), or copy both files to a writable directory",
                ) from None
            raise _translate(exc, path) from None
        return cls(path, conn, read_only=True, verdicts=verdicts)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        """Close; an SQLite error met while reading (a damaged page, a lock) leaves as the
        HistoryError naming the file, as one met while opening does."""
        self.close()
        if isinstance(exc, sqlite3.Error):
            raise _translate(exc, self.path, self.busy_timeout_s) from None

    def _prepare(self) -> None:
        version, app_id, has_tables = files.snapshot(self.conn)
        files.check_known(self.path, version, app_id, has_tables)
        files.check_intact(self.conn, self.path, self.verdicts)  # never write to a damaged one
        self.conn.execute("PRAGMA foreign_keys = ON")
        self._set_journal_mode(files.journal_mode_for(files.filesystem_type(self.path)))
        if version < SCHEMA_VERSION:
            with self._write():
                # Re-read inside the write lock: another process may have migrated meanwhile.
                files.migrate(self.conn)

    def _set_journal_mode(self, wanted: str) -> None:
        if self.conn.execute("PRAGMA journal_mode").fetchone()[0] == wanted:
            return
        try:
            self.conn.execute(f"PRAGMA journal_mode = {wanted}")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                raise _locked(self.path, self.busy_timeout_s) from None
            raise

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        """One short write transaction, taken with the write lock up front. SQLite's errors
        (locked, disk full, read-only, I/O) leave as one HistoryError; nothing is half-written."""
        self._begin()
        try:
            yield
            self.conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            if isinstance(exc, sqlite3.Error):
                raise _translate(exc, self.path, self.busy_timeout_s) from None
            raise

    def _begin(self) -> None:
        if self.read_only:
            raise files.read_only_error(self.path, "opened read-only by this command")
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _translate(exc, self.path, self.busy_timeout_s) from None

    def _rollback(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
            self.conn.execute("ROLLBACK")

    # -- the pending journal (store/journal.py) -------------------------------------------

    def _apply_journal(self) -> None:
        """Apply the completions other processes could not write, in one transaction, and
        remove them while the journal is still locked. Best effort: a history still locked or
        full keeps them for the next writer. The history's lock is taken first, so appenders
        wait for the journal's only while it is applied."""
        if not journal.exists(self.path):
            return
        try:
            with self._busy_timeout(min(JOURNAL_APPLY_WAIT_S, self.busy_timeout_s)):
                self._begin()  # a lock held elsewhere: leave it to a later writer, do not wait
        except HistoryError:
            return
        try:
            with journal.taken(self.path) as claim:
                for record in claim.entries if claim else ():
                    if not self._apply_entry(record):
                        claim.reject(record)  # type: ignore[union-attr]
                self.conn.execute("COMMIT")
                if claim is not None:
                    claim.remove(journal.rejected_path(self.path))
        except (sqlite3.Error, OSError):
            self._rollback()

    @contextlib.contextmanager
    def _busy_timeout(self, seconds: float) -> Iterator[None]:
        self.conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
        try:
            yield
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")

    def _apply_entry(self, record: Mapping[str, Any]) -> bool:
        """Set the run's row and replace its co-runners; False if the run is not here."""
        run_id = record["run_id"]
        try:
            row = _clean_run(record["run"], partial=True)
            colocations = [_clean_colocation(c) for c in record.get("colocations") or ()]
        except (ValueError, TypeError):
            return False
        row.pop("id", None)
        if not self._exists(run_id):
            return False
        if row:
            assignments = ", ".join(f"[{k}] = ?" for k in row)
            self.conn.execute(
                f"UPDATE runs SET {assignments} WHERE id = ?", [*row.values(), run_id]
            )
        if "colocations" in record:
            self.conn.execute("DELETE FROM colocations WHERE run_id = ?", (run_id,))
            for colocation in colocations:
                self._insert("colocations", {"run_id": run_id, **colocation})
        if "status" in row:  # a completion: judged as `complete_run` judges it
            flag_implausible(self.conn, [run_id])
        return True

    # -- writes ----------------------------------------------------------------------------

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """One write transaction for a caller that writes several tables (an import)."""
        return self._write()

    def start_run(self, **fields: Any) -> int:
        """Insert a run as `running` (unless a status is given) and return its id."""
        row = _clean_run({"status": "running", **fields})
        with self._write():
            cursor = self._insert("runs", row)
        return int(cursor)

    def finish_run(self, run_id: int, **fields: Any) -> None:
        row = _clean_run(fields, partial=True)
        if not row:
            return
        with self._write():
            self._update_run(run_id, row)

    def complete_run(self, run_id: int, **fields: Any) -> dict[int, str]:
        """`finish_run` with the run's completion, and its runtime judged in the same
        transaction (store/implausible.py): {run_id: reason} if it was kept out as
        implausible, else {}."""
        row = _clean_run(fields, partial=True)
        with self._write():
            if row:
                self._update_run(run_id, row)
            return flag_implausible(self.conn, [run_id])

    def _update_run(self, run_id: int, row: Mapping[str, Any]) -> None:
        assignments = ", ".join(f"[{k}] = ?" for k in row)
        cur = self.conn.execute(
            f"UPDATE runs SET {assignments} WHERE id = ?", [*row.values(), run_id]
        )
        if cur.rowcount != 1:
            raise HistoryError(f"run {run_id} is not in the history {self.path}")

    def add_colocations(self, run_id: int, rows: Iterable[Mapping[str, Any]]) -> int:
        cleaned = [_clean_colocation(r) for r in rows]
        with self._write():
            for row in cleaned:
                self._insert("colocations", {"run_id": run_id, **row})
        return len(cleaned)

    def insert_runs(
        self, records: Iterable[Mapping[str, Any]], *, keep_ids: bool = True,
        judge: bool = False,
    ) -> list[int]:
        """Insert whole runs (with optional `colocations` lists) atomically: all or none.
        `judge` (an import) judges their runtimes against the job's runs, theirs included
        (store/implausible.py), except runs whose record has an `excluded_reason` field, even
        empty: a cobell export that carries it was judged when its runs arrived."""
        ids: list[int] = []
        unjudged: list[int] = []
        with self._write():
            for record in records:
                run = _clean_run({k: v for k, v in record.items() if k != "colocations"})
                if not keep_ids:
                    run.pop("id", None)
                elif "id" in run and self._exists(run["id"]):
                    raise UsageError(
                        f"run id {run['id']} is already in the history {self.path}",
                        hint="import with --new-ids to give the imported runs fresh ids",
                    )
                run_id = self._insert("runs", run)
                ids.append(run_id)
                if "excluded_reason" not in record:
                    unjudged.append(run_id)
                for colocation in record.get("colocations") or ():
                    self._insert("colocations", {"run_id": run_id, **_clean_colocation(colocation)})
            if judge:
                flag_implausible(self.conn, unjudged)
        return ids

    def save_profile(self, run_id: int, profile: Any, *, event_log: str | None = None) -> None:
        """Store a run's event-log profile (core/profile.py AppProfile, or its JSON text) and,
        if given, the log's path in `runs.event_log`; replaces an earlier profile of the run.
        An AppProfile's memory columns (core/memory/measure.py) fill the run's unknown ones
        (importers put them in the run's row themselves).

        Its own transaction, or part of the caller's when one is open (an import)."""
        from cobell_cli.core.profile import PROFILE_FORMAT  # not needed to read the history

        memory: dict[str, Any] = {}
        if isinstance(profile, str):
            summary = profile
        else:
            from cobell_cli.core.memory.measure import memory_columns

            summary = profile_json(profile)
            memory = _clean_run(memory_columns(profile), partial=True)
        with contextlib.nullcontext() if self.conn.in_transaction else self._write():
            if not self._exists(run_id):
                raise HistoryError(f"run {run_id} is not in the history {self.path}")
            self.conn.execute(
                "INSERT OR REPLACE INTO run_profiles (run_id, format, summary) VALUES (?, ?, ?)",
                (run_id, PROFILE_FORMAT, summary),
            )
            if event_log is not None:
                self.conn.execute(
                    "UPDATE runs SET event_log = ? WHERE id = ?", (str(event_log), run_id)
                )
            if memory:  # a memory failure explains only a run that failed
                fill = ", ".join(
                    "[failure_reason] = CASE WHEN status = 'failed' "
                    "THEN coalesce([failure_reason], ?) ELSE [failure_reason] END"
                    if k == "failure_reason" else f"[{k}] = coalesce([{k}], ?)"
                    for k in memory
                )
                self.conn.execute(
                    f"UPDATE runs SET {fill} WHERE id = ?", [*memory.values(), run_id]
                )

    def delete_runs(self, run_ids: Iterable[int]) -> int:
        ids = list(run_ids)
        with self._write():
            self._require(ids, "nothing was removed")
            for run_id in ids:
                self.conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return len(ids)

    def set_excluded(self, run_ids: Iterable[int], excluded: bool) -> list[int]:
        """Keep runs out of fitting and planning (or let them back in); returns the ids whose
        flag changed. Unknown ids change nothing and are a usage error."""
        ids = list(dict.fromkeys(int(i) for i in run_ids))
        with self._write():
            self._require(ids, "nothing was changed")
            changed = [i for i in ids if self.conn.execute(
                "UPDATE runs SET excluded = ?, excluded_reason = NULL "
                "WHERE id = ? AND excluded != ?",
                (int(excluded), i, int(excluded))).rowcount]
        return changed

    def _require(self, run_ids: Sequence[int], consequence: str) -> None:
        """A usage error naming the ids that are not in the history."""
        missing = [i for i in run_ids if not self._exists(i)]
        if missing:
            raise UsageError(
                f"no run with id {', '.join(map(str, missing))} in {self.path}",
                hint=f"see `cobell history list`; {consequence}",
            )

    def dead_runs(self, host: str, alive: Callable[[int], bool] = pid_alive) -> list[int]:
        """`running` runs of this host whose process is gone. Every open asks: the job hop
        reads the (job, status) index's running entries, not every run (0.1 ms against 20
        at 10^5 runs)."""
        rows = self.conn.execute(
            f"{JOB_HOP} SELECT id, pid FROM runs WHERE job IN (SELECT job FROM j) "
            "AND status = 'running' AND host = ?", (host,)
        ).fetchall()
        return [run_id for run_id, pid in rows if pid is None or not alive(int(pid))]

    def mark_lost(self, host: str, alive: Callable[[int], bool] = pid_alive) -> list[int]:
        """Mark `running` runs of this host whose process is gone as `lost`."""
        dead = self.dead_runs(host, alive)
        if dead:
            with self._write():
                for run_id in dead:
                    self.conn.execute(
                        "UPDATE runs SET status = 'lost', reason = coalesce(reason || '; ', '') || "
                        "'process gone before the run was recorded' "
                        "WHERE id = ? AND status = 'running'",
                        (run_id,),
                    )
        from cobell_cli.store.reaping import reap  # submits waiting for their start: alike

        reap(self, time.time(), host=host, alive=alive)
        return dead

    def next_run_id(self) -> int:
        """The id a new run gets: above every run there is and every run ever removed (so an
        id names one run for good); the caller holds the write lock."""
        (next_id,) = self.conn.execute(
            "SELECT max(coalesce((SELECT max(id) FROM runs), 0), "
            "(SELECT coalesce(max(id), 0) FROM run_id_floor)) + 1"
        ).fetchone()
        return int(next_id)

    def _insert(self, table: str, row: Mapping[str, Any]) -> int:
        if table == "runs" and row.get("id") is None:
            row = {**row, "id": self.next_run_id()}
        columns = ", ".join(f"[{k}]" for k in row)
        marks = ", ".join("?" for _ in row)
        cur = self.conn.execute(
            f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(row.values())
        )
        return int(cur.lastrowid)

    def _exists(self, run_id: int) -> bool:
        return (
            self.conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None
        )


def profile_json(profile: Any) -> str:
    """An AppProfile as the compact JSON text `run_profiles.summary` holds."""
    return json.dumps(profile.to_dict(), separators=(",", ":"), allow_nan=False)


def write_retrying(
    path: Path,
    write: Callable[[History], T],
    *,
    wait_s: float | None = BUSY_TIMEOUT_S,
    give_up: Callable[[], bool] = lambda: False,
    attempt_s: float = RETRY_ATTEMPT_S,
) -> T:
    """`write(history)` on the history at `path` (opened for writing, without reaping), waiting
    for another process's lock for up to `wait_s` (None: until `give_up()`), in short attempts
    so that `give_up` is asked between them. Any other error is raised at once."""
    started = time.monotonic()
    while True:
        try:
            with History.open(path, reap_lost=False, busy_timeout_s=attempt_s) as history:
                return write(history)
        except HistoryLocked:
            waited_s = time.monotonic() - started
            if give_up() or (wait_s is not None and waited_s >= wait_s):
                raise _locked(Path(path).expanduser(), waited_s) from None


def _translate(
    exc: sqlite3.Error, path: Path, busy_timeout_s: float = BUSY_TIMEOUT_S
) -> HistoryError:
    text = str(exc)
    if files.damaged(exc):
        return files.damaged_error(path)
    if "not a database" in text or "file is encrypted" in text:
        return HistoryError(
            f"{path} is not a cobell history (not an SQLite database)",
            hint="pass another file to --db or move this one away",
        )
    if "locked" in text or "busy" in text:
        return _locked(path, busy_timeout_s)
    if _unwritable(exc) and files.directory_read_only(path):
        return files.read_only_directory_error(path)
    if "readonly" in text:
        return files.read_only_error(path, f"read-only ({text})")
    if "unable to open" in text:
        return HistoryError(
            f"cannot open the history {path}: {text}",
            hint="check the permissions of the file and of its directory (SQLite creates "
            f"{path.name}-wal and {path.name}-shm beside it), or pass another --db",
        )
    if ("disk" in text or "I/O" in text) and _nearly_full(path.parent):
        return HistoryError(f"history {path}: {text}: no space left on the device")
    return HistoryError(f"history {path}: {text}")


def _unwritable(exc: sqlite3.Error) -> bool:
    return "readonly" in str(exc) or "unable to open" in str(exc)


def _nearly_full(directory: Path) -> bool:
    """SQLite reports a full disk as `disk I/O error` when it cannot grow its -shm index."""
    try:
        stats = os.statvfs(directory)
    except OSError:
        return False
    return stats.f_bavail * stats.f_frsize < 65536


INT64 = 2**63  # SQLite's INTEGER is a signed 64-bit number


def _coerce(value: Any, kind: type, column: str) -> Any:
    if value is None or value == "":
        return None
    if isinstance(value, list | dict) and column != "command":
        raise ValueError(f"{column}: expected {kind.__name__}, got a {type(value).__name__}")
    if kind is int:
        return _integer(value, column)
    if kind is float:
        return _real(value, column)
    if column == "command" and not isinstance(value, str):
        if not isinstance(value, list | tuple):
            raise ValueError(f"command: expected a list of arguments, got {str(value)[:40]!r}")
        return json.dumps(list(value))
    return str(value)


def _integer(value: Any, column: str) -> int:
    try:
        if isinstance(value, float) and not value.is_integer():
            raise ValueError
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        digits = str(value).strip().lstrip("+-")
        if isinstance(value, str) and digits.isdigit():  # too many digits even to convert
            raise ValueError(
                f"{column}: a {len(digits)}-digit number is beyond SQLite's 64-bit integer range"
            ) from None
        raise ValueError(f"{column}: expected int, got {str(value)[:40]!r}") from None
    if not -INT64 <= number < INT64:
        raise ValueError(f"{column}: {str(value)[:30]} is beyond SQLite's 64-bit integer range")
    return number


def _real(value: Any, column: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{column}: expected float, got {str(value)[:40]!r}") from None
    if not math.isfinite(number):
        raise ValueError(f"{column}: expected a finite number, got {str(value)[:40]!r}")
    return number


def _clean_run(fields: Mapping[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """Check a run's fields against the schema; raises ValueError naming the field."""
    unknown = set(fields) - set(RUN_COLUMNS)
    if unknown:
        raise ValueError(f"unknown run field(s): {', '.join(sorted(unknown))}")
    row = {k: _coerce(v, RUN_COLUMNS[k], k) for k, v in fields.items()}
    if not partial and not row.get("job"):
        raise ValueError("job: missing")
    if row.get("job") is not None:
        if (problem := job_name_problem(row["job"])) is not None:
            raise ValueError(f"job: {problem} (a job name is {JOB_NAME_RULE})")
        row["job"] = normal(row["job"])
    if not partial and row.get("status") is None:
        raise ValueError("status: missing")
    if row.get("status") is not None and row["status"] not in STATUSES:
        raise ValueError(f"status: expected one of {', '.join(STATUSES)}, got {row['status']!r}")
    if "source" in row and row["source"] is None:
        del row["source"]  # the column's default: a run cobell launched
    if "excluded" in row and row["excluded"] is None:
        del row["excluded"]  # the column's default: used for fitting
    if row.get("excluded") not in (None, 0, 1):
        raise ValueError(f"excluded: expected 0 or 1, got {row['excluded']}")
    if row.get("excluded_reason") is not None and row.get("excluded") != 1:
        raise ValueError("excluded_reason: only a run with excluded = 1 has one")
    if row.get("source") is not None and row["source"] not in SOURCES:
        raise ValueError(f"source: expected one of {', '.join(SOURCES)}, got {row['source']!r}")
    for column in ("meet_probability", "confidence"):
        if row.get(column) is not None and not 0 <= row[column] <= 1:
            raise ValueError(f"{column}: must be within [0, 1], got {row[column]}")
    if row.get("scale_out") is not None and row["scale_out"] < 1:
        raise ValueError(f"scale_out: must be >= 1, got {row['scale_out']}")
    for column in ("runtime_s", "input_bytes", "target_s", "predicted_s", "mean_scale_out"):
        if row.get(column) is not None and row[column] < 0:
            raise ValueError(f"{column}: must be >= 0, got {row[column]}")
    _check_memory(row)
    if row.get("status") == "succeeded" and not partial:
        for column in ("scale_out", "runtime_s"):
            if row.get(column) is None:
                raise ValueError(f"{column}: missing (a succeeded run needs it)")
    return row


def _check_memory(row: Mapping[str, Any]) -> None:
    """Executor memory within 1 MB (0 for the overhead and the peak) and a petabyte; a known
    failure reason."""
    for column, low in (("executor_memory_mb", 1), ("executor_overhead_mb", 0),
                        ("peak_memory_mb", 0)):  # fmt: skip
        value = row.get(column)
        if value is not None and not low <= value <= MAX_MEMORY_MB:
            raise ValueError(
                f"{column}: must be within [{low}, {MAX_MEMORY_MB}] MB, got {str(value)[:30]}"
            )
    reason = row.get("failure_reason")
    if reason is not None and reason not in FAILURE_REASONS:
        raise ValueError(
            f"failure_reason: expected one of {', '.join(FAILURE_REASONS)}, got {reason!r}"
        )


def _clean_colocation(fields: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(fields) - set(COLOCATION_COLUMNS) - {"run_id", "id"}
    if unknown:
        raise ValueError(f"unknown co-runner field(s): {', '.join(sorted(unknown))}")
    row = {
        k: _coerce(fields.get(k), kind, k) for k, kind in COLOCATION_COLUMNS.items() if k in fields
    }
    ratio = row.get("overlap_ratio")
    if ratio is None:
        raise ValueError("overlap_ratio: missing")
    if not 0 <= ratio <= 1:
        raise ValueError(f"overlap_ratio: must be within [0, 1], got {ratio}")
    if row.get("overlap_s") is not None and row["overlap_s"] < 0:
        raise ValueError(f"overlap_s: must be >= 0, got {row['overlap_s']}")
    return row


def validate_run(record: Mapping[str, Any]) -> dict[str, Any]:
    """Validate one importable record (run fields plus optional `colocations`)."""
    run = _clean_run({k: v for k, v in record.items() if k != "colocations"})
    raw = record.get("colocations") or []
    if not isinstance(raw, list) or not all(isinstance(c, Mapping) for c in raw):
        raise ValueError("colocations: expected a list of objects")
    return {**run, "colocations": [_clean_colocation(c) for c in raw]}
