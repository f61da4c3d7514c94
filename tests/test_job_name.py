"""One rule for job names: what submit takes is what every import creates and the history
holds; an app name that breaks it is mapped to one that keeps it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cobell_cli.core.job_name import (
    JOB_NAME_MAX_CHARS,
    YARN_TAG_MAX_CHARS,
    job_from_tag,
    job_name_problem,
    job_tag,
    normal,
    valid_job_name,
)
from tests.cli_support import cobell


@given(st.text(max_size=200))
def test_any_app_name_maps_to_a_job_name_and_a_job_name_to_itself(name: str) -> None:
    mapped = valid_job_name(name)
    assert job_name_problem(mapped) is None
    assert valid_job_name(mapped) == mapped
    if job_name_problem(name) is None:
        assert mapped == normal(name)


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
    assert "not a job name" in line and "no spaces, commas" in line and "adhoc-report" in line


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


# -- names of any script (issue 35): import, submit -j, predict, history, export, --json -------

SCRIPTS = ("ジョブ-夜間", "😀-emoji-job", "שלום-rtl", "cafe\u0301")  # the last: a combining accent
REFUSED = {"tab\tname": "'\\t'", "new\nline": "'\\n'", "esc\x1b[31mred": "'\\x1b'",
           "zero\u200bwidth": "U+200B ZERO WIDTH SPACE",
           "rlo\u202eevil": "U+202E RIGHT-TO-LEFT OVERRIDE"}
OFFLINE = ("--cluster", "none")


def _csv(tmp_path: Path, names) -> Path:
    path = tmp_path / "runs.csv"
    rows = [f'"{name}",{x},{3000 / x + 50:.1f},succeeded'
            for name in names for x in (2, 4, 8, 16)]
    path.write_text("job,scale_out,runtime_s,status\n" + "\n".join(rows) + "\n",
                    encoding="utf-8")
    return path


@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=64))
def test_every_name_s_tag_is_a_yarn_tag_that_names_it_again(name: str) -> None:
    """ASCII, printable, no comma, at most 100 characters; YARN lower-cases it, and the job
    is recognised among the known ones all the same."""
    job = valid_job_name(name)
    tag = job_tag(job)
    assert tag.isascii() and tag.isprintable() and "," not in tag
    assert len(tag) <= YARN_TAG_MAX_CHARS
    assert job_from_tag(tag.lower(), ["other", job]) == job


def test_the_tags_of_names_beyond_ascii() -> None:
    assert job_tag("sgd") == "cobell-job:sgd"
    assert job_tag("ジョブ-夜間").startswith("cobell-job-u:")
    assert job_from_tag(job_tag("ジョブ-夜間").lower()) == "ジョブ-夜間"  # unknown: decoded
    long = "".join(chr(0x4E00 + 389 * i) for i in range(64))  # 64 CJK ideographs apart
    assert job_tag(long).startswith("cobell-job-h:")
    assert job_from_tag(job_tag(long), ["sgd", long]) == long
    assert job_from_tag(job_tag(long), ["sgd"]) is None  # a hash names only a known job
    assert job_from_tag("cobell-job-u:%%%") is None and job_from_tag("team-a") is None


def test_names_of_any_script_work_end_to_end(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    imported = cobell("--db", db, "history", "import", _csv(tmp_path, SCRIPTS), "--json")
    assert imported.exit_code == 0, imported.stderr
    assert json.loads(imported.stdout)["imported"] == 4 * len(SCRIPTS)
    jobs = json.loads(cobell("--db", db, "history", "jobs", "--json").stdout)
    assert sorted(j["job"] for j in jobs) == sorted(normal(n) for n in SCRIPTS)
    for name in SCRIPTS:  # typed either way, a combining accent is the same job
        for typed in {name, normal(name)}:
            shown = cobell("--db", db, "predict", "-j", typed, "-t", "400", *OFFLINE)
            assert shown.exit_code == 0, shown.stderr
            assert shown.stdout.startswith(f"job {normal(name)} · ")
            plan = json.loads(cobell("--db", db, "predict", "-j", typed, "-t", "400",
                                     *OFFLINE, "--json").stdout)
            assert plan["job"] == normal(name)
        listed = json.loads(cobell("--db", db, "history", "list", "-j", name, "--json").stdout)
        assert len(listed) == 4
    exported = tmp_path / "out.json"
    assert cobell("--db", db, "history", "export", "-f", "json", "-o", exported).exit_code == 0
    again = tmp_path / "again.db"
    assert cobell("--db", again, "history", "import", exported).exit_code == 0
    assert cobell("--db", again, "history", "export", "-f", "json").stdout == (
        exported.read_text(encoding="utf-8"))


def test_submit_runs_a_job_named_in_any_script(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", _csv(tmp_path, SCRIPTS[:1])).exit_code == 0
    done = cobell("--db", db, "submit", "-j", SCRIPTS[0], "-t", "400", *OFFLINE, "--",
                  "sh", "-c", "echo {scale_out} > /dev/null")
    assert done.exit_code == 0, done.stderr
    (run,) = json.loads(cobell("--db", db, "history", "list", "-n", "1", "--json").stdout)
    assert run["job"] == SCRIPTS[0] and run["status"] == "succeeded"


@pytest.mark.parametrize("name", REFUSED, ids=list(REFUSED.values()))
def test_control_and_invisible_characters_are_refused_with_one_line(
    tmp_path: Path, name: str
) -> None:
    db = tmp_path / "h.db"
    file = _csv(tmp_path, [SCRIPTS[0], name])
    refused = cobell("--db", db, "history", "import", file)
    assert refused.exit_code == 2
    (line,) = refused.stderr.strip().splitlines()
    assert f"job: it contains {REFUSED[name]}" in line and "nothing was imported" in line
    assert "\x1b" not in line and "\u202e" not in line and "\u200b" not in line
    skipped = cobell("--db", db, "history", "import", file, "--skip-invalid", "--json")
    assert skipped.exit_code == 0 and json.loads(skipped.stdout)["imported"] == 4
    submitted = cobell("--db", db, "submit", "-j", name, "-t", "60", *OFFLINE, "--dry-run",
                       "--", "echo", "{scale_out}")
    assert submitted.exit_code == 2
    (line,) = submitted.stderr.strip().splitlines()
    assert "is not a job name" in line and REFUSED[name] in line
    assert "\x1b" not in line and "\u202e" not in line and "\u200b" not in line


def test_no_output_prints_a_stored_escape_sequence_raw(tmp_path: Path) -> None:
    """A history written by another tool holds names the rule refuses: every view escapes."""
    db = tmp_path / "h.db"
    assert cobell("--db", db, "history", "import", _csv(tmp_path, ["plain"])).exit_code == 0
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET job = ?", ("esc\x1b]0;owned\x07\u202e",))
    conn.commit()
    conn.close()
    # (`history export` CSV is the data itself, read back exactly; its JSON escapes.)
    for command in (("history", "list"), ("history", "jobs"), ("history", "show", "1"),
                    ("history", "list", "--json"), ("history", "export", "-f", "json"),
                    ("predict", "-j", "esc\x1b]0;owned\x07\u202e", "-t", "300", *OFFLINE)):
        result = cobell("--db", db, *command)
        assert result.exit_code in (0, 2), (command, result.stderr)  # predict: exit 2
        for raw in ("\x1b", "\u202e", "\x07"):
            assert raw not in result.stdout + result.stderr, command
