"""The history of runs through the Python API (cobell_cli/api/runs.py), on real SQLite files:
what `cobell history ...` does, callable without the CLI, with the same checks and messages."""

from __future__ import annotations

import io
import json
import sqlite3
import time
from pathlib import Path

import pytest

from cobell_cli import api
from cobell_cli.cli import history_view
from cobell_cli.errors import CobellError, HistoryError, ImportFileError, UsageError
from tests.cli_support import cobell
from tests.yarn_standin import StandinRM

EXAMPLE = Path(__file__).parents[1] / "history" / "example.csv"
LOGS = Path(__file__).parent / "data" / "eventlogs" / "logs"
GOOD_CSV = "job,status,scale_out,runtime_s\nsgd,succeeded,4,100\nsgd,succeeded,8,60\n"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "h.db"


def example(db: Path) -> list[int]:
    with api.open_history(db) as history:
        return api.import_file(history, EXAMPLE).run_ids


def test_import_file_writes_every_run_with_its_co_runners(db: Path) -> None:
    ids = example(db)
    assert len(ids) == 120
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 120
        assert conn.execute("SELECT count(*) FROM colocations").fetchone()[0] > 0
    finally:
        conn.close()


def test_an_invalid_row_imports_nothing_and_names_the_row(db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(GOOD_CSV + "sgd,succeeded,0,100\n")
    with api.open_history(db) as history:
        with pytest.raises(ImportFileError, match=r"bad.csv: line 4: scale_out"):
            api.import_file(history, bad)
        assert api.list_runs(history) == []
        checked = api.import_file(history, bad, skip_invalid=True)
    assert len(checked.run_ids) == 2 and checked.invalid == 1
    assert checked.skipped() == [f"skipped {bad}: {checked.problems[0]}"]


def test_check_file_validates_before_any_history_exists(tmp_path: Path) -> None:
    checked = api.check_file("-", open_text=lambda: io.StringIO(GOOD_CSV))
    assert (checked.name, checked.valid, checked.invalid, checked.kind) == (
        "<stdin>", 2, 0, "cobell-csv")
    with pytest.raises(ImportFileError, match="no such file"):
        api.check_file(tmp_path / "missing.csv")


def test_list_show_jobs_as_the_cli_shows_them(db: Path) -> None:
    example(db)
    with api.open_history(db, read_only=True) as history:
        runs = api.list_runs(history, job="sgd", status=["succeeded"], limit=3)
        everything = api.list_runs(history, limit=2**70)  # beyond SQLite's integers: all
        one = api.get_run(history, runs[0]["id"])
        jobs = api.list_jobs(history)
    assert len(runs) == 3 and {r["job"] for r in runs} == {"sgd"}
    assert [r["submitted_at"] for r in runs] == sorted((r["submitted_at"] for r in runs),
                                                        reverse=True)
    assert len(everything) == 120
    assert one["id"] == runs[0]["id"] and "colocations" in one
    cli = json.loads(cobell("--db", db, "history", "list", "--job", "sgd", "--status",
                            "succeeded", "-n", "3", "--json").stdout)
    # the CLI shows the exported records with the command as its list of arguments
    assert cli == [history_view.show_record(r) for r in api.run_records(runs)]
    assert [r["id"] for r in cli] == [r["id"] for r in runs]
    assert {j["job"] for j in jobs} == {r["job"] for r in everything}


def test_bad_status_and_missing_run_are_usage_errors(db: Path) -> None:
    example(db)
    with pytest.raises(UsageError, match="--status 'done' is not a status"):
        api.check_statuses(["done"])
    with api.open_history(db, read_only=True) as history:
        with pytest.raises(UsageError, match="no run with id 9999"):
            api.get_run(history, 9999)
        with pytest.raises(UsageError, match="no run with id"):
            api.get_run(history, 2**64)


def test_remove_runs_asks_after_the_check_and_removes_all_or_none(db: Path) -> None:
    ids = example(db)
    asked: list[int] = []
    with api.open_history(db) as history:
        with pytest.raises(UsageError, match="no run with id 9999"):
            api.remove_runs(history, [ids[0], 9999], confirm=asked.append)
        assert asked == [] and len(api.list_runs(history)) == 120

        def refuse(count: int) -> None:
            asked.append(count)
            raise UsageError("no")

        with pytest.raises(UsageError, match="no"):
            api.remove_runs(history, ids[:2], confirm=refuse)
        assert asked == [2] and len(api.list_runs(history)) == 120
        assert api.remove_runs(history, ids[:2]) == 2
        assert len(api.list_runs(history)) == 118


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_export_then_import_is_the_same_history(db: Path, tmp_path: Path, fmt: str) -> None:
    example(db)
    out = tmp_path / f"out.{fmt}"
    with api.open_history(db, read_only=True) as history:
        assert api.export_runs(history, out, fmt=fmt) == 120
        stream = io.StringIO()
        api.export_runs(history, stream, fmt=fmt)
    assert stream.getvalue() == out.read_text()
    assert cobell("--db", db, "history", "export", "-f", fmt).stdout == out.read_text()
    other = tmp_path / "other.db"
    with api.open_history(other) as history:
        api.import_file(history, out)
    with api.open_history(other, read_only=True) as history:
        again = io.StringIO()
        api.export_runs(history, again, fmt=fmt)
    assert again.getvalue() == out.read_text()


def test_export_to_a_missing_directory_is_one_line(db: Path, tmp_path: Path) -> None:
    example(db)
    with (api.open_history(db, read_only=True) as history,
          pytest.raises(CobellError, match=r"cannot write .*nowhere/out.csv")):
        api.export_runs(history, tmp_path / "nowhere" / "out.csv")


def test_a_missing_history_is_not_created_for_reading(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="no history at"):
        api.open_history(tmp_path / "none.db", create=False)
    with api.open_history(tmp_path / "none.db", read_only=True) as history:
        assert api.list_runs(history) == []
    assert not (tmp_path / "none.db").exists()


def test_import_from_yarn_with_the_settings_a_script_loads(db: Path, yarn_rm: StandinRM) -> None:
    now = time.time()
    yarn_rm.now_s = now
    t0 = now - 3 * 3600
    yarn_rm.add_app("etl", tags="cobell-job:nightly", executors=6, vcores=2, start_s=t0,
                    duration_s=1000)
    yarn_rm.add_app("adhoc", executors=3, vcores=2, start_s=t0 + 500, duration_s=1000)
    settings = api.load_settings(cluster="yarn", rm_url=[yarn_rm.url])
    with api.open_history(db) as history:
        summary = api.import_from_yarn(history, settings, since=now - 86400, until=now,
                                       vcores_per_container=2)
        again = api.import_from_yarn(history, settings, since=now - 86400, until=now)
        runs = api.list_runs(history)
    assert summary.imported == 2 and summary.colocations == 2
    assert again.imported == 0  # idempotent
    assert {r["job"] for r in runs} == {"nightly", "adhoc"}
    assert {r["scale_out"] for r in runs} == {6, 3}


def test_import_from_event_logs(db: Path) -> None:
    pytest.importorskip("zstandard", reason="the recorded logs are zstd: needs the eventlog extra")
    settings = api.load_settings()
    with api.open_history(db) as history:
        with pytest.raises(UsageError, match="at least one PATH"):
            api.import_from_event_logs(history, settings, [])
        summary = api.import_from_event_logs(history, settings, [LOGS])
        runs = api.list_runs(history)
    assert summary.imported == len(runs) > 0 and summary.profiles > 0
    assert all(r["source"] for r in runs)


def test_run_command_as_its_arguments(db: Path) -> None:
    first = example(db)[0]
    with api.open_history(db, read_only=True) as history:
        run = api.get_run(history, first)
    assert isinstance(run["command"], str)  # stored as the JSON text of the arguments
    assert api.run_command(run) == json.loads(run["command"])
    assert api.run_command(run)[0] == "spark-submit"
    assert api.run_command({"command": "spark-submit app.py"}) == "spark-submit app.py"
    assert api.run_command({"command": "[1, 2]"}) == "[1, 2]"  # not a list of arguments
    assert api.run_command({"command": None}) is None
