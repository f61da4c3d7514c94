"""`cobell history` and the global CLI contract: help, version, errors, exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cobell_cli import __version__
from tests.cli_support import cobell, cobell_process

BELL_CSV = "Nodes,Runtime\n4,400000\n4,410000\n8,220000\n12,160000\n"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "h.db"


@pytest.fixture
def bell_file(tmp_path: Path) -> Path:
    path = tmp_path / "sgd.spark.csv"
    path.write_text(BELL_CSV)
    return path


def test_version_and_help_everywhere() -> None:
    assert cobell("--version").stdout.strip() == f"cobell {__version__}"
    top = cobell("--help")
    assert top.exit_code == 0 and "history" in top.stdout
    for group in ("history", "config"):
        result = cobell(group, "--help")
        assert result.exit_code == 0, result.stderr
    for command in ("list", "show", "jobs", "import", "export", "rm"):
        result = cobell("history", command, "--help")
        assert result.exit_code == 0 and "Example:" in result.stdout, command


def test_import_list_show_export(db: Path, bell_file: Path) -> None:
    imported = cobell("--db", db, "history", "import", bell_file)
    assert imported.exit_code == 0, imported.stderr
    assert "imported 4 runs" in imported.stderr
    listing = cobell("--db", db, "history", "list", "--format", "json")
    runs = json.loads(listing.stdout)
    assert [r["runtime_s"] for r in runs] == [160.0, 220.0, 410.0, 400.0]
    assert {r["job"] for r in runs} == {"sgd"}
    table = cobell("--db", db, "history", "list", "--limit", "2")
    assert table.stdout.count("sgd") == 2
    shown = cobell("--db", db, "history", "show", "1", "--json")
    assert json.loads(shown.stdout)["scale_out"] == 4
    # Every field's value starts in one column, the longest names included.
    text = cobell("--db", db, "history", "show", "1").stdout.split("\nco-runners")[0]
    lines = [line for line in text.splitlines() if line]
    assert "meet_probability:" in text and "job:" in text
    starts = {len(re.match(r"\S+:\s*", line).group(0)) for line in lines}
    assert len(starts) == 1, lines
    jobs = json.loads(cobell("--db", db, "history", "jobs", "--format", "json").stdout)
    assert jobs[0]["median_runtime_s"] == pytest.approx(310.0)
    exported = cobell("--db", db, "history", "export")
    assert exported.stdout.splitlines()[0].startswith("id,job,input_bytes,scale_out")


def test_json_is_spelt_alike_everywhere_in_history_listings(db: Path, bell_file: Path) -> None:
    assert cobell("--db", db, "history", "import", bell_file).exit_code == 0
    for command in (["list"], ["jobs"]):
        flag = cobell("--db", db, "history", *command, "--json")
        assert flag.exit_code == 0, flag.stderr
        assert json.loads(flag.stdout) == json.loads(
            cobell("--db", db, "history", *command, "--format", "json").stdout)
        both = cobell("--db", db, "history", *command, "--json", "--format", "csv")
        assert both.exit_code == 2 and "--json and --format csv" in both.stderr
        assert len(both.stderr.strip().splitlines()) == 1 and not both.stdout


def test_invalid_import_writes_nothing_and_names_file_line_field(db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("Nodes,Runtime\n4,100\n8,abc\n12,50\n")
    result = cobell("--db", db, "history", "import", bad)
    assert result.exit_code == 2
    assert f"{bad}: line 3: Runtime" in result.stderr
    assert "Traceback" not in result.stderr
    assert not db.exists() or cobell("--db", db, "history", "list", "-f", "json").stdout == "[]\n"
    skipped = cobell("--db", db, "history", "import", bad, "--skip-invalid")
    assert skipped.exit_code == 0
    assert "skipped" in skipped.stderr and "line 3" in skipped.stderr
    assert len(json.loads(cobell("--db", db, "history", "list", "-f", "json").stdout)) == 2


def test_import_from_stdin_and_dry_run(db: Path) -> None:
    dry = cobell("--db", db, "history", "import", "-", "--job", "x", "--dry-run", input=BELL_CSV)
    assert dry.exit_code == 0 and "4 valid runs" in dry.stderr
    assert not db.exists()
    real = cobell("--db", db, "history", "import", "-", "--job", "x", input=BELL_CSV)
    assert real.exit_code == 0
    assert json.loads(cobell("--db", db, "history", "jobs", "-f", "json").stdout)[0]["job"] == "x"


def test_export_file_round_trip_through_cli(db: Path, bell_file: Path, tmp_path: Path) -> None:
    cobell("--db", db, "history", "import", bell_file)
    out = tmp_path / "out.json"
    assert cobell("--db", db, "history", "export", "-f", "json", "-o", out).exit_code == 0
    other = tmp_path / "other.db"
    assert cobell("--db", other, "history", "import", out).exit_code == 0
    again = cobell("--db", other, "history", "export", "-f", "json").stdout
    assert again == out.read_text()


def test_rm_asks_unless_yes(db: Path, bell_file: Path) -> None:
    cobell("--db", db, "history", "import", bell_file)
    refused = cobell("--db", db, "history", "rm", "1")
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    missing = cobell("--db", db, "history", "rm", "1", "99", "--yes")
    assert missing.exit_code == 2 and "99" in missing.stderr
    assert cobell("--db", db, "history", "rm", "1", "2", "--yes").exit_code == 0
    assert len(json.loads(cobell("--db", db, "history", "list", "-f", "json").stdout)) == 2


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["history", "list", "--bogus"], 2, "No such option"),
        (["history", "list", "--status", "done"], 2, "not a status"),
        (["history", "list", "--since", "yesterday-ish"], 2, "not a time"),
        (["history", "show", "1"], 5, "no history at"),
        (["history", "import", "/nonexistent/file.csv"], 2, "no such file"),
    ],
)
def test_errors_are_one_line_with_exit_codes(db: Path, args, code, needle) -> None:
    result = cobell("--db", db, *args)
    assert result.exit_code == code, result.stderr
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (["history", "list", "--db", "X"], "cobell --db FILE history list ..."),
        (["predict", "-j", "x", "-t", "5", "--config", "X"], "cobell --config FILE predict ..."),
        (["history", "jobs", "--debug"], "cobell --debug history jobs ..."),
    ],
)
def test_a_root_option_after_the_command_says_where_it_goes(db: Path, args, fix) -> None:
    result = cobell("--db", db, *args)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "it is an option of cobell itself, so it goes before the command" in result.stderr
    assert fix in result.stderr and "Possible options" not in result.stderr


def test_not_sqlite_file_and_debug_traceback(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("not sqlite " * 200)
    result = cobell("--db", junk, "history", "list")
    assert result.exit_code == 5
    assert result.stderr.count("\n") == 1 and "not an SQLite database" in result.stderr
    proc = cobell_process("--debug", "--db", junk, "history", "list")
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_real_subprocess_import_and_list(db: Path, bell_file: Path) -> None:
    proc = cobell_process("--db", db, "history", "import", bell_file)
    assert proc.returncode == 0, proc.stderr
    listed = cobell_process("--db", db, "history", "list", "--format", "csv")
    assert listed.returncode == 0
    assert len(listed.stdout.strip().splitlines()) == 5  # header + 4 runs
    env_db = cobell_process("history", "jobs", "-f", "json", env={"COBELL_DB": str(db)})
    assert json.loads(env_db.stdout)[0]["runs"] == 4


def test_import_every_bell_file(db: Path, bell_dir: Path) -> None:
    for path in sorted(bell_dir.glob("*.csv")):
        result = cobell("--db", db, "history", "import", path)
        assert result.exit_code == 0, result.stderr
    jobs = json.loads(cobell("--db", db, "history", "jobs", "-f", "json").stdout)
    assert {j["job"]: j["runs"] for j in jobs} == {
        "grep": 105,
        "kmeans": 105,
        "pagerank": 105,
        "sgd": 105,
        "tpchq10": 105,
        "wordcount": 105,
    }
    assert all(j["scale_outs"] == 15 for j in jobs)
    exported = cobell("--db", db, "history", "export").stdout
    assert len(exported.strip().splitlines()) == 1 + 6 * 105
