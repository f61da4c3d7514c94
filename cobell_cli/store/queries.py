"""Reading the history: the runs a command lists, and the runs planning trains on."""

from __future__ import annotations

import functools
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from cobell_cli.store.schema import MEMORY_RUN, RECENCY, TRAINING_COLUMNS

if TYPE_CHECKING:
    import sqlite_utils

    from cobell_cli.core.profile import AppProfile

# What makes a run the same run when a file is imported again (a file without app ids says
# no more about a run): its job, start, runtime and scale-out. Bell's files have no start, and
# repeat a runtime at one scale-out (sgd: 48 executors, 161 882 ms twice), so an import
# compares counts: a file's runs beyond those already stored are new.
RUN_KEY = ("job", "started_at", "runtime_s", "scale_out")
# The history's distinct jobs as a table j(job), by hopping along the job index (one lookup
# per job, where `SELECT DISTINCT job` or a filter without the job reads every row): a query
# over all jobs that the job index could serve puts `job IN (SELECT job FROM j)` before it.
JOB_HOP = (
    "WITH RECURSIVE hop(job) AS (SELECT min(job) FROM runs UNION ALL "
    "SELECT (SELECT min(job) FROM runs WHERE job > hop.job) FROM hop "
    "WHERE hop.job IS NOT NULL), j(job) AS (SELECT job FROM hop WHERE job IS NOT NULL)"
)
PROFILE_LIMIT = 20  # profiles read per plan: the newest say most, and each costs a parse


class RunQueries:
    """The read side of a history; History adds opening and writing."""

    conn: sqlite3.Connection
    path: Path
    # `running` rows whose process is gone, shown as `lost` by a reader that may not write.
    presumed_lost: frozenset[int] = frozenset()
    # Completions waiting in the pending journal (store/journal.py), by run id: a reader that
    # may not write shows them as `pending`; the next writer applies them.
    pending: Mapping[int, Mapping[str, Any]] = MappingProxyType({})
    # The previous `profiles()` call's, by stored text: planning reads the job's profiles,
    # then the newest of any job, which hold them again (~20 ms each of 25 000 tasks).
    _profiles_read: Mapping[str, AppProfile] = MappingProxyType({})

    def _as_seen(self, row: dict[str, Any], *, show_pending: bool = True) -> dict[str, Any]:
        record = self.pending.get(row["id"])
        if record is not None:  # recorded after all: never presumed lost
            if not show_pending:
                return row
            from cobell_cli.store.journal import journal_path

            return _pending_view(row, record, journal_path(self.path))
        if row["id"] in self.presumed_lost and row["status"] == "running":
            row["status"] = "lost"
            row["reason"] = "; ".join(
                filter(None, [row.get("reason"), "process gone before the run was recorded"])
            )
        return row

    @functools.cached_property
    def db(self) -> sqlite_utils.Database:
        """sqlite-utils on our connection, built on first use: importing it costs ~0.1 s (it
        probes for numpy and pandas), more than a whole cached `cobell predict` may take."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn, execute_plugins=False)

    def runs(
        self,
        *,
        job: str | None = None,
        status: str | Sequence[str] | None = None,
        since: float | None = None,
        limit: int | None = None,
        newest_first: bool = True,
        with_colocations: bool = False,
        show_pending: bool = False,
    ) -> list[dict[str, Any]]:
        """Runs as stored; with `show_pending`, journalled completions as `pending` runs (and
        `status` may then ask for `pending`)."""
        where: list[str] = []
        params: list[Any] = []
        if job is not None:
            where.append("job = ?")
            params.append(job)
        if status is not None:
            statuses = [status] if isinstance(status, str) else list(status)
            pending_ids = list(self.pending) if show_pending else []
            clause, values = _status_clause(statuses, pending_ids)
            where.append(clause)
            params.extend(values)
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
        rows = [
            self._as_seen(row, show_pending=show_pending) for row in self.db.query(sql, params)
        ]
        if with_colocations:
            by_run = self.colocations([r["id"] for r in rows])
            for row in rows:
                row["colocations"] = self._colocations_seen(
                    row["id"], by_run.get(row["id"], []), show_pending
                )
        return rows

    def iter_runs(
        self, *, job: str | None = None, show_pending: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Every run (of `job`), oldest first as `runs()` orders them, each with its
        `colocations`, one at a time: an export of a million runs holds one in memory.
        `show_pending` as in `runs()`.

        One query joins the co-runners in, so a run's rows come together (SQLite sorts on
        disk beyond its cache, not in our memory).
        """
        run_columns = [r[1] for r in self.conn.execute("PRAGMA table_info(runs)")]
        co_columns = [
            r[1]
            for r in self.conn.execute("PRAGMA table_info(colocations)")
            if r[1] not in ("id", "run_id")
        ]
        picked = [f"r.[{c}]" for c in run_columns] + [f"c.[{c}]" for c in co_columns]
        sql = (
            f"SELECT {', '.join(picked)}, c.id FROM runs r "
            "LEFT JOIN colocations c ON c.run_id = r.id"
        )
        params: list[Any] = []
        if job is not None:
            sql += " WHERE r.job = ?"
            params.append(job)
        sql += " ORDER BY coalesce(r.submitted_at, r.started_at), r.id, c.id"
        width = len(run_columns)
        current: dict[str, Any] | None = None
        for row in self.conn.execute(sql, params):
            if current is None or current["id"] != row[0]:
                if current is not None:
                    yield self._seen_with_colocations(current, show_pending)
                current = dict(zip(run_columns, row[:width], strict=True))
                current["colocations"] = []
            if row[-1] is not None:
                co = dict(zip(co_columns, row[width:-1], strict=True))
                current["colocations"].append(co)
        if current is not None:
            yield self._seen_with_colocations(current, show_pending)

    def _seen_with_colocations(self, run: dict[str, Any], show_pending: bool) -> dict[str, Any]:
        stored = run["colocations"]
        seen = self._as_seen(run, show_pending=show_pending)
        seen["colocations"] = self._colocations_seen(run["id"], stored, show_pending)
        return seen

    def run(self, run_id: int) -> dict[str, Any] | None:
        rows = list(self.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
        if not rows:
            return None
        row = self._as_seen(rows[0])
        stored = self.colocations([run_id]).get(run_id, [])
        row["colocations"] = self._colocations_seen(run_id, stored, True)
        return row

    def _colocations_seen(
        self, run_id: int, stored: list[dict[str, Any]], show_pending: bool
    ) -> list[dict[str, Any]]:
        record = self.pending.get(run_id) if show_pending else None
        if record is None or "colocations" not in record:
            return stored
        return [dict(c) for c in record["colocations"]]

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
        """Succeeded runs of `job` not excluded by hand, oldest first, with `overlaps`
        {co_runner_job: summed ratio} and, where known, `co_runner_scale_outs`
        {co_runner_job: overlap-weighted scale-out}.

        `window` keeps the most recent N (None or 0: all): a recurring job's recent runs are
        the relevant ones, and this read is what every `cobell predict` and `cobell submit`
        pays for, so it goes through plain sqlite3, reads only the columns planning and
        fitting need, and walks the `runs_job_recent` index. Input-size similarity is applied
        here only when both input_bytes and tolerance are given; the planner applies its own
        rule otherwise.
        """
        where = "job = ? AND status = 'succeeded' AND runtime_s > 0 AND NOT excluded"
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
        sized: dict[int, dict[str | None, list[float]]] = {}  # job -> [Σ ratio·x, Σ ratio]
        for run_id, co_job, ratio, co_x in self.conn.execute(
            "SELECT run_id, co_runner_job, overlap_ratio, co_runner_scale_out FROM colocations "
            f"WHERE run_id IN ({newest})",
            params,
        ):
            per_run = overlaps.setdefault(run_id, {})
            per_run[co_job] = per_run.get(co_job, 0.0) + ratio
            if co_x:
                acc = sized.setdefault(run_id, {}).setdefault(co_job, [0.0, 0.0])
                acc[0] += ratio * co_x
                acc[1] += ratio
        for run in runs:
            run["overlaps"] = overlaps.get(run["id"], {})
            sizes = {job: num / den for job, (num, den) in sized.get(run["id"], {}).items()
                     if den > 0}
            if sizes:  # the co-runners' overlap-weighted mean scale-outs (model/data.py)
                run["co_runner_scale_outs"] = sizes
        return runs

    def kept_out(self, run_ids: Sequence[int]) -> dict[int, str]:
        """Which of `run_ids` cobell kept out of fitting by itself, with why (an import's
        summary names them)."""
        ids = [int(i) for i in run_ids]
        out: dict[int, str] = {}
        for k in range(0, len(ids), 500):
            chunk = ids[k : k + 500]
            out.update(self.conn.execute(
                f"SELECT id, excluded_reason FROM runs WHERE id IN "
                f"({', '.join('?' for _ in chunk)}) AND excluded AND excluded_reason IS NOT NULL",
                chunk,
            ).fetchall())
        return out

    def implausible_runs(
        self, job: str, *, since: float | None = None, limit: int = 3
    ) -> tuple[list[tuple[int, str]], int]:
        """The job's runs cobell kept out of fitting as implausible (`since`: started or
        submitted then or later), newest first: at most `limit` (id, reason), and how many
        there are. What a plan's warning names."""
        where = "job = ? AND excluded AND excluded_reason IS NOT NULL"
        params: list[Any] = [job]
        if since is not None:
            where += f" AND ({RECENCY} >= ? OR {RECENCY} IS NULL)"
            params.append(since)
        rows = self.conn.execute(
            f"SELECT id, excluded_reason, count(*) OVER () FROM runs WHERE {where} "
            f"ORDER BY {RECENCY} DESC, id DESC LIMIT ?",
            [*params, int(limit)],
        ).fetchall()
        return [(int(i), str(why)) for i, why, _ in rows], int(rows[0][2]) if rows else 0

    def newest_kept_out(self, job: str, runs: int) -> bool:
        """Whether the job's `runs` newest succeeded runs were all kept out as implausible
        (the job itself may have changed)."""
        rows = self.conn.execute(
            "SELECT excluded_reason IS NOT NULL FROM runs WHERE job = ? AND status = "
            f"'succeeded' ORDER BY {RECENCY} DESC, id DESC LIMIT ?", [job, int(runs)],
        ).fetchall()
        return len(rows) == runs and all(flag for (flag,) in rows)

    def memory_runs(self, job: str, *, window: int | None = None) -> list[dict[str, Any]]:
        """The job's runs the memory models read (core/memory/demand.py), oldest first: the
        succeeded ones with a measured peak and those that failed for memory, the most recent
        `window` of them (None or 0: all). Every input size counts: memory must extrapolate;
        so do runs without one (a job that never gives one is sized by its peaks alone)."""
        columns = ("input_bytes", "scale_out", "executor_memory_mb", "executor_overhead_mb",
                   "peak_memory_mb", "status", "failure_reason", "backend")  # fmt: skip
        limit = f" LIMIT {int(window)}" if window else ""
        rows = self.conn.execute(
            f"SELECT {', '.join(columns)} FROM runs "
            f"WHERE job = ? AND ({MEMORY_RUN}) AND scale_out >= 1 "
            f"ORDER BY {RECENCY} DESC, id DESC{limit}",
            [job],
        ).fetchall()
        return [dict(zip(columns, row, strict=True)) for row in reversed(rows)]

    def stage_task_seconds(self, run_ids: Sequence[int]) -> dict[int, list[float]]:
        """Task seconds of each executed stage, in submission order, of the runs that have an
        event-log profile (`run_profiles`): what a run's stage structure weighs. Summed in
        SQLite, so the profiles' task lists are never loaded into Python."""
        ids = [int(i) for i in run_ids][:1000]
        if not ids:
            return {}
        out: dict[int, list[float]] = {}
        rows = self.conn.execute(
            "SELECT p.run_id, (SELECT total(t.value) FROM json_each(s.value, '$.task_s') AS t) "
            "FROM (SELECT run_id, summary FROM run_profiles "
            f"WHERE run_id IN ({', '.join('?' for _ in ids)}) AND json_valid(summary)) AS p, "
            "json_each(p.summary, '$.stages') AS s "
            "WHERE json_extract(s.value, '$.submit_s') IS NOT NULL "
            "ORDER BY p.run_id, json_extract(s.value, '$.submit_s'), "
            "json_extract(s.value, '$.stage_id')",
            ids,
        )
        for run_id, task_s in rows:
            out.setdefault(run_id, []).append(float(task_s))
        return out

    def profiles(
        self, job: str | None = None, *, limit: int = PROFILE_LIMIT,
        decode: Callable[[str], Any] | None = None,
    ) -> list[AppProfile]:
        """Event-log profiles of succeeded runs (of `job`, else of any job), newest first, at
        most `limit`: what the what-if replays (of the job) and learns the cluster's executor
        start-up from (of any job). A profile in a newer format, or one that does not parse,
        is left out: it was written by a newer cobell and a plan never depends on it; an
        older format loads (what it lacks stays empty). `decode`: json.loads, or what answers
        as it does from elsewhere (store/profile_cache.py)."""
        import json

        decode = decode or json.loads

        # The profiled runs' id range (two rowid look-ups): the walk of the job's runs newest
        # first probes run_profiles only for runs inside it, and nothing runs without a
        # profile (a job never profiled probed for every one of its runs: 3 ms of a cached
        # predict at 5000). `+r.id`: the range must not become the index the walk uses, or
        # SQLite sorts every match, summaries and all, before the LIMIT.
        first, last = self.conn.execute(
            "SELECT (SELECT min(run_id) FROM run_profiles), (SELECT max(run_id) FROM run_profiles)"
        ).fetchone()
        where = "r.status = 'succeeded' AND NOT r.excluded AND +r.id BETWEEN ? AND ?"
        params: list[Any] = [first, last]
        if job is not None:
            where += " AND r.job = ?"
            params.append(job)
        rows = [] if last is None else self.conn.execute(
            f"SELECT p.format, p.summary FROM run_profiles p JOIN runs r ON r.id = p.run_id "
            f"WHERE {where} ORDER BY coalesce(r.started_at, r.submitted_at) DESC, r.id DESC "
            "LIMIT ?",
            [*params, int(limit)],
        ).fetchall()
        out, read = [], {}
        if rows:  # most jobs have none: a cached predict need not import core/profile.py
            from cobell_cli.core.profile import PROFILE_FORMAT, AppProfile
        for fmt, summary in rows:
            if fmt > PROFILE_FORMAT:
                continue
            try:
                profile = self._profiles_read.get(summary) or AppProfile.from_dict(
                    decode(summary))
            except (TypeError, ValueError, KeyError, AttributeError):
                continue
            out.append(profile)
            read[summary] = profile
        self._profiles_read = read
        return out

    def resource_totals(self, jobs: Sequence[str] | None = None, *, per_job: int = PROFILE_LIMIT,
                        ) -> dict[str, list[dict[str, float]]]:
        """Each job's (of `jobs`, else every job's) runs' summed task metrics
        (`AppProfile.resources`, profiles of format 2 and later), newest first, at most
        `per_job` per job: the resource profiles of core/profile_effects. Read in SQLite, so
        no profile's task lists reach Python; only the newest `per_job` of a job are parsed."""
        import json

        where, params = "", []
        if jobs is not None:
            where = f"AND r.job IN ({', '.join('?' for _ in jobs)})"
            params = list(jobs)
        rows = self.conn.execute(
            "SELECT job, json_extract(summary, '$.resources') FROM (SELECT r.job AS job, "
            f"p.summary AS summary, row_number() OVER (PARTITION BY r.job ORDER BY {RECENCY} "
            "DESC, r.id DESC) AS n FROM run_profiles p JOIN runs r ON r.id = p.run_id "
            f"WHERE r.status = 'succeeded' AND p.format >= 2 {where}) "
            "WHERE n <= ? AND json_valid(summary)",
            [*params, int(per_job)],
        )
        out: dict[str, list[dict[str, float]]] = {}
        for job, res in rows:
            if res is None:
                continue
            try:
                value = json.loads(res)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.setdefault(job, []).append(value)
        return out

    def run_resources(self, run_id: int) -> dict[str, float] | None:
        """One run's summed task metrics (its profile's `resources`), None without."""
        import json

        row = self.conn.execute(
            "SELECT json_extract(summary, '$.resources') FROM run_profiles "
            "WHERE run_id = ? AND format >= 2 AND json_valid(summary)", [int(run_id)],
        ).fetchone()
        value = json.loads(row[0]) if row and row[0] else None
        return value if isinstance(value, dict) and value else None

    def event_log_paths(self, job: str, *, limit: int = 1) -> list[str]:
        """Event-log paths recorded for the job's succeeded runs that have no profile yet,
        newest first (the what-if reads such a log when the job has no profile)."""
        rows = self.conn.execute(
            "SELECT r.event_log FROM runs r LEFT JOIN run_profiles p ON p.run_id = r.id "
            "WHERE r.job = ? AND r.status = 'succeeded' AND NOT r.excluded "
            "AND r.event_log IS NOT NULL "
            "AND p.run_id IS NULL "
            "ORDER BY coalesce(r.started_at, r.submitted_at) DESC, r.id DESC LIMIT ?",
            [job, int(limit)],
        )
        return [r[0] for r in rows]

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

    def run_keys(self, jobs: Iterable[str]) -> Counter[tuple[Any, ...]]:
        """How many stored runs of `jobs` have each RUN_KEY: what an import compares its runs
        with to skip those already here (one query per job, along the job index)."""
        keys: Counter[tuple[Any, ...]] = Counter()
        columns = ", ".join(f"[{c}]" for c in RUN_KEY)
        for job in jobs:
            keys.update(self.conn.execute(f"SELECT {columns} FROM runs WHERE job = ?", (job,)))
        return keys

    def job_names(self) -> list[str]:
        """Sorted distinct jobs by hopping along the job index, one lookup per job: every
        predict asks, and `SELECT DISTINCT` would read the whole index (15 ms at 10^5 runs)."""
        return [r[0] for r in self.conn.execute(f"{JOB_HOP} SELECT job FROM j")]

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM runs").fetchone()[0])


def _status_clause(statuses: Sequence[str], pending_ids: Sequence[int]) -> tuple[str, list[Any]]:
    """WHERE for a status filter when journalled runs show as `pending` whatever their row says."""
    stored = [s for s in statuses if s != "pending"]
    clause = f"status IN ({', '.join('?' for _ in stored)})" if stored else "0"
    values: list[Any] = list(stored)
    if not pending_ids:
        return clause, values
    ids = ", ".join("?" for _ in pending_ids)
    clause = f"(({clause}) AND id NOT IN ({ids}))"
    values += pending_ids
    if "pending" in statuses:
        clause = f"({clause} OR id IN ({ids}))"
        values += pending_ids
    return clause, values


def _pending_view(row: dict[str, Any], record: Mapping[str, Any], where: Path) -> dict[str, Any]:
    """A stored row as its journalled completion will leave it, marked `pending`."""
    seen = {**row, **{k: v for k, v in record["run"].items() if k in row and k != "id"}}
    outcome = seen.get("status") or "finished"
    code = seen.get("exit_code")
    seen["status"] = "pending"
    seen["reason"] = "; ".join(
        filter(
            None,
            [
                seen.get("reason"),
                f"pending: {outcome}"
                + (f" (exit {code})" if code is not None else "")
                + f", journalled in {where} because "
                f"{record.get('why') or 'the history could not be written'}; the next cobell "
                "that writes the history applies it",
            ],
        )
    )
    return seen
