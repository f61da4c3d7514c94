"""The history's file on disk: creating it race-free, opening it for reading or writing, and
choosing a journal mode the file system can keep.

Why these rules:
- many `cobell submit`s may start at once against a file that does not exist yet, so a new
  history is built complete under a private name and linked into place (`os.link` never
  replaces an existing file): the path shows either nothing or a whole cobell history;
- read-only commands (`history list`, `predict`, ...) open the file read-only and never change
  it, not even an empty or an old-schema file (those are read through an in-memory copy);
- WAL needs shared memory between the processes using the file, which network file systems
  (NFS, SMB/CIFS, 9p, cluster file systems) do not give: there the rollback journal is used,
  which relies on the file system's POSIX locks (NFSv4 has them; with a broken lock daemon no
  SQLite mode is safe).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from pathlib import Path
from urllib.parse import quote

from cobell_cli.errors import HistoryError
from cobell_cli.store import intact
from cobell_cli.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

# statfs(2) f_type of file systems whose processes do not share memory with each other.
NETWORK_FILE_SYSTEMS: dict[int, str] = {
    0x6969: "nfs",
    0x517B: "smb",
    0xFF534D42: "cifs",
    0xFE534D42: "smb2",
    0x01021997: "9p",
    0x00C36400: "ceph",
    0x0BD00BD0: "lustre",
    0x47504653: "gpfs",
    0x5346414F: "afs",
    0x73757245: "coda",
    0x564C: "ncp",
    0x7461636F: "ocfs2",
    0x01161970: "gfs2",
}
NO_SUCH_HISTORY_HINT = (
    "record runs with `cobell submit` or import some with `cobell history import FILE`"
)


def filesystem_type(path: Path) -> int | None:
    """statfs(2)'s f_type for the file system holding `path` (Linux); None where unknown."""
    if sys.platform != "linux":
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(256)  # struct statfs is 120 bytes on 64-bit Linux
    if libc.statfs(os.fsencode(path), buf) != 0:
        return None
    return ctypes.c_ulong.from_buffer(buf).value & 0xFFFFFFFF  # f_type is the first field


def journal_mode_for(fs_type: int | None) -> str:
    """WAL where processes share memory (local disks), the rollback journal elsewhere."""
    return "delete" if fs_type in NETWORK_FILE_SYSTEMS else "wal"


def read_only_error(path: Path, why: str = "read-only") -> HistoryError:
    return HistoryError(
        f"cannot write the history {path}: {why}",
        hint=f"make it writable (chmod u+w {path}) or pass another --db; "
        "read-only commands such as `cobell history list` still work",
    )


def check_writable(path: Path) -> None:
    """Refuse a history whose mode has no write bit, even for root: someone marked it read-only."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    if not mode & 0o222:
        raise read_only_error(path)


def snapshot(conn: sqlite3.Connection) -> tuple[int, int, bool]:
    """(user_version, application_id, has tables), read in one transaction so that a file
    another process is initialising right now is seen either before or after, never between."""
    conn.execute("BEGIN")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        has_tables = conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None
    except BaseException:
        with contextlib.suppress(sqlite3.Error):  # keep the read's error (disk full, I/O)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return int(version), int(app_id), has_tables


def damaged_error(path: Path) -> HistoryError:
    """A file SQLite finds malformed (a page overwritten, cut short): like a truncated one, it
    is refused whole and never written to, so what is still in it can be recovered."""
    return HistoryError(
        f"history {path} is damaged (database disk image is malformed); cobell did not "
        "change it",
        hint=f"recover its runs with `sqlite3 {path} .recover | sqlite3 recovered.db` and pass "
        "--db recovered.db (docs/reliability.md)",
    )


def damaged(exc: sqlite3.Error) -> bool:
    """SQLite's answers for a file whose pages do not hold together."""
    text = str(exc)
    return "malformed" in text or "corrupt" in text


def check_intact(conn: sqlite3.Connection, path: Path, verdicts: Path | None = None) -> None:
    """Refuse a damaged file on every open, before anything is read from or written to it:
    SQLite's quick_check reads every page (about 2 ms for 100 runs, 0.2 s for 100 000) and
    finds what a write would spread further, and what a read would meet only on some pages
    (`history list` printed runs from a file `predict` refused). With `verdicts` (a directory)
    a file unchanged since a check passed is not read again (store/intact.py says when)."""
    verdict = intact.Verdict(verdicts, path) if verdicts is not None else None
    if verdict is not None and verdict.holds():
        return
    try:
        answer = conn.execute("PRAGMA quick_check(1)").fetchall()
    except sqlite3.DatabaseError as exc:
        if damaged(exc):
            raise damaged_error(path) from None
        raise
    if answer != [("ok",)]:
        raise damaged_error(path)
    if verdict is not None:
        verdict.remember()


def check_known(path: Path, version: int, app_id: int, has_tables: bool) -> None:
    if version > SCHEMA_VERSION:
        raise HistoryError(
            f"history {path} was written by a newer cobell (schema {version}; this cobell "
            f"knows up to {SCHEMA_VERSION})",
            hint="upgrade cobell (pip install -U cobell); the file was not changed",
        )
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and has_tables):
        raise HistoryError(
            f"{path} is an SQLite database but not a cobell history",
            hint="pass another file to --db",
        )


def migrate(conn: sqlite3.Connection) -> None:
    """Apply the missing migrations; the caller holds the write lock (or owns the file)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for step in MIGRATIONS[version:]:
        step(conn)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def create(path: Path) -> None:
    """Build a complete, empty history at `path` unless one appears there first."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise _cannot_create(path.parent, exc, "the history directory") from None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as exc:
        raise _cannot_create(path, exc, "the history") from None
    os.close(fd)
    try:
        _initialise(tmp, journal_mode_for(filesystem_type(path.parent)))
        with contextlib.suppress(FileExistsError):  # another process won: use its file
            os.link(tmp, path)
    except OSError:  # no hard links here: an empty file, migrated under the write lock
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + "-journal")):
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()


def _initialise(path: Path, journal_mode: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"PRAGMA journal_mode = {journal_mode}")
        conn.execute("BEGIN IMMEDIATE")
        migrate(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()


def _cannot_create(path: Path, exc: OSError, what: str) -> HistoryError:
    return HistoryError(
        f"cannot create {what} {path}: {exc.strerror}",
        hint="pass a writable location with --db or COBELL_DB",
    )


def connect_read_only(path: Path, *, missing_ok: bool, timeout_s: float,
                      verdicts: Path | None = None) -> sqlite3.Connection:
    """A connection that cannot change the file; an empty or old-schema file is read through
    an in-memory copy at the current schema, a missing one (if `missing_ok`) is empty.
    `verdicts`: where the last integrity check's verdict is kept (`check_intact`)."""
    if not path.exists():
        if not missing_ok:
            raise HistoryError(f"no history at {path} yet", hint=NO_SUCH_HISTORY_HINT)
        return _in_memory(None)
    if path.is_dir():
        raise HistoryError(f"history path {path} is a directory", hint="pass a file to --db")
    try:
        conn, version = _open_known(path, timeout_s, immutable=False, verdicts=verdicts)
    except sqlite3.OperationalError as exc:
        if not cannot_make_wal_index(path, exc):
            raise
        # A WAL file in a directory this user cannot write (a team's read-only mount), with
        # no -wal beside it: every committed page is in the file itself, and SQLite cannot
        # create the -shm index it would read through. Read the file as the immutable
        # snapshot it is; nobody can be writing it who cannot create its -wal.
        conn, version = _open_known(path, timeout_s, immutable=True, verdicts=verdicts)
    return conn if version == SCHEMA_VERSION else _in_memory(conn)


def _open_known(path: Path, timeout_s: float, *, immutable: bool,
                verdicts: Path | None) -> tuple[sqlite3.Connection, int]:
    flags = "mode=ro&immutable=1" if immutable else "mode=ro"
    uri = f"file:{quote(str(path.resolve()))}?{flags}"
    conn = sqlite3.connect(uri, uri=True, timeout=timeout_s, isolation_level=None)
    try:
        version, app_id, has_tables = snapshot(conn)
        check_known(path, version, app_id, has_tables)
        check_intact(conn, path, verdicts)  # a reader refuses a damaged file as a writer does
    except BaseException:
        conn.close()
        raise
    return conn, version


def wal_beside(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def directory_read_only(path: Path) -> bool:
    """This user cannot create files beside the history (SQLite's -wal, -shm, -journal)."""
    return not os.access(path.parent, os.W_OK)


def cannot_make_wal_index(path: Path, exc: sqlite3.Error) -> bool:
    """SQLite's answer when a WAL file's -shm cannot be created: the directory is read-only
    to this user and no -wal holds changes the file itself lacks."""
    text = str(exc)
    unwritable = "readonly" in text or "unable to open" in text
    return unwritable and directory_read_only(path) and not wal_beside(path).exists()


def read_only_directory_error(path: Path) -> HistoryError:
    return HistoryError(
        f"cannot write the history {path}: its directory {path.parent} is read-only to you "
        f"(SQLite keeps {path.name}-wal and {path.name}-shm beside the file)",
        hint=f"make the directory writable (chmod u+w {path.parent}) or pass another --db; "
        "read-only commands such as `cobell history list` still work",
    )


def _in_memory(source: sqlite3.Connection | None) -> sqlite3.Connection:
    memory = sqlite3.connect(":memory:", isolation_level=None)
    if source is not None:
        source.backup(memory)
        source.close()
    migrate(memory)
    return memory
