"""Whose is a `running` row or a journal reservation: this host's name, and whether a pid lives.

The history reaps the rows and the journal the reservations of cobells that were killed; both
ask here, so neither imports the other for it.
"""

from __future__ import annotations

import os


def this_host() -> str:
    """The name `running` rows are stamped with and reaped by (socket.gethostname()'s value,
    without importing socket on every open)."""
    return os.uname().nodename


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True
