"""The event-log profile (sources/eventlog_profile.py): synthetic logs written here, where every
number is known, and the real logs of tests/data/eventlogs/codecs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobell_cli.core.profile import AppProfile
from cobell_cli.sources.eventlog import EventLogError
from cobell_cli.sources.eventlog_profile import summarize

CODECS = Path(__file__).parent / "data" / "eventlogs" / "codecs"
T0 = 1_700_000_000_000


def _task(stage: int, launch_s: float, run_s: float, read: int = 0) -> dict:
    return {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": stage,
        "Task Info": {
            "Launch Time": T0 + int(launch_s * 1000),
            "Finish Time": T0 + int((launch_s + run_s) * 1000),
        },
        "Task Metrics": {"Input Metrics": {"Bytes Read": read}},
    }


def _events(end: bool = True) -> list[dict]:
    events = [
        {"Event": "SparkListenerLogStart", "Spark Version": "4.0.0"},
        {
            "Event": "SparkListenerApplicationStart",
            "App Name": "nightly",
            "App ID": "app-1",
            "Timestamp": T0,
        },
        {
            "Event": "SparkListenerEnvironmentUpdate",
            "Spark Properties": {
                "spark.yarn.tags": "team-a, cobell-job:etl",
                "spark.executor.cores": "2",
            },
        },
        {
            "Event": "SparkListenerExecutorAdded",
            "Executor ID": "1",
            "Timestamp": T0 + 2000,
            "Executor Info": {"Total Cores": 2},
        },
        {
            "Event": "SparkListenerExecutorAdded",
            "Executor ID": "2",
            "Timestamp": T0 + 4000,
            "Executor Info": {"Total Cores": 2},
        },
        {
            "Event": "SparkListenerJobStart",
            "Job ID": 0,
            "Submission Time": T0 + 5000,
            "Stage Infos": [{"Stage ID": 0, "Parent IDs": []}, {"Stage ID": 1, "Parent IDs": [0]}],
        },
        _task(0, 5, 3, read=100),
        _task(0, 5, 4, read=50),
        _task(1, 9, 1),
        {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": T0 + 10_000},
        {"Event": "SparkListenerExecutorRemoved", "Executor ID": "2", "Timestamp": T0 + 14_000},
    ]
    if end:
        events.append({"Event": "SparkListenerApplicationEnd", "Timestamp": T0 + 20_000})
    return events


def _write(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_a_synthetic_log_gives_every_figure(tmp_path: Path) -> None:
    p = summarize(_write(tmp_path / "app-1", _events()))
    assert (p.app_id, p.app_name, p.job_tag, p.tags) == (
        "app-1",
        "nightly",
        "etl",
        ["team-a", "cobell-job:etl"],
    )
    assert p.runtime_s == 20.0 and p.scale_out == 2 and p.cores_per_executor == 2
    # executor 1 lives 2..20 s, executor 2 4..14 s: (18 + 10) / 20
    assert p.mean_scale_out == pytest.approx(28 / 20)
    assert [s.parent_ids for s in p.stages] == [[], [0]]
    assert p.stages[0].task_s == [3.0, 4.0] and p.stages[1].launch_s == [9.0]
    assert p.input_bytes == 150 and p.jobs[0].end_s == 10.0


def test_no_end_event_leaves_the_end_open(tmp_path: Path) -> None:
    p = summarize(_write(tmp_path / "app-1.inprogress", _events(end=False)))
    assert p.end_ms is None and p.runtime_s == 14.0  # up to the last event seen


def test_the_profile_survives_json(tmp_path: Path) -> None:
    p = summarize(_write(tmp_path / "app-1", _events()))
    back = AppProfile.from_dict(json.loads(json.dumps(p.to_dict())))
    assert back == p and back.to_dict()["scale_out"] == 2


def test_a_log_without_an_application_is_an_error(tmp_path: Path) -> None:
    log = _write(tmp_path / "x", [{"Event": "SparkListenerLogStart"}])
    with pytest.raises(EventLogError, match="no application start"):
        summarize(log)


@pytest.mark.parametrize("suffix", ["", ".zstd", ".lz4", ".snappy"])
def test_real_logs_in_every_codec(suffix: str) -> None:
    (log,) = [q for q in CODECS.iterdir() if q.suffix == suffix]
    p = summarize(log)
    assert p.local_mode and p.end_ms is not None and p.scale_out == 1
    assert [len(s.task_s) for s in p.stages] == [4, 4]
    assert p.stages[1].parent_ids == [0]
    assert 0 < max(p.stages[0].task_s) < p.runtime_s
