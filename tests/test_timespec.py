"""The one time parser (cobell_cli/timespec.py): durations, moments, and --since."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cobell_cli.errors import UsageError
from cobell_cli.timespec import parse_duration, parse_moment, parse_since

BERLIN = ZoneInfo("Europe/Berlin")


def at(text: str, zone=BERLIN) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=zone).timestamp()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90", 90.0),
        ("90s", 90.0),
        ("5min", 300.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("1h 30m", 5400.0),
        ("1.5h", 5400.0),
        ("2d", 172800.0),
        ("1w", 604800.0),
        (" 45.5 ", 45.5),
        ("2H", 7200.0),
    ],
)
def test_durations_as_people_write_them(text: str, seconds: float) -> None:
    assert parse_duration(text, "--target-runtime") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5 minutes", "1h30", "h", "5m3m", "nan", "inf", "4gigs"])
def test_a_bad_duration_is_one_usage_error_naming_the_forms(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_duration(text, "--target-runtime")
    assert info.value.line().startswith("--target-runtime ")
    assert "1h30m" in info.value.line()


def test_a_negative_duration_is_refused() -> None:
    with pytest.raises(UsageError, match="negative"):
        parse_duration("-5", "--max-wait")


def test_a_clock_time_is_the_next_such_local_time() -> None:
    evening = at("2026-11-25T22:10")
    assert parse_moment("06:00", "--deadline", evening, BERLIN) == at("2026-11-26T06:00")
    early = at("2026-11-26T01:00")
    assert parse_moment("06:00", "--deadline", early, BERLIN) == at("2026-11-26T06:00")
    assert parse_moment("6:00:30", "--deadline", early, BERLIN) == at("2026-11-26T06:00:30")


def test_a_clock_time_across_a_dst_change_keeps_its_wall_time() -> None:
    # Berlin leaves summer time on 2026-10-25 at 03:00: 06:00 that morning is UTC+1.
    night = at("2026-10-24T23:00")
    deadline = parse_moment("06:00", "--deadline", night, BERLIN)
    assert datetime.fromtimestamp(deadline, BERLIN).hour == 6
    assert deadline - night == pytest.approx(8 * 3600)  # seven wall hours, eight real ones


def test_iso_moments_with_and_without_zone_and_relative_ones() -> None:
    now = at("2026-11-25T22:10")
    assert parse_moment("2026-11-26T06:00", "--deadline", now, BERLIN) == at("2026-11-26T06:00")
    with_zone = parse_moment("2026-11-26T06:00Z", "--deadline", now, BERLIN)
    assert with_zone == datetime(2026, 11, 26, 6, tzinfo=UTC).timestamp()
    assert parse_moment("2026-11-01T00:00", "--deadline", now, BERLIN) < now  # may be past
    assert parse_moment("+2h30m", "--deadline", now, BERLIN) == now + 9000
    assert parse_moment("now", "--deadline", now, BERLIN) == now


@pytest.mark.parametrize("text", ["25:00", "06:61", "tomorrowish", "+soon", "12", "2026-13-01"])
def test_a_bad_moment_is_one_usage_error_naming_the_forms(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_moment(text, "--deadline", at("2026-11-25T22:10"), BERLIN)
    assert "--deadline" in info.value.line() and "06:00" in info.value.line()


def test_since_takes_durations_ago_and_moments() -> None:
    now = at("2026-11-25T22:10")
    assert parse_since("30d", "--since", now, BERLIN) == now - 30 * 86400
    assert parse_since("12h", "--since", now, BERLIN) == now - 12 * 3600
    assert parse_since("yesterday", "--since", now, BERLIN) == at("2026-11-24T00:00")
    assert parse_since("today", "--since", now, BERLIN) == at("2026-11-25T00:00")
    assert parse_since("2026-11-01", "--since", now, BERLIN) == at("2026-11-01T00:00")
    assert parse_since("1700000000", "--since", now, BERLIN) == 1700000000.0
    with pytest.raises(UsageError, match="--since 'lately'"):
        parse_since("lately", "--since", now, BERLIN)


@given(hours=st.integers(0, 99), minutes=st.integers(0, 59), seconds=st.integers(0, 59))
def test_every_written_duration_adds_up(hours: int, minutes: int, seconds: int) -> None:
    text = f"{hours}h{minutes}m{seconds}s"
    assert parse_duration(text, "-t") == hours * 3600 + minutes * 60 + seconds


@given(now=st.floats(1.6e9, 2.2e9), hour=st.integers(0, 23), minute=st.integers(0, 59))
def test_a_clock_time_is_never_past_and_within_a_day_and_an_hour(
    now: float, hour: int, minute: int
) -> None:
    deadline = parse_moment(f"{hour:02d}:{minute:02d}", "--deadline", now, BERLIN)
    assert now <= deadline <= now + 25 * 3600
    wall = datetime.fromtimestamp(deadline, BERLIN)
    assert (wall.minute, wall.second) == (minute, 0)


def test_local_times_and_spans_for_people() -> None:
    from datetime import timedelta, timezone

    from cobell_cli.core.words import duration_text
    from cobell_cli.timespec import local_iso

    plus_one = timezone(timedelta(hours=1))
    assert local_iso(1_800_000_000.0, plus_one) == "2027-01-15T09:00:00+01:00"
    assert local_iso(1_800_000_000.0).startswith("2027-01-15T")
    assert [duration_text(s) for s in (-3, 45, 720, 9000)] == ["0 s", "45 s", "720 s",
                                                              "2 h 30 min"]
