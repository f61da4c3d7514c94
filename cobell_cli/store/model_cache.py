"""Fitted runtime models cached on disk, keyed by exactly the runs they were fitted on.

A recurring job's history changes once per run but is planned on far more often (`cobell
predict`, then `cobell submit`, retries, scripts). Fitting imports numpy and takes ~0.2 s that
grows with the history; a cache hit answers from a `ModelTable` without importing numpy at all.

Correctness does not depend on invalidation: the key hashes everything a fit reads (each run's
status, scale-out, runtime and overlaps, in order), the scale-out grid, the interval confidence,
the cobell version and the source of the model code (a changed model, even without a new
version number, never answers from an old entry): an entry only ever answers for the very same
data and code. Entries are written to a temporary file and renamed into place (a killed process
leaves no half entry), and an entry that cannot be read is a miss. Deleting the directory is
always safe.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cobell_cli import __version__
from cobell_cli.core.digest import blake2b
from cobell_cli.core.model_table import ModelTable, tabulate

MAX_ENTRIES = 256  # newest kept; one entry is ~20 kB
# Whole scale-outs tabulated at least: enough executors for most clusters, and independent of
# --max-scale-out, so that predict, submit and scripts with different ranges share entries.
GRID_MAX = 256

FitFn = Callable[[Sequence[Mapping[str, Any]]], Any]


def _default_fit(runs: Sequence[Mapping[str, Any]], **params: Any) -> Any:
    from cobell_cli.core.model import fit_runtime_model

    return fit_runtime_model(runs, **params)


# The code whose answers an entry stores: the model package, and what tabulates it.
_CORE = Path(__file__).resolve().parent.parent / "core"
MODEL_SOURCES = (_CORE / "model", _CORE / "model_table.py", _CORE / "calibration.py",
                 _CORE / "whatif")


@functools.cache
def model_source_digest() -> str:
    """Digest of the model's source files (about 0.3 ms, once per process)."""
    digest = blake2b(digest_size=16)
    for source in MODEL_SOURCES:
        for path in sorted(source.glob("*.py")) if source.is_dir() else [source]:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def cache_key(runs: Sequence[Mapping[str, Any]], grid_max: int, confidence: float,
              salt: str = "") -> str:
    """Hash of what a fit depends on; float repr round-trips, so equal keys mean equal data.
    `salt` names anything else the fit reads (the what-if's profiles)."""
    digest = blake2b(digest_size=20)
    digest.update(repr((__version__, model_source_digest(), grid_max, float(confidence),
                        salt)).encode())
    for run in runs:
        overlaps = run.get("overlaps") or {}
        sizes = sorted((run.get("co_runner_scale_outs") or {}).items(), key=repr)
        item = (run.get("status"), run.get("scale_out"), run.get("runtime_s"), *overlaps.items(),
                *sizes)
        digest.update(repr(item).encode())
        digest.update(b"\n")
    return digest.hexdigest()


class ModelCache:
    """A `fit` for `plan.plan()` that answers from the cache when it can.

    Scale-outs 1..max(GRID_MAX, `grid_max`, the largest run in the data) are tabulated;
    `confidence` is the interval confidence the planner will ask for.
    """

    def __init__(
        self,
        directory: Path,
        *,
        confidence: float,
        grid_max: int = 0,
        fit: FitFn = _default_fit,
    ) -> None:
        self.directory = Path(directory)
        self.grid_max = max(GRID_MAX, int(grid_max))
        self.confidence = float(confidence)
        self._fit = fit
        self.hits = 0
        self.misses = 0

    def fit(self, runs: Sequence[Mapping[str, Any]], whatif: Any = None) -> Any:
        """The fitted model (or its table); raises ValueError when the runs cannot be fitted.
        `whatif`: the job's fitted what-if, a candidate curve (keyed by its `cache_key()`)."""
        runs = list(runs)
        params = {} if whatif is None else {"whatif": whatif}
        grid_max = max([self.grid_max, *(int(r.get("scale_out") or 0) for r in runs)])
        salt = whatif.cache_key() if whatif is not None else ""
        key = cache_key(runs, grid_max, self.confidence, salt)
        entry = self._load(key)
        if entry is not None:
            self.hits += 1
            if "error" in entry:
                raise ValueError(entry["error"])
            return ModelTable.from_payload(entry["table"],
                                           fallback=lambda: self._fit(runs, **params))
        self.misses += 1
        try:
            model = self._fit(runs, **params)
        except ValueError as exc:
            self._store(key, {"error": str(exc)})
            raise
        self._store(key, {"table": tabulate(model, grid_max, self.confidence).to_payload()})
        return model

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def _load(self, key: str) -> dict[str, Any] | None:
        entry = read_entry(self._path(key), key)
        if entry is None:
            return None
        if isinstance(entry.get("error"), str):
            return entry
        try:
            ModelTable.from_payload(entry["table"])  # refuse a damaged entry up front
        except (AttributeError, KeyError, TypeError, ValueError):
            return None
        return entry

    def _store(self, key: str, entry: dict[str, Any]) -> None:
        write_entry(self._path(key), key, entry)


def read_entry(path: Path, key: str) -> dict[str, Any] | None:
    """The JSON object stored at `path` for `key`; None when it is missing, unreadable, damaged
    or another key's (a cache miss, never an error)."""
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and entry.get("key") == key else None


def write_entry(path: Path, key: str, entry: dict[str, Any]) -> None:
    """Write `entry` for `key` to `path` atomically, keeping the directory's newest
    MAX_ENTRIES; best effort, as `write_bytes`."""
    try:
        data = json.dumps({"key": key, **entry}, allow_nan=False).encode()
    except ValueError:
        return
    write_bytes(path, data, pattern="*.json", keep=MAX_ENTRIES)


def write_bytes(path: Path, data: bytes, *, pattern: str, keep: int) -> None:
    """Write `data` to `path` atomically (a temporary file renamed into place), then keep the
    directory's newest `keep` files matching `pattern`. Best effort: a cache that cannot be
    written (read-only home, full disk) is no cache."""
    import tempfile  # only a miss writes; a hit should not pay for the import

    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        prune(path.parent, pattern, keep)
    except OSError:
        return


def prune(directory: Path, pattern: str, keep: int) -> None:
    """Delete all but the `keep` newest files of `directory` matching `pattern`."""
    entries = sorted(directory.glob(pattern), key=_mtime, reverse=True)
    for stale in entries[keep:]:
        with contextlib.suppress(OSError):
            stale.unlink()


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
