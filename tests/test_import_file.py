"""`cobell history import FILE`: its summary (text and --json) and a file imported again
(issue 35, bugs 5 and 9): real SQLite files through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import cobell

# Two runs at 4 executors with the same runtime: Bell's sgd repeats one too (48 nodes,
# 161 882 ms, lines 82 and 84); they are two runs, not one run twice.
BELL_CSV = "Nodes,Runtime\n4,400000\n4,400000\n8,220000\n"
COBELL_CSV = (  # cobell's own CSV without app_id (or id): what a script writes
    "job,scale_out,runtime_s,started_at,status\n"
    "etl,4,120.5,1767225860.5,succeeded\n"
    "etl,8,70.25,1767312217.0,succeeded\n"
    "etl,8,,1767398617.0,failed\n"
)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "h.db"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _runs(db: Path, job: str) -> list[dict]:
    listed = cobell("--db", db, "history", "list", "--job", job, "--json")
    assert listed.exit_code == 0, listed.stderr
    return json.loads(listed.stdout)


def test_json_prints_the_summary_on_stdout(db: Path, tmp_path: Path) -> None:
    file = _write(tmp_path, "sgd.spark.csv", BELL_CSV)
    result = cobell("--db", db, "history", "import", file, "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["imported"] == 3 and summary["seen"] == 3 and summary["skipped"] == 0
    assert summary["format"] == "bell-csv" and summary["from"] == str(file)
    assert summary["run_ids"] == [r["id"] for r in reversed(_runs(db, "sgd"))]
    assert result.stderr == ""  # no second, text summary


def test_json_counts_invalid_rows_it_skipped(db: Path, tmp_path: Path) -> None:
    file = _write(tmp_path, "x.csv", "Nodes,Runtime\n4,400000\n8,abc\n")
    result = cobell("--db", db, "history", "import", file, "--json", "--skip-invalid")
    summary = json.loads(result.stdout)
    assert summary["imported"] == 1
    assert summary["skipped_by_reason"] == {"invalid": 1, "duplicate": 0}
    assert summary["problems"] == ["line 3: Runtime: expected a number, got 'abc'"]


@pytest.mark.parametrize("text", [BELL_CSV, COBELL_CSV], ids=["bell", "cobell-without-app-id"])
def test_a_file_imported_again_adds_no_run(db: Path, tmp_path: Path, text: str) -> None:
    file = _write(tmp_path, "etl.spark.csv", text)
    job = "etl"
    assert cobell("--db", db, "history", "import", file).exit_code == 0
    first = _runs(db, job)
    assert len(first) == 3
    again = cobell("--db", db, "history", "import", file)
    assert again.exit_code == 0, again.stderr
    assert again.stderr.strip() == (
        f"imported 0 runs from {file} into {db}; skipped 3 already in the history")
    assert _runs(db, job) == first


def test_only_the_runs_beyond_those_stored_are_new(db: Path, tmp_path: Path) -> None:
    """Counts, not sets: a third 4-executor run of the same runtime is a new run."""
    assert cobell("--db", db, "history", "import",
                  _write(tmp_path, "sgd.csv", BELL_CSV)).exit_code == 0
    grown = _write(tmp_path, "sgd.more.csv", BELL_CSV + "4,400000\n12,160000\n")
    result = cobell("--db", db, "history", "import", grown, "--json")
    summary = json.loads(result.stdout)
    assert (summary["imported"], summary["skipped_by_reason"]["duplicate"]) == (2, 3)
    assert sorted((r["scale_out"], r["runtime_s"]) for r in _runs(db, "sgd")) == [
        (4, 400.0), (4, 400.0), (4, 400.0), (8, 220.0), (12, 160.0)]


def test_an_export_imported_again_is_skipped_with_or_without_new_ids(
    db: Path, tmp_path: Path
) -> None:
    example = Path(__file__).parents[1] / "history" / "example.csv"
    assert cobell("--db", db, "history", "import", example).exit_code == 0
    for extra in ((), ("--new-ids",)):
        result = cobell("--db", db, "history", "import", example, "--json", *extra)
        assert result.exit_code == 0, result.stderr  # was: "run id 1 is already in the history"
        summary = json.loads(result.stdout)
        assert summary["imported"] == 0 and summary["skipped_by_reason"]["duplicate"] == 120
    jobs = json.loads(cobell("--db", db, "history", "jobs", "--json").stdout)
    assert sum(j["runs"] for j in jobs) == 120


def test_dry_run_says_how_many_are_new_and_writes_nothing(db: Path, tmp_path: Path) -> None:
    file = _write(tmp_path, "sgd.csv", BELL_CSV)
    assert cobell("--db", db, "history", "import", file).exit_code == 0
    before = db.read_bytes()
    dry = cobell("--db", db, "history", "import",
                 _write(tmp_path, "sgd.2.csv", BELL_CSV + "16,90000\n"), "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert "4 valid runs (bell-csv); would import 1; would skip 3 already in the history" in (
        dry.stderr)
    assert db.read_bytes() == before


def test_one_run_is_one_run(db: Path, tmp_path: Path) -> None:
    result = cobell("--db", db, "history", "import",
                    _write(tmp_path, "one.csv", "Nodes,Runtime\n4,1000\n"))
    assert result.stderr.strip().startswith("imported 1 run from ")


def test_a_row_cut_short_is_named_as_such_not_as_none(db: Path, tmp_path: Path) -> None:
    file = _write(tmp_path, "cut.csv", "job,scale_out,runtime_s,status\nx,4,100,succeeded\nx,4\n")
    result = cobell("--db", db, "history", "import", file)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert f"{file}: line 3 (2 of 4 fields): status: missing" in line
    assert "None" not in line
