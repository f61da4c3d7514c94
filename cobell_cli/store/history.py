"""The run history: one SQLite file shared by every cobell process on a machine (or NFS-free share).

Consistency rules, because cron jobs, terminals and killed processes all write here:
- every write is one short `BEGIN IMMEDIATE` transaction (all or nothing, never held while a job
  runs), in WAL mode with a busy timeout so concurrent writers queue instead of failing;
- the schema version lives in `PRAGMA user_version`; older files are migrated forward inside a
  transaction, newer ones are refused untouched;
- a `running` row whose process is gone (same host, pid dead) becomes `lost` when the history is
  next opened; `lost` runs never train a model.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cobell_cli.errors import HistoryError, UsageError

if TYPE_CHECKING:
    import sqlite_utils

SCHEMA_VERSION = 3
APPLICATION_ID = 0x436F426C  # "CoBl": marks a file as a cobell history
STATUSES = ("running", "succeeded", "failed", "killed", "lost")
# Where a run's record came from: launched by `cobell submit`, a CSV/JSON import, or the
# cluster's own record (YARN's finished apps, the Spark History Server, event logs).
SOURCES = ("cobell", "import", "yarn", "spark-history", "event-log")
BUSY_TIMEOUT_S = 30.0

RUN_COLUMNS: dict[str, type] = {
    "id": int,
    "job": str,
    "input_bytes": int,
    "scale_out": int,
    "backend": str,
    "app_id": str,
    "queue": str,
    "user": str,
    "host": str,
    "pid": int,
    "submitted_at": float,
    "started_at": float,
    "finished_at": float,
    "runtime_s": float,
    "status": str,
    "target_s": float,
    "predicted_s": float,
    "model": str,
    "reason": str,
    "command": str,
    "exit_code": int,
    "source": str,
    "mean_scale_out": float,
    "meet_probability": float,
    "confidence": float,
    "event_log": str,
}
# The order of a job's runs in time: when it started, else when it was submitted.
RECENCY = "coalesce(started_at, submitted_at)"
# What planning and model fitting read of a run (`History.training_runs`).
TRAINING_COLUMNS: tuple[str, ...] = (
    "id",
    "job",
    "input_bytes",
    "scale_out",
    "submitted_at",
    "started_at",
    "finished_at",
    "runtime_s",
    "status",
    "target_s",
    "predicted_s",
    "model",
)
COLOCATION_COLUMNS: dict[str, type] = {
    "co_runner_app_id": str,
    "co_runner_job": str,
    "co_runner_scale_out": int,
    "co_runner_started_at": float,
    "co_runner_finished_at": float,
    "overlap_s": float,
    "overlap_ratio": float,
}


def _migration_1(conn: sqlite3.Connection) -> None:
    conn.execute(
        f"""CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            job TEXT NOT NULL,
            input_bytes INTEGER CHECK (input_bytes IS NULL OR input_bytes >= 0),
            scale_out INTEGER CHECK (scale_out IS NULL OR scale_out >= 1),
            backend TEXT,
            app_id TEXT,
            queue TEXT,
            user TEXT,
            host TEXT,
            pid INTEGER,
            submitted_at REAL,
            started_at REAL,
            finished_at REAL,
            runtime_s REAL CHECK (runtime_s IS NULL OR runtime_s >= 0),
            status TEXT NOT NULL CHECK (status IN ({", ".join(repr(s) for s in STATUSES)})),
            target_s REAL,
            predicted_s REAL,
            model TEXT,
            reason TEXT,
            command TEXT,
            exit_code INTEGER
        )"""
    )
    conn.execute("CREATE INDEX runs_job_status ON runs (job, status)")
    conn.execute("CREATE INDEX runs_submitted_at ON runs (submitted_at)")
    conn.execute(
        """CREATE TABLE colocations (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            co_runner_app_id TEXT,
            co_runner_job TEXT,
            co_runner_scale_out INTEGER,
            co_runner_started_at REAL,
            co_runner_finished_at REAL,
            overlap_s REAL CHECK (overlap_s IS NULL OR overlap_s >= 0),
            overlap_ratio REAL NOT NULL CHECK (overlap_ratio >= 0 AND overlap_ratio <= 1)
        )"""
    )
    conn.execute("CREATE INDEX colocations_run_id ON colocations (run_id)")


def _migration_2(conn: sqlite3.Connection) -> None:
    """An index in the order planning reads a job's runs, newest first, so a windowed read
    does not sort the whole job's history."""
    conn.execute(f"CREATE INDEX runs_job_recent ON runs (job, status, {RECENCY}, id)")


def _migration_3(conn: sqlite3.Connection) -> None:
    """Runs learned from the cluster's own record, the risk of each decision, and the what-if.

    `source` tells runs cobell launched from imported ones (which have no target or
    prediction); `mean_scale_out` is the time-weighted mean of live executors beside the peak
    in `scale_out`; `meet_probability` the estimated P(runtime <= target) at the chosen
    scale-out and `confidence` the level it was planned at (NULL: the point decision);
    `run_profiles` holds the compact event-log summary a what-if replays.
    """
    sources = ", ".join(repr(s) for s in SOURCES)
    conn.execute(
        "ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT 'cobell' "
        f"CHECK (source IN ({sources}))"
    )
    conn.execute(
        "ALTER TABLE runs ADD COLUMN mean_scale_out REAL "
        "CHECK (mean_scale_out IS NULL OR mean_scale_out >= 0)"
    )
    conn.execute(
        "ALTER TABLE runs ADD COLUMN meet_probability REAL "
        "CHECK (meet_probability IS NULL OR (meet_probability >= 0 AND meet_probability <= 1))"
    )
    conn.execute(
        "ALTER TABLE runs ADD COLUMN confidence REAL "
        "CHECK (confidence IS NULL OR (confidence > 0 AND confidence < 1))"
    )
    conn.execute("ALTER TABLE runs ADD COLUMN event_log TEXT")
    conn.execute("CREATE INDEX runs_app_id ON runs (app_id)")
    conn.execute(
        """CREATE TABLE run_profiles (
            run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
            format INTEGER NOT NULL,
            summary TEXT NOT NULL
        )"""
    )


# Forward migrations: MIGRATIONS[i] takes a file from version i to i + 1.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migration_1,
    _migration_2,
    _migration_3,
)
assert len(MIGRATIONS) == SCHEMA_VERSION


def this_host() -> str:
    """The name `running` rows are stamped with and reaped by (socket.gethostname()'s value,
    without importing socket on every open)."""
    return os.uname().nodename


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def _locked(path: Path) -> HistoryError:
    return HistoryError(
        f"history {path} is locked by another process (waited {BUSY_TIMEOUT_S:.0f} s)",
        hint="retry later, or find the holder with `fuser` on the file",
    )


class History:
    """A cobell history file; construct with History.open()."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn

    @functools.cached_property
    def db(self) -> sqlite_utils.Database:
        """sqlite-utils on our connection, built on first use: importing it costs ~0.1 s (it
        probes for numpy and pandas), more than a whole cached `cobell predict` may take."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn, execute_plugins=False)

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        create: bool = True,
        reap_lost: bool = True,
        host: str | None = None,
        alive: Callable[[int], bool] = pid_alive,
    ) -> History:
        path = Path(path).expanduser()
        if not path.exists():
            if not create:
                raise HistoryError(
                    f"no history at {path} yet",
                    hint="record runs with `cobell submit` or import some with "
                    "`cobell history import FILE`",
                )
            _create_file(path)
        elif path.is_dir():
            raise HistoryError(f"history path {path} is a directory", hint="pass a file to --db")
        try:
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:
            raise HistoryError(f"cannot open history {path}: {exc}") from None
        history = cls(path, conn)
        try:
            history._prepare()
            if reap_lost:
                history.mark_lost(host or this_host(), alive)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _translate(exc, path) from None
        except BaseException:
            conn.close()
            raise
        return history

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _prepare(self) -> None:
        conn = self.conn
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise HistoryError(
                f"history {self.path} was written by a newer cobell (schema {version}; this "
                f"cobell knows up to {SCHEMA_VERSION})",
                hint="upgrade cobell (pip install -U cobell); the file was not changed",
            )
        if app_id not in (0, APPLICATION_ID) or (app_id == 0 and self._has_foreign_tables()):
            raise HistoryError(
                f"{self.path} is an SQLite database but not a cobell history",
                hint="pass another file to --db",
            )
        conn.execute("PRAGMA foreign_keys = ON")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            try:
                conn.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError as exc:
                if "locked" in str(exc):
                    raise _locked(self.path) from None
                raise
        if version < SCHEMA_VERSION:
            self._migrate()

    def _has_foreign_tables(self) -> bool:
        names = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master")}
        return bool(names)

    def _migrate(self) -> None:
        with self._write():
            # Re-read inside the write lock: another process may have migrated meanwhile.
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            for step in MIGRATIONS[version:]:
                step(self.conn)
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        """One short write transaction, taken with the write lock up front."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise _locked(self.path) from None
            raise
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")

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
        assignments = ", ".join(f"[{k}] = ?" for k in row)
        with self._write():
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
        self, records: Sequence[Mapping[str, Any]], *, keep_ids: bool = True
    ) -> list[int]:
        """Insert whole runs (with optional `colocations` lists) atomically: all or none."""
        ids: list[int] = []
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
                for colocation in record.get("colocations") or ():
                    self._insert("colocations", {"run_id": run_id, **_clean_colocation(colocation)})
        return ids

    def delete_runs(self, run_ids: Iterable[int]) -> int:
        ids = list(run_ids)
        with self._write():
            missing = [i for i in ids if not self._exists(i)]
            if missing:
                raise UsageError(
                    f"no run with id {', '.join(map(str, missing))} in {self.path}",
                    hint="see `cobell history list`; nothing was removed",
                )
            for run_id in ids:
                self.conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return len(ids)

    def mark_lost(self, host: str, alive: Callable[[int], bool] = pid_alive) -> list[int]:
        """Mark `running` runs of this host whose process is gone as `lost`."""
        rows = self.conn.execute(
            "SELECT id, pid FROM runs WHERE status = 'running' AND host = ?", (host,)
        ).fetchall()
        dead = [run_id for run_id, pid in rows if pid is None or not alive(int(pid))]
        if dead:
            with self._write():
                for run_id in dead:
                    self.conn.execute(
                        "UPDATE runs SET status = 'lost', reason = coalesce(reason || '; ', '') || "
                        "'process gone before the run was recorded' "
                        "WHERE id = ? AND status = 'running'",
                        (run_id,),
                    )
        return dead

    def _insert(self, table: str, row: Mapping[str, Any]) -> int:
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

    # -- reads -----------------------------------------------------------------------------

    def runs(
        self,
        *,
        job: str | None = None,
        status: str | Sequence[str] | None = None,
        since: float | None = None,
        limit: int | None = None,
        newest_first: bool = True,
        with_colocations: bool = False,
    ) -> list[dict[str, Any]]:
        where, params = [], []
        if job is not None:
            where.append("job = ?")
            params.append(job)
        if status is not None:
            statuses = [status] if isinstance(status, str) else list(status)
            where.append(f"status IN ({', '.join('?' for _ in statuses)})")
            params.extend(statuses)
        if since is not None:
            where.append("coalesce(submitted_at, started_at) >= ?")
            params.append(since)
        sql = "SELECT * FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        order = "DESC" if newest_first else "ASC"
        sql += f" ORDER BY coalesce(submitted_at, started_at) {order}, id {order}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = list(self.db.query(sql, params))
        if with_colocations:
            by_run = self.colocations([r["id"] for r in rows])
            for row in rows:
                row["colocations"] = by_run.get(row["id"], [])
        return rows

    def run(self, run_id: int) -> dict[str, Any] | None:
        rows = list(self.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
        if not rows:
            return None
        row = rows[0]
        row["colocations"] = self.colocations([run_id]).get(run_id, [])
        return row

    def colocations(self, run_ids: Sequence[int] | None = None) -> dict[int, list[dict[str, Any]]]:
        sql = "SELECT * FROM colocations"
        params: list[Any] = []
        if run_ids is not None:
            if not run_ids:
                return {}
            if len(run_ids) <= 500:
                sql += f" WHERE run_id IN ({', '.join('?' for _ in run_ids)})"
                params = list(run_ids)
        wanted = None if run_ids is None else set(run_ids)
        out: dict[int, list[dict[str, Any]]] = {}
        for row in self.db.query(sql + " ORDER BY run_id, id", params):
            if wanted is not None and row["run_id"] not in wanted:
                continue
            row.pop("id")
            out.setdefault(row.pop("run_id"), []).append(row)
        return out

    def training_runs(
        self,
        job: str,
        input_bytes: int | None = None,
        tolerance: float | None = None,
        *,
        window: int | None = None,
    ) -> list[dict[str, Any]]:
        """Succeeded runs of `job`, oldest first, with `overlaps` {co_runner_job: summed ratio}.

        `window` keeps the most recent N (None or 0: all): a recurring job's recent runs are
        the relevant ones, and this read is what every `cobell predict` and `cobell submit`
        pays for, so it goes through plain sqlite3, reads only the columns planning and
        fitting need, and walks the `runs_job_recent` index. Input-size similarity is applied
        here only when both input_bytes and tolerance are given; the planner applies its own
        rule otherwise.
        """
        where = "job = ? AND status = 'succeeded' AND runtime_s > 0"
        params: list[Any] = [job]
        if input_bytes is not None and tolerance is not None:
            where += " AND input_bytes BETWEEN ? AND ?"
            params += [input_bytes * (1 - tolerance), input_bytes * (1 + tolerance)]
        newest = f"SELECT id FROM runs WHERE {where} ORDER BY {RECENCY} DESC, id DESC"
        if window:
            newest += f" LIMIT {int(window)}"
        columns = ", ".join(TRAINING_COLUMNS)
        rows = self.conn.execute(
            f"SELECT {columns} FROM runs WHERE id IN ({newest}) ORDER BY {RECENCY}, id", params
        )
        runs = [dict(zip(TRAINING_COLUMNS, row, strict=True)) for row in rows]
        overlaps: dict[int, dict[str | None, float]] = {}
        for run_id, co_job, ratio in self.conn.execute(
            "SELECT run_id, co_runner_job, overlap_ratio FROM colocations "
            f"WHERE run_id IN ({newest})",
            params,
        ):
            per_run = overlaps.setdefault(run_id, {})
            per_run[co_job] = per_run.get(co_job, 0.0) + ratio
        for run in runs:
            run["overlaps"] = overlaps.get(run["id"], {})
        return runs

    def jobs(self) -> list[dict[str, Any]]:
        """One summary row per job: runs, distinct scale-outs, last run, median runtime."""
        import statistics

        summary: dict[str, dict[str, Any]] = {}
        for job, status, scale_out, runtime_s, when in self.conn.execute(
            "SELECT job, status, scale_out, runtime_s, coalesce(submitted_at, started_at) "
            "FROM runs ORDER BY job"
        ):
            entry = summary.setdefault(
                job,
                {"job": job, "runs": 0, "succeeded": 0, "_x": set(), "_rt": [], "last_run": None},
            )
            entry["runs"] += 1
            if status == "succeeded":
                entry["succeeded"] += 1
                if runtime_s is not None:
                    entry["_rt"].append(runtime_s)
                if scale_out is not None:
                    entry["_x"].add(scale_out)
            if when is not None and (entry["last_run"] is None or when > entry["last_run"]):
                entry["last_run"] = when
        out = []
        for entry in summary.values():
            out.append(
                {
                    "job": entry["job"],
                    "runs": entry["runs"],
                    "succeeded": entry["succeeded"],
                    "scale_outs": len(entry["_x"]),
                    "last_run": entry["last_run"],
                    "median_runtime_s": statistics.median(entry["_rt"]) if entry["_rt"] else None,
                }
            )
        return out

    def job_names(self) -> list[str]:
        """Sorted distinct jobs by hopping along the job index, one lookup per job: every
        predict asks, and `SELECT DISTINCT` would read the whole index (15 ms at 10^5 runs)."""
        return [
            r[0]
            for r in self.conn.execute(
                "WITH RECURSIVE j(job) AS (SELECT min(job) FROM runs UNION ALL "
                "SELECT (SELECT min(job) FROM runs WHERE job > j.job) FROM j "
                "WHERE j.job IS NOT NULL) SELECT job FROM j WHERE job IS NOT NULL"
            )
        ]

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM runs").fetchone()[0])

    def integrity_ok(self) -> bool:
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _create_file(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise HistoryError(
            f"cannot create the history directory {path.parent}: {exc.strerror}",
            hint="pass a writable location with --db or COBELL_DB",
        ) from None
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return  # another process created it first; fine
    except OSError as exc:
        raise HistoryError(
            f"cannot create the history {path}: {exc.strerror}",
            hint="pass a writable location with --db or COBELL_DB",
        ) from None
    os.close(fd)


def _translate(exc: sqlite3.DatabaseError, path: Path) -> HistoryError:
    text = str(exc)
    if "not a database" in text or "file is encrypted" in text:
        return HistoryError(
            f"{path} is not a cobell history (not an SQLite database)",
            hint="pass another file to --db or move this one away",
        )
    if "locked" in text or "busy" in text:
        return _locked(path)
    if "readonly" in text or "unable to open" in text:
        return HistoryError(
            f"cannot write the history {path}: {text}",
            hint="check the file's permissions or pass another --db",
        )
    return HistoryError(f"history {path}: {text}")


def _coerce(value: Any, kind: type, column: str) -> Any:
    if value is None or value == "":
        return None
    try:
        if kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if kind is float:
            number = float(value)
            if number != number or number in (float("inf"), float("-inf")):
                raise ValueError
            return number
    except (TypeError, ValueError):
        raise ValueError(f"{column}: expected {kind.__name__}, got {value!r}") from None
    if column == "command" and not isinstance(value, str):
        return json.dumps(list(value))
    return str(value)


def _clean_run(fields: Mapping[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """Check a run's fields against the schema; raises ValueError naming the field."""
    unknown = set(fields) - set(RUN_COLUMNS)
    if unknown:
        raise ValueError(f"unknown run field(s): {', '.join(sorted(unknown))}")
    row = {k: _coerce(v, RUN_COLUMNS[k], k) for k, v in fields.items()}
    if not partial and not row.get("job"):
        raise ValueError("job: missing")
    if "status" in row and row["status"] not in STATUSES:
        raise ValueError(f"status: expected one of {', '.join(STATUSES)}, got {row['status']!r}")
    if not partial and row.get("status") is None:
        raise ValueError("status: missing")
    if "source" in row and row["source"] is None:
        del row["source"]  # the column's default: a run cobell launched
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
    if row.get("status") == "succeeded" and not partial:
        for column in ("scale_out", "runtime_s"):
            if row.get(column) is None:
                raise ValueError(f"{column}: missing (a succeeded run needs it)")
    return row


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
    colocations = [_clean_colocation(c) for c in record.get("colocations") or ()]
    return {**run, "colocations": colocations}
