"""Hostile settings and hostile names (issue 15, items 9 and 10): every setting is checked when
it is loaded, with a one-line message naming where it came from, and nothing a history holds can
drive the user's terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobell_cli.output import printable
from cobell_cli.store.history import History
from tests.cli_support import cobell

BAD_ENV = [
    ("COBELL_TIMEOUT_S", "inf", "must be a finite number"),
    ("COBELL_TIMEOUT_S", "1e308", "at most 3600 seconds"),
    ("COBELL_TIMEOUT_S", "1e400", "must be a finite number"),
    ("COBELL_HISTORY_WINDOW", "99999999999999999999", "between 0 and 1000000000"),
    ("COBELL_RM_URL", "http://[::1", "not a valid URL"),
    ("COBELL_RM_URL", "http://rm:99999", "Port out of range"),
    ("COBELL_STANDALONE_URL", "ftp://master", "expected an http(s)://host[:port] URL"),
    ("COBELL_RETRIES", "40", "between 0 and 10"),
    ("COBELL_MAX_SCALE_OUT", "1000000000000", "between 1 and 100000"),
    ("COBELL_INPUT_TOLERANCE", "nan", "must be a finite number"),
    ("COBELL_JOB_PATTERNS", "etl=(", "is not a regular expression"),
]


@pytest.mark.parametrize(("name", "value", "why"), BAD_ENV, ids=lambda v: str(v)[:24])
def test_a_bad_environment_setting_is_one_line_naming_it(name, value, why) -> None:
    result = cobell("predict", "--job", "x", "--target-runtime", "10", env={name: value})
    assert result.exit_code == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"(env {name})" in line and why in line and "Traceback" not in line


def test_a_bad_flag_is_named_as_the_flag() -> None:
    result = cobell("predict", "--job", "x", "--target-runtime", "10", "--rm-url", "http://[::1")
    assert result.exit_code == 2
    assert "(--rm-url)" in result.stderr and "not a valid URL" in result.stderr


def test_a_bad_file_setting_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('rm_url = ["http://[::1"]\nretries = 1e3\n')
    result = cobell("--config", config, "history", "list")
    assert result.exit_code == 2
    assert f"(file {config})" in result.stderr and "not a valid URL" in result.stderr


def test_a_binary_config_file_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(bytes(range(256)) * 4)
    result = cobell("--config", config, "history", "list")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert f"config file {config} is not text" in line


def test_printable_escapes_every_control_character() -> None:
    assert printable("a\x1b]0;owned\x07b") == "a\\x1b]0;owned\\x07b"
    assert printable("tab\there\nnl \x9b csi \x7f") == "tab\\x09here\\x0anl \\x9b csi \\x7f"
    assert printable("plain ü 名前") == "plain ü 名前"
    assert printable(7) == 7


def test_escape_sequences_in_job_names_never_reach_the_terminal_raw(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    evil = "etl\x1b[2J\x1b]0;pwned\x07"
    rows = [{"job": evil, "status": "succeeded", "scale_out": 2, "runtime_s": 5.0}]
    source = tmp_path / "runs.json"
    source.write_text(json.dumps({"cobell_history": 1, "runs": rows}))
    refused = cobell("--db", db, "history", "import", source)  # not a job name (core/job_name)
    assert refused.exit_code == 2 and "\x1b" not in refused.stderr
    # ... but a history an older cobell wrote may hold one: it is shown escaped.
    with History.open(db) as history:
        history.conn.execute(
            "INSERT INTO runs (job, status, scale_out, runtime_s) VALUES (?, 'succeeded', 2, 5)",
            (evil,),
        )
        history.conn.commit()
    for command in (("history", "list"), ("history", "jobs"), ("history", "show", "1")):
        shown = cobell("--db", db, *command)
        assert shown.exit_code == 0, shown.stderr
        assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout
        assert "etl\\x1b[2J" in shown.stdout
    exact = cobell("--db", db, "history", "list", "--format", "json")
    assert json.loads(exact.stdout)[0]["job"] == evil  # JSON stays exact
