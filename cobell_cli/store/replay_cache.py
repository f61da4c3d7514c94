"""The what-if's replays kept on disk: the `memory` of `core.whatif.WhatIfModel`.

Replaying a job's event-log profiles at every candidate scale-out takes about a second for a
run of 25 000 tasks, and `cobell predict` / `cobell submit` would pay it on every call. The
replays depend only on the profiles' content and the start-up fit, which the model's
`cache_key()` hashes, and on the what-if's code, which the file name adds (as the model
cache's keys do): a table only ever answers for the very same workloads and code.

Tables live next to the model cache's entries (`replay-<hash>.json`, same directory, same
budget of newest entries), are loaded when a fit asks for their key, and `save()` writes the
ones that grew, atomically. A damaged or foreign file is a miss; a failed write is no cache.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, MutableMapping
from pathlib import Path

from cobell_cli import __version__
from cobell_cli.core.digest import blake2b
from cobell_cli.store.model_cache import model_source_digest, read_entry, write_entry

Table = dict[int, float]  # executors -> replayed runtime in seconds


class ReplayCache(MutableMapping[str, Table]):
    """Replay tables by the what-if's `cache_key()`, read lazily from `directory`. Iterating
    gives the tables this process has used; deleting forgets one here, not on disk."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._tables: dict[str, Table] = {}
        self._stored: dict[str, int] = {}  # key -> how many replays its file held

    def __getitem__(self, key: str) -> Table:
        if key not in self._tables:
            table = self._load(key)
            if table is None:
                raise KeyError(key)
            self._tables[key], self._stored[key] = table, len(table)
        return self._tables[key]

    def __setitem__(self, key: str, table: Table) -> None:
        self._tables[key] = table
        self._stored.setdefault(key, 0)

    def __delitem__(self, key: str) -> None:
        del self._tables[key]
        self._stored.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def save(self) -> None:
        """Write the tables that grew since they were read, merged with what another process
        may have written meanwhile (replays of one key are the same numbers)."""
        for key, table in self._tables.items():
            if len(table) > self._stored.get(key, 0):
                merged = {**(self._load(key) or {}), **table}
                write_entry(self._path(key), _file_key(key),
                            {"replays": {str(x): y for x, y in sorted(merged.items())}})
                self._stored[key] = len(table)

    def _path(self, key: str) -> Path:
        return self.directory / f"replay-{_file_key(key)}.json"

    def _load(self, key: str) -> Table | None:
        entry = read_entry(self._path(key), _file_key(key))
        replays = entry.get("replays") if entry is not None else None
        if not isinstance(replays, dict):
            return None
        try:
            table = {int(x): float(y) for x, y in replays.items()}
        except (TypeError, ValueError):
            return None
        if not all(x >= 1 and math.isfinite(y) and y > 0 for x, y in table.items()):
            return None
        return table


def _file_key(key: str) -> str:
    """The model's key with the code that computed the replays (cobell's version and the
    model sources, core/whatif/ among them)."""
    parts = repr((__version__, model_source_digest(), key)).encode()
    return blake2b(parts, digest_size=20).hexdigest()
