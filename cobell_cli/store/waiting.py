"""Submits waiting for their start (`--deadline`): the `waiting` table of the history.

A waiting submit is not a run (a job that never started leaves no run): it is a row here,
with its plan (start, scale-out, predicted runtime) and its job's model and error record, so
that any other submit on the history plans around it without refitting (core/schedule). A
row turns `started` when its submit starts the job, and stands for that run until the submit
ends. Rules, as for `running` runs (store/history.py):

- every change is one short write transaction; a decision reads the rows, decides and writes
  them back inside one (`deciding`), so two submits never both take the same slot; no lock
  is held while anybody waits;
- a row whose process is gone (same host, pid dead) is removed by the next writer
  (`reap`), and read-only readers skip it; a row of another host is removed a day after its
  deadline;
- the rows never change a run: a submit's run is inserted and completed as without a deadline.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from cobell_cli.store.processes import pid_alive, this_host
from cobell_cli.store.reaping import _dead, reap

if TYPE_CHECKING:
    from cobell_cli.store.history import History

COLUMNS = (
    "id", "job", "host", "pid", "state", "submitted_at", "deadline_at", "target_s", "confidence",
    "latest_start_at", "queue_wait_s", "start_now", "start_at", "scale_out", "predicted_s",
    "meet_probability", "waits_for", "model", "ratios", "candidates", "container_mb", "run_id",
    "decided_at", "decisions",
)
PLAN_COLUMNS = ("start_at", "scale_out", "predicted_s", "meet_probability", "waits_for")
JSON_COLUMNS = ("model", "ratios", "candidates")


def _decode(row: tuple) -> dict[str, Any]:
    out = dict(zip(COLUMNS, row, strict=True))
    for column in JSON_COLUMNS:
        if out[column] is not None:
            out[column] = json.loads(out[column])
    out["start_now"] = bool(out["start_now"])
    return out


def rows(history: History, now: float, *, host: str | None = None,
         alive: Callable[[int], bool] = pid_alive) -> list[dict[str, Any]]:
    """The rows of live submits, oldest first (those of dead processes are skipped)."""
    here = host or this_host()
    found = [_decode(r) for r in history.conn.execute(
        f"SELECT {', '.join(COLUMNS)} FROM waiting ORDER BY submitted_at, id")]
    return [r for r in found if not _dead(r, here, alive, now)]


@contextlib.contextmanager
def deciding(history: History, now: float) -> Iterator[list[dict[str, Any]]]:
    """One decision: the write lock taken, the dead rows removed, the live rows yielded; what
    the caller writes (insert, plan, remove) commits together at the end, or not at all."""
    with history.transaction():
        reap(history, now)
        yield rows(history, now)


def insert(history: History, **fields: Any) -> int:
    """A new row (inside the caller's transaction if one is open); returns its id."""
    row = {k: (json.dumps(v) if k in JSON_COLUMNS and v is not None else v)
           for k, v in fields.items()}
    row.setdefault("host", this_host())
    unknown = set(row) - set(COLUMNS)
    if unknown:
        raise ValueError(f"unknown waiting field(s): {', '.join(sorted(unknown))}")
    columns = ", ".join(f"[{k}]" for k in row)
    marks = ", ".join("?" for _ in row)
    with contextlib.nullcontext() if history.conn.in_transaction else history.transaction():
        cursor = history.conn.execute(
            f"INSERT INTO waiting ({columns}) VALUES ({marks})", list(row.values()))
    return int(cursor.lastrowid)


def update(history: History, row_id: int, **fields: Any) -> bool:
    """Set fields of a row (a new plan counts one more decision); False if it is gone."""
    unknown = set(fields) - set(COLUMNS)
    if unknown:
        raise ValueError(f"unknown waiting field(s): {', '.join(sorted(unknown))}")
    values = {k: (json.dumps(v) if k in JSON_COLUMNS and v is not None else v)
              for k, v in fields.items()}
    assignments = ", ".join(f"[{k}] = ?" for k in values)
    bump = ", decisions = decisions + 1" if set(fields) & set(PLAN_COLUMNS) else ""
    with contextlib.nullcontext() if history.conn.in_transaction else history.transaction():
        cursor = history.conn.execute(
            f"UPDATE waiting SET {assignments}{bump} WHERE id = ?", [*values.values(), row_id])
    return cursor.rowcount == 1


def get(history: History, row_id: int) -> dict[str, Any] | None:
    found = history.conn.execute(
        f"SELECT {', '.join(COLUMNS)} FROM waiting WHERE id = ?", (row_id,)).fetchone()
    return _decode(found) if found is not None else None


def remove(history: History, row_id: int) -> None:
    with contextlib.nullcontext() if history.conn.in_transaction else history.transaction():
        history.conn.execute("DELETE FROM waiting WHERE id = ?", (row_id,))


def run_app_ids(history: History, run_ids: list[int]) -> dict[int, tuple[str | None, str]]:
    """run id -> (app id, status) of the runs started rows stand for."""
    if not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    return {int(r[0]): (r[1], r[2]) for r in history.conn.execute(
        f"SELECT id, app_id, status FROM runs WHERE id IN ({marks})", run_ids)}
