"""Rows of submits whose process is gone: the waiting table's side of `History.mark_lost`.

Apart from store/waiting.py so that the history can reap them when it opens without
importing the module that builds on it (store/history <-> store/waiting was a circle)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from cobell_cli.store.processes import pid_alive, this_host

STALE_AFTER_DEADLINE_S = 86400.0  # another host's row: removed a day after its deadline


def _dead(row: Mapping[str, Any], host: str, alive: Callable[[int], bool], now: float) -> bool:
    if row["host"] == host:
        return not alive(int(row["pid"]))
    return now > float(row["deadline_at"]) + STALE_AFTER_DEADLINE_S


def reap(history: Any, now: float, *, host: str | None = None,
         alive: Callable[[int], bool] = pid_alive) -> list[int]:
    """Remove the rows whose submit is gone; inside the caller's transaction if one is open."""
    here = host or this_host()
    dead = [
        int(r[0]) for r in history.conn.execute("SELECT id, host, pid, deadline_at FROM waiting")
        if _dead({"host": r[1], "pid": r[2], "deadline_at": r[3]}, here, alive, now)
    ]
    if dead:
        with contextlib.nullcontext() if history.conn.in_transaction else history.transaction():
            history.conn.executemany("DELETE FROM waiting WHERE id = ?", [(i,) for i in dead])
    return dead
