"""What a cobell history file holds: the columns of its tables and the migrations between versions.

The version lives in `PRAGMA user_version` and the file is marked as cobell's by
`PRAGMA application_id`; MIGRATIONS[i] takes a file from version i to i + 1 inside one write
transaction, so a file is always at exactly one version.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

SCHEMA_VERSION = 4
APPLICATION_ID = 0x436F426C  # "CoBl": marks a file as a cobell history
STATUSES = ("running", "succeeded", "failed", "killed", "lost")
# Where a run's record came from: launched by `cobell submit`, a CSV/JSON import, or the
# cluster's own record (YARN's finished apps, the Spark History Server, event logs).
SOURCES = ("cobell", "import", "yarn", "spark-history", "event-log")

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
    "node_label": str,
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
    "node_label",
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


def _migration_4(conn: sqlite3.Connection) -> None:
    """Where a run ran: its YARN node label (partition), or the machine type on a cluster
    without labels (NULL: the default partition, or not known)."""
    conn.execute("ALTER TABLE runs ADD COLUMN node_label TEXT")


# Forward migrations: MIGRATIONS[i] takes a file from version i to i + 1.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migration_1,
    _migration_2,
    _migration_3,
    _migration_4,
)
assert len(MIGRATIONS) == SCHEMA_VERSION
