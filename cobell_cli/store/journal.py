"""The pending journal: completions that could not be written to the history, kept beside it.

Once a job has run, its record must survive a history that is locked past the busy timeout,
a full disk, a file turned read-only, or any SQLite error, and the job's exit code must stay
cobell's. Such a completion goes to `HISTORY.pending`, in the history's directory:

- one JSON line per completion, self-contained (the run's whole row, and its co-runners once
  measured), with a CRC32 of the line so a torn or damaged line is recognised, never applied;
  a later line for the same run supersedes an earlier one;
- appended under an exclusive flock, written whole or not at all (a failed write is cut off
  again), then fsynced with its directory; mode 0600: the command line is in it;
- applied by the next cobell that opens the history for writing (History.open), in one write
  transaction, then removed while still locked. Applying is idempotent (an entry sets its run's
  whole row and replaces its co-runners), so a writer killed between its commit and the removal
  leaves a journal whose re-application changes nothing: each completion takes effect once;
- lines that cannot be applied (damaged, or whose run is no longer in the history) are moved
  to `HISTORY.pending.rejected`, never silently dropped;
- read-only commands only read it, to show those runs as `pending`;
- while a job runs, RESERVE_BYTES are set aside beside the history (`reserve`): SQLite takes
  whatever space is left when its write fails, so on a disk that filled up during the job the
  reservation is freed just before the completion is journalled, and the line fits.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
import uuid
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cobell_cli.store.processes import pid_alive

FORMAT = 1
# An applier may remove the file between our open and our lock. Under a busy history every
# cobell that opens it applies and removes the journal, so five tries lost the race under
# load (a completion then had nowhere to go): retry with a growing, jittered pause instead.
_MAX_REOPEN = 200
_REOPEN_PAUSE_S = 0.05  # the longest pause between two tries (~5 s in all at worst)
RESERVE_BYTES = 16384  # a completion's line is 1-3 kB with a typical spark-submit command


def journal_path(history_path: Path) -> Path:
    return history_path.with_name(history_path.name + ".pending")


def rejected_path(history_path: Path) -> Path:
    return history_path.with_name(history_path.name + ".pending.rejected")


def exists(history_path: Path) -> bool:
    try:
        return journal_path(history_path).stat().st_size > 0
    except OSError:
        return False


def entry(
    run_id: int,
    run: Mapping[str, Any],
    why: str,
    colocations: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """One completion: the run's row (`run`), and its co-runners when measured."""
    record: dict[str, Any] = {
        "format": FORMAT,
        "entry": uuid.uuid4().hex,
        "written_at": time.time(),
        "why": why,
        "run_id": run_id,
        "run": {k: v for k, v in run.items() if k != "id"},
    }
    if colocations is not None:
        record["colocations"] = [dict(c) for c in colocations]
    return record


def _crc(record: Mapping[str, Any]) -> str:
    body = json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return f"{zlib.crc32(body.encode()):08x}"


def encode(record: Mapping[str, Any]) -> bytes:
    line = {**record, "crc": _crc(record)}
    return json.dumps(line, sort_keys=True, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any] | None:
    """The entry on one line; None for a torn, damaged or foreign line."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    crc = record.pop("crc", None)
    if crc != _crc(record) or not isinstance(record.get("run_id"), int):
        return None
    if not isinstance(record.get("run"), dict):
        return None
    return record


def append(history_path: Path, record: Mapping[str, Any]) -> Path:
    """Append one entry durably; raises OSError (ENOSPC, EROFS, EACCES...) if it could not."""
    path = journal_path(history_path)
    data = encode(record)
    for attempt in range(_MAX_REOPEN):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            removed = os.fstat(fd).st_nlink == 0  # applied and removed meanwhile
            if not removed:
                _write_whole(fd, path, data)
        finally:
            os.close(fd)
        if removed:  # start a new file, after a pause that lets the applier finish
            import random  # here: rare, and random loads hashlib's sha512 on every command

            time.sleep(random.uniform(0.0, min(_REOPEN_PAUSE_S, 0.001 * 2**attempt)))
            continue
        _sync_directory(path.parent)
        return path
    raise OSError(f"{path} keeps being replaced")


def _write_whole(fd: int, path: Path, data: bytes) -> None:
    size = os.fstat(fd).st_size
    if size and not _ends_with_newline(path, size):
        data = b"\n" + data  # a torn line before ours must not swallow ours
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)  # never leave half an entry
        raise


def _ends_with_newline(path: Path, size: int) -> bool:
    with open(path, "rb") as fh:
        fh.seek(size - 1)
        return fh.read(1) == b"\n"


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read(history_path: Path) -> list[dict[str, Any]]:
    """The valid entries, in order, without locking or changing anything (read-only commands)."""
    try:
        raw = journal_path(history_path).read_bytes()
    except OSError:
        return []
    found = (decode(line) for line in raw.splitlines() if line.strip())
    return [record for record in found if record is not None]


def pending_runs(history_path: Path) -> dict[int, dict[str, Any]]:
    """Per run id, its journalled completion: later entries supersede earlier ones."""
    merged: dict[int, dict[str, Any]] = {}
    for record in read(history_path):
        known = merged.get(record["run_id"])
        if known is not None and "colocations" not in record and "colocations" in known:
            record = {**record, "colocations": known["colocations"]}
        merged[record["run_id"]] = record
    return merged


@dataclass
class Taken:
    """The journal, locked by an applier: its entries, and the lines that cannot be applied."""

    path: Path
    fd: int
    entries: list[dict[str, Any]] = field(default_factory=list)
    unreadable: list[bytes] = field(default_factory=list)

    def reject(self, record: Mapping[str, Any]) -> None:
        self.unreadable.append(encode(record).rstrip(b"\n"))

    def remove(self, rejected: Path) -> None:
        """After the caller's commit: keep what was not applied aside, then drop the journal."""
        if self.unreadable:
            _save_rejected(rejected, self.unreadable)
        os.unlink(self.path)
        _sync_directory(self.path.parent)


@contextlib.contextmanager
def taken(history_path: Path) -> Iterator[Taken | None]:
    """Lock the journal for applying (appenders wait, for milliseconds); None if there is none."""
    path = journal_path(history_path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        yield None
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink == 0:  # another writer applied it meanwhile
            yield None
            return
        claim = Taken(path, fd)
        with os.fdopen(os.dup(fd), "rb") as fh:
            for line in fh.read().splitlines():
                if not line.strip():
                    continue
                record = decode(line)
                if record is None:
                    claim.unreadable.append(line)
                else:
                    claim.entries.append(record)
        yield claim
    finally:
        os.close(fd)


def _save_rejected(path: Path, lines: Sequence[bytes]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, b"".join(line + b"\n" for line in lines))
        os.fsync(fd)
    finally:
        os.close(fd)


# -- space set aside while a job runs ----------------------------------------------------------


def reserve(history_path: Path, host: str, pid: int) -> Path | None:
    """Set RESERVE_BYTES aside for this run's completion; None if even that is not possible
    (then a full disk may cost the journal too). Stale ones of this host are removed first."""
    _remove_stale_reservations(history_path, host)
    path = history_path.with_name(f".{history_path.name}.reserve.{host}.{pid}")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        os.posix_fallocate(fd, 0, RESERVE_BYTES)
    except OSError:
        release(path)
        return None
    finally:
        os.close(fd)
    return path


def release(reservation: Path | None) -> None:
    if reservation is not None:
        with contextlib.suppress(OSError):
            reservation.unlink()


def _remove_stale_reservations(history_path: Path, host: str) -> None:
    """Reservations left by killed cobells on this host (their pid is gone)."""
    prefix = f".{history_path.name}.reserve.{host}."
    with contextlib.suppress(OSError):
        for path in history_path.parent.glob(f"{_glob_escape(prefix)}*"):
            pid = path.name.removeprefix(prefix)
            if pid.isdigit() and not pid_alive(int(pid)):
                release(path)


def _glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)
