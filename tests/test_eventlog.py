"""The streaming event-log reader over real Spark logs in every codec it reads
(tests/data/eventlogs/codecs, recorded by record_codecs.py there) and over broken ones."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from cobell_cli.sources import eventlog
from cobell_cli.sources.eventlog import EventLogError, discover, iter_events

CODECS = Path(__file__).parent / "data" / "eventlogs" / "codecs"


def _real(suffix: str) -> Path:
    (path,) = [p for p in CODECS.iterdir() if p.suffix == suffix]
    return path


def _kinds(path: Path) -> list[str]:
    return [e["Event"] for e in iter_events(path)]


@pytest.mark.parametrize("suffix", [".zstd", ".lz4", ".snappy"])
def test_every_codec_spark_writes_reads_like_a_plain_log(suffix: str) -> None:
    kinds = _kinds(_real(suffix))
    assert kinds[0] == "SparkListenerLogStart" and kinds[-1] == "SparkListenerApplicationEnd"
    # The same small job recorded four times: the same events, tasks interleaved differently.
    assert Counter(kinds) == Counter(_kinds(_real("")))


def test_a_directory_of_logs_is_discovered_in_name_order() -> None:
    names = [Path(name).name for name, _ in discover([CODECS])]
    assert names == sorted(p.name for p in CODECS.iterdir())


def test_lines_split_across_chunks_are_joined(monkeypatch) -> None:
    whole = {s: list(iter_events(_real(s))) for s in ("", ".zstd", ".lz4", ".snappy")}
    monkeypatch.setattr(eventlog, "CHUNK_BYTES", 7)
    assert {s: list(iter_events(_real(s))) for s in whole} == whole


def _write(path: Path, events: list[dict]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_a_rolling_log_is_read_part_by_part_in_numeric_order(tmp_path: Path) -> None:
    rolling = tmp_path / "eventlog_v2_app-1"
    rolling.mkdir()
    _write(rolling / "events_10_app-1", [{"Event": "C"}])
    _write(rolling / "events_2_app-1", [{"Event": "B"}])
    _write(rolling / "events_1_app-1", [{"Event": "A"}])
    (rolling / "appstatus_app-1").write_text("")
    (log,) = discover([tmp_path])
    assert log[0] == str(rolling)
    assert [e["Event"] for e in log[1]()] == ["A", "B", "C"]


def test_a_garbage_line_names_file_and_line(tmp_path: Path) -> None:
    log = _write(tmp_path / "app-1", [{"Event": "A"}])
    with log.open("a") as f:
        f.write('{"Event": "B", "trunc\n')
    with pytest.raises(EventLogError, match=r"app-1, line 2: not a JSON event"):
        list(iter_events(log))


@pytest.mark.parametrize("suffix", [".zstd", ".lz4", ".snappy"])
def test_a_truncated_compressed_log_is_a_clear_error(tmp_path: Path, suffix: str) -> None:
    real = _real(suffix).read_bytes()
    cut = tmp_path / f"app-1{suffix}"
    cut.write_bytes(real[: len(real) // 2])
    with pytest.raises(EventLogError, match=r"corrupt or truncated|not a JSON event") as err:
        list(iter_events(cut))
    assert str(cut) in err.value.line() and "\n" not in err.value.line()


def test_an_unknown_codec_names_it_and_the_supported_ones(tmp_path: Path) -> None:
    log = tmp_path / "app-1.lzf"
    log.write_bytes(b"\0\1")
    with pytest.raises(EventLogError, match=r"unsupported compression codec 'lzf'") as err:
        list(iter_events(log))
    assert "zstd, lz4, snappy" in err.value.line()


def test_json_that_is_not_a_listener_event_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "app-1"
    log.write_text("[1, 2]\n")
    with pytest.raises(EventLogError, match="not a Spark listener event"):
        list(iter_events(log))


def test_a_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EventLogError, match="no event log at"):
        discover([tmp_path / "nope"])


def test_an_in_progress_log_is_read_up_to_its_last_whole_record(tmp_path: Path) -> None:
    log = _write(tmp_path / "app-1.inprogress", [{"Event": "SparkListenerApplicationStart"}])
    with log.open("a") as f:
        f.write('{"Event": "SparkListenerTaskEnd", "Ta')  # the driver is still writing
    assert _kinds(log) == ["SparkListenerApplicationStart"]
    real = _real(".zstd").read_bytes()
    cut = tmp_path / "app-2.zstd.inprogress"
    cut.write_bytes(real[: len(real) // 2])
    kinds = _kinds(cut)
    assert kinds[0] == "SparkListenerLogStart" and "SparkListenerApplicationEnd" not in kinds
