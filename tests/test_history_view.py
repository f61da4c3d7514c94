"""What `history list` and `history show` put on a screen: 80-120 columns by default,
`--columns` for the rest, seconds to a tenth, local ISO times, the command as a list in JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cobell_cli.cli import history_view
from cobell_cli.store.history import History
from tests.cli_support import cobell

EXAMPLE = Path(__file__).parents[1] / "history" / "example.csv"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "h.db"
    assert cobell("--db", path, "history", "import", EXAMPLE).exit_code == 0
    with History.open(path) as history:  # a run as cobell submit records it
        history.insert_runs([{
            "job": "a-rather-long-nightly-job-name", "status": "succeeded", "scale_out": 12,
            "runtime_s": 44.35970377922058, "target_s": 60.0, "predicted_s": 41.123456,
            "submitted_at": 1.8e9, "started_at": 1.8e9 + 2, "finished_at": 1.8e9 + 46.36,
            "command": json.dumps(["spark-submit", "--master", "yarn", "a b.py"]),
            "app_id": "application_1767225600000_9999", "meet_probability": 0.9312345,
            "colocations": [{"co_runner_job": "kmeans", "co_runner_app_id": "application_x",
                             "overlap_s": 12.3456789, "overlap_ratio": 0.2781234}],
        }], keep_ids=False)
    return path


def test_the_default_list_fits_120_columns(db: Path) -> None:
    """It was about 200 columns wide."""
    listed = cobell("--db", db, "history", "list").stdout.splitlines()
    assert 80 <= max(map(len, listed)) <= 120
    assert listed[0].split() == list(history_view.DEFAULT_COLUMNS)
    newest = next(line for line in listed if line.startswith("121 "))
    assert "a-rather-long-nig…" in newest and " 44.4 " in newest


def test_columns_picks_others_and_any_stored_field(db: Path) -> None:
    listed = cobell("--db", db, "history", "list", "-j", "a-rather-long-nightly-job-name",
                    "--columns", "id,app_id", "-c", "co_runner_jobs,meet_probability").stdout
    header, _, row = listed.splitlines()
    assert header.split() == ["id", "app_id", "co_runner_jobs", "meet_probability"]
    assert "application_1767225600000_9999" in row and "kmeans:0.28" in row
    bad = cobell("--db", db, "history", "list", "--columns", "id,colour")
    assert bad.exit_code == 2 and "no column 'colour'" in bad.stderr


def test_adding_a_column_is_one_entry() -> None:
    history_view.COLUMNS["node_label"] = lambda run: run.get("node_label")
    try:
        table = history_view.list_table([{"id": 1, "node_label": "gpu"}], ["id", "node_label"])
        assert table.splitlines()[-1].split() == ["1", "gpu"]
    finally:
        del history_view.COLUMNS["node_label"]


def test_show_rounds_for_people_and_keeps_json_exact(db: Path) -> None:
    """`runtime_s: 44.35970377922058`; and `command` was a JSON string inside the JSON."""
    shown = cobell("--db", db, "history", "show", "121").stdout
    assert re.search(r"^runtime_s: +44\.4$", shown, re.M) and "44.3597" not in shown
    assert re.search(r"^command: +spark-submit --master yarn 'a b.py'$", shown, re.M)
    assert re.search(r"^meet_probability: +0\.9312$", shown, re.M)
    started = next(line for line in shown.splitlines() if line.startswith("started_at:"))
    assert started.split(maxsplit=1)[1] == history_view.local_iso(1.8e9 + 2)
    as_json = json.loads(cobell("--db", db, "history", "show", "121", "--json").stdout)
    assert as_json["command"] == ["spark-submit", "--master", "yarn", "a b.py"]
    assert as_json["runtime_s"] == 44.35970377922058 and as_json["started_at"] == 1.8e9 + 2
    listed = json.loads(cobell("--db", db, "history", "list", "--json", "-n", "1").stdout)
    assert listed[0]["command"] == ["spark-submit", "--master", "yarn", "a b.py"]
