"""`history import` and `history export` stream (issue 15, item 15): memory does not grow with
the file, import stays all or nothing, and the streamed formats are exactly the documented ones.

Peak memory at 10^5 and 10^6 runs is measured by bench/history_memory.py; here a flatness
check (ten times the runs, about the same peak) keeps the property, and the benchmark's quick
form runs so that its code cannot rot.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cobell_cli.errors import ImportFileError
from cobell_cli.store import interchange
from cobell_cli.store.history import History, validate_run
from tests.cli_support import cobell
from tests.test_interchange import run_record

GOOD_CSV = "job,status,scale_out,runtime_s\n" + "sgd,succeeded,4,100\n" * 3


def json_text(document: Any, indent: int | None, separators: tuple[str, str] | None) -> str:
    return json.dumps(document, indent=indent, separators=separators)


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(run_record, max_size=5),
    bare=st.booleans(),
    extra=st.dictionaries(st.sampled_from(["note", "written_by"]), st.text(max_size=5)),
    indent=st.sampled_from([None, 0, 1, 3]),
    read_chars=st.integers(1, 40),
)
def test_streamed_json_reads_what_json_loads_reads(records, bare, extra, indent, read_chars):
    """Any layout, key order and read size: the same runs as a whole-document parse."""
    document: Any = records if bare else {**extra, "runs": records, "cobell_history": 1}
    text = json_text(document, indent, None if indent is not None else (",", ":"))
    with mock.patch.object(interchange, "READ_CHARS", read_chars):
        streamed = interchange.parse(Path("h.json"), text)
    expected = [validate_run(dict(r)) for r in records]
    assert streamed.problems == [] and streamed.kind == "cobell-json"
    assert [{k: v for k, v in r.items() if k != "command"} for r in streamed.records] == [
        {k: v for k, v in r.items() if k != "command"} for r in expected
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"runs": [\n  {"job": }\n]}', "line 2: not valid JSON"),
        ('{"runs": [{"job": "a", "status": "failed"},\n\n{"job": "b"', "line 3: not valid JSON"),
        ('{"runs": [] } trailing', "extra data after the document"),
        ('{"runs": [], "runs": []}', "`runs` given twice"),
        ('{"cobell_history": 1}', "expected a list of runs"),
        ('{"runs": 5}', "expected a list of runs"),
        ('{"cobell_history": 2, "runs": []}', "newer cobell"),
        ('[{"job": "a", "status": "failed"} {"job": "b"}]', "not valid JSON"),
        ('{"runs": ["' + "x" * 200_000, "line 1: not valid JSON (Unterminated string"),
    ],
)
def test_broken_json_is_one_error_naming_the_line(text: str, expected: str) -> None:
    with mock.patch.object(interchange, "READ_CHARS", 16), pytest.raises(ImportFileError) as err:
        interchange.parse(Path("h.json"), text)
    assert expected in str(err.value)


def test_a_syntax_error_deep_in_a_long_file_names_its_line() -> None:
    runs = [{"job": "a", "status": "failed"}] * 3000
    text = json.dumps({"runs": runs}, indent=1)
    broken = text.replace('"failed"', '"failed",', 1).splitlines()
    line = next(i for i, s in enumerate(broken, start=1) if '"failed",' in s)
    with pytest.raises(ImportFileError, match=f"line {line + 1}: not valid JSON"):
        interchange.parse(Path("h.json"), "\n".join(broken))


@settings(max_examples=40, deadline=None)
@given(records=st.lists(run_record, max_size=6))
def test_write_json_is_exactly_json_dumps_of_the_document(records: list[dict]) -> None:
    runs = [dict(r, id=k) for k, r in enumerate(records, start=1)]
    whole = json.dumps(
        {"cobell_history": 1, "runs": interchange.export_records(runs)}, indent=1, allow_nan=False
    )
    out = io.StringIO()
    assert interchange.write_json(runs, out) == len(runs)
    assert out.getvalue() == whole


@pytest.mark.parametrize("job", [None, "j1"])
def test_iter_runs_streams_what_runs_lists(tmp_path: Path, job: str | None) -> None:
    records = [
        {"job": f"j{k % 3}", "status": "succeeded", "scale_out": 1 + k, "runtime_s": 10.0 + k,
         "submitted_at": None if k % 4 == 0 else 1000.0 - k,
         "colocations": [{"overlap_ratio": 0.1 * j, "co_runner_job": "x"} for j in range(k % 3)]}
        for k in range(20)
    ]  # fmt: skip
    with History.open(tmp_path / "h.db") as history:
        history.insert_runs(records)
        listed = history.runs(job=job, newest_first=False, with_colocations=True)
        assert list(history.iter_runs(job=job)) == listed


def test_an_invalid_last_row_writes_nothing_not_even_the_history(tmp_path: Path) -> None:
    rows = "".join(f"sgd,succeeded,{1 + k % 8},{100 + k}\n" for k in range(5000))
    source = tmp_path / "runs.csv"
    source.write_text("job,status,scale_out,runtime_s\n" + rows + "sgd,succeeded,0,100\n")
    db = tmp_path / "h.db"
    result = cobell("--db", db, "history", "import", source)
    assert result.exit_code == 2 and "line 5002: scale_out" in result.stderr
    assert not db.exists()


def test_a_file_that_turns_invalid_between_the_passes_rolls_back(tmp_path: Path) -> None:
    from cobell_cli import api

    texts = iter([GOOD_CSV, GOOD_CSV + "sgd,succeeded,0,100\n"])
    checked = api.check_file("h.csv", open_text=lambda: io.StringIO(next(texts)))
    assert checked.valid == 3 and checked.invalid == 0
    with History.open(tmp_path / "h.db") as history:
        with pytest.raises(ImportFileError, match="the file changed while it was imported"):
            api.import_checked(history, checked)
        assert history.count() == 0


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_stdin_is_read_twice_from_a_spooled_copy(tmp_path: Path, fmt: str) -> None:
    db, other = tmp_path / "a.db", tmp_path / "b.db"
    assert cobell("--db", db, "history", "import", "-", input=GOOD_CSV).exit_code == 0
    exported = cobell("--db", db, "history", "export", "-f", fmt).stdout
    result = cobell("--db", other, "history", "import", "-", input=exported)
    assert result.exit_code == 0, result.stderr
    assert "imported 3 runs" in result.stderr
    assert cobell("--db", other, "history", "export", "-f", fmt).stdout == exported


def test_skip_invalid_names_the_first_hundred_and_counts_the_rest(tmp_path: Path) -> None:
    source = tmp_path / "runs.csv"
    source.write_text(GOOD_CSV + "sgd,succeeded,0,100\n" * 150)
    result = cobell("--db", tmp_path / "h.db", "history", "import", source, "--skip-invalid")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("scale_out: must be >= 1") == 100
    assert "50 more invalid rows" in result.stderr and "imported 3 runs" in result.stderr


def peak_rss_mb(*args: str) -> float:
    """Peak RSS of one `python -m cobell_cli ARGS` child."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cobell_cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, proc.stderr.read() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    return usage.ru_maxrss / 1024.0


@pytest.mark.slow
def test_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    """Ten times the runs, about the same peak: import and export hold a few runs, not all
    (whole-file reading grew by ~100 MB here: 4 MB of CSV -> 40 MB)."""
    from bench.history_memory import write_history

    peaks: dict[int, list[float]] = {}
    for rows in (2_000, 20_000):
        source, db = tmp_path / f"{rows}.csv", tmp_path / f"{rows}.db"
        write_history(source, rows)
        peaks[rows] = [
            peak_rss_mb("--db", str(db), "history", "import", str(source)),
            peak_rss_mb("--db", str(db), "history", "export", "-o", str(tmp_path / "o.csv")),
            peak_rss_mb("--db", str(db), "history", "export", "-f", "json", "-o",
                        str(tmp_path / "o.json")),
        ]  # fmt: skip
    for small, large in zip(peaks[2_000], peaks[20_000], strict=True):
        assert large < small + 25, peaks


def test_history_memory_bench_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import history_memory

    assert history_memory.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for step in ("import csv", "export csv", "export json", "import json"):
        assert f"| 2,000 | 1 | {step} | " in out
    assert "failed" not in out


def test_export_to_dash_is_standard_output(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", "-", input=GOOD_CSV).exit_code == 0
    result = cobell("--db", db, "history", "export", "-o", "-")
    assert result.exit_code == 0 and result.stdout.startswith("id,job,")
    assert not (Path.cwd() / "-").exists()
