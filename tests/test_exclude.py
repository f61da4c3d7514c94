"""Keeping a run out of the model without deleting it: the `excluded` flag (a flag beside the
status, CONVENTIONS "The history"), honoured by fitting and planning, kept by export/import."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cobell_cli.errors import UsageError
from cobell_cli.store import interchange
from cobell_cli.store.history import History
from cobell_cli.store.schema import MIGRATIONS

EXAMPLE = Path(__file__).parents[1] / "history" / "example.csv"


def _history(tmp_path: Path) -> Path:
    db = tmp_path / "h.db"
    with History.open(db) as history:
        history.insert_runs(
            [{"job": "sgd", "status": "succeeded", "scale_out": x, "runtime_s": 100 + 400 / x}
             for x in (2, 4, 8, 16)]
            + [{"job": "sgd", "status": "succeeded", "scale_out": 4, "runtime_s": 0.01}],
            keep_ids=False,
        )
    return db


def test_an_excluded_run_is_not_fitted_and_include_brings_it_back(tmp_path: Path) -> None:
    db = _history(tmp_path)
    with History.open(db) as history:
        assert len(history.training_runs("sgd")) == 5
        assert history.set_excluded([5], True) == [5]
        assert history.set_excluded([5], True) == []  # already: nothing changed
        assert [r["runtime_s"] for r in history.training_runs("sgd")] == [300, 200, 150, 125]
        assert history.run(5)["excluded"] == 1 and history.run(5)["status"] == "succeeded"
        assert history.set_excluded([5], False) == [5]
        assert len(history.training_runs("sgd")) == 5


def test_excluding_an_unknown_run_changes_nothing(tmp_path: Path) -> None:
    db = _history(tmp_path)
    with History.open(db) as history:
        with pytest.raises(UsageError, match="no run with id 99"):
            history.set_excluded([1, 99], True)
        assert history.run(1)["excluded"] == 0


def test_the_flag_survives_export_and_import(tmp_path: Path) -> None:
    db = _history(tmp_path)
    with History.open(db) as history:
        history.set_excluded([5], True)
        runs = list(history.iter_runs())
    for text, name in ((interchange.to_csv(runs), "h.csv"), (interchange.to_json(runs), "h.json")):
        source = tmp_path / name
        source.write_text(text)
        records = [r for r in interchange.HistoryFile.at(source) if isinstance(r, dict)]
        assert [r.get("excluded") for r in records] == [0, 0, 0, 0, 1], name
        copy = tmp_path / f"copy-{name}.db"
        with History.open(copy) as history:
            history.insert_runs(records)
            assert len(history.training_runs("sgd")) == 4


def test_a_version_3_history_is_migrated_with_every_run_included(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    for step in MIGRATIONS[:3]:
        step(conn)
    conn.execute(
        "INSERT INTO runs (job, status, scale_out, runtime_s) VALUES ('sgd', 'succeeded', 4, 9)"
    )
    conn.execute("PRAGMA application_id = 0x436F426C")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with History.open(db) as history:
        assert history.run(1)["excluded"] == 0
        assert len(history.training_runs("sgd")) == 1


def test_a_removed_run_id_is_never_given_to_another_run(tmp_path: Path) -> None:
    """After `history rm` of the newest run, the next run got its id."""
    db = _history(tmp_path)
    with History.open(db) as history:
        history.delete_runs([5])
        assert history.start_run(job="sgd") == 6
        history.delete_runs([6, 4])
        assert history.insert_runs([{"job": "sgd", "status": "failed"}], keep_ids=False) == [7]
        assert history.start_run(job="sgd") == 8


def test_history_exclude_and_include_from_the_command_line(tmp_path: Path) -> None:
    """`history exclude RUN_ID` keeps a stray run out of planning without deleting it; list,
    show and export say so; `include` undoes it. (A 0.01 s run cobell keeps out by itself,
    tests/test_implausible.py; this one, 1.5x the job's runs there, only a person can.)"""
    from tests.cli_support import cobell

    db = tmp_path / "h.db"
    stray = tmp_path / "stray.csv"
    stray.write_text("job,status,scale_out,runtime_s\nsgd,succeeded,12,400\n")
    assert cobell("--db", db, "history", "import", EXAMPLE).exit_code == 0
    assert cobell("--db", db, "history", "import", stray, "--new-ids").exit_code == 0
    predict = ["--db", db, "predict", "-j", "sgd", "-t", "300", "--cluster", "none", "--json"]
    import json

    before = json.loads(cobell(*predict).stdout)["usable_runs"]
    done = cobell("--db", db, "history", "exclude", "121")
    assert done.exit_code == 0 and "excluded 1 run;" in done.stderr
    assert json.loads(cobell(*predict).stdout)["usable_runs"] == before - 1
    listed = cobell("--db", db, "history", "list", "-j", "sgd").stdout.splitlines()
    (row,) = [line for line in listed if line.startswith("121 ")]
    assert "succeeded (excl.)" in row
    shown = cobell("--db", db, "history", "show", "121").stdout
    assert "excluded:" in shown and "kept out of fitting and planning" in shown
    exported = json.loads(cobell("--db", db, "history", "export", "-f", "json").stdout)
    assert [r["excluded"] for r in exported["runs"] if r["id"] == 121] == [1]
    again = cobell("--db", db, "history", "exclude", "121", "--json")
    assert json.loads(again.stdout) == {"excluded": [], "unchanged": [121]}
    assert cobell("--db", db, "history", "include", "121").exit_code == 0
    assert json.loads(cobell(*predict).stdout)["usable_runs"] == before
    missing = cobell("--db", db, "history", "exclude", "999")
    assert missing.exit_code == 2 and "no run with id 999" in missing.stderr
