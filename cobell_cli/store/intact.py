"""The verdict of a history's last integrity check, kept per file stamp: an unchanged file is
not read whole again on every open.

`PRAGMA quick_check` reads every page: about 14 ms of a 16 ms open at 10 000 runs, 0.2 s at
100 000, on every `cobell predict`. Its answer can change only when the file's bytes do, and
bytes change only through a write, which moves the stamp: the device, inode, size, mtime and
ctime (in ns) of the history and of its -wal and -journal beside it.
- a commit through WAL appends to the -wal; a checkpoint writes the file itself;
- a file replaced by another at the same path (a restore, `mv`, `cp` over it) has another
  inode and a new ctime;
- a file damaged in place by another program has a new mtime and ctime; no program can set
  ctime back (utime moves it to now).
A write within the file system's timestamp granularity of the last one could leave the times
as they were (git's "racy clean" files): a verdict is kept only for a file whose newest time
was at least RACY_NS before the check, so a later write always moves a time.

What this does not see, as no stamp can: a page that rots on the disk with no write at all; the
first query that reads it still fails, one line and exit 5 (store/history.py's `_translate`).

Only "ok" is kept, one small text file per history beside the model cache (`intact-<hash of
its path>`), written atomically, the newest MAX_VERDICTS kept. A verdict that is missing,
unreadable, damaged, another file's or another stamp's means: check.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from cobell_cli.core.digest import blake2b

FORMAT = "cobell intact 1"
# Longer than any timestamp granularity a history's file system may have (1 s on ext3 and
# HFS+, ~10 ms ticks of Linux's coarse clock elsewhere), with a margin for an NFS server's
# clock running behind ours. Not fitted: a bound.
RACY_NS = 2_000_000_000
MAX_VERDICTS = 64  # newest kept: one per history path; a few hundred bytes each
PREFIX = "intact-"
ABSENT = (0, 0, 0, 0, 0)  # the stamp of a file that is not there


def stamp(history: Path) -> tuple[int, ...] | None:
    """(device, inode, size, mtime_ns, ctime_ns) of the history, its -wal and its -journal;
    an empty -wal or -journal holds no page and counts as absent (a reader may create an
    empty -wal, a writer leave one). None when one cannot be looked at."""
    out: list[int] = []
    for name in (str(history), f"{history}-wal", f"{history}-journal"):
        try:
            st = os.stat(name)
        except FileNotFoundError:
            out += ABSENT
            continue
        except OSError:
            return None
        if st.st_size == 0 and name != str(history):
            out += ABSENT
        else:
            out += (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return tuple(out)


class Verdict:
    """What a passed check of `history` as it is now says; `holds()` when an earlier check of
    the very same stamp passed, `remember()` after this one passed."""

    def __init__(self, directory: Path, history: Path) -> None:
        now_ns = time.time_ns()  # taken before the stat: see `settled`
        name = os.path.abspath(history)
        digest = blake2b(name.encode("utf-8", "surrogateescape"), digest_size=16)
        self.file = Path(directory) / f"{PREFIX}{digest.hexdigest()}"
        current = stamp(history)
        self.text = None if current is None else (
            f"{FORMAT}\n{' '.join(map(str, current))}\n{name}\n")
        times = current[3::5] + current[4::5] if current is not None else ()
        # Every time in the stamp RACY_NS older than the stat: a write after it moves one.
        self.settled = current is not None and max(times) <= now_ns - RACY_NS

    def holds(self) -> bool:
        if self.text is None:
            return False
        try:
            return self.file.read_text("utf-8", "surrogateescape") == self.text
        except (OSError, ValueError):
            return False

    def remember(self) -> None:
        """Keep the verdict for this stamp if the file had settled (best effort)."""
        if self.settled and self.text is not None:
            from cobell_cli.store.model_cache import write_bytes  # only a check writes

            write_bytes(self.file, self.text.encode("utf-8", "surrogateescape"),
                        pattern=f"{PREFIX}*", keep=MAX_VERDICTS)
