"""The one parser for durations and moments that every option taking a time uses.

Pure: the present (`now`, epoch seconds) and the local zone are passed in, so the same text
means the same thing in a test as at 01:00 under cron (../shared/CONVENTIONS.md, "Time").

- durations: `90`, `90s`, `5min`, `1h30m`, `1.5h`, `2d`, `1w` (a plain number is seconds);
- moments: `06:00` (the next such local time), an ISO date-time with or without zone (without:
  local time), `+2h30m` (from now), `now`, `today`, `yesterday`, or epoch seconds;
- since (`--since`): a duration ago (`30d`, `12h`), or any moment above.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, time, timedelta, tzinfo

from cobell_cli.errors import UsageError

DURATION_FORMS = "90, 90s, 5min, 1h30m, 1.5h or 2d"
# what a deadline is written as: a moment ahead (`now`, `today`, `yesterday` and epoch seconds
# are read too, but no deadline is suggested as one)
MOMENT_FORMS = "06:00 (the next 06:00), 2026-11-26T06:00, 2026-11-26 06:00+01:00 or +2h30m"
SINCE_FORMS = "30d, 12h, yesterday, 2026-11-01 or 2026-11-01T08:00:00Z"

_UNIT_S = {
    "w": 604800.0,
    "d": 86400.0,
    "h": 3600.0,
    "m": 60.0,
    "min": 60.0,
    "s": 1.0,
    "sec": 1.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(min|sec|[wdhms])", re.IGNORECASE)
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
# Epoch seconds are told from durations by size: no duration anyone types is 30 years long.
_EPOCH_MIN = 1e9


def _duration_or_none(text: str) -> float | None:
    """Seconds, or None when `text` is not a duration (never raises)."""
    cleaned = text.strip().lower()
    if not cleaned:
        return None
    try:
        seconds = float(cleaned)
    except ValueError:
        seconds = None
    if seconds is None:
        squeezed = cleaned.replace(" ", "")
        parts = _PART.findall(squeezed)
        if not parts or "".join(n + u for n, u in parts) != squeezed:
            return None
        units = [u for _, u in parts]
        if len(set(_UNIT_S[u] for u in units)) != len(units):
            return None  # `5m3m`: a unit twice is a typo, not a sum
        seconds = sum(float(n) * _UNIT_S[u] for n, u in parts)
    return seconds if math.isfinite(seconds) else None


def parse_duration(text: str, option: str) -> float:
    """Seconds in `text` (`90`, `5min`, `1h30m`); a usage error naming the forms otherwise."""
    seconds = _duration_or_none(text)
    if seconds is None:
        raise UsageError(f"{option} {text!r} is not a duration", hint=f"use e.g. {DURATION_FORMS}")
    if seconds < 0:
        raise UsageError(f"{option} must not be negative, got {text!r}")
    return seconds


def local_zone(now: float) -> tzinfo:
    """The system's zone at `now` (an edge helper for callers that have no zone of their own)."""
    zone = datetime.fromtimestamp(now).astimezone().tzinfo
    assert zone is not None
    return zone


def _midnight(now: float, zone: tzinfo, days_back: int) -> float:
    today = datetime.fromtimestamp(now, zone).date() - timedelta(days=days_back)
    return _at_local(datetime.combine(today, time()), zone)


def _at_local(naive: datetime, zone: tzinfo) -> float:
    """A naive local wall time in `zone` as epoch seconds."""
    return naive.replace(tzinfo=zone).timestamp()


def _next_clock(match: re.Match[str], now: float, zone: tzinfo) -> float | None:
    hour, minute, second = int(match[1]), int(match[2]), int(match[3] or 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    wall = datetime.fromtimestamp(now, zone)
    for days in range(3):  # today, tomorrow; a DST gap can push the hour past both
        day = wall.date() + timedelta(days=days)
        at = _at_local(datetime.combine(day, time(hour, minute, second)), zone)
        if at >= now:
            return at
    return None


def _moment_or_none(text: str, now: float, zone: tzinfo) -> float | None:
    cleaned = text.strip()
    lowered = cleaned.lower()
    if lowered == "now":
        return now
    if lowered in ("today", "yesterday"):
        return _midnight(now, zone, 0 if lowered == "today" else 1)
    if cleaned.startswith("+"):
        ahead = _duration_or_none(cleaned[1:])
        return None if ahead is None else now + ahead
    clock = _CLOCK.fullmatch(cleaned)
    if clock:
        return _next_clock(clock, now, zone)
    try:
        epoch = float(cleaned)
    except ValueError:
        epoch = None
    if epoch is not None:
        return epoch if math.isfinite(epoch) and epoch >= _EPOCH_MIN else None
    try:
        moment = datetime.fromisoformat(cleaned.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return _at_local(moment, zone)
    return moment.timestamp()


def parse_moment(text: str, option: str, now: float, zone: tzinfo) -> float:
    """Epoch seconds of a moment (`06:00`, an ISO date-time, `+2h30m`); may lie in the past."""
    at = _moment_or_none(text, now, zone)
    if at is None:
        raise UsageError(f"{option} {text!r} is not a time", hint=f"use e.g. {MOMENT_FORMS}")
    return at


def parse_since(text: str, option: str, now: float, zone: tzinfo) -> float:
    """Epoch seconds of a lower bound in time: a duration ago (`30d`), or a moment."""
    ago = None if text.strip().startswith("+") else _duration_or_none(text)
    if ago is not None and ago < _EPOCH_MIN:
        if ago < 0:
            raise UsageError(f"{option} must not be negative, got {text!r}")
        return now - ago
    at = _moment_or_none(text, now, zone)
    if at is None:
        raise UsageError(f"{option} {text!r} is not a time", hint=f"use e.g. {SINCE_FORMS}")
    return at


def local_iso(at: float, zone: tzinfo | None = None) -> str:
    """Epoch seconds as an ISO local time to the second, with its offset (text output:
    ../shared/CONVENTIONS.md, "Time"); `zone` defaults to the system's at that moment."""
    moment = datetime.fromtimestamp(at, zone) if zone is not None else datetime.fromtimestamp(
        at).astimezone()
    return moment.isoformat(timespec="seconds")
