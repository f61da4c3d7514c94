"""Exceptions that carry a documented exit code, so the CLI can turn them into one line."""

from __future__ import annotations

# Exit codes are part of the interface (docs/reliability.md, "Exit codes"); scripts branch on them.
EXIT_OK = 0
EXIT_RUNTIME = 1  # something went wrong at run time (I/O, a failed job run, ...)
EXIT_USAGE = 2  # bad flags, bad arguments, bad config or import file: fix the input
EXIT_NO_FEASIBLE = 3  # --strict and no scale-out meets the target
EXIT_CLUSTER = 4  # the cluster (RM / master) could not be asked
EXIT_HISTORY = 5  # the history database cannot be used (locked, newer schema, not SQLite)
EXIT_INTERRUPTED = 130  # interrupted by SIGINT before a job ran (SIGHUP 129, SIGTERM 143)


class CobellError(Exception):
    """An expected failure: printed as one line, never as a traceback."""

    exit_code = EXIT_RUNTIME

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def line(self) -> str:
        msg = str(self)
        return f"{msg}; {self.hint}" if self.hint else msg


class UsageError(CobellError):
    exit_code = EXIT_USAGE


class ConfigError(UsageError):
    pass


class ImportFileError(UsageError):
    pass


class HistoryError(CobellError):
    exit_code = EXIT_HISTORY


class ClusterError(CobellError):
    exit_code = EXIT_CLUSTER


class NoFeasibleScaleOut(CobellError):
    exit_code = EXIT_NO_FEASIBLE
