"""What SIGINT, SIGTERM and SIGHUP do to `cobell`, phase by phase, so that none is ever lost.

One handler per signal, installed by the CLI entry for the whole command, acts by phase:

- `raise` (the command's body, `raising()`: planning, anything before the job starts): the
  signal is latched and `Interrupted` raised: cobell ends with 128+N and one line, and the
  job never starts. The latch matters
  because an exception raised inside a library can be swallowed (numpy turns one raised during
  its import into ImportError, which optional-import probes then ignore): `check()` before the
  job starts refuses to start it all the same.
- `forward` (the job runs): each signal goes to the job's process group, once, as a shell
  would send it (SIGHUP included: a closed terminal ends the job, as it would without cobell);
  cobell keeps waiting for the job to finish its own shutdown. One that comes when the job's
  own process has already exited (cobell has not noticed yet, or is draining its output)
  still goes to the group, for whatever lingers there, but found the job over: it is
  deferred, as after the job, and does not make the run `killed`.
- `defer` (cobell installs its handlers or exits; the run's row is being inserted, `hold()`;
  the job has ended and its completion is being recorded): latched only. A pending write
  stops waiting for a lock (`deferred()`): before the job, the job is then not started; after
  it, the completion goes to the journal.
- `abandon` (after the completion is safe: co-runners, the model warm-up): `Abandoned` is
  raised, the rest of cobell's own work is dropped, and the job's exit code stands.

Handlers can only be installed from the main thread (Python's rule); elsewhere nothing is
installed and signals keep their default effect.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """A signal before the job started: exit 128+N. A BaseException, like KeyboardInterrupt,
    so that `except Exception` in libraries and click's handlers let it through."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.exit_code = 128 + signum

    def line(self) -> str:
        return f"interrupted by {signal.Signals(self.signum).name}; the job was not started"


class Abandoned(BaseException):
    """A signal after the job ended: cobell's own remaining work is dropped."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    def line(self) -> str:
        return f"{signal.Signals(self.signum).name} received"


class _State:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.phase = "defer"  # `raising()` opens the command's body
        self.latched: list[int] = []  # before the job started
        self.forwarded: list[int] = []  # while it ran
        self.deferred: list[int] = []  # after it ended
        self.job_pgid: int | None = None
        self.installed: dict[int, object] = {}


_state = _State()


def _handle(signum: int, _frame: FrameType | None) -> None:
    phase = _state.phase
    if phase == "forward":
        pgid = _state.job_pgid
        (_state.deferred if pgid is not None and _exited(pgid) else _state.forwarded).append(
            signum)
        if pgid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signum)
    elif phase in ("defer", "abandon"):
        _state.deferred.append(signum)
        if phase == "abandon":
            _state.phase = "defer"  # raise once; the unwinding must not be interrupted again
            raise Abandoned(signum)
    else:
        _state.latched.append(signum)
        raise Interrupted(signum)


def _exited(pid: int) -> bool:
    """Whether the child `pid` has ended, without reaping it (its waiter still will)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # already reaped
        return True


def installed() -> bool:
    """Whether cobell's handlers are in place (the CLI installs them for a whole command)."""
    return bool(_state.installed)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def handled(*, exiting: bool = False) -> Iterator[None]:
    """Install the handlers for one command (the CLI entry); restore the previous ones after,
    unless `exiting` (the process is cobell and ends now: a signal while it exits must not
    change its exit code, so it is ignored; Python would otherwise reset the handlers to the
    default, deadly one while it finalises). A signal the process ignores (`nohup` sets
    SIGHUP to SIG_IGN) stays ignored."""
    if not _main_thread() or _state.installed:
        yield
        return
    _state.reset()  # a fresh command: nothing latched, nothing forwarded
    unraisable = sys.unraisablehook
    sys.unraisablehook = _quiet_signals(unraisable)
    for signum in SIGNALS:
        previous = signal.getsignal(signum)
        if previous is signal.SIG_IGN:
            continue
        _state.installed[signum] = previous
        signal.signal(signum, _handle)
    try:
        yield
    finally:
        for signum, previous in _state.installed.items():
            signal.signal(signum, signal.SIG_IGN if exiting else previous)  # type: ignore[arg-type]
        _state.installed = {}
        sys.unraisablehook = unraisable


def _quiet_signals(previous: Callable[[Any], object]) -> Callable[[Any], object]:
    """An unraisable-exception hook that drops cobell's own signal exceptions. A signal that
    lands in code Python cannot raise from (an import lock's weakref callback, a __del__)
    would print 'Exception ignored ... Interrupted' and carry on; it is latched (or deferred)
    all the same, and the command honours it where it checks (`raising`, `before_start`)."""

    def hook(unraisable: Any) -> object:
        if isinstance(unraisable.exc_value, Interrupted | Abandoned):
            return None
        return previous(unraisable)

    return hook


@contextlib.contextmanager
def raising() -> Iterator[None]:
    """The command's body (the CLI entry catches `Interrupted` around it): a signal raises from
    here on, one that came while the handlers were being installed at once; outside it (while
    cobell installs its handlers or exits) a signal is only latched."""
    if _state.deferred:
        _state.latched.extend(_state.deferred)
        del _state.deferred[:]
        check()
    _state.phase = "raise"
    try:
        yield
        check()  # a signal whose Interrupted Python or a library swallowed still ends it
    finally:
        _state.phase = "defer"


def check() -> None:
    """Raise `Interrupted` if a signal arrived before the job started (see the module doc)."""
    if _state.latched:
        raise Interrupted(_state.latched[0])


def received() -> int | None:
    """The first signal latched before the job started, if any."""
    return _state.latched[0] if _state.latched else None


@contextlib.contextmanager
def forwarding() -> Iterator[Forwarding]:
    """The `forward` phase around a child; `defer` afterwards. Outside `handled()` (the runner
    used from Python) the handlers are installed for the duration only."""
    with contextlib.ExitStack() as stack:
        if not _state.installed:
            stack.enter_context(handled())
        _state.forwarded = []
        _state.job_pgid = None
        _state.phase = "forward"
        try:
            yield Forwarding()
        finally:
            _state.phase = "defer"
            _state.job_pgid = None


class Forwarding:
    """Handle on the `forward` phase: who to forward to, and what was forwarded."""

    def before_start(self) -> None:
        """Refuse to start the job if a signal came in planning, while its run was inserted
        (`hold()`), or since `forwarding()`."""
        check()
        came = _state.deferred or _state.forwarded
        if came:
            raise Interrupted(came[0])

    def started(self, pgid: int) -> None:
        """From now on signals reach the job; one that came during the start is sent now
        (with the signals blocked meanwhile, so that none is sent twice or not at all)."""
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        try:
            _state.job_pgid = pgid
            for signum in _state.forwarded:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, signum)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    @property
    def forwarded(self) -> list[int]:
        return list(_state.forwarded)


def hold() -> None:
    """From here to the job's start (`forwarding()`), latch signals without raising: the run's
    row is being inserted, and must then be completed (as `killed`, not started), never left
    behind as `running`."""
    _state.phase = "defer"


def deferred() -> int | None:
    """The first signal received since the job ended, if any."""
    return _state.deferred[0] if _state.deferred else None


@contextlib.contextmanager
def abandonable() -> Iterator[None]:
    """The `abandon` phase: a signal (or one already deferred) raises `Abandoned`."""
    if _state.deferred:
        raise Abandoned(_state.deferred[0])
    _state.phase = "abandon"
    try:
        yield
    finally:
        _state.phase = "defer"
