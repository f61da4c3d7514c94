"""`cobell predict` as a newcomer reads it (issue 35): warnings in text mode, a deadline that
has passed, options that change nothing, the decision line at 6 am. Real SQLite history
(history/example.csv) through the real entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import cobell

EXAMPLE = Path(__file__).resolve().parents[1] / "history" / "example.csv"
OFFLINE = ("--cluster", "none")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "h.db"
    result = cobell("--db", path, "history", "import", EXAMPLE)
    assert result.exit_code == 0, result.stderr
    return path


def _warnings(stderr: str) -> list[str]:
    return [line.removeprefix("cobell: warning: ") for line in stderr.splitlines()
            if line.startswith("cobell: warning: ")]


# -- bug 2: the plan's warnings in text mode, feasible or not ---------------------------------


@pytest.mark.parametrize("deadline", [(), ("--deadline", "+3h")], ids=["target", "deadline"])
def test_a_feasible_plan_says_its_warnings_in_text_as_in_json(db: Path, deadline) -> None:
    args = ("--db", db, "predict", "-j", "sgd", "-t", "400", "--input-size", "12G", *OFFLINE,
            *deadline)
    as_json = cobell(*args, "--json")
    plan = json.loads(as_json.stdout)
    left_out = [w for w in plan["warnings"] if "succeeded runs left out" in w]
    assert plan["feasible"] and left_out
    text = cobell(*args)
    assert text.exit_code == 0, text.stderr
    assert _warnings(text.stderr).count(left_out[0]) == 1  # once, not twice
