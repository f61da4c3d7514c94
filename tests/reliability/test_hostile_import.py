"""`history import` of hostile files (issue 15, item 8): one line naming file, line or record and
field; exit 2; nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import cobell, cobell_process

HEADER = "job,status,scale_out,runtime_s,id,input_bytes,exit_code\n"
GOOD = "sgd,succeeded,4,10.5,1,100,0\n"


def _import(tmp_path: Path, name: str, content: str | bytes, *extra: str):
    source = tmp_path / name
    if isinstance(content, bytes):
        source.write_bytes(content)
    else:
        source.write_text(content)
    db = tmp_path / "h.db"
    return cobell("--db", db, "history", "import", source, *extra), source, db


def _refused(result, *expected: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    assert "internal error" not in line and "Traceback" not in line
    for text in expected:
        assert text in line, line
    return line


def _nothing_written(db: Path) -> None:
    assert not db.exists() or cobell("--db", db, "history", "list", "--format", "json").stdout in (
        "[]\n",
        "",
    )


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ("sgd,succeeded,1000000000000000000000000000000,10,2,1,0", "scale_out"),
        ("sgd,succeeded,4,10,18446744073709551616,1,0", "id"),
        ("sgd,succeeded,4,10,2,9223372036854775808,0", "input_bytes"),
        ("sgd,succeeded,4,10,2,1,100000000000000000000", "exit_code"),
        ("sgd,succeeded,4,1e999,2,1,0", "runtime_s"),
    ],
)
def test_numbers_beyond_sqlite_are_refused_naming_line_and_field(tmp_path, row, field) -> None:
    result, source, db = _import(tmp_path, "runs.csv", HEADER + GOOD + row + "\n")
    _refused(result, str(source), "line 3", f"{field}:")
    _nothing_written(db)


def test_a_field_over_the_csv_limit_is_one_line(tmp_path: Path) -> None:
    result, source, db = _import(tmp_path, "runs.csv", HEADER + "x" * 10_000_000 + "\n")
    _refused(result, str(source), "line", "field larger than field limit")
    result, source, db = _import(tmp_path, "name.csv", HEADER + GOOD + "j" * 10_000_000 + ",s\n")
    _refused(result, str(source), "line 3")
    _nothing_written(db)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ({"cobell_history": "1", "runs": []}, "cobell_history: expected a format number"),
        ({"cobell_history": None, "runs": []}, "cobell_history: expected a format number"),
        ({"runs": [{"job": "a", "status": "running", "colocations": 3}]}, "colocations"),
        ({"runs": [{"job": "a", "status": "running", "colocations": [[1, 2]]}]}, "colocations"),
        ({"runs": [{"job": ["a"], "status": "running"}]}, "job: expected str"),
        ({"runs": [{"job": "a", "status": "running", "scale_out": 2**64}]}, "scale_out"),
    ],
)
def test_json_of_the_wrong_shape_is_one_line(tmp_path: Path, document, expected) -> None:
    result, source, db = _import(tmp_path, "runs.json", json.dumps(document))
    _refused(result, str(source), expected)
    _nothing_written(db)


@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)], ids=["import", "dry-run"])
@pytest.mark.parametrize("kind", ["json", "csv"])
def test_an_integer_of_5000_digits_is_one_line_naming_the_field(tmp_path, kind, dry_run) -> None:
    """Python refuses to convert more than 4300 digits to an int at all (ValueError from
    inside json's scanner): the JSON path said 'internal error', exit 1; the CSV path did not."""
    huge = "9" * 5000
    if kind == "json":
        text = f'{{"runs": [{{"job": "a", "status": "succeeded", "scale_out": {huge}}}]}}'
    else:
        text = HEADER + f"sgd,succeeded,{huge},10,2,1,0\n"
    result, source, db = _import(tmp_path, f"runs.{kind}", text, *dry_run)
    line = _refused(result, str(source), "scale_out:", "5000-digit number is beyond")
    assert len(line) < 400  # the number is described, not printed
    _nothing_written(db)


def test_json_nested_100000_deep_is_one_line(tmp_path: Path) -> None:
    result, source, db = _import(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    _refused(result, str(source), "nested too deeply")
    _nothing_written(db)


def test_binary_data_on_stdin_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    for data in (bytes(range(256)) * 64, b"job,status\n\0\0\0\n"):
        result = cobell_process("--db", db, "history", "import", "-", input=data.decode("latin-1"))
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("cobell: error: <stdin>:") and "Traceback" not in line
    assert not db.exists()


def test_a_valid_file_still_imports(tmp_path: Path) -> None:
    result, _, db = _import(tmp_path, "runs.csv", HEADER + GOOD)
    assert result.exit_code == 0, result.stderr
    listed = json.loads(cobell("--db", db, "history", "list", "--format", "json").stdout)
    assert [(r["job"], r["input_bytes"]) for r in listed] == [("sgd", 100)]
