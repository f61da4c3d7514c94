"""Import/export: exact round trips (hypothesis) and all-or-nothing validation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cobell_cli.core.job_name import job_name_problem, normal
from cobell_cli.errors import ImportFileError
from cobell_cli.store import interchange
from cobell_cli.store.history import STATUSES, History

finite = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)
text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20)
opt = st.none() | text
job_names = st.text(  # core/job_name.py: printable, any script, no white space or commas
    st.characters(blacklist_categories=("Cs", "Cc", "Cf", "Co", "Cn", "Zs", "Zl", "Zp"),
                  blacklist_characters=","),
    min_size=1, max_size=20,
).map(normal).filter(lambda name: job_name_problem(name) is None)

colocation = st.fixed_dictionaries(
    {
        "co_runner_app_id": opt,
        "co_runner_job": opt,
        "co_runner_scale_out": st.none() | st.integers(1, 500),
        "co_runner_started_at": st.none() | finite,
        "co_runner_finished_at": st.none() | finite,
        "overlap_s": st.none() | finite,
        "overlap_ratio": st.floats(0, 1, allow_nan=False),
    }
)
run_record = st.fixed_dictionaries(
    {
        "job": job_names,
        "status": st.sampled_from(STATUSES),
        "scale_out": st.integers(1, 10_000),
        "runtime_s": st.floats(min_value=1e-3, max_value=1e7, allow_nan=False),
        "input_bytes": st.none() | st.integers(0, 2**62),
        "submitted_at": st.none() | finite,
        "target_s": st.none() | finite,
        "reason": opt,
        "command": st.none() | st.lists(text, max_size=4).map(json.dumps),
        "exit_code": st.none() | st.integers(-255, 255),
        "colocations": st.lists(colocation, max_size=3),
    }
)


@pytest.mark.parametrize("fmt", ["csv", "json"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=st.lists(run_record, max_size=6))
def test_export_import_export_is_exact(tmp_path: Path, fmt: str, records: list[dict]) -> None:
    write = interchange.to_csv if fmt == "csv" else interchange.to_json
    src = tmp_path / f"src-{fmt}.db"
    dst = tmp_path / f"dst-{fmt}.db"
    for p in (src, dst):
        for suffix in ("", "-wal", "-shm"):
            Path(str(p) + suffix).unlink(missing_ok=True)
    with History.open(src) as history:
        history.insert_runs(records)
        first = write(history.runs(newest_first=False, with_colocations=True))
    parsed = interchange.parse(Path(f"x.{fmt}"), first)
    assert parsed.problems == []
    with History.open(dst) as history:
        history.insert_runs(parsed.records)
        second = write(history.runs(newest_first=False, with_colocations=True))
    assert second == first


def test_bell_file_import(bell_dir: Path) -> None:
    path = bell_dir / "sgd.spark.csv"
    parsed = interchange.parse(path, path.read_text())
    assert parsed.kind == "bell-csv" and not parsed.problems
    assert len(parsed.records) == 105
    first = parsed.records[0]
    raw_ms = float(path.read_text().splitlines()[1].split(",")[1])
    assert first["job"] == "sgd" and first["scale_out"] == 4
    assert math.isclose(first["runtime_s"], raw_ms / 1000)


@settings(max_examples=60, deadline=None)
@given(
    good=st.lists(st.tuples(st.integers(1, 64), st.integers(1, 10**7)), min_size=1, max_size=8),
    bad_at=st.integers(0, 8),
    bad=st.sampled_from(["x,100", "4,", "4,-5", "0,100", "4,abc", "4,1,2", "-3,100"]),
)
def test_bell_validation_names_the_line_of_any_bad_row(good, bad_at, bad) -> None:
    lines = [f"{x},{rt}" for x, rt in good]
    bad_at = min(bad_at, len(lines))
    lines.insert(bad_at, bad)
    parsed = interchange.parse(Path("j.csv"), "Nodes,Runtime\n" + "\n".join(lines) + "\n")
    assert len(parsed.records) == len(good)
    assert [p.where for p in parsed.problems] == [f"line {bad_at + 2}"]


def test_cobell_csv_problems_name_line_and_field() -> None:
    csv_text = "job,status,scale_out,runtime_s\nsgd,succeeded,4,100\nsgd,finished,4,100\n"
    parsed = interchange.parse(Path("h.csv"), csv_text)
    assert str(parsed.problems[0]).startswith("line 3: status")


def test_unknown_header_and_columns_are_refused() -> None:
    with pytest.raises(ImportFileError, match="unrecognised header"):
        interchange.parse(Path("h.csv"), "a,b\n1,2\n")
    with pytest.raises(ImportFileError, match="unknown column"):
        interchange.parse(Path("h.csv"), "job,status,colour\nsgd,succeeded,red\n")


def test_malformed_json_names_the_line() -> None:
    with pytest.raises(ImportFileError, match="line 2: not valid JSON"):
        interchange.parse(Path("h.json"), '{"runs": [\n  {"job": }\n]}')


def test_runtime_unit_only_for_bell() -> None:
    with pytest.raises(ImportFileError, match="runtime-unit"):
        interchange.parse(Path("h.csv"), "job,status\nsgd,failed\n", runtime_unit="ms")
    parsed = interchange.parse(Path("j.csv"), "Nodes,Runtime\n4,250\n", runtime_unit="s", job="k")
    assert parsed.records[0]["runtime_s"] == 250.0 and parsed.records[0]["job"] == "k"
