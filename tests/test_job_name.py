"""One rule for job names: what submit takes is what every import creates and the history
holds; an app name that breaks it is mapped to one that keeps it."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cobell_cli.core.job_name import JOB_NAME_MAX_CHARS, job_name_problem, valid_job_name
from tests.cli_support import cobell


@given(st.text(max_size=200))
def test_any_app_name_maps_to_a_job_name_and_a_job_name_to_itself(name: str) -> None:
    mapped = valid_job_name(name)
    assert job_name_problem(mapped) is None
    assert valid_job_name(mapped) == mapped
    if job_name_problem(name) is None:
        assert mapped == name


def test_mapping_keeps_the_words_and_keeps_long_names_apart() -> None:
    assert valid_job_name("adhoc report") == "adhoc-report"
    assert valid_job_name(" nightly, etl ") == "nightly-etl"
    first, second = valid_job_name("a" * 5000), valid_job_name("a" * 4999 + "b")
    assert len(first) == JOB_NAME_MAX_CHARS and first != second


def test_submit_refuses_a_name_with_a_space_saying_what_a_job_name_is(tmp_path: Path) -> None:
    result = cobell("--db", tmp_path / "h.db", "submit", "-j", "adhoc report", "-t", "60",
                    "--cluster", "none", "--dry-run", "--", "echo", "x")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "not a job name" in line and "no spaces or commas" in line and "adhoc-report" in line


def test_a_5000_character_job_name_is_refused_everywhere(tmp_path: Path) -> None:
    """It was accepted by import and broke the `history jobs` table."""
    db = tmp_path / "h.db"
    name = "j" * 5000
    source = tmp_path / "runs.json"
    rows = [{"job": name, "status": "succeeded", "scale_out": 2, "runtime_s": 5.0}]
    source.write_text(json.dumps({"cobell_history": 1, "runs": rows}))
    imported = cobell("--db", db, "history", "import", source)
    assert imported.exit_code == 2
    (line,) = imported.stderr.strip().splitlines()
    assert "job: it has 5000 characters" in line and len(line) < 400
    submitted = cobell("--db", db, "submit", "-j", name, "-t", "60", "--cluster", "none",
                       "--dry-run", "--", "echo", "x")
    assert submitted.exit_code == 2 and len(submitted.stderr) < 400
    flagged = cobell("--db", db, "history", "import", source, "--job", "a b")
    assert flagged.exit_code == 2 and "--job 'a b' is not a job name" in flagged.stderr
