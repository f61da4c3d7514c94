"""Runs that cannot be right, kept out when they are recorded or imported (issue 34).

A succeeded run's runtime is judged (core/plausibility.py) against the job's other usable
runs: succeeded, not excluded, on the same node label and, when its input size is known, of
a similar one (the planner's rule: core/plan/history.py), the newest JUDGE_WINDOW of them,
each marked by whether it had co-runners recorded.
An implausible one gets the `excluded` flag `history exclude` sets, with its reason in
`excluded_reason`, in the caller's write transaction: the run and its verdict are written
together or not at all. Each run is judged once, when it arrives; `history include` undoes
it for good (a run is never judged again).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from cobell_cli.store.schema import RECENCY

if TYPE_CHECKING:
    from cobell_cli.core.plausibility import JobRuntimes

# The runs a plan fits by default (the `history_window` setting's default): a run is judged
# against what planning would learn from, at a bounded cost for long histories.
JUDGE_WINDOW = 1000
CHUNK = 500  # ids per query: SQLite's limit on bound parameters is 999 on older builds

_CANDIDATE_COLUMNS = ("id", "job", "scale_out", "runtime_s", "input_bytes", "node_label")


def flag_implausible(conn: sqlite3.Connection, run_ids: Iterable[int]) -> dict[int, str]:
    """Judge the succeeded, not yet excluded runs among `run_ids` and flag the implausible
    ones; their ids and reasons. All are judged against the history as it was before any of
    them is flagged (an import's runs are judged against each other alike)."""
    candidates = [c for c in _candidates(conn, run_ids)]
    if not candidates:
        return {}
    from cobell_cli.core.plausibility import JobRuntimes  # numpy: only where a run is judged

    references: dict[tuple[Any, ...], tuple[JobRuntimes, frozenset[int]]] = {}
    flagged: dict[int, str] = {}
    for run in candidates:
        key = (run["job"], run["node_label"], run["input_bytes"])
        if key not in references:
            references[key] = _reference(conn, run, JobRuntimes)
        norm, ids = references[key]
        verdict = norm.judge(run["scale_out"], run["runtime_s"], member=run["id"] in ids)
        if not verdict.plausible and verdict.reason:
            flagged[run["id"]] = verdict.reason
    conn.executemany(
        "UPDATE runs SET excluded = 1, excluded_reason = ? WHERE id = ? AND excluded = 0",
        [(reason, run_id) for run_id, reason in flagged.items()],
    )
    return flagged


def _candidates(conn: sqlite3.Connection, run_ids: Iterable[int]) -> Iterator[dict[str, Any]]:
    ids = list(dict.fromkeys(int(i) for i in run_ids))
    columns = ", ".join(_CANDIDATE_COLUMNS)
    for k in range(0, len(ids), CHUNK):
        chunk = ids[k : k + CHUNK]
        rows = conn.execute(
            f"SELECT {columns} FROM runs WHERE id IN ({', '.join('?' for _ in chunk)}) "
            "AND status = 'succeeded' AND NOT excluded AND scale_out >= 1 "
            "AND runtime_s IS NOT NULL ORDER BY id",
            chunk,
        )
        for row in rows:
            yield dict(zip(_CANDIDATE_COLUMNS, row, strict=True))


def _reference(
    conn: sqlite3.Connection, run: dict[str, Any], summarise: type[JobRuntimes]
) -> tuple[JobRuntimes, frozenset[int]]:
    """The job's usable runs the candidate is judged against, summarised, and their ids."""
    from cobell_cli.core.plan.history import similar_runs

    rows = conn.execute(
        "SELECT id, scale_out, runtime_s, input_bytes, EXISTS (SELECT 1 FROM colocations c "
        "WHERE c.run_id = runs.id) FROM runs WHERE job = ? AND node_label IS ? "
        "AND status = 'succeeded' AND NOT excluded AND scale_out >= 1 AND runtime_s > 0 "
        f"ORDER BY {RECENCY} DESC, id DESC LIMIT {JUDGE_WINDOW}",
        (run["job"], run["node_label"]),
    )
    runs: Sequence[dict[str, Any]] = [
        {"id": i, "scale_out": x, "runtime_s": y, "input_bytes": size, "status": "succeeded",
         "co_located": bool(co)}
        for i, x, y, size, co in rows
    ]
    runs = similar_runs(runs, run["input_bytes"])
    norm = summarise([r["scale_out"] for r in runs], [r["runtime_s"] for r in runs],
                     [r["co_located"] for r in runs])
    return norm, frozenset(r["id"] for r in runs)
