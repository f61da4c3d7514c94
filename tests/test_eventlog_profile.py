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


def _metered_task(stage: int, run_ms: int, cpu_ns: int, **extra: dict) -> dict:
    event = _task(stage, 5, run_ms / 1000)
    event["Task Metrics"] = {
        "Executor Run Time": run_ms,
        "Executor CPU Time": cpu_ns,
        "JVM GC Time": 100,
        "Peak Execution Memory": extra.pop("peak", 0),
        "Disk Bytes Spilled": 7,
        "Input Metrics": {"Bytes Read": 1000},
        "Output Metrics": {"Bytes Written": 10},
        "Shuffle Read Metrics": {"Remote Bytes Read": 300, "Local Bytes Read": 200,
                                 "Fetch Wait Time": 250},
        "Shuffle Write Metrics": {"Shuffle Bytes Written": 40, "Shuffle Write Time": 5_000_000},
    }
    return event


def test_each_stage_sums_its_tasks_metrics(tmp_path: Path) -> None:
    """Times in ms and ns become seconds, bytes add up, the peak is the largest task's."""
    events = _events()
    events[6:9] = [_metered_task(0, 2000, 1_500_000_000, peak=64),
                   _metered_task(0, 1000, 500_000_000, peak=256),
                   _metered_task(1, 4000, 1_000_000_000)]
    p = summarize(_write(tmp_path / "app-1", events))
    first = p.stages[0].resources
    assert first["run_s"] == pytest.approx(3.0) and first["cpu_s"] == pytest.approx(2.0)
    assert first["gc_s"] == pytest.approx(0.2) and first["shuffle_fetch_wait_s"] == 0.5
    assert first["shuffle_read_bytes"] == 1000 and first["input_bytes"] == 2000
    assert first["shuffle_write_s"] == pytest.approx(0.01)
    assert first["peak_execution_bytes"] == 256 and first["disk_spill_bytes"] == 14
    total = p.resources
    assert total["run_s"] == pytest.approx(7.0) and total["cpu_s"] == pytest.approx(3.0)
    assert total["peak_execution_bytes"] == 256
    back = AppProfile.from_dict(json.loads(json.dumps(p.to_dict())))
    assert back == p and back.resources == total


def test_a_format_1_summary_still_loads_without_resources(tmp_path: Path) -> None:
    data = summarize(_write(tmp_path / "app-1", _events())).to_dict()
    data["format"] = 1
    data.pop("resources")
    for stage in data["stages"]:
        stage.pop("resources")
    old = AppProfile.from_dict(data)
    assert old.resources == {} and old.stages[0].task_s == [3.0, 4.0]
