"""Numbers in sentences a person reads: counted nouns and durations, one way everywhere.

In the core because its reason sentences count runs too; pure text, no locale, no clock.
"""

from __future__ import annotations

import math

IRREGULAR = {"this": "these", "process": "processes", "executor-second": "executor-seconds"}


def plural(noun: str) -> str:
    return IRREGULAR.get(noun, noun + "s")


def count(n: int, noun: str, many: str | None = None) -> str:
    """`1 run`, `2 runs`, `0 runs`; `many` for a plural that is not `noun` + s."""
    return f"{n} {noun if n == 1 else many or plural(noun)}"


def duration_text(seconds: float) -> str:
    """A duration as a person reads it at a glance, with at most two units: `0.25 s`, `45 s`,
    `586 s`, `17 min 30 s`, `5 h 12 min`, `10 d`. Seconds up to 999 s (what targets and
    runtimes mostly are, and what the tables show), then minutes to two hours, hours to two
    days, days beyond. Below 10 s three significant digits: a 0.5 s target is not 0 s."""
    if not math.isfinite(seconds):
        return "forever" if seconds > 0 else "0 s"
    seconds = max(seconds, 0.0)
    if seconds < 10:
        return f"{seconds:.3g} s"
    if round(seconds) < 1000:
        return f"{round(seconds)} s"
    if seconds < 2 * 3600:
        return _two_units(round(seconds), 60, "min", "s")
    if seconds < 2 * 86400:
        return _two_units(round(seconds / 60), 60, "h", "min")
    return _two_units(round(seconds / 3600), 24, "d", "h")


def _two_units(small: int, per: int, big_unit: str, small_unit: str) -> str:
    big, rest = divmod(small, per)
    return f"{big} {big_unit}" + (f" {rest} {small_unit}" if rest else "")
