"""The fold of one event log into an imported run, over the events of REAL Spark runs
(tests/data/eventlogs), streamed by the event-log reader."""

from __future__ import annotations

from pathlib import Path

from cobell_cli.sources.event_apps import AppFold
from tests.extras import require_extra

LOGS = Path(__file__).parent / "data" / "eventlogs" / "logs"
require_extra("zstandard", reason="the recorded logs are zstd: needs the eventlog extra")


def _logs() -> list[Path]:
    return sorted([*LOGS.glob("app-*"), *LOGS.glob("eventlog_v2_*")])


def events_of(name: str) -> list[dict]:
    """The events of the recorded app called `name` (a killed app's torn tail is dropped)."""
    from cobell_cli.sources.eventlog import iter_events

    for log in _logs():
        events = list(iter_events(log))
        starts = [e for e in events if e.get("Event") == "SparkListenerApplicationStart"]
        if starts and starts[0]["App Name"] == name:
            return events
    raise AssertionError(f"no recorded app {name!r}")


def fold(name: str) -> AppFold:
    state = AppFold()
    for event in events_of(name):
        state.feed(event)
    return state


def test_a_real_app_with_tags() -> None:
    app = fold("etl").result(event_log="x")
    assert not isinstance(app, str)
    assert app.job == "etl" and app.status == "succeeded" and app.source == "event-log"
    assert app.scale_out == 2 and 0 < app.mean_scale_out <= 2
    assert 5 < app.runtime_s < 120 and app.app_id.startswith("app-")
    assert app.input_bytes is None  # parallelize() reads no input


def test_a_failed_job_fails_the_app_and_cobell_names_map() -> None:
    broken = fold("broken").result()
    assert not isinstance(broken, str) and broken.status == "failed"
    pi = fold("cobell:pi").result()
    assert not isinstance(pi, str) and pi.job == "pi" and pi.scale_out == 1


def test_a_killed_app_has_no_end_event() -> None:
    assert fold("crashed").result() == "no end event (running or crashed)"


def test_synthetic_input_bytes_from_first_stages_and_exit_code() -> None:
    state = AppFold()
    for event in [
        {"Event": "SparkListenerApplicationStart", "App ID": "a1", "App Name": "x",
         "Timestamp": 1000},
        {"Event": "SparkListenerExecutorAdded", "Executor ID": "1", "Timestamp": 1000},
        {"Event": "SparkListenerStageCompleted", "Stage Info": {"Parent IDs": [], "Accumulables":
            [{"Name": "internal.metrics.input.bytesRead", "Value": 500}]}},
        {"Event": "SparkListenerStageCompleted", "Stage Info": {"Parent IDs": [0], "Accumulables":
            [{"Name": "internal.metrics.input.bytesRead", "Value": 7}]}},
        {"Event": "SparkListenerApplicationEnd", "Timestamp": 11000, "ExitCode": 1},
    ]:  # fmt: skip
        state.feed(event)
    app = state.result()
    assert not isinstance(app, str)
    assert app.input_bytes == 500 and app.status == "failed" and app.runtime_s == 10.0
    assert AppFold().result() == "no application start event"


def test_import_counts_unreadable_and_unfinished_logs_and_writes_once(tmp_path: Path) -> None:
    from cobell_cli.sources.event_apps import import_from_event_logs
    from cobell_cli.store.history import History

    def broken() -> list[dict]:
        raise ValueError("zstd: truncated frame\nmore detail")

    logs = [
        ("etl.zstd", lambda: events_of("etl")),
        ("report", lambda: events_of("adhoc report")),
        ("crashed.inprogress", lambda: events_of("crashed")),
        ("bad.zstd", broken),
    ]
    with History.open(tmp_path / "h.db") as history:
        summary = import_from_event_logs(history, logs, where="test logs")
        again = import_from_event_logs(history, logs[:2], where="test logs")
        runs = history.runs(with_colocations=True)
    assert summary.imported == 2 and summary.seen == 4
    assert dict(summary.skipped) == {
        "no end event (running or crashed)": 1,
        "unreadable (zstd: truncated frame)": 1,
    }
    assert summary.colocations == 2  # etl and the report overlapped
    assert again.imported == 0 and dict(again.skipped) == {"already in the history": 2}
    assert {r["source"] for r in runs} == {"event-log"}
    assert {r["event_log"] for r in runs} == {"etl.zstd", "report"}
