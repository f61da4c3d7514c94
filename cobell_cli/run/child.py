"""Run the user's job as a child process: stream its output, catch its app id, forward signals.

API for `cobell submit`::

    result = run(
        inj.argv,
        log_file=path_or_None,            # appended to, both streams, line by line
        on_start=lambda pid, t: ...,      # right after the child exists (record `running`)
        on_app_id=lambda app_id: ...,     # once, first app id seen on either stream
        on_tick=lambda elapsed_s: ...,    # every `tick_s` while it runs (live line on a TTY)
        stdout=sys.stdout.buffer, stderr=sys.stderr.buffer,  # where the child's output goes
    )
    result.exit_code, result.started_at, result.finished_at, result.runtime_s,
    result.app_id, result.interrupted, result.signal_received, result.log_error

Callbacks run in the calling thread (never in the output reader threads); `on_app_id` fires
within ~0.1 s of the line being printed. They must return quickly: output keeps streaming in
the reader threads, but the child's exit is noticed only between callbacks.

Decisions:
- argv is executed directly, never through a shell; stdin is /dev/null (batch jobs never
  prompt, and a child that read the terminal from its own process group would be stopped).
- The child runs in its own process group. SIGINT, SIGTERM and SIGHUP that reach cobell are
  forwarded to that group exactly once per signal (a terminal's Ctrl-C therefore reaches
  spark-submit and the Python driver it spawned once, as it would without cobell; a closed
  terminal ends the job as it would end it without cobell), and cobell keeps waiting for the
  child to finish its own shutdown (cobell_cli/interrupts.py). A signal that came before the
  child exists means it is never started (`Interrupted`, 128+N). Forwarding needs the main
  thread (Python's rule for signal handlers); elsewhere `run` still works but does not forward.
- Output is forwarded in chunks as it arrives (progress bars drawn with `\\r` keep working);
  the log file gets whole lines, so the two streams never interleave within a line there.
- Exit code: the child's; death by signal N (Popen's -N) becomes 128+N, as a shell reports it.
- A missing executable raises `CommandNotFound` (exit 127) and one that cannot be executed
  `CommandNotExecutable` (exit 126), the shell's codes, before `on_start` is called, so a
  cron wrapper sees the same codes as it would from `sh -c`. Both are CobellErrors: one line.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cobell_cli import interrupts
from cobell_cli.core.memory.failures import memory_failure
from cobell_cli.errors import CobellError
from cobell_cli.run.launch import parse_app_id
from cobell_cli.threads import user_environ

_CHUNK = 65536
_DRAIN_TIMEOUT_S = 5.0  # grandchildren may keep our pipes open after the child has exited
_POLL_S = 0.1  # how soon a captured app id reaches on_app_id (in the calling thread)


class CommandNotFound(CobellError):
    exit_code = 127


class CommandNotExecutable(CobellError):
    exit_code = 126


@dataclass(frozen=True)
class ChildResult:
    exit_code: int
    started_at: float
    finished_at: float
    app_id: str | None
    interrupted: bool
    signal_received: int | None  # the first signal cobell received and forwarded
    pid: int
    log_error: str | None = None  # why the --log-file copy stopped (a full disk), if it did
    memory_failure: str | None = None  # the first output line that says memory ran out

    @property
    def runtime_s(self) -> float:
        return self.finished_at - self.started_at


def shell_exit_code(returncode: int) -> int:
    """Popen's returncode as a shell reports it: death by signal N is 128+N."""
    return 128 - returncode if returncode < 0 else returncode


class _AppIdCatcher:
    """Keeps the first app id seen on any stream, and the first line saying an executor or the
    driver ran out of memory (reader threads write, the main thread reads)."""

    def __init__(self) -> None:
        self.app_id: str | None = None
        self.memory_failure: str | None = None
        self._lock = threading.Lock()

    def feed(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace")
        if self.memory_failure is None and memory_failure(text):
            self.memory_failure = _scrubbed(line).decode("utf-8", "replace").strip()[:300]
        if self.app_id is not None:
            return
        found = parse_app_id(text)
        if found is None:
            return
        with self._lock:
            if self.app_id is None:
                self.app_id = found


def _scrubbed(line: bytes) -> bytes:
    """A log line without the secrets a launcher may echo (URL passwords, -Dsecret=...)."""
    from cobell_cli.redact import scrub

    return scrub(line.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def open_log(path: str | Path) -> BinaryIO:
    """The --log-file, opened for appending (the caller closes it)."""
    try:
        return open(path, "ab")  # the caller closes it
    except OSError as exc:
        raise CobellError(
            f"cannot open log file {path}: {exc.strerror}",
            hint="--log-file names a file the job's output is appended to",
        ) from None


def check_can_start(argv: Sequence[str], log_file: str | Path | None) -> None:
    """What can be known before a run is recorded: the command exists and is executable, and
    the log file is not a directory and has a directory to live in. Writes nothing."""
    if not argv:
        raise CommandNotFound("no command to run")
    program = argv[0]
    path = program if os.sep in program else shutil.which(program, path=user_environ().get(
        "PATH", os.defpath))
    if path is None or not os.path.exists(path):
        raise CommandNotFound(
            f"command not found: {program}", hint="check the command after `--` (is it on PATH?)"
        )
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise CommandNotExecutable(f"permission denied: {program}",
                                   hint="is it an executable file?")
    if log_file is not None:
        log = Path(log_file)
        if log.is_dir():
            raise CobellError(
                f"cannot open log file {log}: it is a directory",
                hint="--log-file names a file the job's output is appended to, e.g. "
                f"{log / 'job.log'}",
            )
        if not log.parent.is_dir():
            raise CobellError(f"cannot open log file {log}: no directory {log.parent}",
                              hint="create it, or name a log file in an existing directory")


class _Log:
    """The --log-file copy both pumps write whole lines to. A write that fails (a full disk)
    stops the copy, never the job's output: a pump that died would stop draining the job's
    pipe, and the job would block."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.lock = threading.Lock()
        self.error: str | None = None

    def write(self, lines: Sequence[bytes]) -> None:
        if not lines or self.error is not None:
            return
        with self.lock:
            try:
                self.file.write(b"".join(_scrubbed(line) + b"\n" for line in lines))
                self.file.flush()
            except OSError as exc:
                self.error = exc.strerror or str(exc)


def _pump(
    pipe: BinaryIO,
    terminal: BinaryIO | None,
    log: _Log | None,
    catcher: _AppIdCatcher,
) -> None:
    partial = b""
    fd = pipe.fileno()
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError:
            break
        if not chunk:
            break
        if terminal is not None:
            try:
                terminal.write(chunk)
                terminal.flush()
            except (OSError, ValueError):  # closed or broken terminal: keep logging
                terminal = None
        partial += chunk
        *lines, partial = partial.split(b"\n")
        for line in lines:
            catcher.feed(line)
        if log is not None:
            log.write(lines)
    if partial:
        catcher.feed(partial)
        if log is not None:
            log.write([partial])


def _default_stream(stream: object) -> BinaryIO | None:
    return getattr(stream, "buffer", None)


def run(
    argv: Sequence[str],
    *,
    log_file: str | Path | BinaryIO | None = None,
    on_start: Callable[[int, float], None] | None = None,
    on_app_id: Callable[[str], None] | None = None,
    on_tick: Callable[[float], None] | None = None,
    tick_s: float = 1.0,
    stdout: BinaryIO | None = None,
    stderr: BinaryIO | None = None,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    clock: Callable[[], float] = time.time,
) -> ChildResult:
    """Run argv to completion; see the module docstring for the contract."""
    if not argv:
        raise CommandNotFound("no command to run")
    out = stdout if stdout is not None else _default_stream(sys.stdout)
    err = stderr if stderr is not None else _default_stream(sys.stderr)
    log: _Log | None = None
    if isinstance(log_file, str | Path):
        log_file = open_log(log_file)
    if log_file is not None:
        log = _Log(log_file)

    try:
        with interrupts.forwarding() as signals:
            signals.before_start()
            proc = _start(argv, env, cwd)
            started_at = clock()
            signals.started(proc.pid)
            return _supervise(
                proc, started_at, out, err, log, on_start, on_app_id, on_tick, tick_s, clock,
                signals,
            )  # fmt: skip
    finally:
        if log is not None:
            with contextlib.suppress(OSError):  # what could not be written is in log.error
                log.file.close()


def _start(
    argv: Sequence[str], env: dict[str, str] | None, cwd: str | Path | None
) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            env=env if env is not None else user_environ(),
            cwd=cwd,
            process_group=0,
        )
    except FileNotFoundError:
        raise CommandNotFound(
            f"command not found: {argv[0]}",
            hint="check the command after `--` (is it on PATH?)",
        ) from None
    except PermissionError:
        raise CommandNotExecutable(
            f"permission denied: {argv[0]}", hint="is it an executable file?"
        ) from None


def _supervise(
    proc: subprocess.Popen[bytes],
    started_at: float,
    out: BinaryIO | None,
    err: BinaryIO | None,
    log: _Log | None,
    on_start: Callable[[int, float], None] | None,
    on_app_id: Callable[[str], None] | None,
    on_tick: Callable[[float], None] | None,
    tick_s: float,
    clock: Callable[[], float],
    signals: interrupts.Forwarding,
) -> ChildResult:
    catcher = _AppIdCatcher()
    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        threading.Thread(
            target=_pump,
            args=(pipe, term, log, catcher),
            daemon=True,
            name=f"cobell-child-{name}",
        )
        for name, pipe, term in (("stdout", proc.stdout, out), ("stderr", proc.stderr, err))
    ]
    try:
        for pump in pumps:
            pump.start()
        if on_start is not None:
            on_start(proc.pid, started_at)
        delivered = False

        def deliver_app_id() -> None:
            nonlocal delivered
            if not delivered and catcher.app_id is not None:
                delivered = True
                if on_app_id is not None:
                    on_app_id(catcher.app_id)

        next_tick = time.monotonic() + tick_s
        while True:
            try:
                proc.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                deliver_app_id()
                if on_tick is not None and time.monotonic() >= next_tick:
                    next_tick += tick_s
                    on_tick(clock() - started_at)
        finished_at = clock()
        for pump in pumps:
            pump.join(_DRAIN_TIMEOUT_S)
        deliver_app_id()
    finally:
        if proc.poll() is None:  # cobell itself failed (e.g. a callback raised): do not orphan
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
        for pump, pipe in zip(pumps, (proc.stdout, proc.stderr), strict=True):
            if not pump.is_alive():  # a live pump still reads its fd: closing could reuse it
                with contextlib.suppress(OSError):
                    pipe.close()
    forwarded = signals.forwarded  # what reached the job (interrupts.py: not after its end)
    return ChildResult(
        exit_code=shell_exit_code(proc.returncode),
        started_at=started_at,
        finished_at=finished_at,
        app_id=catcher.app_id,
        interrupted=bool(forwarded),
        signal_received=forwarded[0] if forwarded else None,
        pid=proc.pid,
        log_error=log.error if log is not None else None,
        memory_failure=catcher.memory_failure,
    )
