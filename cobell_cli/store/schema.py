"""What a cobell history file holds: the columns of its tables and the migrations between versions.

The version lives in `PRAGMA user_version` and the file is marked as cobell's by
`PRAGMA application_id`; MIGRATIONS[i] takes a file from version i to i + 1 inside one write
transaction, so a file is always at exactly one version.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

SCHEMA_VERSION = 10
APPLICATION_ID = 0x436F426C  # "CoBl": marks a file as a cobell history
STATUSES = ("running", "succeeded", "failed", "killed", "lost")
# Where a run's record came from: launched by `cobell submit`, a CSV/JSON import, or the
# cluster's own record (YARN's finished apps, the Spark History Server, event logs).
SOURCES = ("cobell", "import", "yarn", "spark-history", "event-log")
# Why a run failed, beside its status (../shared/CONVENTIONS.md): `memory` (an OOM, or YARN
# killed a container for exceeding its memory), `killed-by-yarn` (another kill by the cluster).
FAILURE_REASONS = ("memory", "killed-by-yarn")
MAX_MEMORY_MB = 1024**3  # a petabyte per executor: beyond it a value is a typo, not a run

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
    "excluded": int,  # 1: kept out of fitting and planning, by hand or by cobell (a reason)
    "executor_memory_mb": int,
    "executor_overhead_mb": int,
    "peak_memory_mb": float,
    "failure_reason": str,
    "waited_s": float,
    "deadline_at": float,
    "start_reason": str,
    "node_label": str,
    "app_state": str,
    # why cobell kept the run out of fitting by itself (core/plausibility.py); NULL on a run
    # excluded by hand or not at all
    "excluded_reason": str,
}
# The order of a job's runs in time: when it started, else when it was submitted.
RECENCY = "coalesce(started_at, submitted_at)"
# The runs the memory models read: measured peaks of succeeded runs, and memory failures.
MEMORY_RUN = (
    "(status = 'succeeded' AND peak_memory_mb > 0) OR "
    "(status = 'failed' AND failure_reason = 'memory')"
)
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
    """A run kept out of the model by hand, without deleting it (`cobell history exclude`):
    a flag beside the status, not a status (../shared/CONVENTIONS.md, "The history"), so the
    run still shows what happened and `history include` undoes it."""
    conn.execute(
        "ALTER TABLE runs ADD COLUMN excluded INTEGER NOT NULL DEFAULT 0 "
        "CHECK (excluded IN (0, 1))"
    )


def _migration_5(conn: sqlite3.Connection) -> None:
    """Run ids are never reused: after `history rm` of the newest run, SQLite would give its
    id to the next run, and a log line, a note or a cron mail naming "run 42" would then
    point at another run. `run_id_floor` keeps the largest id ever removed (a trigger, so any
    deletion counts); new runs are numbered above it (History.next_run_id)."""
    conn.execute("CREATE TABLE run_id_floor (id INTEGER NOT NULL)")
    conn.execute("INSERT INTO run_id_floor (id) VALUES (0)")
    conn.execute(
        "CREATE TRIGGER runs_keep_removed_ids AFTER DELETE ON runs BEGIN "
        "UPDATE run_id_floor SET id = max(id, OLD.id); END"
    )


def _migration_6(conn: sqlite3.Connection) -> None:
    """Executor memory: what each run reserved per executor (`executor_memory_mb`, the heap;
    `executor_overhead_mb`, YARN's overhead when set), the peak one executor used
    (`peak_memory_mb`, JVM heap used from the event log's executor metrics), and why a failed
    run failed (`failure_reason`; `memory` makes it a lower bound on the need)."""
    reasons = ", ".join(repr(r) for r in FAILURE_REASONS)
    within = f"BETWEEN {{}} AND {MAX_MEMORY_MB}"
    checks = {
        "executor_memory_mb INTEGER": within.format(1),
        "executor_overhead_mb INTEGER": within.format(0),
        "peak_memory_mb REAL": within.format(0),
        "failure_reason TEXT": f"IN ({reasons})",
    }
    for column, check in checks.items():
        name = column.split()[0]
        check = f"CHECK ({name} IS NULL OR {name} {check})"
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column} {check}")
    # what the memory models read (History.memory_runs), found without scanning a job's runs
    conn.execute(
        f"CREATE INDEX runs_memory ON runs (job, {RECENCY}, id) "
        f"WHERE {MEMORY_RUN}"
    )


WAITING_STATES = ("waiting", "started")


def _migration_7(conn: sqlite3.Connection) -> None:
    """Deadlines (issue 27): how long a run waited for its start, its deadline and why it
    started when it did; and the submits that wait for their start (`waiting`), which are not
    runs (a job that never started leaves no run): each with its plan and its job's model, so
    that every submit on the history plans around the others. A `started` row stands for a
    run that a waiting submit started, until its process ends; a row whose process is gone is
    removed (store/waiting.py), as a `running` run becomes `lost`.
    """
    conn.execute(
        "ALTER TABLE runs ADD COLUMN waited_s REAL CHECK (waited_s IS NULL OR waited_s >= 0)"
    )
    conn.execute("ALTER TABLE runs ADD COLUMN deadline_at REAL")
    conn.execute("ALTER TABLE runs ADD COLUMN start_reason TEXT")
    states = ", ".join(repr(s) for s in WAITING_STATES)
    conn.execute(
        f"""CREATE TABLE waiting (
            id INTEGER PRIMARY KEY,
            job TEXT NOT NULL,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            state TEXT NOT NULL DEFAULT 'waiting' CHECK (state IN ({states})),
            submitted_at REAL NOT NULL,
            deadline_at REAL NOT NULL,
            target_s REAL,
            confidence REAL,
            latest_start_at REAL,
            queue_wait_s REAL NOT NULL DEFAULT 0,
            start_now INTEGER NOT NULL DEFAULT 0,
            start_at REAL,
            scale_out INTEGER CHECK (scale_out IS NULL OR scale_out >= 1),
            predicted_s REAL,
            meet_probability REAL,
            waits_for TEXT,
            model TEXT,
            ratios TEXT,
            candidates TEXT,
            container_mb REAL,
            run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
            decided_at REAL,
            decisions INTEGER NOT NULL DEFAULT 0
        )"""
    )


def _migration_8(conn: sqlite3.Connection) -> None:
    """Where a run ran: its YARN node label (partition), or the machine type on a cluster
    without labels (NULL: the default partition, or not known)."""
    conn.execute("ALTER TABLE runs ADD COLUMN node_label TEXT")


APP_STATE_MAX = 32  # YARN's states are a word (KILLED, FINISHED, ...); a longer one is not


def _migration_9(conn: sqlite3.Connection) -> None:
    """What the cluster said of a run's application after cobell was done with it: the
    state the YARN ResourceManager reported (KILLED once cobell killed the app of a run it
    interrupted, or one the cluster killed; RUNNING when a kill failed and it may still run;
    NULL: not asked)."""
    conn.execute(
        "ALTER TABLE runs ADD COLUMN app_state TEXT "
        f"CHECK (app_state IS NULL OR length(app_state) BETWEEN 1 AND {APP_STATE_MAX})"
    )


def _migration_10(conn: sqlite3.Connection) -> None:
    """Runs that cannot be right (issue 34): a run cobell keeps out of fitting by itself, an
    implausible runtime, uses the `excluded` flag as `history exclude` does, with its reason
    here (NULL: excluded by hand, or not excluded); the check keeps a reason off a run that
    is used, so `history include` clears both at once. The index holds only those runs:
    every plan names the job's (api/planning.py) without reading the job's other runs."""
    conn.execute(
        "ALTER TABLE runs ADD COLUMN excluded_reason TEXT "
        "CHECK (excluded_reason IS NULL OR excluded = 1)"
    )
    conn.execute(
        f"CREATE INDEX runs_kept_out ON runs (job, {RECENCY}, id) "
        "WHERE excluded_reason IS NOT NULL"
    )


# Forward migrations: MIGRATIONS[i] takes a file from version i to i + 1.
MIGRATIONS: tuple[Callable[[sqlite3.Connection], None], ...] = (
    _migration_1,
    _migration_2,
    _migration_3,
    _migration_4,
    _migration_5,
    _migration_6,
    _migration_7,
    _migration_8,
    _migration_9,
    _migration_10,
)
assert len(MIGRATIONS) == SCHEMA_VERSION
