"""Reading the history: the runs a command lists, and the runs planning trains on."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cobell_cli.store.schema import RECENCY, TRAINING_COLUMNS

if TYPE_CHECKING:
    import sqlite_utils


class RunQueries:
    """The read side of a history; History adds opening and writing."""

    conn: sqlite3.Connection
    # `running` rows whose process is gone, shown as `lost` by a reader that may not write.
    presumed_lost: frozenset[int] = frozenset()

    def _as_seen(self, row: dict[str, Any]) -> dict[str, Any]:
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
        rows = [self._as_seen(row) for row in self.db.query(sql, params)]
        if with_colocations:
            by_run = self.colocations([r["id"] for r in rows])
            for row in rows:
                row["colocations"] = by_run.get(row["id"], [])
        return rows

    def run(self, run_id: int) -> dict[str, Any] | None:
        rows = list(self.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
        if not rows:
            return None
        row = self._as_seen(rows[0])
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
        """Succeeded runs of `job`, oldest first, with `overlaps` {co_runner_job: summed ratio}
        and, where known, `co_runner_scale_outs` {co_runner_job: overlap-weighted scale-out}.

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
