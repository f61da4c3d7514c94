"""Reading REST fields that ACLs, versions or proxies may hide: hidden becomes None, never 0."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

_HIDDEN_TEXT = {"", "N/A", "n/a", "null"}


def text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return None if text in _HIDDEN_TEXT else text


def number_or_none(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN -> None


def epoch_ms_to_s(value: Any) -> float | None:
    """Epoch milliseconds to seconds; 0, negative and hidden values are None (not set)."""
    ms = number_or_none(value)
    return ms / 1000.0 if ms is not None and ms > 0 else None


def app_identity(raw: Any) -> tuple[str, str, str] | None:
    """(app id, name, upper-case state) of one app record; None when it has no usable id."""
    if not isinstance(raw, Mapping):
        return None
    app_id = text_or_none(raw.get("id"))
    if app_id is None:
        return None
    return (
        app_id,
        text_or_none(raw.get("name")) or "",
        (text_or_none(raw.get("state")) or "UNKNOWN").upper(),
    )


def spark_time(value: Any) -> float | None:
    """Epoch seconds from Spark's "2026-11-22T23:25:17.123GMT" (or epoch ms); None if not one."""
    number = number_or_none(value)
    if number is not None:
        return number / 1000.0 if number > 0 else None
    text = text_or_none(value)
    if text is None:
        return None
    try:
        moment = datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return None
    return moment.timestamp()
